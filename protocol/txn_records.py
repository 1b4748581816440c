"""Keys and values of the records in `__transaction_state`, byte for byte as Apache Kafka writes them.

Persisting transaction coordinator state in Kafka's own format keeps our log readable by Kafka's tools
(kafka-dump-log's transaction-log decoder, the console consumer's TransactionLogMessageFormatter) and lets a log
written by Kafka be replayed here. The layouts follow Kafka's JSON definitions TransactionLogKey.json and
TransactionLogValue.json (core/src/main/resources/common/message/ up to 3.8, transaction-coordinator/src/main/
resources/common/message/ from 3.9); the reading rules follow the code Kafka's message generator emits for them
(MessageDataGenerator) and Kafka's loader (kafka.coordinator.transaction.TransactionLog).

Every key and every value starts with an int16 version.
  TransactionLogKey    0: transactionalId string                (the only version; never flexible)
  TransactionLogValue  0: producerId int64, producerEpoch int16, transactionTimeoutMs int32,
                          transactionStatus int8, transactionPartitions [PartitionsSchema]? (nullable),
                          transactionLastUpdateTimestampMs int64, transactionStartTimestampMs int64
                       1: the same fields, flexible, plus tagged fields in the value's tagged-field section:
                          tag 0 previousProducerId int64 (default -1), tag 1 nextProducerId int64 (default -1),
                          tag 2 clientTransactionVersion int16 (default 0)
  PartitionsSchema        topic string, partitionIds [int32]    (version 1 adds an empty tagged-field section)
A tombstone (a null value, written when a transactional id expires) is the caller's business and never reaches
here. Kafka writes a null partition array for Empty transactions and ignores the array when loading an Empty one;
this codec keeps None and () apart and leaves that policy to the coordinator.

Classic version: int16-length strings, int32-count arrays (-1 = null). Flexible version: unsigned-varint
length + 1 (0 = null) and, after every struct, a tagged-field section: a varint count, then per field a varint
tag, a varint size and the payload. Kafka's writer emits a tagged field only when it differs from its default,
in ascending tag order.

Versions written. The key is always version 0. Kafka 3.8 always writes value version 0; Kafka 3.9+ writes
version 1 once the transaction.version feature is at least 1 (KIP-890), otherwise 0. encode_txn_value writes
version 0 unless a tagged field differs from its default (version 0 cannot carry them: Kafka's writer throws
there), so a broker that never sets them produces exactly what Kafka 3.8 produces; pass version=1 to get what
a transaction.version >= 1 broker writes.

Like Kafka's generated readers, decoders ignore bytes left over after the last field, skip unknown tags and
accept tags in any order (the last occurrence wins). They are stricter in two places: a known tag whose size
does not match its type (Kafka would read the type's width regardless and misparse what follows) and a status
code outside TxnStatusCode (Kafka's TransactionState.fromId throws on it) are errors. All decode failures
(truncation, negative lengths on non-nullable fields, bad UTF-8, unknown versions) raise TxnRecordError, and so
do values the encoder cannot represent (out-of-range integers, unknown status codes, strings over 32767 UTF-8
bytes, tagged fields in version 0).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

Buffer = bytes | bytearray | memoryview
Partitions = tuple[tuple[str, tuple[int, ...]], ...]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_VALUE_HEAD = struct.Struct(">hqhib")  # version, producerId, producerEpoch, transactionTimeoutMs, status
_VALUE_TAIL = struct.Struct(">qq")  # transactionLastUpdateTimestampMs, transactionStartTimestampMs

KEY_VERSION = 0
VALUE_VERSION = 0  # what Kafka 3.8 writes, and what encode_txn_value writes when no tagged field is set
VALUE_VERSION_FLEXIBLE = 1  # the first (and highest) flexible version

NO_PRODUCER_ID = -1
_TAG_PREVIOUS_PRODUCER_ID = 0
_TAG_NEXT_PRODUCER_ID = 1
_TAG_CLIENT_TRANSACTION_VERSION = 2

_MAX_STRING_BYTES = 0x7FFF  # Kafka rejects longer strings on both read and write, even in compact form


class TxnRecordError(ValueError):
    """Malformed or unknown-version `__transaction_state` data, or a value that cannot be encoded."""


class TxnStatusCode(IntEnum):
    """TransactionStatus: the ids of Kafka's kafka.coordinator.transaction.TransactionState."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7


@dataclass(frozen=True, slots=True)
class TxnKey:
    """TransactionLogKey."""

    transactional_id: str


def _normalize_partitions(partitions: Iterable[tuple[str, Iterable[int]]] | None) -> Partitions | None:
    if partitions is None:
        return None
    return tuple((topic, tuple(ids)) for topic, ids in partitions)


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnValue:
    """TransactionLogValue, fields in wire order (the tagged ones included where the JSON declares them).

    partitions is None for a null array (what Kafka writes for Empty), else (topic, partition ids) pairs in
    wire order; lists given here are turned into tuples so that equality with decoded values holds.
    """

    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID  # tag 0, version 1 only
    next_producer_id: int = NO_PRODUCER_ID  # tag 1, version 1 only
    producer_epoch: int
    timeout_ms: int
    status: int  # a TxnStatusCode; decoded values carry the enum member
    partitions: Partitions | None
    last_update_ms: int
    start_ms: int
    client_transaction_version: int = 0  # tag 2, version 1 only: the client's transaction.version

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", _normalize_partitions(self.partitions))

    @property
    def needs_flexible_version(self) -> bool:
        """Whether a tagged field differs from its default, so only version 1 can carry this value."""
        return (
            self.previous_producer_id != NO_PRODUCER_ID
            or self.next_producer_id != NO_PRODUCER_ID
            or self.client_transaction_version != 0
        )


# --- encoding -------------------------------------------------------------------------------------------------


def _pack(st: struct.Struct, *values: int) -> bytes:
    try:
        return st.pack(*values)
    except struct.error as exc:
        raise TxnRecordError(f"integer out of range: {values}: {exc}") from None


def _uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


def _string(out: bytearray, value: str, name: str, flexible: bool) -> None:
    """Non-nullable string: int16 length (classic) or varint length + 1 (compact)."""
    if value is None:
        raise TxnRecordError(f"non-nullable field {name} is None")
    try:
        data = value.encode("utf-8")
    except (UnicodeEncodeError, AttributeError) as exc:
        raise TxnRecordError(f"field {name} is not encodable as UTF-8: {exc}") from None
    if len(data) > _MAX_STRING_BYTES:
        raise TxnRecordError(f"field {name} is too long to be serialized ({len(data)} bytes)")
    if flexible:
        _uvarint(out, len(data) + 1)
    else:
        out += _INT16.pack(len(data))
    out += data


def _array_length(out: bytearray, count: int | None, flexible: bool) -> None:
    """Array element count; None writes a null array."""
    if flexible:
        _uvarint(out, 0 if count is None else count + 1)
    else:
        out += _pack(_INT32, -1 if count is None else count)


def encode_txn_key(key: TxnKey) -> bytes:
    """TransactionLogKey version 0, the only version there is."""
    if not isinstance(key, TxnKey):
        raise TypeError(f"not a transaction log key: {key!r}")
    out = bytearray(_INT16.pack(KEY_VERSION))
    _string(out, key.transactional_id, "transactionalId", flexible=False)
    return bytes(out)


def encode_txn_value(value: TxnValue, version: int | None = None) -> bytes:
    """TransactionLogValue; by default version 0 (Kafka 3.8's), or 1 when a tagged field is set.

    version=1 forces the flexible version, as a Kafka broker with transaction.version >= 1 writes it;
    version=0 with a tagged field set raises TxnRecordError, as Kafka's writer refuses it too.
    """
    if not isinstance(value, TxnValue):
        raise TypeError(f"not a transaction log value: {value!r}")
    if version is None:
        version = VALUE_VERSION_FLEXIBLE if value.needs_flexible_version else VALUE_VERSION
    elif version not in (VALUE_VERSION, VALUE_VERSION_FLEXIBLE):
        raise TxnRecordError(f"unknown TransactionLogValue version {version}")
    elif version == VALUE_VERSION and value.needs_flexible_version:
        raise TxnRecordError(
            "previousProducerId, nextProducerId and clientTransactionVersion need TransactionLogValue version 1"
        )
    try:
        status = TxnStatusCode(value.status)
    except ValueError:
        raise TxnRecordError(f"unknown transaction status {value.status!r}") from None
    flexible = version == VALUE_VERSION_FLEXIBLE

    out = bytearray(_pack(_VALUE_HEAD, version, value.producer_id, value.producer_epoch, value.timeout_ms, status))
    partitions = value.partitions
    _array_length(out, None if partitions is None else len(partitions), flexible)
    for topic, partition_ids in partitions or ():
        _string(out, topic, "topic", flexible)
        _array_length(out, len(partition_ids), flexible)
        for partition_id in partition_ids:
            out += _pack(_INT32, partition_id)
        if flexible:
            out.append(0)  # PartitionsSchema's tagged fields: none
    out += _pack(_VALUE_TAIL, value.last_update_ms, value.start_ms)
    if flexible:
        tags: list[tuple[int, bytes]] = []
        if value.previous_producer_id != NO_PRODUCER_ID:
            tags.append((_TAG_PREVIOUS_PRODUCER_ID, _pack(_INT64, value.previous_producer_id)))
        if value.next_producer_id != NO_PRODUCER_ID:
            tags.append((_TAG_NEXT_PRODUCER_ID, _pack(_INT64, value.next_producer_id)))
        if value.client_transaction_version != 0:
            tags.append((_TAG_CLIENT_TRANSACTION_VERSION, _pack(_INT16, value.client_transaction_version)))
        _uvarint(out, len(tags))
        for tag, payload in tags:
            _uvarint(out, tag)
            _uvarint(out, len(payload))
            out += payload
    return bytes(out)


# --- decoding -------------------------------------------------------------------------------------------------


class _Reader:
    """Cursor over one key or value; every read checks bounds so garbage raises TxnRecordError only."""

    __slots__ = ("_data", "_pos", "flexible")

    def __init__(self, data: Buffer) -> None:
        self._data = memoryview(data).cast("B")
        self._pos = 0
        self.flexible = False

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos

    def take(self, n: int, what: str) -> memoryview:
        if n > self.remaining:
            raise TxnRecordError(f"truncated: {what} needs {n} bytes, {self.remaining} left")
        view = self._data[self._pos : self._pos + n]
        self._pos += n
        return view

    def fixed(self, st: struct.Struct, what: str) -> tuple[int, ...]:
        if st.size > self.remaining:
            raise TxnRecordError(f"truncated: {what} needs {st.size} bytes, {self.remaining} left")
        values = st.unpack_from(self._data, self._pos)
        self._pos += st.size
        return values

    def uvarint(self, what: str) -> int:
        """Unsigned LEB128 of at most 5 bytes holding a uint32, as Kafka's ByteUtils.readUnsignedVarint."""
        value = 0
        for shift in range(0, 35, 7):
            if self._pos >= len(self._data):
                raise TxnRecordError(f"truncated: varint {what}")
            byte = self._data[self._pos]
            self._pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value > 0xFFFFFFFF:
                    raise TxnRecordError(f"varint {what} exceeds 32 bits")
                return value
        raise TxnRecordError(f"varint {what} is longer than 5 bytes")

    def int_varint(self, what: str) -> int:
        """A varint Kafka reads into a Java int: past 2^31 - 1 it would be negative, i.e. nonsense."""
        value = self.uvarint(what)
        if value > 0x7FFFFFFF:
            raise TxnRecordError(f"{what} has invalid value {value}")
        return value

    def _length(self, classic: struct.Struct, what: str) -> int:
        """Length prefix; negative means null. Compact lengths are stored + 1, so 0 is null."""
        if self.flexible:
            return self.int_varint(what) - 1
        return self.fixed(classic, what)[0]

    def string(self, what: str) -> str:
        length = self._length(_INT16, what)
        if length < 0:
            raise TxnRecordError(f"non-nullable field {what} was serialized as null")
        if length > _MAX_STRING_BYTES:
            raise TxnRecordError(f"string field {what} had invalid length {length}")
        raw = self.take(length, what)
        try:
            # Java would substitute U+FFFD for bad UTF-8; a Java-written record never has any, so garbage it is.
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise TxnRecordError(f"field {what} is not valid UTF-8: {exc}") from None

    def nullable_array_count(self, what: str) -> int | None:
        count = self._length(_INT32, what)
        if count < 0:
            return None
        # Kafka's check: every element takes at least one byte, so a bigger count cannot be honest.
        if count > self.remaining:
            raise TxnRecordError(f"{what} claims {count} elements, only {self.remaining} bytes left")
        return count

    def array_count(self, what: str) -> int:
        count = self.nullable_array_count(what)
        if count is None:
            raise TxnRecordError(f"non-nullable field {what} was serialized as null")
        return count

    def int32s(self, count: int, what: str) -> tuple[int, ...]:
        if 4 * count > self.remaining:
            raise TxnRecordError(f"truncated: {what} needs {4 * count} bytes, {self.remaining} left")
        values = struct.unpack_from(f">{count}i", self._data, self._pos)
        self._pos += 4 * count
        return values

    def tagged_fields(self, what: str) -> dict[int, memoryview]:
        """A flexible struct's tagged-field section as {tag: payload}; the caller picks the tags it knows."""
        if not self.flexible:
            return {}
        fields: dict[int, memoryview] = {}
        for _ in range(self.int_varint(f"{what} tagged field count")):
            tag = self.int_varint(f"{what} tag")
            size = self.int_varint(f"{what} tagged field size")
            fields[tag] = self.take(size, f"{what} tagged field {tag}")
        return fields


def decode_txn_key(data: Buffer) -> TxnKey:
    """TransactionLogKey version 0; any other version raises TxnRecordError naming it."""
    reader = _Reader(data)
    version = reader.fixed(_INT16, "key version")[0]
    if version != KEY_VERSION:
        raise TxnRecordError(f"unknown TransactionLogKey version {version}")
    return TxnKey(reader.string("transactionalId"))


def _tagged_int(fields: dict[int, memoryview], tag: int, st: struct.Struct, name: str, default: int) -> int:
    payload = fields.get(tag)
    if payload is None:
        return default
    if len(payload) != st.size:
        raise TxnRecordError(f"tagged field {name} (tag {tag}) has size {len(payload)}, expected {st.size}")
    return st.unpack(payload)[0]


def decode_txn_value(data: Buffer) -> TxnValue:
    """TransactionLogValue versions 0 and 1; tagged fields absent (always so in version 0) get their defaults."""
    reader = _Reader(data)
    version, producer_id, producer_epoch, timeout_ms, status = reader.fixed(_VALUE_HEAD, "TransactionLogValue")
    if version not in (VALUE_VERSION, VALUE_VERSION_FLEXIBLE):
        raise TxnRecordError(f"unknown TransactionLogValue version {version}")
    try:
        status_code = TxnStatusCode(status)
    except ValueError:
        raise TxnRecordError(f"unknown transaction status {status}") from None
    reader.flexible = version == VALUE_VERSION_FLEXIBLE

    partitions: Partitions | None = None
    count = reader.nullable_array_count("transactionPartitions")
    if count is not None:
        entries = []
        for _ in range(count):
            topic = reader.string("topic")
            ids = reader.int32s(reader.array_count("partitionIds"), "partitionIds")
            reader.tagged_fields("PartitionsSchema")  # none defined: all skipped
            entries.append((topic, ids))
        partitions = tuple(entries)
    last_update_ms, start_ms = reader.fixed(_VALUE_TAIL, "timestamps")

    tags = reader.tagged_fields("TransactionLogValue")
    return TxnValue(
        producer_id=producer_id,
        previous_producer_id=_tagged_int(tags, _TAG_PREVIOUS_PRODUCER_ID, _INT64, "previousProducerId", NO_PRODUCER_ID),
        next_producer_id=_tagged_int(tags, _TAG_NEXT_PRODUCER_ID, _INT64, "nextProducerId", NO_PRODUCER_ID),
        producer_epoch=producer_epoch,
        timeout_ms=timeout_ms,
        status=status_code,
        partitions=partitions,
        last_update_ms=last_update_ms,
        start_ms=start_ms,
        client_transaction_version=_tagged_int(
            tags, _TAG_CLIENT_TRANSACTION_VERSION, _INT16, "clientTransactionVersion", 0
        ),
    )
