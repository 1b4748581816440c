"""Keys and values of the records in `__consumer_offsets`, byte for byte as Apache Kafka writes them.

Persisting group metadata and committed offsets in Kafka's own format keeps our log readable by Kafka's tools
(kafka-console-consumer's offsets formatter, kafka-dump-log) and lets a log written by Kafka be replayed here.
The layouts follow Kafka's JSON definitions in group-coordinator/src/main/resources/common/message/
(OffsetCommitKey, OffsetCommitValue, GroupMetadataKey, GroupMetadataValue); the reading rules follow the code
Kafka's message generator emits for them (MessageDataGenerator) and Kafka's loaders (GroupMetadataManager,
GroupCoordinatorRecordSerde).

Every key and every value starts with an int16 version. The key version doubles as the record type:
  0, 1  OffsetCommitKey    group string, topic string, partition int32
  2     GroupMetadataKey   group string
  3+    Kafka 4's consumer/share/streams group records, which a classic-group coordinator does not read.
Value layouts by version (a tombstone, i.e. a null value, is the caller's business and never reaches here):
  OffsetCommitValue   0: offset int64, metadata string, commitTimestamp int64
                      1: as 0 + expireTimestamp int64
                      2: as 0
                      3: offset int64, leaderEpoch int32, metadata string, commitTimestamp int64
                      4: as 3, flexible
  GroupMetadataValue  protocolType string, generation int32, protocol string?, leader string?,
                      currentStateTimestamp int64 (2+), members [MemberMetadata]
  MemberMetadata      memberId string, groupInstanceId string? (3+), clientId string, clientHost string,
                      rebalanceTimeout int32 (1+), sessionTimeout int32, subscription bytes, assignment bytes
                      (version 4 of both is flexible)
Classic versions: int16-length strings (-1 = null), int32-length bytes, int32-count arrays. Flexible versions:
unsigned-varint length + 1 (0 = null) and a tagged-field section after each struct; no tagged fields are
defined for these structs, so the decoder skips every tag and the encoders never write flexible versions.

Like Kafka's generated readers, decoders ignore bytes left over after the last field. All decode failures
(truncation, negative lengths on non-nullable fields, bad UTF-8, unknown versions) raise GroupRecordError, and
so do values the encoders cannot represent (out-of-range integers, strings over 32767 UTF-8 bytes).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

Buffer = bytes | bytearray | memoryview

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_OFFSET_VALUE_V1_HEAD = struct.Struct(">hq")  # version, offset
_OFFSET_VALUE_V3_HEAD = struct.Struct(">hqi")  # version, offset, leaderEpoch
_OFFSET_VALUE_V1_TAIL = struct.Struct(">qq")  # commitTimestamp, expireTimestamp
_MEMBER_TIMEOUTS = struct.Struct(">ii")  # rebalanceTimeout, sessionTimeout

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRE = 1
GROUP_VALUE_VERSION = 3
_MAX_VALUE_VERSION = 4  # highest version Kafka defines for both values (the first flexible one)
_FLEXIBLE_VERSION = 4

_MAX_STRING_BYTES = 0x7FFF  # Kafka rejects longer strings on both read and write, even in compact form
_NO_TIMESTAMP = -1


class GroupRecordError(ValueError):
    """Malformed or unknown-version `__consumer_offsets` data, or a value that cannot be encoded."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    """OffsetCommitKey: the committed offset of one partition for one group."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    """GroupMetadataKey: the metadata of one classic group."""

    group: str


@dataclass(slots=True)
class OffsetValue:
    """OffsetCommitValue."""

    offset: int
    leader_epoch: int = -1  # -1: none (versions < 3 have none)
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None  # only version 1 carries it; -1 there decodes to None, as Kafka loads it


@dataclass(slots=True)
class MemberValue:
    """GroupMetadataValue's MemberMetadata."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(slots=True)
class GroupValue:
    """GroupMetadataValue."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int  # -1: none (versions < 2)
    members: list[MemberValue]


# --- encoding -------------------------------------------------------------------------------------------------


def _pack(st: struct.Struct, *values: int) -> bytes:
    try:
        return st.pack(*values)
    except struct.error as exc:
        raise GroupRecordError(f"integer out of range: {values}: {exc}") from None


def _string(out: bytearray, value: str | None, name: str, nullable: bool = False) -> None:
    """Classic (int16-length) string."""
    if value is None:
        if not nullable:
            raise GroupRecordError(f"non-nullable field {name} is None")
        out += _INT16.pack(-1)
        return
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise GroupRecordError(f"field {name} is not encodable as UTF-8: {exc}") from None
    if len(data) > _MAX_STRING_BYTES:
        raise GroupRecordError(f"field {name} is too long to be serialized ({len(data)} bytes)")
    out += _INT16.pack(len(data))
    out += data


def _bytes(out: bytearray, value: bytes, name: str) -> None:
    """Classic (int32-length) non-nullable bytes."""
    if value is None:
        raise GroupRecordError(f"non-nullable field {name} is None")
    out += _pack(_INT32, len(value))
    out += value


def encode_key(key: OffsetKey | GroupKey) -> bytes:
    """OffsetKey as OffsetCommitKey version 1, GroupKey as GroupMetadataKey version 2 (what Kafka writes)."""
    out = bytearray()
    if isinstance(key, OffsetKey):
        out += _INT16.pack(OFFSET_KEY_VERSION)
        _string(out, key.group, "group")
        _string(out, key.topic, "topic")
        out += _pack(_INT32, key.partition)
    elif isinstance(key, GroupKey):
        out += _INT16.pack(GROUP_KEY_VERSION)
        _string(out, key.group, "group")
    else:
        raise TypeError(f"not a group record key: {key!r}")
    return bytes(out)


def encode_offset_value(value: OffsetValue) -> bytes:
    """OffsetCommitValue version 3, or version 1 when an expire timestamp is set (Kafka's choice too).

    Version 1 has no leader epoch: like Kafka (the field is ignorable) it is silently dropped there.
    """
    out = bytearray()
    if value.expire_timestamp is not None:
        out += _pack(_OFFSET_VALUE_V1_HEAD, OFFSET_VALUE_VERSION_WITH_EXPIRE, value.offset)
        _string(out, value.metadata, "metadata")
        out += _pack(_OFFSET_VALUE_V1_TAIL, value.commit_timestamp, value.expire_timestamp)
    else:
        out += _pack(_OFFSET_VALUE_V3_HEAD, OFFSET_VALUE_VERSION, value.offset, value.leader_epoch)
        _string(out, value.metadata, "metadata")
        out += _pack(_INT64, value.commit_timestamp)
    return bytes(out)


def encode_group_value(value: GroupValue) -> bytes:
    """GroupMetadataValue version 3, the newest non-flexible version and the one Kafka writes."""
    out = bytearray(_INT16.pack(GROUP_VALUE_VERSION))
    _string(out, value.protocol_type, "protocolType")
    out += _pack(_INT32, value.generation)
    _string(out, value.protocol, "protocol", nullable=True)
    _string(out, value.leader, "leader", nullable=True)
    out += _pack(_INT64, value.current_state_timestamp)
    out += _pack(_INT32, len(value.members))
    for member in value.members:
        _string(out, member.member_id, "memberId")
        _string(out, member.group_instance_id, "groupInstanceId", nullable=True)
        _string(out, member.client_id, "clientId")
        _string(out, member.client_host, "clientHost")
        out += _pack(_MEMBER_TIMEOUTS, member.rebalance_timeout, member.session_timeout)
        _bytes(out, member.subscription, "subscription")
        _bytes(out, member.assignment, "assignment")
    return bytes(out)


# --- decoding -------------------------------------------------------------------------------------------------


class _Reader:
    """Cursor over one key or value; every read checks bounds so garbage raises GroupRecordError only."""

    __slots__ = ("_data", "_pos", "flexible")

    def __init__(self, data: Buffer) -> None:
        self._data = memoryview(data).cast("B")
        self._pos = 0
        self.flexible = False

    def _take(self, n: int, what: str) -> memoryview:
        end = self._pos + n
        if end > len(self._data):
            raise GroupRecordError(f"truncated: {what} needs {n} bytes, {len(self._data) - self._pos} left")
        view = self._data[self._pos : end]
        self._pos = end
        return view

    def fixed(self, st: struct.Struct, what: str) -> tuple[int, ...]:
        if self._pos + st.size > len(self._data):
            raise GroupRecordError(f"truncated: {what} needs {st.size} bytes, {len(self._data) - self._pos} left")
        values = st.unpack_from(self._data, self._pos)
        self._pos += st.size
        return values

    def int16(self, what: str) -> int:
        return self.fixed(_INT16, what)[0]

    def int32(self, what: str) -> int:
        return self.fixed(_INT32, what)[0]

    def int64(self, what: str) -> int:
        return self.fixed(_INT64, what)[0]

    def uvarint(self, what: str) -> int:
        """Unsigned LEB128 of at most 5 bytes holding a uint32, as Kafka's ByteUtils.readUnsignedVarint."""
        value = 0
        for shift in range(0, 35, 7):
            if self._pos >= len(self._data):
                raise GroupRecordError(f"truncated: varint {what}")
            byte = self._data[self._pos]
            self._pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value > 0xFFFFFFFF:
                    raise GroupRecordError(f"varint {what} exceeds 32 bits")
                return value
        raise GroupRecordError(f"varint {what} is longer than 5 bytes")

    def _length(self, classic: struct.Struct, what: str) -> int:
        """Length prefix; negative means null. Compact lengths are stored + 1, so 0 is null."""
        if self.flexible:
            stored = self.uvarint(what)
            # Java reads the varint into an int: anything past 2^31 - 1 is nonsense either way.
            if stored > 0x7FFFFFFF:
                raise GroupRecordError(f"{what} has invalid length {stored - 1}")
            return stored - 1
        return self.fixed(classic, what)[0]

    def string(self, what: str, nullable: bool = False) -> str | None:
        length = self._length(_INT16, what)
        if length < 0:
            if nullable:
                return None
            raise GroupRecordError(f"non-nullable field {what} was serialized as null")
        if length > _MAX_STRING_BYTES:
            raise GroupRecordError(f"string field {what} had invalid length {length}")
        raw = self._take(length, what)
        try:
            # Java would substitute U+FFFD for bad UTF-8; a Java-written record never has any, so garbage it is.
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise GroupRecordError(f"field {what} is not valid UTF-8: {exc}") from None

    def required_string(self, what: str) -> str:
        value = self.string(what)
        assert value is not None  # string() raises on null unless nullable
        return value

    def bytes_(self, what: str) -> bytes:
        length = self._length(_INT32, what)
        if length < 0:
            raise GroupRecordError(f"non-nullable field {what} was serialized as null")
        return bytes(self._take(length, what))

    def array_count(self, what: str) -> int:
        count = self._length(_INT32, what)
        if count < 0:
            raise GroupRecordError(f"non-nullable field {what} was serialized as null")
        # Kafka's check: every element takes at least one byte, so a bigger count cannot be honest.
        if count > len(self._data) - self._pos:
            raise GroupRecordError(f"{what} claims {count} elements, only {len(self._data) - self._pos} bytes left")
        return count

    def skip_tagged_fields(self, what: str) -> None:
        """A flexible struct's tagged-field section. None are defined here, so every tag is unknown: skip it."""
        if not self.flexible:
            return
        for _ in range(self.uvarint(f"{what} tagged field count")):
            self.uvarint(f"{what} tag")
            size = self.uvarint(f"{what} tagged field size")
            self._take(size, f"{what} tagged field")


def decode_key(data: Buffer) -> OffsetKey | GroupKey:
    """OffsetCommitKey (versions 0, 1) or GroupMetadataKey (version 2).

    Any other version raises GroupRecordError naming it: Kafka 4 writes consumer, share and streams group
    records with key versions 3 and up, which the caller skips.
    """
    reader = _Reader(data)
    version = reader.int16("key version")
    if version in (0, 1):
        group = reader.required_string("group")
        topic = reader.required_string("topic")
        return OffsetKey(group, topic, reader.int32("partition"))
    if version == 2:
        return GroupKey(reader.required_string("group"))
    raise GroupRecordError(f"unknown __consumer_offsets key version {version} (not an offset or group metadata key)")


def _value_version(reader: _Reader, name: str) -> int:
    version = reader.int16(f"{name} version")
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise GroupRecordError(f"unknown {name} version {version}")
    reader.flexible = version >= _FLEXIBLE_VERSION
    return version


def decode_offset_value(data: Buffer) -> OffsetValue:
    """OffsetCommitValue versions 0-4."""
    reader = _Reader(data)
    version = _value_version(reader, "OffsetCommitValue")
    offset = reader.int64("offset")
    leader_epoch = reader.int32("leaderEpoch") if version >= 3 else -1
    metadata = reader.required_string("metadata")
    commit_timestamp = reader.int64("commitTimestamp")
    expire_timestamp: int | None = None
    if version == 1:
        expire_timestamp = reader.int64("expireTimestamp")
        if expire_timestamp == _NO_TIMESTAMP:  # Kafka's loader reads -1 as "no expire timestamp"
            expire_timestamp = None
    reader.skip_tagged_fields("OffsetCommitValue")
    return OffsetValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def decode_group_value(data: Buffer) -> GroupValue:
    """GroupMetadataValue versions 0-4; fields older versions lack get the defaults Kafka's loader uses."""
    reader = _Reader(data)
    version = _value_version(reader, "GroupMetadataValue")
    protocol_type = reader.required_string("protocolType")
    generation = reader.int32("generation")
    protocol = reader.string("protocol", nullable=True)
    leader = reader.string("leader", nullable=True)
    current_state_timestamp = reader.int64("currentStateTimestamp") if version >= 2 else _NO_TIMESTAMP
    members = []
    for _ in range(reader.array_count("members")):
        member_id = reader.required_string("memberId")
        group_instance_id = reader.string("groupInstanceId", nullable=True) if version >= 3 else None
        client_id = reader.required_string("clientId")
        client_host = reader.required_string("clientHost")
        if version >= 1:
            rebalance_timeout, session_timeout = reader.fixed(_MEMBER_TIMEOUTS, "timeouts")
        else:
            # v0 predates separate rebalance timeouts: Kafka's loader uses the session timeout for both.
            session_timeout = rebalance_timeout = reader.int32("sessionTimeout")
        subscription = reader.bytes_("subscription")
        assignment = reader.bytes_("assignment")
        reader.skip_tagged_fields("MemberMetadata")
        members.append(
            MemberValue(
                member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    reader.skip_tagged_fields("GroupMetadataValue")
    return GroupValue(protocol_type, generation, protocol, leader, current_state_timestamp, members)
