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

from protocol.coordinator_records import INT16, INT32, INT64, MAX_STRING_BYTES, Buffer, Reader, Writer

Partitions = tuple[tuple[str, tuple[int, ...]], ...]

_VALUE_HEAD = struct.Struct(">hqhib")  # version, producerId, producerEpoch, transactionTimeoutMs, status
_VALUE_TAIL = struct.Struct(">qq")  # transactionLastUpdateTimestampMs, transactionStartTimestampMs

KEY_VERSION = 0
VALUE_VERSION = 0  # what Kafka 3.8 writes, and what encode_txn_value writes when no tagged field is set
VALUE_VERSION_FLEXIBLE = 1  # the first (and highest) flexible version

NO_PRODUCER_ID = -1
_TAG_PREVIOUS_PRODUCER_ID = 0
_TAG_NEXT_PRODUCER_ID = 1
_TAG_CLIENT_TRANSACTION_VERSION = 2


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


def encode_txn_key(key: TxnKey) -> bytes:
    """TransactionLogKey version 0, the only version there is."""
    if not isinstance(key, TxnKey):
        raise TypeError(f"not a transaction log key: {key!r}")
    out = Writer(TxnRecordError)
    out.fixed(INT16, KEY_VERSION)
    out.string(key.transactional_id, "transactionalId")
    return out.getvalue()


def encode_txn_value(value: TxnValue, version: int | None = None) -> bytes:
    """TransactionLogValue; by default version 0 (Kafka 3.8's), or 1 when a tagged field is set.

    version=1 forces the flexible version, as a Kafka broker with transaction.version >= 1 writes it;
    version=0 with a tagged field set raises TxnRecordError, as Kafka's writer refuses it too.
    (Packed field by field here rather than through coordinator_records.Writer: a transaction writes three
    of these.)
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
    status = _STATUS_CODES.get(value.status) if isinstance(value.status, int) else None
    if status is None:
        raise TxnRecordError(f"unknown transaction status {value.status!r}")
    flexible = version == VALUE_VERSION_FLEXIBLE
    try:
        out = [_VALUE_HEAD.pack(version, value.producer_id, value.producer_epoch, value.timeout_ms, status)]
        partitions = value.partitions
        if partitions is None:
            out.append(b"\x00" if flexible else _NULL_ARRAY)
        else:
            out.append(_count(len(partitions), flexible))
            for topic, partition_ids in partitions:
                out.append(_string(topic, flexible))
                out.append(_count(len(partition_ids), flexible))
                out.append(struct.pack(f">{len(partition_ids)}i", *partition_ids))
                if flexible:
                    out.append(b"\x00")  # PartitionsSchema's tagged fields: none defined
        out.append(_VALUE_TAIL.pack(value.last_update_ms, value.start_ms))
        if flexible:
            # Only fields that differ from their default, in ascending tag order.
            tags: list[bytes] = []
            if value.previous_producer_id != NO_PRODUCER_ID:
                tags.append(bytes((_TAG_PREVIOUS_PRODUCER_ID, INT64.size)) + INT64.pack(value.previous_producer_id))
            if value.next_producer_id != NO_PRODUCER_ID:
                tags.append(bytes((_TAG_NEXT_PRODUCER_ID, INT64.size)) + INT64.pack(value.next_producer_id))
            if value.client_transaction_version != 0:
                tags.append(bytes((_TAG_CLIENT_TRANSACTION_VERSION, INT16.size)) +
                            INT16.pack(value.client_transaction_version))
            out.append(bytes((len(tags),)))
            out += tags
    except struct.error as exc:
        raise TxnRecordError(f"integer out of range: {exc}") from None
    return b"".join(out)


_STATUS_CODES = {int(code): code for code in TxnStatusCode}
_NULL_ARRAY = INT32.pack(-1)


def _count(n: int, flexible: bool) -> bytes:
    """An array's or a string's length: varint n + 1 (flexible), else int32."""
    return _uvarint(n + 1) if flexible else INT32.pack(n)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string(text: str, flexible: bool) -> bytes:
    """A non-nullable string (topic names), Kafka's limit of 32767 UTF-8 bytes checked."""
    if text is None:
        raise TxnRecordError("non-nullable field topic is None")
    try:
        data = text.encode("utf-8")
    except (UnicodeEncodeError, AttributeError) as exc:
        raise TxnRecordError(f"field topic is not encodable as UTF-8: {exc}") from None
    if len(data) > MAX_STRING_BYTES:
        raise TxnRecordError(f"field topic is too long to be serialized ({len(data)} bytes)")
    return (_uvarint(len(data) + 1) if flexible else INT16.pack(len(data))) + data


# --- decoding -------------------------------------------------------------------------------------------------


def decode_txn_key(data: Buffer) -> TxnKey:
    """TransactionLogKey version 0; any other version raises TxnRecordError naming it."""
    reader = Reader(data, TxnRecordError)
    version = reader.int16("key version")
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
    reader = Reader(data, TxnRecordError)
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
        previous_producer_id=_tagged_int(tags, _TAG_PREVIOUS_PRODUCER_ID, INT64, "previousProducerId", NO_PRODUCER_ID),
        next_producer_id=_tagged_int(tags, _TAG_NEXT_PRODUCER_ID, INT64, "nextProducerId", NO_PRODUCER_ID),
        producer_epoch=producer_epoch,
        timeout_ms=timeout_ms,
        status=status_code,
        partitions=partitions,
        last_update_ms=last_update_ms,
        start_ms=start_ms,
        client_transaction_version=_tagged_int(
            tags, _TAG_CLIENT_TRANSACTION_VERSION, INT16, "clientTransactionVersion", 0
        ),
    )
