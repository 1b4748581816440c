"""The log cleaner's passes on a real PartitionLog: what survives, offsets, tombstones and their delete
horizon, transactions (aborted data, markers), producers' last batches, crash-safe swaps."""

from __future__ import annotations

import os
from pathlib import Path

from broker.log.cleaner import CLEANER_DIR
from broker.log.cleaning_plan import plan_cleaning
from broker.log.config import LogConfig
from broker.log.log_loader import SWAP_DIR
from broker.log.partition_log import PartitionLog
from broker.log.producer_state import ProducerStateManager
from protocol.records import (
    COMPRESSION_GZIP,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    Record,
    build_batch,
    control_batch,
    decode_records,
    iter_batches,
    parse_control_record,
    record_timestamp,
)

T0 = 1_700_000_000_000
RETENTION = 60_000


def config(**kw) -> LogConfig:
    return LogConfig(**{"segment_bytes": 400, "index_interval_bytes": 100, "cleanup_policy": "compact",
                        "min_cleanable_dirty_ratio": 0.0, "delete_retention_ms": RETENTION, **kw})


class Log:
    """A compacted partition: its log, its producer state, and helpers to append and clean."""

    def __init__(self, directory: Path, **kw) -> None:
        self.log = PartitionLog.open(directory, config(**kw), now_ms=T0)
        self.producers = ProducerStateManager()
        self.now = T0

    def put(self, *pairs: tuple[bytes, bytes | None], compression: int = 0, pid: int = -1, epoch: int = 0,
            seq: int = -1, txn: bool = False) -> int:
        records = [Record(i, i, k, v) for i, (k, v) in enumerate(pairs)]
        data = build_batch(records, base_timestamp=self.now, compression=compression, producer_id=pid,
                           producer_epoch=epoch, base_sequence=seq, is_transactional=txn)
        result = self.log.append_as_leader(data, now_ms=self.now)
        self.producers.commit(pid, epoch, seq, len(pairs) - 1, result.base_offset, self.now, txn)
        return result.base_offset

    def end_txn(self, pid: int, commit: bool, epoch: int = 0) -> int:
        data = control_batch(commit, pid, epoch, 0, self.now)
        offset = self.log.append_as_leader(data, now_ms=self.now).base_offset
        self.producers.complete_txn(pid, epoch, commit, 0, offset, self.now)
        return offset

    def roll(self) -> None:
        """Close the active segment (as segment.ms would) and make everything durable."""
        self.log._roll(self.now)
        self.log.flush()

    def clean(self, *, horizon_due: bool = False, max_map_entries: int = 1_000_000) -> bool:
        job = plan_cleaning(self.log, self.producers, now_ms=self.now, first_dirty=self.log.first_dirty_offset,
                            horizon_due=horizon_due, max_map_entries=max_map_entries)
        if job is None:
            return False
        result = job.run()
        swapped = self.log.swap_cleaned(job, result, now_ms=self.now)
        if swapped:
            self.producers.drop_aborted_before(result.end_offset)
        self.last_result = result
        return swapped

    def records(self) -> list[tuple[int, bytes | None, bytes | None]]:
        """(offset, key, value) of every data record, read as a consumer does."""
        return [(o, k, v) for o, k, v, control in self.entries() if not control]

    def entries(self) -> list[tuple[int, bytes | None, bytes | None, bool]]:
        out = []
        offset = self.log.log_start_offset
        while offset < self.log.log_end_offset:
            data = self.log.read(offset, 1 << 20)
            if not data:
                break
            for header, start, end in iter_batches(data):
                for record in decode_records(memoryview(data)[start:end]):
                    out.append((header.base_offset + record.offset_delta, record.key, record.value,
                                header.is_control))
                offset = header.last_offset + 1
        return out

    def batches(self) -> list:
        out = []
        offset = self.log.log_start_offset
        while offset < self.log.log_end_offset:
            data = self.log.read(offset, 1 << 20)
            for header, start, end in iter_batches(data):
                out.append((header, bytes(data[start:end])))
                offset = header.last_offset + 1
        return out


def test_latest_value_per_key_survives_at_its_offset(tmp_path: Path) -> None:
    p = Log(tmp_path)
    written = {}
    for round_ in range(4):
        for key in (b"a", b"b", b"c"):
            value = b"%s%d" % (key, round_)
            written[key] = (p.put((key, value)), value)
    p.put((b"d", b"only"))
    p.roll()
    end = p.log.log_end_offset
    assert p.clean()
    assert p.records() == sorted([(o, k, v) for k, (o, v) in written.items()] + [(12, b"d", b"only")])
    assert p.log.log_end_offset == end
    assert p.log.first_dirty_offset == end
    assert not p.clean()  # nothing dirty left


def test_the_active_segment_is_left_alone_and_the_dirty_ratio_decides(tmp_path: Path) -> None:
    p = Log(tmp_path, min_cleanable_dirty_ratio=0.5)
    p.put((b"k", b"1"))
    p.put((b"k", b"2"))
    assert not p.clean()  # everything is in the active segment
    p.roll()
    p.put((b"k", b"3"))  # in the active segment: not read, so it does not supersede 2
    assert p.clean()
    assert p.records() == [(1, b"k", b"2"), (2, b"k", b"3")]
    p.roll()
    # dirty: one batch against one clean batch of the same size, a ratio of 0.5, which is not above 0.5
    assert not p.clean()
    p.put((b"k", b"4"))
    p.roll()
    assert p.clean()
    assert p.records() == [(3, b"k", b"4")]


def test_a_pass_that_stops_at_an_unflushed_segment_leaves_it_dirty(tmp_path: Path) -> None:
    """Rolled segments wait for a flush before they are cleaned; the pass before it ends where the first
    unflushed one starts, not at the active segment (which would skip the unflushed ones for good)."""
    p = Log(tmp_path)
    p.put((b"k", b"1"))
    p.put((b"k", b"2"))
    p.roll()  # flushed
    unflushed = p.put((b"k", b"3"))
    p.put((b"k", b"4"))
    p.log._roll(p.now)  # rolled, not flushed (log.flush.policy=none, or acks=1)
    p.put((b"k", b"5"))
    assert p.clean()
    assert p.last_result.end_offset == unflushed == p.log.first_dirty_offset
    p.log.flush()
    assert p.clean()
    assert p.records() == [(3, b"k", b"4"), (4, b"k", b"5")]


def test_tombstones_stay_until_their_delete_horizon(tmp_path: Path) -> None:
    p = Log(tmp_path)
    p.put((b"a", b"1"), (b"b", b"1"))
    p.put((b"a", None))
    p.roll()
    assert p.clean()
    assert p.records() == [(1, b"b", b"1"), (2, b"a", None)]
    tombstone_batch = [h for h, _ in p.batches() if h.base_offset == 2][0]
    assert tombstone_batch.delete_horizon == T0 + RETENTION
    assert p.last_result.delete_horizon == T0 + RETENTION
    p.now += RETENTION - 1
    assert p.clean(horizon_due=True)
    assert (2, b"a", None) in p.records()  # not yet
    p.now += 1
    assert p.clean(horizon_due=True)
    assert p.records() == [(1, b"b", b"1")]
    assert p.last_result.delete_horizon is None


def test_record_timestamps_survive_a_rebuilt_batch(tmp_path: Path) -> None:
    p = Log(tmp_path)
    p.put((b"a", b"1"), (b"b", b"1"), (b"c", None))  # timestamps T0, T0+1, T0+2
    p.put((b"a", b"2"))
    p.roll()
    assert p.clean()
    (header, raw), _ = p.batches()
    assert header.delete_horizon == T0 + RETENTION
    assert [(r.key, record_timestamp(header, r)) for r in decode_records(raw)] == [(b"b", T0 + 1), (b"c", T0 + 2)]
    assert header.max_timestamp == T0 + 2


def test_compressed_batches_keep_their_codec(tmp_path: Path) -> None:
    p = Log(tmp_path)
    p.put((b"a", b"1"), (b"b", b"1"), compression=COMPRESSION_GZIP)
    p.put((b"a", b"2"))
    p.roll()
    assert p.clean()
    header, raw = p.batches()[0]
    assert header.compression == COMPRESSION_GZIP and header.last_offset_delta == 1
    assert [(r.offset_delta, r.key) for r in decode_records(raw)] == [(1, b"b")]


def markers(p: Log) -> list[tuple[int, int]]:
    return [(o, parse_control_record(Record(0, 0, k, v))[0]) for o, k, v, c in p.entries() if c]


def test_aborted_data_goes_then_its_marker(tmp_path: Path) -> None:
    p = Log(tmp_path)
    p.put((b"k", b"committed"), pid=7, seq=0, txn=True)
    p.end_txn(7, commit=True)  # offset 1
    p.put((b"k", b"aborted"), (b"j", b"aborted"), pid=8, seq=0, txn=True)  # 2-3
    p.end_txn(8, commit=False)  # offset 4
    p.put((b"other", b"x"))
    p.roll()
    assert p.producers.aborted_transactions(0, 100) == [(8, 2)]
    assert p.clean()
    # The aborted records go (the batch stays as an empty header: producer 8's last sequence); the
    # committed one is not superseded by aborted data.
    assert p.records() == [(0, b"k", b"committed"), (5, b"other", b"x")]
    empty = [h for h, _ in p.batches() if h.base_offset == 2][0]
    assert (empty.records_count, empty.last_offset_delta, empty.producer_id) == (0, 1, 8)
    assert markers(p) == [(1, CONTROL_COMMIT), (4, CONTROL_ABORT)]
    assert p.producers.aborted_transactions(0, 100) == []  # the aborted index no longer names it
    # The next pass finds the abort marker's transaction empty: the marker gets a delete horizon...
    p.now += 1000
    p.put((b"other", b"y"))
    p.roll()
    assert p.clean()
    assert markers(p) == [(1, CONTROL_COMMIT), (4, CONTROL_ABORT)]
    assert p.last_result.delete_horizon == p.now + RETENTION
    # ... and goes after it; the commit marker stays while its transaction's data does.
    p.now += RETENTION
    assert p.clean(horizon_due=True)
    assert markers(p) == [(1, CONTROL_COMMIT)]
    assert p.records() == [(0, b"k", b"committed"), (6, b"other", b"y")]


def test_last_batch_of_a_producer_is_kept_empty(tmp_path: Path) -> None:
    p = Log(tmp_path)
    p.put((b"k", b"1"), pid=5, seq=0)
    p.put((b"k", b"2"))  # a plain producer supersedes producer 5's only record
    p.roll()
    assert p.clean()
    assert p.records() == [(1, b"k", b"2")]
    header = p.batches()[0][0]
    assert (header.base_offset, header.records_count, header.producer_id, header.base_sequence) == (0, 0, 5, 0)
    # Reloading producer state from the log still finds producer 5's sequence.
    replayed = ProducerStateManager()
    replayed.replay(p.log.iter_batch_headers())
    assert replayed.producers[5].last_seq == 0


def test_an_open_transaction_bounds_the_cleaned_range(tmp_path: Path) -> None:
    p = Log(tmp_path)
    p.put((b"k", b"1"))
    p.roll()
    p.put((b"k", b"open"), pid=3, seq=0, txn=True)  # stays undecided
    p.roll()
    p.put((b"k", b"3"))
    p.roll()
    assert p.clean()
    # only the first segment could be cleaned: its record is not judged against the later ones
    assert p.records() == [(0, b"k", b"1"), (1, b"k", b"open"), (2, b"k", b"3")]
    assert p.log.first_dirty_offset == 1


def test_a_full_map_splits_the_work_into_passes(tmp_path: Path) -> None:
    p = Log(tmp_path)
    for i in range(3):
        p.put((b"k%d" % i, b"old"))
        p.roll()
    for i in range(3):
        p.put((b"k%d" % i, b"new"))
        p.roll()
    assert p.clean(max_map_entries=2)
    first_end = p.log.first_dirty_offset
    assert 0 < first_end < 6
    while p.clean(max_map_entries=2):
        pass
    assert p.records() == [(3, b"k0", b"new"), (4, b"k1", b"new"), (5, b"k2", b"new")]


def test_cleaned_log_reopens_the_same(tmp_path: Path) -> None:
    p = Log(tmp_path)
    for i in range(30):
        p.put((b"k%d" % (i % 4), b"v%d" % i))
    p.roll()
    assert p.clean()
    before, segments = p.records(), p.log.segment_count
    p.log.close()
    reopened = PartitionLog.open(tmp_path, config(), now_ms=T0)
    p.log = reopened
    assert p.records() == before and reopened.segment_count == segments
    assert reopened.first_dirty_offset == 30


def test_a_committed_swap_is_completed_at_open_and_an_uncommitted_one_dropped(tmp_path: Path) -> None:
    p = Log(tmp_path / "a")
    for i in range(10):
        p.put((b"k", b"v%d" % i))
    p.roll()
    job = plan_cleaning(p.log, p.producers, now_ms=p.now, first_dirty=0, horizon_due=False, max_map_entries=100)
    result = job.run()
    p.log.close()
    # Crash before the commit: the pass is thrown away.
    assert (tmp_path / "a" / CLEANER_DIR).is_dir()
    log = PartitionLog.open(tmp_path / "a", config(), now_ms=T0)
    assert not (tmp_path / "a" / CLEANER_DIR).exists()
    assert len([1 for _ in log.iter_batch_headers()]) == 10
    log.close()
    # Crash right after the commit (the rename), before any old segment went: completed at open.
    p = Log(tmp_path / "b")
    for i in range(10):
        p.put((b"k", b"v%d" % i))
    p.roll()
    job = plan_cleaning(p.log, p.producers, now_ms=p.now, first_dirty=0, horizon_due=False, max_map_entries=100)
    result = job.run()
    os.rename(result.directory, tmp_path / "b" / SWAP_DIR)
    p.log.close()
    p.log = PartitionLog.open(tmp_path / "b", config(), now_ms=T0)
    assert not (tmp_path / "b" / SWAP_DIR).exists()
    assert p.records() == [(9, b"k", b"v9")]


def test_a_pass_is_discarded_when_retention_removed_its_segments(tmp_path: Path) -> None:
    p = Log(tmp_path)
    for i in range(10):
        p.put((b"k", b"v%d" % i))
    p.roll()
    p.put((b"k", b"last"))
    job = plan_cleaning(p.log, p.producers, now_ms=p.now, first_dirty=0, horizon_due=False, max_map_entries=100)
    result = job.run()
    p.log.delete_records(10)
    assert not p.log.swap_cleaned(job, result, now_ms=p.now)
    assert not result.directory.exists()
    assert p.records() == [(10, b"k", b"last")]
