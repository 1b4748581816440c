"""`__transaction_state` key/value codec against byte strings written out here from Kafka's JSON definitions.

The golden bytes are spelled out field by field in hex following TransactionLogKey.json and
TransactionLogValue.json (apache/kafka, transaction-coordinator/src/main/resources/common/message/), and the
other expected encodings are assembled with struct.pack, independently of the encoder, so a layout mistake in
protocol/txn_records.py cannot hide behind a matching decoder.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.txn_records import (
    TxnKey,
    TxnRecordError,
    TxnStatusCode,
    TxnValue,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)

INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# --- independent wire builders ----------------------------------------------------------------------------------


def i8(n: int) -> bytes:
    return struct.pack(">b", n)


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def string(s: str) -> bytes:
    data = s.encode("utf-8")
    return i16(len(data)) + data


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_string(s: str) -> bytes:
    data = s.encode("utf-8")
    return uvarint(len(data) + 1) + data


def tagged(*fields: tuple[int, bytes]) -> bytes:
    """A tagged-field section: count, then (tag, size, payload) each."""
    return uvarint(len(fields)) + b"".join(uvarint(tag) + uvarint(len(data)) + data for tag, data in fields)


NO_TAGS = tagged()
# Tags unknown to TransactionLogValue and PartitionsSchema; tag and size above 127 take multi-byte varints.
UNKNOWN_TAGS = tagged((3, b"\x01"), (300, b"z" * 200))


def v0_head(producer_id: int, epoch: int, timeout_ms: int, status: int) -> bytes:
    return i16(0) + i64(producer_id) + i16(epoch) + i32(timeout_ms) + i8(status)


def v1_head(producer_id: int, epoch: int, timeout_ms: int, status: int) -> bytes:
    return i16(1) + i64(producer_id) + i16(epoch) + i32(timeout_ms) + i8(status)


# --- golden bytes -----------------------------------------------------------------------------------------------

GOLDEN_KEY = bytes.fromhex(
    "0000"  # version 0
    "0003" "74786e"  # transactionalId: int16 length 3, "txn"
)  # fmt: skip

GOLDEN_V0 = bytes.fromhex(
    "0000"  # version 0
    "00000000000003e8"  # producerId 1000
    "0005"  # producerEpoch 5
    "0000ea60"  # transactionTimeoutMs 60000
    "01"  # transactionStatus Ongoing
    "00000002"  # transactionPartitions: int32 count 2
    "0006" "6f7264657273"  # topic "orders"
    "00000002" "00000000" "00000007"  # partitionIds [0, 7]
    "0003" "6c6f67"  # topic "log"
    "00000000"  # partitionIds []
    "0000018bcfe56800"  # transactionLastUpdateTimestampMs 1700000000000
    "0000018bcfe540f0"  # transactionStartTimestampMs 1699999990000
)  # fmt: skip
GOLDEN_V0_VALUE = TxnValue(
    producer_id=1000,
    producer_epoch=5,
    timeout_ms=60_000,
    status=TxnStatusCode.ONGOING,
    partitions=(("orders", (0, 7)), ("log", ())),
    last_update_ms=1_700_000_000_000,
    start_ms=1_699_999_990_000,
)

GOLDEN_V0_EMPTY = bytes.fromhex(
    "0000"  # version 0
    "000000000000002a"  # producerId 42
    "0000"  # producerEpoch 0
    "00000064"  # transactionTimeoutMs 100
    "00"  # transactionStatus Empty
    "ffffffff"  # transactionPartitions: null, what Kafka writes for Empty
    "0000000000000001"  # transactionLastUpdateTimestampMs 1
    "ffffffffffffffff"  # transactionStartTimestampMs -1
)  # fmt: skip
GOLDEN_V0_EMPTY_VALUE = TxnValue(
    producer_id=42,
    producer_epoch=0,
    timeout_ms=100,
    status=TxnStatusCode.EMPTY,
    partitions=None,
    last_update_ms=1,
    start_ms=-1,
)

GOLDEN_V1 = bytes.fromhex(
    "0001"  # version 1 (flexible)
    "00000000000003e8"  # producerId 1000
    "0000"  # producerEpoch 0
    "0000ea60"  # transactionTimeoutMs 60000
    "02"  # transactionStatus PrepareCommit
    "02"  # transactionPartitions: compact array, varint 1 + 1
    "02" "74"  # topic: compact string, varint 1 + 1, "t"
    "03" "00000000" "00000002"  # partitionIds: compact array, varint 2 + 1, [0, 2]
    "00"  # PartitionsSchema tagged fields: none
    "0000018bcfe56800"  # transactionLastUpdateTimestampMs 1700000000000
    "0000018bcfe540f0"  # transactionStartTimestampMs 1699999990000
    "02"  # two tagged fields, ascending tags; nextProducerId is -1, its default, so left out
    "00" "08" "00000000000003e7"  # tag 0 previousProducerId, size 8, 999
    "02" "02" "0002"  # tag 2 clientTransactionVersion, size 2, 2
)  # fmt: skip
GOLDEN_V1_VALUE = TxnValue(
    producer_id=1000,
    previous_producer_id=999,
    producer_epoch=0,
    timeout_ms=60_000,
    status=TxnStatusCode.PREPARE_COMMIT,
    partitions=(("t", (0, 2)),),
    last_update_ms=1_700_000_000_000,
    start_ms=1_699_999_990_000,
    client_transaction_version=2,
)


def test_golden_key() -> None:
    assert encode_txn_key(TxnKey("txn")) == GOLDEN_KEY
    assert decode_txn_key(GOLDEN_KEY) == TxnKey("txn")


def test_golden_v0_value() -> None:
    assert encode_txn_value(GOLDEN_V0_VALUE) == GOLDEN_V0
    assert decode_txn_value(GOLDEN_V0) == GOLDEN_V0_VALUE


def test_golden_v0_empty_value_with_null_partitions() -> None:
    assert encode_txn_value(GOLDEN_V0_EMPTY_VALUE) == GOLDEN_V0_EMPTY
    decoded = decode_txn_value(GOLDEN_V0_EMPTY)
    assert decoded == GOLDEN_V0_EMPTY_VALUE
    assert decoded.partitions is None


def test_golden_v1_value_with_tagged_fields() -> None:
    assert encode_txn_value(GOLDEN_V1_VALUE) == GOLDEN_V1
    assert decode_txn_value(GOLDEN_V1) == GOLDEN_V1_VALUE


# --- versions ---------------------------------------------------------------------------------------------------


def test_status_codes_are_kafkas_transaction_state_ids() -> None:
    assert {code.name: code.value for code in TxnStatusCode} == {
        "EMPTY": 0,
        "ONGOING": 1,
        "PREPARE_COMMIT": 2,
        "PREPARE_ABORT": 3,
        "COMPLETE_COMMIT": 4,
        "COMPLETE_ABORT": 5,
        "DEAD": 6,
        "PREPARE_EPOCH_FENCE": 7,
    }


def test_decoded_status_is_the_enum() -> None:
    assert decode_txn_value(GOLDEN_V0).status is TxnStatusCode.ONGOING


def test_default_tagged_fields_stay_version_0() -> None:
    # Kafka 3.8 always writes version 0: without previous/next producer ids or a client transaction version
    # there is nothing version 1 could add.
    assert encode_txn_value(GOLDEN_V0_VALUE)[:2] == i16(0)


@pytest.mark.parametrize(
    "changes",
    [{"previous_producer_id": 5}, {"next_producer_id": 0}, {"client_transaction_version": 1}],
)
def test_any_tagged_field_selects_version_1(changes: dict[str, int]) -> None:
    value = TxnValue(**{**_fields(GOLDEN_V0_VALUE), **changes})
    encoded = encode_txn_value(value)
    assert encoded[:2] == i16(1)
    assert decode_txn_value(encoded) == value


def test_next_producer_id_only() -> None:
    value = TxnValue(**{**_fields(GOLDEN_V0_EMPTY_VALUE), "next_producer_id": 43})
    expected = v1_head(42, 0, 100, 0) + uvarint(0) + i64(1) + i64(-1) + tagged((1, i64(43)))
    assert encode_txn_value(value) == expected
    assert decode_txn_value(expected) == value


def test_forced_version_1_without_tagged_fields() -> None:
    # What a Kafka broker with transaction.version >= 1 writes for an Empty transaction.
    expected = v1_head(42, 0, 100, 0) + uvarint(0) + i64(1) + i64(-1) + NO_TAGS
    assert encode_txn_value(GOLDEN_V0_EMPTY_VALUE, version=1) == expected
    assert decode_txn_value(expected) == GOLDEN_V0_EMPTY_VALUE


def test_forced_version_0_refuses_tagged_fields() -> None:
    with pytest.raises(TxnRecordError, match="version 1"):
        encode_txn_value(GOLDEN_V1_VALUE, version=0)
    assert encode_txn_value(GOLDEN_V0_VALUE, version=0) == GOLDEN_V0


@pytest.mark.parametrize("version", [-1, 2])
def test_encoder_refuses_unknown_versions(version: int) -> None:
    with pytest.raises(TxnRecordError, match=f"version {version}"):
        encode_txn_value(GOLDEN_V0_VALUE, version=version)


@pytest.mark.parametrize("version", [1, 2, -1, 32767])
def test_unknown_key_versions_name_the_version(version: int) -> None:
    with pytest.raises(TxnRecordError, match=f"version {version}"):
        decode_txn_key(i16(version) + string("txn"))


@pytest.mark.parametrize("version", [2, 3, -1])
def test_unknown_value_versions_name_the_version(version: int) -> None:
    with pytest.raises(TxnRecordError, match=f"version {version}"):
        decode_txn_value(i16(version) + GOLDEN_V0[2:])


@pytest.mark.parametrize("status", [8, 127, -1, -128])
def test_unknown_status_is_rejected(status: int) -> None:
    # Kafka's TransactionState.fromId throws on ids it does not know.
    data = v0_head(1, 0, 100, status) + i32(-1) + i64(0) + i64(0)
    with pytest.raises(TxnRecordError, match="status"):
        decode_txn_value(data)


def test_partitions_given_as_lists_compare_equal_to_decoded_tuples() -> None:
    value = TxnValue(**{**_fields(GOLDEN_V0_VALUE), "partitions": [("orders", [0, 7]), ("log", [])]})
    assert value == GOLDEN_V0_VALUE
    assert encode_txn_value(value) == GOLDEN_V0


def test_empty_partition_array_is_not_null() -> None:
    value = TxnValue(**{**_fields(GOLDEN_V0_EMPTY_VALUE), "partitions": ()})
    encoded = encode_txn_value(value)
    assert encoded == v0_head(42, 0, 100, 0) + i32(0) + i64(1) + i64(-1)
    assert decode_txn_value(encoded).partitions == ()


def _fields(value: TxnValue) -> dict[str, object]:
    return {name: getattr(value, name) for name in TxnValue.__dataclass_fields__}


# --- tagged fields ----------------------------------------------------------------------------------------------


def _flexible_value(partition_tags: bytes, value_tags: bytes) -> bytes:
    return (
        v1_head(7, 3, 900, TxnStatusCode.PREPARE_ABORT)
        + uvarint(2 + 1)
        + compact_string("tópic")
        + uvarint(3 + 1)
        + i32(0)
        + i32(1)
        + i32(INT32_MAX)
        + partition_tags
        + compact_string("x" * 130)  # length needs a two-byte varint
        + uvarint(0 + 1)
        + partition_tags
        + i64(10)
        + i64(5)
        + value_tags
    )


FLEXIBLE_VALUE = TxnValue(
    producer_id=7,
    producer_epoch=3,
    timeout_ms=900,
    status=TxnStatusCode.PREPARE_ABORT,
    partitions=(("tópic", (0, 1, INT32_MAX)), ("x" * 130, ())),
    last_update_ms=10,
    start_ms=5,
)


def test_unknown_tagged_fields_are_skipped() -> None:
    assert decode_txn_value(_flexible_value(NO_TAGS, NO_TAGS)) == FLEXIBLE_VALUE
    assert decode_txn_value(_flexible_value(UNKNOWN_TAGS, UNKNOWN_TAGS)) == FLEXIBLE_VALUE


def test_known_tags_among_unknown_ones_in_any_order() -> None:
    value_tags = tagged(
        (300, b"z" * 200),
        (2, i16(INT16_MAX)),
        (7, b""),
        (1, i64(INT64_MIN)),
        (0, i64(INT64_MAX)),
    )
    decoded = decode_txn_value(_flexible_value(UNKNOWN_TAGS, value_tags))
    assert decoded == TxnValue(
        **{
            **_fields(FLEXIBLE_VALUE),
            "previous_producer_id": INT64_MAX,
            "next_producer_id": INT64_MIN,
            "client_transaction_version": INT16_MAX,
        }
    )


def test_tagged_fields_set_to_their_defaults_decode_as_defaults() -> None:
    decoded = decode_txn_value(_flexible_value(NO_TAGS, tagged((0, i64(-1)), (1, i64(-1)), (2, i16(0)))))
    assert decoded == FLEXIBLE_VALUE


@pytest.mark.parametrize(("tag", "payload"), [(0, i32(1)), (1, i64(1) + b"\x00"), (2, i64(1)), (2, b"")])
def test_known_tag_with_the_wrong_size_is_rejected(tag: int, payload: bytes) -> None:
    with pytest.raises(TxnRecordError, match=f"tag {tag}"):
        decode_txn_value(_flexible_value(NO_TAGS, tagged((tag, payload))))


def test_tags_in_version_0_are_not_read() -> None:
    # Version 0 has no tagged-field section: a trailing byte is leftover data, which Kafka ignores.
    assert decode_txn_value(GOLDEN_V0 + tagged((0, i64(5)))) == GOLDEN_V0_VALUE


def test_tagged_field_size_beyond_the_data_is_rejected() -> None:
    data = GOLDEN_V1[:-15] + uvarint(1) + uvarint(9) + uvarint(5) + b"\x10"
    with pytest.raises(TxnRecordError, match="truncated"):
        decode_txn_value(data)


# --- malformed input --------------------------------------------------------------------------------------------


VALID_ENCODINGS = [
    ("key", GOLDEN_KEY),
    ("key", i16(0) + string("")),
    ("value", GOLDEN_V0),
    ("value", GOLDEN_V0_EMPTY),
    ("value", GOLDEN_V1),
    ("value", _flexible_value(UNKNOWN_TAGS, UNKNOWN_TAGS)),
]
DECODERS: dict[str, Callable[[bytes | bytearray | memoryview], object]] = {
    "key": decode_txn_key,
    "value": decode_txn_value,
}


@pytest.mark.parametrize(("kind", "data"), VALID_ENCODINGS)
def test_every_prefix_is_truncated(kind: str, data: bytes) -> None:
    decode = DECODERS[kind]
    decode(data)
    for end in range(len(data)):
        with pytest.raises(TxnRecordError):
            decode(data[:end])


@pytest.mark.parametrize(("kind", "data"), VALID_ENCODINGS)
def test_trailing_bytes_are_ignored(kind: str, data: bytes) -> None:
    # Kafka's generated readers stop after the last field and never check for leftovers.
    decode = DECODERS[kind]
    assert decode(data + b"\x00garbage") == decode(data)


@pytest.mark.parametrize(("kind", "data"), VALID_ENCODINGS)
def test_accepts_memoryview_and_bytearray(kind: str, data: bytes) -> None:
    decode = DECODERS[kind]
    assert decode(memoryview(data)) == decode(bytearray(data)) == decode(data)


def test_null_transactional_id_is_rejected() -> None:
    with pytest.raises(TxnRecordError, match="transactionalId"):
        decode_txn_key(i16(0) + i16(-1))


def test_invalid_utf8_is_a_txn_record_error() -> None:
    with pytest.raises(TxnRecordError, match="UTF-8"):
        decode_txn_key(i16(0) + i16(2) + b"\xc3\x28")
    data = v0_head(1, 0, 1, 1) + i32(1) + i16(1) + b"\xff" + i32(0) + i64(0) + i64(0)
    with pytest.raises(TxnRecordError, match="UTF-8"):
        decode_txn_value(data)


def test_nulls_where_not_nullable_are_rejected() -> None:
    with pytest.raises(TxnRecordError, match="topic"):
        decode_txn_value(v0_head(1, 0, 1, 1) + i32(1) + i16(-1) + i32(0) + i64(0) + i64(0))
    with pytest.raises(TxnRecordError, match="partitionIds"):
        decode_txn_value(v0_head(1, 0, 1, 1) + i32(1) + string("t") + i32(-1) + i64(0) + i64(0))
    with pytest.raises(TxnRecordError, match="topic"):
        decode_txn_value(v1_head(1, 0, 1, 1) + uvarint(2) + uvarint(0) + uvarint(1) + NO_TAGS)
    with pytest.raises(TxnRecordError, match="partitionIds"):
        decode_txn_value(v1_head(1, 0, 1, 1) + uvarint(2) + compact_string("t") + uvarint(0) + NO_TAGS)


def test_null_partitions_in_version_1() -> None:
    data = v1_head(1, 0, 1, 0) + uvarint(0) + i64(2) + i64(3) + NO_TAGS
    assert decode_txn_value(data).partitions is None


def test_implausible_counts_are_rejected() -> None:
    with pytest.raises(TxnRecordError, match="transactionPartitions"):
        decode_txn_value(v0_head(1, 0, 1, 1) + i32(INT32_MAX) + i64(0) + i64(0))
    with pytest.raises(TxnRecordError, match="partitionIds"):
        decode_txn_value(v0_head(1, 0, 1, 1) + i32(1) + string("t") + i32(5) + i32(0) + i64(0))
    with pytest.raises(TxnRecordError, match="invalid"):
        decode_txn_value(v1_head(1, 0, 1, 1) + uvarint(2**31 + 1) + b"\x00" * 32)


def test_overlong_string_length_is_rejected() -> None:
    # An int16 length cannot exceed 0x7fff; a compact string length can, and Kafka refuses it.
    data = v1_head(1, 0, 1, 1) + uvarint(2) + uvarint(0x8000 + 1) + b"a" * 0x8000 + uvarint(1) + NO_TAGS
    with pytest.raises(TxnRecordError, match="invalid length"):
        decode_txn_value(data + i64(0) + i64(0) + NO_TAGS)


def test_varint_longer_than_five_bytes_is_rejected() -> None:
    with pytest.raises(TxnRecordError, match="5 bytes"):
        decode_txn_value(v1_head(1, 0, 1, 1) + b"\x80\x80\x80\x80\x80\x01")


def test_varint_beyond_32_bits_is_rejected() -> None:
    with pytest.raises(TxnRecordError, match="32 bits"):
        decode_txn_value(v1_head(1, 0, 1, 1) + b"\xff\xff\xff\xff\x7f")


@given(st.binary(max_size=96))
def test_garbage_raises_only_txn_record_error(data: bytes) -> None:
    for decode in DECODERS.values():
        try:
            decode(data)
        except TxnRecordError:
            pass


@given(st.sampled_from([0, 1]), st.sampled_from(list(TxnStatusCode)), st.binary(max_size=120))
def test_garbage_after_a_valid_head_raises_only_txn_record_error(version: int, status: int, body: bytes) -> None:
    head = (v0_head if version == 0 else v1_head)(1, 0, 1, status)
    for data in (i16(version) + body, head + body):
        for decode in DECODERS.values():
            try:
                decode(data)
            except TxnRecordError:
                pass


@given(st.integers(0, len(GOLDEN_V1) - 1), st.integers(0, 255))
def test_single_byte_corruption_raises_only_txn_record_error(index: int, byte: int) -> None:
    data = bytearray(GOLDEN_V1)
    data[index] = byte
    try:
        decode_txn_value(bytes(data))
    except TxnRecordError:
        pass


# --- encoder limits ---------------------------------------------------------------------------------------------


def test_string_length_limit_is_kafkas() -> None:
    at_limit = "a" * 0x7FFF
    assert decode_txn_key(encode_txn_key(TxnKey(at_limit))) == TxnKey(at_limit)
    with pytest.raises(TxnRecordError, match="too long"):
        encode_txn_key(TxnKey("a" * 0x8000))
    # The limit counts UTF-8 bytes, not characters.
    with pytest.raises(TxnRecordError, match="too long"):
        encode_txn_key(TxnKey("é" * 0x4000))
    value = TxnValue(**{**_fields(GOLDEN_V0_VALUE), "partitions": (("a" * 0x8000, (0,)),)})
    for version in (0, 1):
        with pytest.raises(TxnRecordError, match="too long"):
            encode_txn_value(value, version=version)


def _with(**changes: object) -> TxnValue:
    return TxnValue(**{**_fields(GOLDEN_V0_VALUE), **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "encode",
    [
        lambda: encode_txn_value(_with(producer_id=INT64_MAX + 1)),
        lambda: encode_txn_value(_with(producer_epoch=INT16_MAX + 1)),
        lambda: encode_txn_value(_with(timeout_ms=INT32_MIN - 1)),
        lambda: encode_txn_value(_with(status=8)),
        lambda: encode_txn_value(_with(status=-1)),
        lambda: encode_txn_value(_with(last_update_ms=INT64_MIN - 1)),
        lambda: encode_txn_value(_with(start_ms=INT64_MAX + 1)),
        lambda: encode_txn_value(_with(partitions=(("t", (INT32_MAX + 1,)),))),
        lambda: encode_txn_value(_with(partitions=((None, (0,)),))),
        lambda: encode_txn_value(_with(previous_producer_id=INT64_MIN - 1)),
        lambda: encode_txn_value(_with(next_producer_id=INT64_MAX + 1)),
        lambda: encode_txn_value(_with(client_transaction_version=INT16_MAX + 1)),
        lambda: encode_txn_key(TxnKey("\ud800")),  # lone surrogate: not UTF-8
        lambda: encode_txn_key(TxnKey(None)),  # type: ignore[arg-type]
    ],
)
def test_unencodable_values_raise_txn_record_error(encode: Callable[[], object]) -> None:
    with pytest.raises(TxnRecordError):
        encode()


def test_encoders_reject_other_types() -> None:
    with pytest.raises(TypeError):
        encode_txn_key("txn")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode_txn_value(TxnKey("txn"))  # type: ignore[arg-type]


# --- round trips ------------------------------------------------------------------------------------------------

# st.text() covers non-ASCII (and never yields surrogates); 100 characters stay far below 32767 UTF-8 bytes.
texts = st.text(max_size=100)
int16s = st.integers(INT16_MIN, INT16_MAX)
int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)
partition_lists = st.none() | st.lists(st.tuples(texts, st.lists(int32s, max_size=8).map(tuple)), max_size=4).map(tuple)
txn_values = st.builds(
    TxnValue,
    producer_id=int64s,
    previous_producer_id=st.just(-1) | int64s,
    next_producer_id=st.just(-1) | int64s,
    producer_epoch=int16s,
    timeout_ms=int32s,
    status=st.sampled_from(list(TxnStatusCode)),
    partitions=partition_lists,
    last_update_ms=int64s,
    start_ms=int64s,
    client_transaction_version=st.just(0) | int16s,
)


@given(st.builds(TxnKey, texts))
def test_key_round_trip(key: TxnKey) -> None:
    encoded = encode_txn_key(key)
    assert encoded[:2] == i16(0)
    assert decode_txn_key(encoded) == key


@given(txn_values)
def test_value_round_trip(value: TxnValue) -> None:
    encoded = encode_txn_value(value)
    assert encoded[:2] == i16(1 if value.needs_flexible_version else 0)
    assert decode_txn_value(encoded) == value


@given(txn_values)
def test_value_round_trip_in_version_1(value: TxnValue) -> None:
    assert decode_txn_value(encode_txn_value(value, version=1)) == value


@given(txn_values)
def test_value_prefixes_are_truncated(value: TxnValue) -> None:
    data = encode_txn_value(value)
    for end in range(0, len(data), max(1, len(data) // 40)):
        with pytest.raises(TxnRecordError):
            decode_txn_value(data[:end])
