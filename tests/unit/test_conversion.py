"""Up-conversion (Produce v0-2) and down-conversion (Fetch v0-3) as a Kafka 3.9 broker does them.

The down-conversion cases in data/kafka39_down_conversion.json were recorded from a Kafka 3.9.2 broker: the
stored batches (Fetch v11) and what it sent to Fetch v1 and v3 for them, byte for byte (uncompressed, so no
codec's output differs). They show KIP-283's fixed response size with its overflow entry, the uncompressed
messages before the fetch offset left out, control batches left out, aborted records kept (a v0-3 fetch is
read_uncommitted), and a Kafka quirk: after a leading control batch the next batch is sent twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protocol import legacy_records as legacy
from protocol.conversion import (
    ConversionError,
    UnsupportedCompressionError,
    down_convert,
    lazy_down_convert,
    up_convert,
)
from protocol.header import ErrorCode
from protocol.records import (
    LOG_APPEND_TIME,
    Record,
    build_batch,
    control_batch,
    decode_records,
    iter_batches,
    parse_batch_header,
)

NOW = 1_700_000_000_000
GOLDEN = json.loads((Path(__file__).parent / "data" / "kafka39_down_conversion.json").read_text())


def _records(batch: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    header = parse_batch_header(batch)
    return [(r.offset_delta, header.base_timestamp + r.timestamp_delta, r.key, r.value)
            for r in decode_records(batch)]


# --- up ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_magic_0_has_no_timestamps(codec: int) -> None:
    data = legacy.build_message_set([(0, -1, b"k", b"a"), (1, -1, None, b"b")], 0, compression=codec)
    converted = up_convert(data, now_ms=NOW, log_append_time=False)
    header = parse_batch_header(converted.batch)
    assert (header.base_timestamp, header.max_timestamp, header.timestamp_type) == (-1, -1, 0)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    assert header.compression == codec  # compression.type=producer keeps the producer's codec
    assert _records(converted.batch) == [(0, -1, b"k", b"a"), (1, -1, None, b"b")]
    assert (converted.magic, converted.count) == (0, 2)


@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_magic_1_keeps_its_create_times(codec: int) -> None:
    data = legacy.build_message_set([(0, NOW - 5, None, b"a"), (1, NOW - 9, b"k", b"b"), (2, NOW, None, b"c")], 1,
                                    compression=codec)
    converted = up_convert(data, now_ms=NOW, log_append_time=False)
    header = parse_batch_header(converted.batch)
    assert (header.base_timestamp, header.max_timestamp) == (NOW - 5, NOW)
    assert _records(converted.batch) == [(0, NOW - 5, None, b"a"), (1, NOW - 9, b"k", b"b"), (2, NOW, None, b"c")]


def test_target_codec_follows_compression_type() -> None:
    data = legacy.build_message_set([(0, -1, None, b"a")], 0)
    assert parse_batch_header(up_convert(data, now_ms=NOW, log_append_time=False,
                                         compression_type="gzip").batch).compression == 1
    lz4 = legacy.build_message_set([(0, NOW, None, b"a")], 1, compression=3)
    assert parse_batch_header(up_convert(lz4, now_ms=NOW, log_append_time=False,
                                         compression_type="uncompressed").batch).compression == 0


def _error(data: bytes, **kwargs: object) -> ConversionError:
    with pytest.raises(ConversionError) as info:
        up_convert(data, now_ms=NOW, log_append_time=bool(kwargs.pop("log_append_time", False)), **kwargs)
    return info.value


def test_refusals_with_kafkas_error_codes() -> None:
    one = legacy.build_message_set([(0, NOW, None, b"x")], 1)
    corrupt = bytearray(one)
    corrupt[-1] ^= 1
    assert _error(bytes(corrupt)).error == ErrorCode.CORRUPT_MESSAGE
    assert _error(one + legacy.build_message_set([(0, -1, None, b"y")], 0)).error == ErrorCode.INVALID_RECORD
    gz = legacy.build_message_set([(0, NOW, None, b"x")], 1, compression=1)
    assert "more than one batch" in _error(gz + gz).message
    assert _error(one, max_message_bytes=10).error == ErrorCode.MESSAGE_TOO_LARGE
    # A producer may not claim LogAppendTime unless its message has a CreateTime (Kafka's LogValidator).
    lat = legacy.build_message_set([(0, -1, None, b"x")], 1, timestamp_type=legacy.LOG_APPEND_TIME)
    assert _error(lat).error == ErrorCode.INVALID_TIMESTAMP
    assert _error(lat, log_append_time=True).error == ErrorCode.INVALID_TIMESTAMP
    with_time = legacy.build_message_set([(0, NOW, None, b"x")], 1, timestamp_type=legacy.LOG_APPEND_TIME,
                                         log_append_time=NOW)
    assert up_convert(with_time, now_ms=NOW, log_append_time=False) is not None
    # Nothing whole to append: Kafka answers NONE and appends nothing.
    assert up_convert(b"", now_ms=NOW, log_append_time=False) is None
    assert up_convert(one[:-1], now_ms=NOW, log_append_time=False) is None


@pytest.mark.parametrize("codec", [0, 1])
def test_compacted_topic_record_errors(codec: int) -> None:
    data = legacy.build_message_set([(0, NOW, b"k", b"x"), (1, NOW, None, b"y"), (2, NOW, None, b"z")], 1,
                                    compression=codec)
    error = _error(data, compacted=True)
    assert error.error == ErrorCode.INVALID_RECORD
    # Uncompressed v0/v1 messages are one batch each: Kafka stops at the first batch with an error.
    assert [i for i, _ in error.record_errors] == ([1, 2] if codec else [0])


def test_timestamp_bounds() -> None:
    data = legacy.build_message_set([(0, NOW - 10_000, None, b"x")], 1, compression=1)
    error = _error(data, timestamp_before_max_ms=1000)
    assert error.error == ErrorCode.INVALID_TIMESTAMP and error.record_errors[0][0] == 0
    assert up_convert(data, now_ms=NOW, log_append_time=True, timestamp_before_max_ms=1000) is not None


def test_inner_message_checks() -> None:
    inner = legacy.build_message_set([(0, -1, None, b"x"), (1, -1, None, b"y")], 0)
    wrapper = legacy.build_entry(1, 1, 1, NOW, None, legacy.compress_legacy(1, inner, 1))
    assert "magic does not match" in _error(wrapper).record_errors[0][1]
    nested = legacy.build_message_set([(0, NOW, None, b"x")], 1, compression=2)
    double = legacy.build_entry(0, 1, 1, NOW, None, legacy.compress_legacy(1, nested, 1))
    assert _error(double).error == ErrorCode.INVALID_RECORD
    bad = bytearray(legacy.build_message_set([(0, NOW, None, b"x")], 1))
    bad[-1] ^= 1
    corrupt_inner = legacy.build_entry(0, 1, 1, NOW, None, legacy.compress_legacy(1, bytes(bad), 1))
    assert _error(corrupt_inner).error == ErrorCode.CORRUPT_MESSAGE


# --- down ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: f"{c['what'][:12]}@{c['fetch_offset']}-"
                                                               f"{c['partition_max_bytes']}")
@pytest.mark.parametrize("version", [1, 3])
def test_down_conversion_is_kafkas_byte_for_byte(case: dict, version: int) -> None:
    stored = bytes.fromhex(case["stored"])
    if version <= 2:
        # Fetch v0-2 reads without KIP-74's "at least one batch": a first batch over the limit is cut.
        stored = stored[:case["partition_max_bytes"]]
    expected = bytes.fromhex(case[f"fetch_v{version}"])
    assert lazy_down_convert(stored, 0 if version <= 1 else 1, case["fetch_offset"]) == expected


def _stored(batches: list[bytes]) -> bytes:
    out = bytearray()
    offset = 0
    for batch in batches:
        buf = bytearray(batch)
        buf[:8] = offset.to_bytes(8, "big")
        out += buf
        offset += parse_batch_header(buf).last_offset_delta + 1
    return bytes(out)


def _deep(data: bytes) -> list[tuple[int, int, int, bytes | None]]:
    out = []
    for _o, start, end in legacy.iter_entries(data):
        m = legacy.parse_entry(data, start, end)
        for x in legacy.inner_messages(m) if m.compression else [m]:
            out.append((x.offset, x.magic, x.timestamp, x.value))
    return out


@pytest.mark.parametrize("codec", [1, 2, 3])
@pytest.mark.parametrize("magic", [0, 1])
def test_compressed_batches_stay_whole_and_keep_their_codec(codec: int, magic: int) -> None:
    stored = _stored([build_batch([Record(i, i, None, b"v%d" % i) for i in range(4)], base_timestamp=NOW,
                                  compression=codec)])
    converted = down_convert(stored, [(0, len(stored))], magic, first_offset=2)
    wrapper = legacy.parse_entry(converted, *next(legacy.iter_entries(converted))[1:])
    assert wrapper.compression == codec and wrapper.offset == 3
    assert _deep(converted) == [(i, magic, NOW + i if magic else -1, b"v%d" % i) for i in range(4)]


def test_log_append_time_batches() -> None:
    stored = bytearray(_stored([build_batch([Record(0, 0, None, b"a"), Record(1, 3, None, b"b")],
                                            base_timestamp=NOW, timestamp_type=LOG_APPEND_TIME,
                                            max_timestamp=NOW + 50)]))
    converted = down_convert(stored, [(0, len(stored))], 1, 0)
    entries = [legacy.parse_entry(converted, s, e) for _o, s, e in legacy.iter_entries(converted)]
    assert [(m.attributes, m.timestamp) for m in entries] == [(legacy.TIMESTAMP_TYPE_MASK, NOW + 50)] * 2
    converted0 = down_convert(stored, [(0, len(stored))], 0, 0)
    assert [legacy.parse_entry(converted0, s, e).attributes for _o, s, e in legacy.iter_entries(converted0)] == [0, 0]


def test_zstd_cannot_be_down_converted() -> None:
    plain = build_batch([Record(0, 0, None, b"a")], base_timestamp=NOW)
    zstd = build_batch([Record(0, 0, None, b"z")], base_timestamp=NOW, compression=4)
    with pytest.raises(UnsupportedCompressionError):
        lazy_down_convert(_stored([zstd, plain]), 1, 0)
    # After a first batch that converts, a zstd batch ends the conversion: the rest is overflow.
    stored = _stored([plain, zstd, plain])
    out = lazy_down_convert(stored, 1, 0)
    assert len(out) == len(stored)
    assert [m[3] for m in _deep(out)] == [b"a"]


def test_control_batches_only_give_an_overflow_entry() -> None:
    marker = control_batch(True, 7, 0, 0, NOW)
    out = lazy_down_convert(_stored([marker]), 1, 0)
    assert len(out) == legacy.LOG_OVERHEAD and out[:8] == b"\xff" * 8
    assert list(legacy.iter_entries(out)) == []
    assert lazy_down_convert(b"", 1, 0) == b""


def test_large_responses_are_converted_in_chunks_and_cut_to_the_stored_size() -> None:
    # Small records: a v1 message (34 bytes of overhead) is bigger than a v2 record, so the converted data
    # is cut at the stored size, mid-message; more than one 128 KiB chunk is converted.
    batches = [build_batch([Record(i, 0, None, b"x") for i in range(10)], base_timestamp=NOW) for _ in range(2000)]
    stored = _stored(batches)
    assert len(stored) > 2 * 128 * 1024
    out = lazy_down_convert(stored, 1, 0)
    assert len(out) == len(stored)
    got = _deep(out)
    assert [o for o, *_ in got] == list(range(len(got)))
    assert 128 * 1024 // 35 < len(got) < 20_000
    assert sum(1 for _ in iter_batches(stored)) == 2000
