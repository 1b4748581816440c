"""PartitionLog: appends, reads, rolling, timestamps, retention, DeleteRecords, truncation, flushing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from broker.log.checkpoints import LOG_START_OFFSET_CHECKPOINT
from broker.log.config import LogConfig
from broker.log.partition_log import OffsetOutOfRangeError, PartitionLog, RecordBatchTooLargeError
from protocol.records import (
    COMPRESSION_GZIP,
    LOG_APPEND_TIME,
    Record,
    build_batch,
    decode_records,
    iter_batches,
    record_timestamp,
    verify_crc,
)

T0 = 1_700_000_000_000


def batch(count: int = 3, ts: int = T0, value: bytes = b"v" * 20, deltas: list[int] | None = None,
          compression: int = 0) -> bytes:
    """A producer's batch: base offset 0 and leader epoch -1, as the Java client sends."""
    deltas = deltas if deltas is not None else [0] * count
    records = [Record(i, d, b"k%d" % i, value, []) for i, d in enumerate(deltas)]
    return build_batch(records, base_timestamp=ts, compression=compression)


def batches_of(data: bytes) -> list:
    return [(h, data[s:e]) for h, s, e in iter_batches(data)]


def read_all(log: PartitionLog, start: int | None = None) -> list:
    """Every stored batch from `start`, following segment boundaries as a consumer does."""
    out = []
    offset = log.log_start_offset if start is None else start
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        assert data
        for header, raw in batches_of(data):
            out.append((header.base_offset, raw))
            offset = header.last_offset + 1
    return out


def small(**kw) -> LogConfig:
    return LogConfig(**{"segment_bytes": 1000, "index_interval_bytes": 200, **kw})


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


def test_append_assigns_contiguous_offsets_rewriting_only_the_base_offset_and_epoch(path):
    log = PartitionLog.open(path, small(), now_ms=T0)
    sent = []
    for i in range(40):
        b = batch(count=1 + i % 4, ts=T0 + i)
        result = log.append_as_leader(b, now_ms=T0 + 1000)
        assert result.base_offset == (sent[-1][1] + 1 if sent else 0)
        assert result.last_offset == result.base_offset + i % 4
        assert result.log_append_time == -1 and result.log_start_offset == 0
        sent.append((result.base_offset, result.last_offset, b))
    assert log.log_end_offset == sent[-1][1] + 1
    assert log.segment_count > 3
    stored = read_all(log)
    assert len(stored) == len(sent)
    for (base, raw), (expected_base, _last, original) in zip(stored, sent, strict=True):
        assert base == expected_base
        assert raw[:8] == base.to_bytes(8, "big")
        assert raw[12:16] == (0).to_bytes(4, "big")  # our leader epoch
        assert raw[8:12] == original[8:12] and raw[16:] == original[16:]  # the rest unchanged
        assert verify_crc(raw, 0, len(raw))
    assert log.size_bytes == sum(len(b) for _, _, b in sent)


def test_segments_roll_at_segment_bytes_with_kafka_file_names(path):
    log = PartitionLog.open(path, small(segment_bytes=500), now_ms=T0)
    size = len(batch())
    for _ in range(20):
        log.append_as_leader(batch(), now_ms=T0)
    per_segment = 500 // size
    assert log.segment_base_offsets() == [i * per_segment * 3 for i in range(log.segment_count)]
    for base in log.segment_base_offsets():
        for suffix in (".log", ".index", ".timeindex"):
            assert (path / f"{base:020d}{suffix}").exists()
    for base in log.segment_base_offsets()[:-1]:
        assert (path / f"{base:020d}.log").stat().st_size == per_segment * size


def test_roll_by_segment_ms_uses_the_first_batch_timestamp_like_kafka(path):
    log = PartitionLog.open(path, small(segment_bytes=1 << 20, segment_ms=1000), now_ms=T0)
    log.append_as_leader(batch(ts=T0), now_ms=T0)
    log.append_as_leader(batch(ts=T0 + 1000), now_ms=T0 + 5000)  # 1000 ms after the first batch: not more than
    assert log.segment_count == 1
    log.append_as_leader(batch(ts=T0 + 1001), now_ms=T0)  # the batch timestamps decide, not the clock
    assert log.segment_base_offsets() == [0, 6]


def test_roll_by_segment_ms_falls_back_to_segment_age_without_timestamps(path):
    log = PartitionLog.open(path, small(segment_bytes=1 << 20, segment_ms=1000), now_ms=T0)
    log.append_as_leader(batch(ts=-1), now_ms=T0)
    log.append_as_leader(batch(ts=-1), now_ms=T0 + 1000)
    assert log.segment_count == 1
    log.append_as_leader(batch(ts=-1), now_ms=T0 + 1001)
    assert log.segment_base_offsets() == [0, 6]


def test_append_larger_than_a_segment_is_rejected(path):
    log = PartitionLog.open(path, small(segment_bytes=100), now_ms=T0)
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_leader(batch(), now_ms=T0)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_one_append_of_several_batches(path):
    log = PartitionLog.open(path, small(segment_bytes=1 << 20), now_ms=T0)
    log.append_as_leader(batch(count=2), now_ms=T0)
    data = batch(count=3) + batch(count=1) + batch(count=2, compression=COMPRESSION_GZIP)
    result = log.append_as_leader(data, now_ms=T0)
    assert (result.base_offset, result.last_offset) == (2, 7)
    assert [base for base, _ in read_all(log)] == [0, 2, 5, 6]
    assert all(verify_crc(raw, 0, len(raw)) for _, raw in read_all(log))


def test_read_at_every_offset_returns_the_batch_holding_it(path):
    log = PartitionLog.open(path, small(segment_bytes=700, index_interval_bytes=100), now_ms=T0)
    for i in range(60):
        log.append_as_leader(batch(count=1 + i % 5, value=b"x" * (i % 7 * 10)), now_ms=T0)
    segments = log.segment_base_offsets()
    for offset in range(log.log_end_offset):
        one = batches_of(log.read(offset, 1))
        assert len(one) == 1
        header = one[0][0]
        assert header.base_offset <= offset <= header.last_offset
        # with room for everything: whole batches from that one to the end of its segment
        rest = batches_of(log.read(offset, 1 << 20))
        assert rest[0][0].base_offset == header.base_offset
        following = [s for s in segments if s > offset]
        assert rest[-1][0].last_offset + 1 == (following[0] if following else log.log_end_offset)
    assert log.read(log.log_end_offset, 100) == b""


def test_max_bytes_min_one_and_whole_batches(path):
    log = PartitionLog.open(path, small(segment_bytes=1 << 20), now_ms=T0)
    for _ in range(10):
        log.append_as_leader(batch(), now_ms=T0)
    size = len(batch())
    assert len(log.read(0, 1)) == size  # KIP-74: at least one whole batch
    assert log.read(0, size - 1, min_one=False) == b""
    assert len(log.read(0, size * 2 + size // 2)) == 2 * size  # never a partial batch
    assert len(log.read(4, size * 3)) == 3 * size  # offset 4 is in the second batch
    assert batches_of(log.read(4, size * 3))[0][0].base_offset == 3
    assert len(log.read(0, 0)) == size


def test_max_offset_excludes_the_batch_holding_it(path):
    log = PartitionLog.open(path, small(segment_bytes=1 << 20, index_interval_bytes=50), now_ms=T0)
    for _ in range(10):
        log.append_as_leader(batch(), now_ms=T0)  # batches at 0, 3, 6, ...
    assert [h.base_offset for h, _ in batches_of(log.read(0, 1 << 20, max_offset=9))] == [0, 3, 6]
    assert [h.base_offset for h, _ in batches_of(log.read(0, 1 << 20, max_offset=10))] == [0, 3, 6]
    assert [h.base_offset for h, _ in batches_of(log.read(4, 1 << 20, max_offset=12))] == [3, 6, 9]
    assert log.read(4, 1 << 20, max_offset=5) == b""
    assert log.read(9, 1 << 20, max_offset=9) == b""
    assert len(batches_of(log.read(0, 1 << 20, max_offset=1000))) == 10


def test_offsets_out_of_range(path):
    log = PartitionLog.open(path, small(), now_ms=T0)
    assert log.read(0, 100) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 100)
    log.append_as_leader(batch(), now_ms=T0)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)
    log.delete_records(2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 100)
    assert batches_of(log.read(2, 100))[0][0].base_offset == 0  # the batch holding the start offset


@pytest.mark.parametrize("several", [False, True])
def test_log_append_time_rewrites_timestamps_with_a_valid_crc(path, several):
    log = PartitionLog.open(path, small(message_timestamp_type="LogAppendTime"), now_ms=T0)
    data = batch(count=3, ts=T0, compression=COMPRESSION_GZIP)
    if several:
        data += batch(count=2, ts=T0)
    result = log.append_as_leader(data, now_ms=T0 + 777)
    assert result.log_append_time == T0 + 777
    for base, raw in read_all(log):
        header = batches_of(raw)[0][0]
        assert header.timestamp_type == LOG_APPEND_TIME and header.max_timestamp == T0 + 777
        assert header.base_timestamp == T0
        assert verify_crc(raw, 0, len(raw))
        theirs = DefaultRecordBatch(raw)
        assert theirs.validate_crc()
        assert {r.timestamp for r in theirs} == {T0 + 777}
        assert theirs.base_offset == base
    assert log.max_timestamp() == (0, T0 + 777)
    assert log.offset_for_timestamp(T0 + 500) == (0, T0 + 777)


# Timestamps out of order, within and across batches, as Kafka allows with CreateTime.
SHUFFLED = [[50, 10, 300], [20], [200, 100], [5, 400, 400], [90], [400, 30], [250, 260, 10, 0]]


def shuffled_log(path: Path, **config) -> tuple[PartitionLog, list[tuple[int, int]]]:
    log = PartitionLog.open(path, small(segment_bytes=240, index_interval_bytes=60, **config), now_ms=T0)
    records = []
    for round_ in range(3):
        for stamps in SHUFFLED:
            ts = [T0 + s + round_ * 1000 * (round_ != 1) for s in stamps]  # round 1 repeats round 0's
            result = log.append_as_leader(batch(deltas=[t - ts[0] for t in ts], ts=ts[0]), now_ms=T0)
            records += [(result.base_offset + i, t) for i, t in enumerate(ts)]
    return log, records


def test_offset_for_timestamp_with_non_monotonic_timestamps(path):
    log, records = shuffled_log(path)
    assert log.segment_count > 3
    for target in sorted({t for _, t in records} | {t + 1 for _, t in records} | {T0 - 5, T0 + 99999}):
        expected = next(((o, t) for o, t in records if t >= target), None)
        assert log.offset_for_timestamp(target) == expected, target


def test_offset_for_timestamp_skips_records_below_the_log_start_offset(path):
    log, records = shuffled_log(path)
    log.delete_records(2)  # offset 2 (T0+300) is the first record >= T0+250 at or after 2
    assert log.offset_for_timestamp(T0 + 250) == (2, T0 + 300)
    log.delete_records(3)  # the rest of the first segment holds nothing that late: later segments do
    assert log.offset_for_timestamp(T0 + 250) == (7, T0 + 400)


def test_offset_for_timestamp_after_reopen(path):
    log, records = shuffled_log(path)
    expected = {t: log.offset_for_timestamp(t) for _, t in records}
    log.close()
    log = PartitionLog.open(path, small(segment_bytes=240, index_interval_bytes=60), now_ms=T0)
    assert {t: log.offset_for_timestamp(t) for _, t in records} == expected


def test_max_timestamp_is_the_first_record_carrying_it(path):
    log = PartitionLog.open(path, small(), now_ms=T0)
    assert log.max_timestamp() == (-1, -1)
    log, records = shuffled_log(path / "other")
    top = max(t for _, t in records)
    assert log.max_timestamp() == (next(o for o, t in records if t == top), top)
    log.close()
    log = PartitionLog.open(path / "other", small(), now_ms=T0)
    assert log.max_timestamp() == (next(o for o, t in records if t == top), top)


def expired_log(path: Path, **config) -> PartitionLog:
    """Five segments of two batches; segment i's records are stamped T0 + i * 1000."""
    log = PartitionLog.open(path, small(segment_bytes=2 * len(batch()), **config), now_ms=T0)
    for i in range(10):
        log.append_as_leader(batch(ts=T0 + i // 2 * 1000), now_ms=T0)
    assert log.segment_count == 5
    return log


def test_retention_by_time_deletes_closed_segments_by_their_largest_timestamp(path):
    log = expired_log(path, retention_ms=10_000)
    assert log.apply_retention(T0 + 10_000) == 0
    assert log.apply_retention(T0 + 12_001) == 3  # segments stamped T0, T0+1000, T0+2000
    assert log.segment_base_offsets() == [18, 24]
    assert log.log_start_offset == 18
    assert not (path / "00000000000000000000.log").exists()
    with pytest.raises(OffsetOutOfRangeError):
        log.read(17, 100)
    assert read_all(log)[0][0] == 18


def test_retention_rolls_an_expired_active_segment_first(path):
    log = expired_log(path, retention_ms=10_000)
    assert log.apply_retention(T0 + 100_000) == 5
    assert log.segment_base_offsets() == [30]
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (30, 30, 0)
    assert log.read(30, 100) == b""
    assert log.apply_retention(T0 + 200_000) == 0  # an empty active segment stays
    assert log.append_as_leader(batch(), now_ms=T0).base_offset == 30
    log.close()
    log = PartitionLog.open(path, small(), now_ms=T0)
    assert (log.log_start_offset, log.log_end_offset) == (30, 33)


def test_retention_by_size(path):
    log = expired_log(path, retention_ms=-1, retention_bytes=5 * len(batch()))
    # 10 batches, at most 5 kept: whole segments only, never below retention.bytes (as Kafka)
    assert log.apply_retention(T0 + 10**12) == 2
    assert log.segment_base_offsets() == [12, 18, 24]
    assert log.size_bytes == 6 * len(batch())
    assert log.apply_retention(T0 + 10**12) == 0


def test_no_time_or_size_retention_with_the_compact_policy(path):
    log = expired_log(path, retention_ms=0, retention_bytes=0, cleanup_policy="compact")
    assert log.apply_retention(T0 + 10**12) == 0
    log.delete_records(7)
    assert log.segment_base_offsets() == [6, 12, 18, 24]


def test_delete_records_moves_the_log_start_offset_persistently(path):
    log = expired_log(path)
    log.delete_records(13)
    assert log.log_start_offset == 13
    assert log.segment_base_offsets() == [12, 18, 24]
    log.delete_records(5)  # never backwards
    assert log.log_start_offset == 13
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(31)
    log.close()
    assert (path / LOG_START_OFFSET_CHECKPOINT).read_text() == "0\n1\ntopic 0 13\n"
    log = PartitionLog.open(path, small(segment_bytes=2 * len(batch())), now_ms=T0)
    assert log.log_start_offset == 13
    with pytest.raises(OffsetOutOfRangeError):
        log.read(12, 100)
    log.delete_records(30)  # everything: as in Kafka, the active segment stays (and is empty to readers)
    assert log.segment_base_offsets() == [24] and log.log_start_offset == 30
    assert log.read(30, 100) == b""


def test_truncate_to(path):
    log = expired_log(path)
    before = read_all(log)
    log.truncate_to(14)  # inside the batch 12..14: that batch goes too
    assert log.log_end_offset == 12
    assert log.segment_base_offsets() == [0, 6, 12]
    assert read_all(log) == before[:4]
    assert log.append_as_leader(batch(), now_ms=T0).base_offset == 12
    log.close()
    log = PartitionLog.open(path, small(segment_bytes=2 * len(batch())), now_ms=T0)
    assert [b for b, _ in read_all(log)] == [0, 3, 6, 9, 12]
    log.truncate_to(0)
    assert (log.log_end_offset, log.size_bytes) == (0, 0)


def test_truncate_below_the_log_start_offset_empties_the_log(path):
    log = expired_log(path)
    log.delete_records(20)
    log.truncate_to(7)
    assert (log.log_start_offset, log.log_end_offset, log.segment_base_offsets()) == (7, 7, [7])


def test_iter_batch_headers(path):
    log = expired_log(path)
    assert [h.base_offset for h in log.iter_batch_headers()] == list(range(0, 30, 3))
    assert [h.base_offset for h in log.iter_batch_headers(13)] == list(range(12, 30, 3))
    assert all(h.partition_leader_epoch == 0 for h in log.iter_batch_headers())


def test_reopen_gives_identical_reads_and_index_files(path):
    config = small(segment_bytes=2000, index_interval_bytes=150)
    log = PartitionLog.open(path, config, now_ms=T0)
    for i in range(80):
        log.append_as_leader(batch(count=1 + i % 3, ts=T0 + (i * 37) % 101), now_ms=T0)
    reads = {o: log.read(o, 700) for o in range(log.log_end_offset)}
    log.close()
    files = {p.name: p.read_bytes() for p in path.iterdir()}
    log = PartitionLog.open(path, config, now_ms=T0)
    assert {o: log.read(o, 700) for o in range(log.log_end_offset)} == reads
    log.close()
    assert {p.name: p.read_bytes() for p in path.iterdir()} == files


def test_flush_publishes_the_offset_it_made_durable(path):
    log = PartitionLog.open(path, small(), now_ms=T0)
    assert log.flushed_offset == 0
    for _ in range(5):
        log.append_as_leader(batch(), now_ms=T0)
    assert log.flushed_offset == 0
    log.flush()
    assert log.flushed_offset == 15 == log.log_end_offset


def test_flush_in_a_thread_while_appending(path):
    log = PartitionLog.open(path, small(segment_bytes=3000), now_ms=T0)
    stop = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def flusher() -> None:
        try:
            while not stop.is_set():
                log.flush()
                seen.append(log.flushed_offset)
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=flusher)
    thread.start()
    try:
        for i in range(300):
            log.append_as_leader(batch(), now_ms=T0)
            if i % 50 == 49:
                log.apply_retention(T0 + 10**13)
    finally:
        stop.set()
        thread.join()
    assert not errors
    assert seen == sorted(seen) and seen[-1] <= log.log_end_offset
    log.flush()
    assert log.flushed_offset == log.log_end_offset == 900


def test_records_round_trip_through_the_log(path):
    log = PartitionLog.open(path, small(), now_ms=T0)
    log.append_as_leader(batch(count=2, ts=T0, deltas=[0, 5]), now_ms=T0)
    log.append_as_leader(batch(count=3, ts=T0 + 9, compression=COMPRESSION_GZIP), now_ms=T0)
    raw = log.read(2, 1 << 20)
    (header, data), = batches_of(raw)
    records = decode_records(data)
    assert [header.base_offset + r.offset_delta for r in records] == [2, 3, 4]
    assert [record_timestamp(header, r) for r in records] == [T0 + 9] * 3


def test_delete_removes_the_directory(path):
    log = PartitionLog.open(path, small(), now_ms=T0)
    log.append_as_leader(batch(), now_ms=T0)
    log.delete()
    assert not path.exists()
