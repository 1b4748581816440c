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

from protocol.coordinator_records import INT16, INT32, INT64, Buffer, Reader, Writer

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


def encode_key(key: OffsetKey | GroupKey) -> bytes:
    """OffsetKey as OffsetCommitKey version 1, GroupKey as GroupMetadataKey version 2 (what Kafka writes)."""
    out = Writer(GroupRecordError)
    if isinstance(key, OffsetKey):
        out.fixed(INT16, OFFSET_KEY_VERSION)
        out.string(key.group, "group")
        out.string(key.topic, "topic")
        out.fixed(INT32, key.partition)
    elif isinstance(key, GroupKey):
        out.fixed(INT16, GROUP_KEY_VERSION)
        out.string(key.group, "group")
    else:
        raise TypeError(f"not a group record key: {key!r}")
    return out.getvalue()


def encode_offset_value(value: OffsetValue) -> bytes:
    """OffsetCommitValue version 3, or version 1 when an expire timestamp is set (Kafka's choice too).

    Version 1 has no leader epoch: like Kafka (the field is ignorable) it is silently dropped there.
    """
    out = Writer(GroupRecordError)
    if value.expire_timestamp is not None:
        out.fixed(_OFFSET_VALUE_V1_HEAD, OFFSET_VALUE_VERSION_WITH_EXPIRE, value.offset)
        out.string(value.metadata, "metadata")
        out.fixed(_OFFSET_VALUE_V1_TAIL, value.commit_timestamp, value.expire_timestamp)
    else:
        out.fixed(_OFFSET_VALUE_V3_HEAD, OFFSET_VALUE_VERSION, value.offset, value.leader_epoch)
        out.string(value.metadata, "metadata")
        out.fixed(INT64, value.commit_timestamp)
    return out.getvalue()


def encode_group_value(value: GroupValue) -> bytes:
    """GroupMetadataValue version 3, the newest non-flexible version and the one Kafka writes."""
    out = Writer(GroupRecordError)
    out.fixed(INT16, GROUP_VALUE_VERSION)
    out.string(value.protocol_type, "protocolType")
    out.fixed(INT32, value.generation)
    out.nullable_string(value.protocol, "protocol")
    out.nullable_string(value.leader, "leader")
    out.fixed(INT64, value.current_state_timestamp)
    out.array_length(len(value.members))
    for member in value.members:
        out.string(member.member_id, "memberId")
        out.nullable_string(member.group_instance_id, "groupInstanceId")
        out.string(member.client_id, "clientId")
        out.string(member.client_host, "clientHost")
        out.fixed(_MEMBER_TIMEOUTS, member.rebalance_timeout, member.session_timeout)
        out.bytes_(member.subscription, "subscription")
        out.bytes_(member.assignment, "assignment")
    return out.getvalue()


# --- decoding -------------------------------------------------------------------------------------------------


def decode_key(data: Buffer) -> OffsetKey | GroupKey:
    """OffsetCommitKey (versions 0, 1) or GroupMetadataKey (version 2).

    Any other version raises GroupRecordError naming it: Kafka 4 writes consumer, share and streams group
    records with key versions 3 and up, which the caller skips.
    """
    reader = Reader(data, GroupRecordError)
    version = reader.int16("key version")
    if version in (0, 1):
        group = reader.string("group")
        topic = reader.string("topic")
        return OffsetKey(group, topic, reader.int32("partition"))
    if version == 2:
        return GroupKey(reader.string("group"))
    raise GroupRecordError(f"unknown __consumer_offsets key version {version} (not an offset or group metadata key)")


def _value_version(reader: Reader, name: str) -> int:
    version = reader.int16(f"{name} version")
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise GroupRecordError(f"unknown {name} version {version}")
    reader.flexible = version >= _FLEXIBLE_VERSION
    return version


def decode_offset_value(data: Buffer) -> OffsetValue:
    """OffsetCommitValue versions 0-4."""
    reader = Reader(data, GroupRecordError)
    version = _value_version(reader, "OffsetCommitValue")
    offset = reader.int64("offset")
    leader_epoch = reader.int32("leaderEpoch") if version >= 3 else -1
    metadata = reader.string("metadata")
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
    reader = Reader(data, GroupRecordError)
    version = _value_version(reader, "GroupMetadataValue")
    protocol_type = reader.string("protocolType")
    generation = reader.int32("generation")
    protocol = reader.nullable_string("protocol")
    leader = reader.nullable_string("leader")
    current_state_timestamp = reader.int64("currentStateTimestamp") if version >= 2 else _NO_TIMESTAMP
    members = []
    for _ in range(reader.array_count("members")):
        member_id = reader.string("memberId")
        group_instance_id = reader.nullable_string("groupInstanceId") if version >= 3 else None
        client_id = reader.string("clientId")
        client_host = reader.string("clientHost")
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
