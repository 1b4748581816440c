"""`__consumer_offsets` key/value codec against byte strings assembled here from Kafka's JSON definitions.

The expected bytes are built field by field with struct.pack following OffsetCommitKey/Value.json and
GroupMetadataKey/Value.json (apache/kafka, group-coordinator/src/main/resources/common/message/), independently
of the encoder, so a layout mistake in protocol/group_records.py cannot hide behind a matching decoder.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.group_records import (
    GroupKey,
    GroupRecordError,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_value,
    encode_key,
    encode_offset_value,
)

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# --- independent wire builders (classic and compact types) ------------------------------------------------------


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def string(s: str | None) -> bytes:
    """STRING / NULLABLE_STRING: int16 byte length, -1 for null."""
    if s is None:
        return i16(-1)
    data = s.encode("utf-8")
    return i16(len(data)) + data


def bytes32(b: bytes) -> bytes:
    """BYTES: int32 length."""
    return i32(len(b)) + b


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_string(s: str | None) -> bytes:
    """COMPACT_(NULLABLE_)STRING: unsigned varint length + 1, 0 for null."""
    if s is None:
        return uvarint(0)
    data = s.encode("utf-8")
    return uvarint(len(data) + 1) + data


def compact_bytes(b: bytes) -> bytes:
    return uvarint(len(b) + 1) + b


def tagged(*fields: tuple[int, bytes]) -> bytes:
    """A tagged-field section: count, then (tag, size, payload) each."""
    return uvarint(len(fields)) + b"".join(uvarint(tag) + uvarint(len(data)) + data for tag, data in fields)


NO_TAGS = tagged()
# Tag and size above 127 so both take multi-byte varints; no tag is defined for these structs, so all are unknown.
UNKNOWN_TAGS = tagged((0, b"\x01"), (300, b"z" * 200))

SUBSCRIPTION = b"\x00\x01\x00\x00\x00\x01\x00\x05topic\xff\xff\xff\xff"
ASSIGNMENT = b"\x00\x01\x00\x00\x00\x01\x00\x05topic\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"


# --- keys -------------------------------------------------------------------------------------------------------


def test_offset_key_is_version_1() -> None:
    key = OffsetKey("grüppe", "orders", 7)
    expected = i16(1) + string("grüppe") + string("orders") + i32(7)
    assert encode_key(key) == expected
    assert decode_key(expected) == key


def test_offset_key_version_0_decodes() -> None:
    assert decode_key(i16(0) + string("g") + string("t") + i32(INT32_MAX)) == OffsetKey("g", "t", INT32_MAX)


def test_group_key_is_version_2() -> None:
    expected = i16(2) + string("my-group")
    assert encode_key(GroupKey("my-group")) == expected
    assert decode_key(expected) == GroupKey("my-group")


@pytest.mark.parametrize("version", [3, 4, 8, 11, 15, 16, -1, 32767])
def test_unknown_key_versions_name_the_version(version: int) -> None:
    # Kafka 4's consumer/share group keys (3+) carry a group id string too: still not ours to read.
    with pytest.raises(GroupRecordError, match=f"version {version}"):
        decode_key(i16(version) + string("g"))


def test_encode_key_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        encode_key(("g", "t", 0))  # type: ignore[arg-type]


def test_empty_key_is_an_error() -> None:
    with pytest.raises(GroupRecordError):
        decode_key(b"")


# --- offset values ----------------------------------------------------------------------------------------------


def test_offset_value_is_version_3() -> None:
    value = OffsetValue(offset=1234, leader_epoch=5, metadata="méta", commit_timestamp=1_700_000_000_000)
    expected = i16(3) + i64(1234) + i32(5) + string("méta") + i64(1_700_000_000_000)
    assert encode_offset_value(value) == expected
    assert decode_offset_value(expected) == value


def test_offset_value_with_expire_timestamp_is_version_1() -> None:
    value = OffsetValue(offset=42, metadata="", commit_timestamp=1000, expire_timestamp=2000)
    expected = i16(1) + i64(42) + string("") + i64(1000) + i64(2000)
    assert encode_offset_value(value) == expected
    assert decode_offset_value(expected) == value


def test_version_1_drops_the_leader_epoch_as_kafka_does() -> None:
    # leaderEpoch is ignorable and absent from version 1: Kafka's writer silently leaves it out.
    encoded = encode_offset_value(OffsetValue(offset=1, leader_epoch=9, commit_timestamp=2, expire_timestamp=3))
    assert encoded == i16(1) + i64(1) + string("") + i64(2) + i64(3)
    assert decode_offset_value(encoded).leader_epoch == -1


def test_version_1_expire_timestamp_minus_one_means_none() -> None:
    decoded = decode_offset_value(i16(1) + i64(42) + string("m") + i64(1000) + i64(-1))
    assert decoded == OffsetValue(offset=42, metadata="m", commit_timestamp=1000, expire_timestamp=None)


@pytest.mark.parametrize("version", [0, 2])
def test_offset_value_versions_0_and_2_decode(version: int) -> None:
    decoded = decode_offset_value(i16(version) + i64(INT64_MAX) + string("meta") + i64(INT64_MIN))
    assert decoded == OffsetValue(offset=INT64_MAX, leader_epoch=-1, metadata="meta", commit_timestamp=INT64_MIN)


def test_flexible_offset_value_skips_unknown_tags() -> None:
    data = i16(4) + i64(99) + i32(3) + compact_string("flex ✓") + i64(123) + UNKNOWN_TAGS
    assert decode_offset_value(data) == OffsetValue(99, 3, "flex ✓", 123)
    assert decode_offset_value(i16(4) + i64(99) + i32(3) + compact_string("") + i64(123) + NO_TAGS) == OffsetValue(
        99, 3, "", 123
    )


@pytest.mark.parametrize("version", [5, 6, -1])
def test_unknown_offset_value_version(version: int) -> None:
    with pytest.raises(GroupRecordError, match=f"version {version}"):
        decode_offset_value(i16(version) + i64(1) + i32(0) + string("") + i64(0))


def test_null_metadata_is_rejected() -> None:
    # metadata is a non-nullable string in every version; Kafka's reader throws on -1.
    with pytest.raises(GroupRecordError, match="metadata"):
        decode_offset_value(i16(3) + i64(1) + i32(0) + i16(-1) + i64(0))
    with pytest.raises(GroupRecordError, match="metadata"):
        decode_offset_value(i16(4) + i64(1) + i32(0) + uvarint(0) + i64(0) + NO_TAGS)


# --- group values -----------------------------------------------------------------------------------------------


def _member_v3(member: MemberValue) -> bytes:
    return (
        string(member.member_id)
        + string(member.group_instance_id)
        + string(member.client_id)
        + string(member.client_host)
        + i32(member.rebalance_timeout)
        + i32(member.session_timeout)
        + bytes32(member.subscription)
        + bytes32(member.assignment)
    )


MEMBER = MemberValue(
    member_id="consumer-1-5b0e",
    group_instance_id="instance-ä",
    client_id="consumer-1",
    client_host="/10.0.0.1",
    rebalance_timeout=300_000,
    session_timeout=45_000,
    subscription=SUBSCRIPTION,
    assignment=ASSIGNMENT,
)


def test_group_value_is_version_3() -> None:
    value = GroupValue("consumer", 3, "range", "consumer-1-5b0e", 1_700_000_000_000, [MEMBER])
    expected = (
        i16(3)
        + string("consumer")
        + i32(3)
        + string("range")
        + string("consumer-1-5b0e")
        + i64(1_700_000_000_000)
        + i32(1)
        + string(MEMBER.member_id)
        + string(MEMBER.group_instance_id)
        + string(MEMBER.client_id)
        + string(MEMBER.client_host)
        + i32(300_000)
        + i32(45_000)
        + bytes32(SUBSCRIPTION)
        + bytes32(ASSIGNMENT)
    )
    assert encode_group_value(value) == expected
    assert decode_group_value(expected) == value


def test_empty_group_value_with_nulls() -> None:
    # What Kafka writes for a group whose members all left: no protocol, no leader, no members.
    value = GroupValue("consumer", 0, None, None, -1, [])
    expected = i16(3) + string("consumer") + i32(0) + i16(-1) + i16(-1) + i64(-1) + i32(0)
    assert encode_group_value(value) == expected
    assert decode_group_value(expected) == value


def test_group_value_version_0_uses_session_timeout_as_rebalance_timeout() -> None:
    data = (
        i16(0)
        + string("consumer")
        + i32(1)
        + string("range")
        + string("m1")
        + i32(1)
        + string("m1")
        + string("client")
        + string("/127.0.0.1")
        + i32(10_000)
        + bytes32(b"sub")
        + bytes32(b"")
    )
    assert decode_group_value(data) == GroupValue(
        "consumer", 1, "range", "m1", -1, [MemberValue("m1", None, "client", "/127.0.0.1", 10_000, 10_000, b"sub", b"")]
    )


def test_group_value_version_1() -> None:
    data = (
        i16(1)
        + string("consumer")
        + i32(2)
        + i16(-1)
        + i16(-1)
        + i32(1)
        + string("m1")
        + string("client")
        + string("host")
        + i32(60_000)
        + i32(10_000)
        + bytes32(b"s")
        + bytes32(b"a")
    )
    assert decode_group_value(data) == GroupValue(
        "consumer", 2, None, None, -1, [MemberValue("m1", None, "client", "host", 60_000, 10_000, b"s", b"a")]
    )


def test_group_value_version_2() -> None:
    member = i32(60_000) + i32(10_000) + bytes32(b"s") + bytes32(b"a")
    data = (
        i16(2)
        + string("connect")
        + i32(5)
        + string("sessioned")
        + string("w2")
        + i64(1_600_000_000_000)
        + i32(2)
        + string("w1")
        + string("c1")
        + string("h1")
        + member
        + string("w2")
        + string("c2")
        + string("h2")
        + member
    )
    assert decode_group_value(data) == GroupValue(
        "connect",
        5,
        "sessioned",
        "w2",
        1_600_000_000_000,
        [
            MemberValue("w1", None, "c1", "h1", 60_000, 10_000, b"s", b"a"),
            MemberValue("w2", None, "c2", "h2", 60_000, 10_000, b"s", b"a"),
        ],
    )


def _flexible_group_value() -> bytes:
    return (
        i16(4)
        + compact_string("consumer")
        + i32(8)
        + compact_string("cooperative-sticky")
        + compact_string(None)  # leader
        + i64(1_700_000_000_000)
        + uvarint(2 + 1)  # compact array: count + 1
        + compact_string("m1")
        + compact_string(None)  # groupInstanceId
        + compact_string("c1")
        + compact_string("h1")
        + i32(300_000)
        + i32(45_000)
        + compact_bytes(SUBSCRIPTION)
        + compact_bytes(b"")
        + UNKNOWN_TAGS  # member's tagged fields
        + compact_string("m2")
        + compact_string("static-ü")
        + compact_string("c2")
        + compact_string("h2")
        + i32(1)
        + i32(2)
        + compact_bytes(b"x" * 130)  # length needs a two-byte varint
        + compact_bytes(ASSIGNMENT)
        + NO_TAGS
        + UNKNOWN_TAGS  # top-level tagged fields
    )


def test_flexible_group_value_skips_unknown_tags() -> None:
    assert decode_group_value(_flexible_group_value()) == GroupValue(
        "consumer",
        8,
        "cooperative-sticky",
        None,
        1_700_000_000_000,
        [
            MemberValue("m1", None, "c1", "h1", 300_000, 45_000, SUBSCRIPTION, b""),
            MemberValue("m2", "static-ü", "c2", "h2", 1, 2, b"x" * 130, ASSIGNMENT),
        ],
    )


@pytest.mark.parametrize("version", [5, -1])
def test_unknown_group_value_version(version: int) -> None:
    with pytest.raises(GroupRecordError, match=f"version {version}"):
        decode_group_value(i16(version) + string("consumer") + i32(0) + i16(-1) + i16(-1) + i64(-1) + i32(0))


def test_group_value_nulls_where_not_nullable_are_rejected() -> None:
    head = i16(3) + string("consumer") + i32(0) + i16(-1) + i16(-1) + i64(-1)
    with pytest.raises(GroupRecordError, match="members"):
        decode_group_value(head + i32(-1))
    member = string("m") + string(None) + string("c") + string("h") + i32(1) + i32(1)
    with pytest.raises(GroupRecordError, match="subscription"):
        decode_group_value(head + i32(1) + member + i32(-1) + bytes32(b""))
    with pytest.raises(GroupRecordError, match="protocolType"):
        decode_group_value(i16(3) + i16(-1))


def test_implausible_member_count_is_rejected() -> None:
    head = i16(3) + string("consumer") + i32(0) + i16(-1) + i16(-1) + i64(-1)
    with pytest.raises(GroupRecordError, match="members"):
        decode_group_value(head + i32(INT32_MAX))


# --- malformed input --------------------------------------------------------------------------------------------


VALID_ENCODINGS = [
    ("key", i16(1) + string("g") + string("t") + i32(0)),
    ("key", i16(2) + string("group")),
    ("offset", i16(3) + i64(1) + i32(0) + string("m") + i64(2)),
    ("offset", i16(1) + i64(1) + string("") + i64(2) + i64(3)),
    ("offset", i16(0) + i64(1) + string("m") + i64(2)),
    ("offset", i16(4) + i64(1) + i32(0) + compact_string("m") + i64(2) + UNKNOWN_TAGS),
    ("group", encode_group_value(GroupValue("consumer", 3, "range", "m", 5, [MEMBER, MEMBER]))),
    ("group", i16(3) + string("consumer") + i32(0) + i16(-1) + i16(-1) + i64(-1) + i32(0)),
    ("group", _flexible_group_value()),
]
DECODERS = {"key": decode_key, "offset": decode_offset_value, "group": decode_group_value}


@pytest.mark.parametrize(("kind", "data"), VALID_ENCODINGS)
def test_every_prefix_is_truncated(kind: str, data: bytes) -> None:
    decode = DECODERS[kind]
    decode(data)
    for end in range(len(data)):
        with pytest.raises(GroupRecordError):
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


def test_invalid_utf8_is_a_group_record_error() -> None:
    with pytest.raises(GroupRecordError, match="UTF-8"):
        decode_key(i16(2) + i16(2) + b"\xc3\x28")


def test_overlong_string_length_is_rejected() -> None:
    # Kafka refuses string lengths over 0x7fff on read, also in compact form where the varint could hold more.
    data = i16(4) + i64(1) + i32(0) + uvarint(0x8000 + 1) + b"a" * 0x8000 + i64(0) + NO_TAGS
    with pytest.raises(GroupRecordError, match="invalid length"):
        decode_offset_value(data)


def test_varint_longer_than_five_bytes_is_rejected() -> None:
    with pytest.raises(GroupRecordError, match="5 bytes"):
        decode_offset_value(i16(4) + i64(1) + i32(0) + b"\x80\x80\x80\x80\x80\x01")


def test_tagged_field_size_beyond_the_data_is_rejected() -> None:
    with pytest.raises(GroupRecordError, match="truncated"):
        decode_offset_value(i16(4) + i64(1) + i32(0) + compact_string("") + i64(0) + uvarint(1) + uvarint(5) + b"\x10")


@given(st.binary(max_size=64))
def test_garbage_raises_only_group_record_error(data: bytes) -> None:
    for decode in DECODERS.values():
        try:
            decode(data)
        except GroupRecordError:
            pass


@given(st.sampled_from([0, 1, 2, 3, 4]), st.binary(max_size=80))
def test_garbage_after_a_valid_version_raises_only_group_record_error(version: int, body: bytes) -> None:
    for decode in DECODERS.values():
        try:
            decode(i16(version) + body)
        except GroupRecordError:
            pass


# --- encoder limits ---------------------------------------------------------------------------------------------


def test_string_length_limit_is_kafkas() -> None:
    at_limit = "a" * 0x7FFF
    assert decode_key(encode_key(GroupKey(at_limit))) == GroupKey(at_limit)
    with pytest.raises(GroupRecordError, match="too long"):
        encode_key(GroupKey("a" * 0x8000))
    # The limit counts UTF-8 bytes, not characters.
    with pytest.raises(GroupRecordError, match="too long"):
        encode_key(GroupKey("é" * 0x4000))


@pytest.mark.parametrize(
    "encode",
    [
        lambda: encode_key(OffsetKey("g", "t", INT32_MAX + 1)),
        lambda: encode_offset_value(OffsetValue(offset=INT64_MAX + 1)),
        lambda: encode_offset_value(OffsetValue(offset=0, leader_epoch=INT32_MIN - 1)),
        lambda: encode_group_value(GroupValue("consumer", INT32_MAX + 1, None, None, -1, [])),
        lambda: encode_group_value(GroupValue(None, 0, None, None, -1, [])),  # type: ignore[arg-type]
        lambda: encode_key(GroupKey("\ud800")),  # lone surrogate: not UTF-8
    ],
)
def test_unencodable_values_raise_group_record_error(encode: Callable[[], object]) -> None:
    with pytest.raises(GroupRecordError):
        encode()


# --- round trips ------------------------------------------------------------------------------------------------

# st.text() covers non-ASCII (and never yields surrogates); 100 characters stay far below 32767 UTF-8 bytes.
texts = st.text(max_size=100)
int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)

members = st.builds(
    MemberValue,
    member_id=texts,
    group_instance_id=st.none() | texts,
    client_id=texts,
    client_host=texts,
    rebalance_timeout=int32s,
    session_timeout=int32s,
    subscription=st.binary(max_size=200),
    assignment=st.binary(max_size=200),
)
group_values = st.builds(
    GroupValue,
    protocol_type=texts,
    generation=int32s,
    protocol=st.none() | texts,
    leader=st.none() | texts,
    current_state_timestamp=int64s,
    members=st.lists(members, max_size=4),
)


@given(st.builds(OffsetKey, texts, texts, int32s) | st.builds(GroupKey, texts))
def test_key_round_trip(key: OffsetKey | GroupKey) -> None:
    assert decode_key(encode_key(key)) == key


@given(int64s, int32s, texts, int64s, st.none() | int64s.filter(lambda t: t != -1))
def test_offset_value_round_trip(
    offset: int, leader_epoch: int, metadata: str, commit_timestamp: int, expire_timestamp: int | None
) -> None:
    value = OffsetValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)
    decoded = decode_offset_value(encode_offset_value(value))
    # Version 1 (chosen when an expire timestamp is set) has no leader epoch.
    expected_epoch = leader_epoch if expire_timestamp is None else -1
    assert decoded == OffsetValue(offset, expected_epoch, metadata, commit_timestamp, expire_timestamp)


@given(group_values)
def test_group_value_round_trip(value: GroupValue) -> None:
    assert decode_group_value(encode_group_value(value)) == value


@given(group_values)
def test_group_value_prefixes_are_truncated(value: GroupValue) -> None:
    data = encode_group_value(value)
    for end in range(0, len(data), max(1, len(data) // 40)):
        with pytest.raises(GroupRecordError):
            decode_group_value(data[:end])
