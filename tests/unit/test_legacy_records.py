"""Message format v0/v1: our builder and parser against kafka-python's (an independent implementation that
old clients run), CRC32, wrapper messages with each codec, and the magic 0 LZ4 checksum quirk."""

from __future__ import annotations

import os
import struct

import cramjam
import pytest
import xxhash
from kafka.codec import lz4_decode_old_kafka, lz4_encode_old_kafka
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from protocol import legacy_records as legacy
from protocol.records import CorruptRecordError

CODECS = [0, 1, 2, 3]  # none, gzip, snappy, lz4 (v0/v1 have no zstd)
NOW = 1_700_000_000_000


def _messages(magic: int, n: int = 5) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [(i, NOW + i if magic else -1, b"k%d" % i if i % 2 else None, b"v" * (i * 30) if i != 3 else None)
            for i in range(n)]


def _kafka_python(magic: int, codec: int, messages: list) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for offset, ts, key, value in messages:
        builder.append(offset, ts if magic else None, key, value)
    return bytes(builder.build())


def _deep(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    out = []
    for _offset, start, end in legacy.iter_entries(data):
        assert legacy.crc_is_valid(data, start, end)
        message = legacy.parse_entry(data, start, end)
        for m in legacy.inner_messages(message) if message.compression else [message]:
            assert m.crc_valid
            out.append((m.offset, m.timestamp, m.key, m.value))
    return out


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_bytes_equal_kafka_python(magic: int) -> None:
    messages = _messages(magic)
    assert legacy.build_message_set(messages, magic) == _kafka_python(magic, 0, messages)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_each_side_reads_the_other(magic: int, codec: int) -> None:
    messages = _messages(magic)
    ours = legacy.build_message_set(messages, magic, compression=codec)
    theirs = _kafka_python(magic, codec, messages)
    assert _deep(ours) == messages
    assert _deep(theirs) == messages
    records = MemoryRecords(ours)
    got = []
    while records.has_next():
        for r in records.next_batch():
            got.append((r.offset, r.timestamp if magic else -1, r.key, r.value))
    assert got == messages


def test_wrapper_of_magic_1_has_relative_inner_offsets_and_the_last_offset() -> None:
    messages = [(100 + i, NOW + i, None, b"x") for i in range(3)]
    data = legacy.build_message_set(messages, 1, compression=1)
    wrapper = legacy.parse_entry(data, *next(legacy.iter_entries(data))[1:])
    assert wrapper.offset == 102 and wrapper.timestamp == NOW + 2
    inner = cramjam.gzip.decompress(wrapper.value)
    assert [o for o, _, _ in legacy.iter_entries(bytes(inner))] == [0, 1, 2]
    assert [m.offset for m in legacy.inner_messages(wrapper)] == [100, 101, 102]
    # Magic 0 keeps absolute inner offsets.
    data0 = legacy.build_message_set([(100 + i, -1, None, b"x") for i in range(3)], 0, compression=1)
    wrapper0 = legacy.parse_entry(data0, *next(legacy.iter_entries(data0))[1:])
    assert [o for o, _, _ in legacy.iter_entries(bytes(cramjam.gzip.decompress(wrapper0.value)))] == [100, 101, 102]


def test_log_append_time_wrapper_gives_its_timestamp_to_inner_messages() -> None:
    data = legacy.build_message_set([(0, NOW, None, b"a"), (1, NOW + 5, None, b"b")], 1, compression=2,
                                    timestamp_type=legacy.LOG_APPEND_TIME, log_append_time=NOW + 100)
    wrapper = legacy.parse_entry(data, *next(legacy.iter_entries(data))[1:])
    assert wrapper.attributes == 2 | legacy.TIMESTAMP_TYPE_MASK
    inner = legacy.inner_messages(wrapper)
    assert [(m.timestamp, m.timestamp_type) for m in inner] == [(NOW + 100, legacy.LOG_APPEND_TIME)] * 2


def test_crc32_covers_magic_to_end() -> None:
    data = bytearray(legacy.build_message_set([(0, NOW, b"k", b"v")], 1))
    assert legacy.crc_is_valid(data, 0, len(data))
    data[-1] ^= 1
    assert not legacy.crc_is_valid(data, 0, len(data))
    data[-1] ^= 1
    data[0] ^= 1  # the offset is outside the CRC
    assert legacy.crc_is_valid(data, 0, len(data))


def test_framing_errors_and_partial_entries() -> None:
    data = legacy.build_message_set([(0, -1, None, b"a"), (1, -1, None, b"b")], 0)
    # A partial entry at the end is left out, as in a fetch response.
    assert len(list(legacy.iter_entries(data[:-3]))) == 1
    short = struct.pack(">qi", 0, 13) + b"\x00" * 13
    with pytest.raises(CorruptRecordError, match="less than the minimum record overhead"):
        list(legacy.iter_entries(short))
    with pytest.raises(CorruptRecordError, match="exceeds the largest allowable"):
        list(legacy.iter_entries(data, max_message_size=10))
    bad_length = bytearray(data[:len(data) // 2])
    struct.pack_into(">i", bad_length, legacy.LOG_OVERHEAD + 6, 1000)  # key length past the message
    with pytest.raises(CorruptRecordError):
        legacy.parse_entry(bad_length, 0, len(bad_length))


def test_xxh32_matches_the_reference() -> None:
    for n in (0, 1, 3, 4, 7, 15, 16, 17, 33, 100):
        data = os.urandom(n)
        assert legacy.xxh32(data) == xxhash.xxh32(data).intdigest()
        assert legacy.xxh32(data, 7) == xxhash.xxh32(data, seed=7).intdigest()


def test_lz4_magic_0_writes_and_reads_the_broken_descriptor_checksum() -> None:
    payload = os.urandom(1000) + b"a" * 100_000  # more than one 64 KiB block
    broken = legacy.lz4_frame(payload, broken_checksum=True)
    correct = legacy.lz4_frame(payload)
    assert broken[:6] == correct[:6] and broken[6] != correct[6]
    assert broken[6] == (xxhash.xxh32(broken[:6]).intdigest() >> 8) & 0xFF  # over the frame magic too
    # What 0.8/0.9 clients do (kafka-python's old-kafka codec), both ways.
    assert lz4_decode_old_kafka(broken) == payload
    assert legacy.decompress_legacy(3, lz4_encode_old_kafka(payload), 0) == payload
    # The correct frame is a standard one; magic 1 expects it.
    assert bytes(cramjam.lz4.decompress(correct)) == payload
    assert legacy.decompress_legacy(3, correct, 1) == payload
    with pytest.raises(CorruptRecordError):
        legacy.decompress_legacy(3, broken, 1)


def test_inner_message_errors() -> None:
    wrapper = legacy.LegacyMessage(5, 1, 1, NOW, None, None)
    with pytest.raises(legacy.InvalidLegacyRecordError, match="null value"):
        legacy.inner_messages(wrapper)
    empty = legacy.LegacyMessage(5, 1, 1, NOW, None, bytes(cramjam.gzip.compress(b"")))
    with pytest.raises(legacy.InvalidLegacyRecordError, match="no inner records"):
        legacy.inner_messages(empty)
    inner = legacy.build_message_set([(i, NOW, None, b"x") for i in range(3)], 1)
    low = legacy.LegacyMessage(1, 1, 1, NOW, None, bytes(cramjam.gzip.compress(inner)))
    with pytest.raises(legacy.InvalidLegacyRecordError, match="wrapper offset '1' is less than"):
        legacy.inner_messages(low)
    zero = legacy.LegacyMessage(0, 1, 1, NOW, None, bytes(cramjam.gzip.compress(inner)))
    assert [m.offset for m in legacy.inner_messages(zero)] == [0, 1, 2]  # librdkafka's zero wrapper offset
