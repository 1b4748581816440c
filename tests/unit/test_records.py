"""RecordBatch v2 codec, with kafka-python's own record-batch code as the oracle."""

from __future__ import annotations

import struct

import pytest
import snappy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecordsBuilder

from protocol.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    LOG_APPEND_TIME,
    CorruptRecordError,
    DecompressionError,
    InvalidMagicError,
    Record,
    build_batch,
    check_records,
    compress,
    control_batch,
    decode_records,
    decompress,
    end_marker,
    iter_batches,
    parse_batch_header,
    parse_control_record,
    record_timestamp,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    verify_crc,
)

CODECS = [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]

header_st = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8)))
record_st = st.tuples(
    st.integers(-(2**40), 2**40),  # timestamp delta
    st.one_of(st.none(), st.binary(max_size=40)),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.lists(header_st, max_size=3),
)
records_st = st.lists(record_st, min_size=1, max_size=20)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def kafka_python_batch(rows, base_ts, codec=0, producer=(-1, -1, -1), transactional=False) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                        producer_id=producer[0], producer_epoch=producer[1],
                                        base_sequence=producer[2], batch_size=1 << 30)
    for i, (delta, key, value, headers) in enumerate(rows):
        assert builder.append(i, base_ts + delta, key, value, headers) is not None
    return bytes(builder.build())


def our_records(rows) -> list[Record]:
    return [Record(i, delta, key, value, list(headers))
            for i, (delta, key, value, headers) in enumerate(rows)]


def sample_rows(n: int = 50) -> list:
    # compressible, so kafka-python keeps the compression
    return [(i * 7, b"key-%d" % (i % 5), b"value %d " % i * 20, [("h", b"x"), ("n", None)]) for i in range(n)]


# --- building and decoding against kafka-python --------------------------------------------------------

@FAST
@given(records_st, st.integers(0, 2**42),
       st.sampled_from([(-1, -1, -1), (1000, 3, 0), (2**40, 0, 2**31 - 5)]), st.booleans())
def test_build_matches_kafka_python_byte_for_byte(rows, base_ts, producer, transactional):
    rows[0] = (0,) + rows[0][1:]  # kafka-python takes the first record's timestamp as the base
    if producer[0] == -1:
        transactional = False
    theirs = kafka_python_batch(rows, base_ts, producer=producer, transactional=transactional)
    ours = build_batch(our_records(rows), base_timestamp=base_ts, producer_id=producer[0],
                       producer_epoch=producer[1], base_sequence=producer[2], is_transactional=transactional,
                       partition_leader_epoch=0)  # kafka-python writes 0 there
    assert ours == theirs


@FAST
@given(records_st, st.integers(0, 2**42))
def test_decode_of_kafka_python_batches(rows, base_ts):
    rows[0] = (0,) + rows[0][1:]
    batch = kafka_python_batch(rows, base_ts)
    assert decode_records(batch) == our_records(rows)


@pytest.mark.parametrize("codec", CODECS)
def test_decode_of_kafka_python_compressed_batches(codec):
    rows = sample_rows()
    batch = kafka_python_batch(rows, 1_700_000_000_000, codec=codec)
    header = parse_batch_header(batch)
    assert header.compression == codec
    assert verify_crc(batch, 0, len(batch))
    records = decode_records(batch)
    assert records == our_records(rows)
    assert [record_timestamp(header, r) for r in records] == [1_700_000_000_000 + d for d, *_ in rows]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_decodes_our_compressed_batches(codec):
    rows = sample_rows()
    ours = build_batch(our_records(rows), base_offset=100, base_timestamp=5000, compression=codec)
    batch = DefaultRecordBatch(ours)
    assert batch.compression_type == codec and batch.validate_crc()
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch]
    assert got == [(100 + i, 5000 + d, k, v, h) for i, (d, k, v, h) in enumerate(rows)]


def test_memory_records_builder_batches_iterate():
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for i in range(5):
        builder.append(timestamp=1000 + i, key=None, value=b"v%d" % i)
    builder.close()
    data = bytes(builder.buffer())
    ((header, start, end),) = list(iter_batches(data))
    assert (start, end) == (0, len(data)) and header.records_count == 5 and header.last_offset_delta == 4
    assert [r.value for r in decode_records(data)] == [b"v%d" % i for i in range(5)]


@pytest.mark.parametrize("codec", CODECS)
def test_codecs_round_trip_large_inputs(codec):
    data = bytes(range(256)) * 2000 + b"tail"
    assert decompress(codec, compress(codec, data)) == data
    assert decompress(codec, compress(codec, b"")) == b""


def test_snappy_accepts_raw_and_xerial_framing():
    data = b"librdkafka writes raw snappy, Java xerial " * 3000
    assert decompress(COMPRESSION_SNAPPY, snappy.compress(data)) == data  # raw block (librdkafka)
    framed = compress(COMPRESSION_SNAPPY, data)
    assert framed.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")  # xerial (Java)
    from kafka.codec import snappy_decode, snappy_encode
    assert snappy_decode(framed) == data
    assert decompress(COMPRESSION_SNAPPY, snappy_encode(data)) == data


def test_lz4_frames_have_independent_blocks():
    framed = compress(COMPRESSION_LZ4, b"x" * 200_000)
    assert framed[:4] == b"\x04\x22\x4d\x18"
    assert framed[4] & 0x20  # FLG block independence: Kafka's Lz4BlockInputStream needs it


@pytest.mark.parametrize("codec", [COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD])
def test_garbage_compressed_data_is_corrupt(codec):
    with pytest.raises(DecompressionError):
        decompress(codec, b"\x82SNAPPY\x00garbage" if codec == COMPRESSION_SNAPPY else b"garbage!")
    with pytest.raises(DecompressionError):  # a payload cut short
        decompress(codec, compress(codec, bytes(range(256)) * 8)[:40])


@pytest.mark.parametrize("codec", [COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD])
def test_produce_checks_compressed_batches_as_kafka(codec):
    """The produce path's check of a compressed batch (Kafka's answers: tests/reference/scenarios/produce.py):
    a payload its codec refuses, records that do not fill it exactly; an uncompressed batch is not decoded."""
    from broker.handlers.produce import compressed_batch_error
    from protocol.header import ErrorCode
    from protocol.records import BATCH_HEADER_SIZE, CRC_OFFSET, compute_crc

    def with_payload(batch: bytes, payload: bytes) -> bytes:
        buf = bytearray(batch[:BATCH_HEADER_SIZE] + payload)
        struct.pack_into(">i", buf, 8, len(buf) - 12)
        struct.pack_into(">I", buf, CRC_OFFSET, compute_crc(buf, 0, len(buf)))
        return bytes(buf)

    good = build_batch([Record(0, 0, b"k", b"v"), Record(1, 0, None, b"w")], compression=codec)
    plain = build_batch([Record(0, 0, b"k", b"v"), Record(1, 0, None, b"w")])
    records = plain[BATCH_HEADER_SIZE:]
    assert compressed_batch_error(good) == (ErrorCode.NONE, None)
    assert compressed_batch_error(with_payload(good, records))[0] == ErrorCode.UNKNOWN_SERVER_ERROR
    assert compressed_batch_error(with_payload(good, compress(codec, records[:-2])))[0] == ErrorCode.INVALID_RECORD
    assert compressed_batch_error(with_payload(good, compress(codec, records + b"\0")))[0] == ErrorCode.INVALID_RECORD
    assert compressed_batch_error(plain) == (ErrorCode.NONE, None)


def test_empty_records_batch_and_null_fields():
    batch = build_batch([Record(0, 0, None, None, [("k", None)])])
    assert decode_records(batch) == [Record(0, 0, None, None, [("k", None)])]
    empty = build_batch([], last_offset_delta=4)
    header = parse_batch_header(empty)
    assert header.records_count == 0 and header.last_offset_delta == 4 and decode_records(empty) == []


# --- header, framing and CRC -----------------------------------------------------------------------------

def test_header_fields_and_properties():
    batch = build_batch([Record(0, 0, b"k", b"v"), Record(1, 5, None, b"w")], base_offset=42,
                        base_timestamp=1000, compression=COMPRESSION_ZSTD, producer_id=7, producer_epoch=2,
                        base_sequence=2**31 - 1, is_transactional=True, partition_leader_epoch=3)
    h = parse_batch_header(batch)
    assert (h.base_offset, h.partition_leader_epoch, h.magic, h.last_offset_delta) == (42, 3, 2, 1)
    assert (h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch) == (1000, 1005, 7, 2)
    assert h.compression == COMPRESSION_ZSTD and h.is_transactional and not h.is_control
    assert h.timestamp_type == 0 and h.size == len(batch) == h.batch_length + 12
    assert h.last_offset == 43 and h.last_sequence == 0  # wraps past INT32 max
    assert parse_batch_header(b"\x00" * 5 + batch, 5) == h


@FAST
@given(st.lists(records_st, min_size=1, max_size=4))
def test_iter_batches_over_concatenated_batches(batch_rows):
    batches = [build_batch(our_records(rows), base_offset=i * 100) for i, rows in enumerate(batch_rows)]
    data = b"".join(batches)
    got = list(iter_batches(memoryview(data)))
    assert [h.base_offset for h, _, _ in got] == [i * 100 for i in range(len(batches))]
    pos = 0
    for (header, start, end), batch in zip(got, batches, strict=True):
        assert (start, end) == (pos, pos + len(batch)) and header.size == len(batch)
        assert verify_crc(data, start, end)
        pos = end


def test_iter_batches_rejects_every_truncation():
    batch = build_batch([Record(0, 0, b"k", b"v" * 30)])
    two = batch + batch
    for cut in range(1, len(two)):
        if cut == len(batch):
            assert len(list(iter_batches(two[:cut]))) == 1
            continue
        with pytest.raises(CorruptRecordError):
            list(iter_batches(two[:cut]))
    assert list(iter_batches(b"")) == []


def patched(batch: bytes, fmt: str, pos: int, value: int) -> bytes:
    buf = bytearray(batch)
    struct.pack_into(fmt, buf, pos, value)
    return bytes(buf)


def test_iter_batches_rejects_malformed_headers():
    batch = build_batch([Record(0, 0, b"k", b"v")])
    for length in (-1, 0, 13):
        with pytest.raises(CorruptRecordError, match="minimum record overhead"):
            list(iter_batches(patched(batch, ">i", 8, length)))
    with pytest.raises(CorruptRecordError, match="minimum allowed overhead"):
        list(iter_batches(patched(batch, ">i", 8, 48)[:60]))
    for magic in (3, -1):
        with pytest.raises(CorruptRecordError) as info:
            list(iter_batches(patched(batch, ">b", 16, magic)))
        assert not isinstance(info.value, InvalidMagicError)
    with pytest.raises(CorruptRecordError, match="record count"):
        list(iter_batches(patched(batch, ">i", 57, -1)))


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_raise_invalid_magic(magic):
    # A v0 message: offset, size, crc, magic, attributes, key -1, value
    message = struct.pack(">IbbiI", 0, magic, 0, -1, 3) + b"abc"
    if magic == 1:
        message = struct.pack(">Ibbqi", 0, magic, 0, 1000, -1) + struct.pack(">i", 3) + b"abc"
    data = struct.pack(">qi", 0, len(message)) + message
    with pytest.raises(InvalidMagicError) as info:
        list(iter_batches(data))
    assert info.value.magic == magic


@FAST
@given(st.data())
def test_crc_detects_every_single_byte_change_in_the_covered_region(data):
    rows = data.draw(records_st)
    codec = data.draw(st.sampled_from(CODECS))
    batch = bytearray(build_batch(our_records(rows), base_timestamp=99, compression=codec))
    assert verify_crc(batch, 0, len(batch))
    pos = data.draw(st.integers(21, len(batch) - 1))
    batch[pos] ^= data.draw(st.integers(1, 255))
    assert not verify_crc(batch, 0, len(batch))


def test_crc_ignores_base_offset_and_leader_epoch():
    batch = bytearray(build_batch([Record(0, 0, b"k", b"v")]))
    set_base_offset(batch, 0, 123456789)
    set_partition_leader_epoch(batch, 0, 17)
    h = parse_batch_header(batch)
    assert (h.base_offset, h.partition_leader_epoch) == (123456789, 17)
    assert verify_crc(batch, 0, len(batch))
    batch[17] ^= 1  # the CRC field itself
    assert not verify_crc(batch, 0, len(batch))


def test_set_log_append_time_like_kafka():
    rows = sample_rows(3)
    built = build_batch(our_records(rows), base_timestamp=1000, compression=COMPRESSION_LZ4)
    batch = bytearray(b"pad" + built)
    set_log_append_time(batch, 3, 777_000)
    h = parse_batch_header(batch, 3)
    assert h.timestamp_type == LOG_APPEND_TIME and h.max_timestamp == 777_000 and h.base_timestamp == 1000
    assert h.compression == COMPRESSION_LZ4
    assert verify_crc(batch, 3, len(batch))
    theirs = DefaultRecordBatch(bytes(batch[3:]))
    assert theirs.validate_crc() and theirs.timestamp_type == 1
    assert [r.timestamp for r in theirs] == [777_000] * 3
    assert {record_timestamp(h, r) for r in decode_records(batch[3:])} == {777_000}
    before = bytes(batch)
    set_log_append_time(batch, 3, 777_000)  # unchanged: no rewrite
    assert bytes(batch) == before


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch_is_kafkas_end_transaction_marker(commit):
    batch = control_batch(commit, producer_id=9, producer_epoch=4, coordinator_epoch=12, timestamp=5555,
                          base_offset=30)
    h = parse_batch_header(batch)
    assert h.is_control and h.is_transactional and h.records_count == 1 and h.base_sequence == -1
    assert (h.producer_id, h.producer_epoch, h.base_timestamp) == (9, 4, 5555)
    (record,) = decode_records(batch)
    assert record.key == struct.pack(">hh", 0, 1 if commit else 0)
    assert record.value == struct.pack(">hi", 0, 12)
    assert parse_control_record(record) == (CONTROL_COMMIT if commit else CONTROL_ABORT, 12)
    theirs = DefaultRecordBatch(batch)
    assert theirs.is_control_batch and theirs.validate_crc()
    (marker,) = list(theirs)
    assert marker.commit is commit and marker.offset == 30


@pytest.mark.parametrize("codec", [COMPRESSION_NONE, COMPRESSION_GZIP])
@pytest.mark.parametrize("commit", [True, False])
def test_end_marker_reads_the_control_record_in_place(commit, codec):
    kind = CONTROL_COMMIT if commit else CONTROL_ABORT
    marker = [Record(0, 0, struct.pack(">hh", 0, kind), struct.pack(">hi", 0, 77))]
    batch = build_batch(marker, producer_id=3, producer_epoch=1, is_transactional=True, is_control=True,
                        compression=codec)
    assert end_marker(batch) == (kind, 77)
    assert end_marker(b"\x00" * 5 + batch, 5) == (kind, 77)  # a batch inside a larger buffer
    assert end_marker(control_batch(commit, 3, 1, 12, 5555)) == (kind, 12)


def test_end_marker_of_other_control_batches():
    leader_change = [Record(0, 0, struct.pack(">hh", 0, 2), b"\x00\x00")]  # Kafka's LEADER_CHANGE type
    assert end_marker(build_batch(leader_change, is_control=True)) is None
    emptied = build_batch([], producer_id=3, producer_epoch=1, is_transactional=True, is_control=True)
    assert end_marker(emptied) is None  # the cleaner leaves an empty batch in place of a removed marker
    no_epoch = [Record(0, 0, struct.pack(">hh", 0, CONTROL_COMMIT), b"\x00")]
    assert end_marker(build_batch(no_epoch, is_control=True)) is None
    cut = control_batch(True, 3, 1, 12, 5555)
    with pytest.raises(CorruptRecordError):
        end_marker(cut[:61] + b"\x7e" + cut[62:])  # a record length (63) past the batch


def test_decode_records_rejects_inconsistent_batches():
    batch = build_batch([Record(0, 0, b"k", b"v"), Record(1, 0, b"k", b"v")])
    with pytest.raises(CorruptRecordError):
        decode_records(patched(batch, ">i", 57, 3))  # more records claimed than present
    with pytest.raises(CorruptRecordError, match="unconsumed"):
        decode_records(patched(batch, ">i", 57, 1))
    with pytest.raises(CorruptRecordError, match="truncated"):
        decode_records(batch[:-1])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=200)), st.one_of(st.none(), st.binary(max_size=300)),
                          st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))),
                                   max_size=2)), min_size=1, max_size=5),
       st.sampled_from([COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_LZ4]),
       st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=3), st.integers(-2, 2))
def test_check_records_accepts_what_decode_records_accepts(rows, codec, flips, count_change):
    """The produce path's walk over a batch's records (check_records) refuses exactly what decode_records
    refuses, on well-formed batches and on their records section damaged (bytes changed, a record count that
    lies)."""
    import struct as _struct

    from protocol.records import BATCH_HEADER_SIZE, CRC_OFFSET, compute_crc

    batch = bytearray(build_batch([Record(i, i, k, v, h) for i, (k, v, h) in enumerate(rows)]))
    section = bytearray(batch[BATCH_HEADER_SIZE:])
    for at, value in flips:
        if section:
            section[at % len(section)] = value
    count = max(0, len(rows) + count_change)
    payload = compress(codec, bytes(section))
    out = bytearray(batch[:BATCH_HEADER_SIZE] + payload)
    _struct.pack_into(">hi", out, 21, codec, count - 1 if count else 0)
    _struct.pack_into(">i", out, 57, count)
    _struct.pack_into(">i", out, 8, len(out) - 12)
    _struct.pack_into(">I", out, CRC_OFFSET, compute_crc(out, 0, len(out)))
    try:
        decode_records(bytes(out))
        decoded = None
    except CorruptRecordError as exc:
        decoded = type(exc)
    try:
        check_records(bytes(out))
        checked = None
    except CorruptRecordError as exc:
        checked = type(exc)
    assert checked == decoded
