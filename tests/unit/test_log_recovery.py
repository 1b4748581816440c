"""PartitionLog recovery: torn tails, garbage, lost or corrupt indexes, leftovers, recovery points, and
the open after a clean shutdown, which scans nothing."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest

from broker.log.checkpoints import LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT
from broker.log.config import LogConfig
from broker.log.index import OffsetIndex
from broker.log.partition_log import PartitionLog
from protocol.records import Record, build_batch, iter_batches

T0 = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=120)


def batch(i: int) -> bytes:
    return build_batch([Record(j, j, b"key", b"value-%d" % i * (1 + i % 4)) for j in range(1 + i % 3)],
                       base_timestamp=T0 + (i * 31) % 97)


def filled(path: Path, n: int = 40) -> tuple[PartitionLog, list[int]]:
    log = PartitionLog.open(path, CONFIG, now_ms=T0)
    bases = [log.append_as_leader(batch(i), now_ms=T0).base_offset for i in range(n)]
    return log, bases


def snapshot(log: PartitionLog) -> dict[int, bytes]:
    return {o: log.read(o, 10_000) for o in range(log.log_start_offset, log.log_end_offset)}


def without_last(data: bytes, end_offset: int) -> bytes:
    return b"".join(data[s:e] for h, s, e in iter_batches(data) if h.base_offset < end_offset)


def seg(path: Path, base: int, suffix: str = ".log") -> Path:
    return path / f"{base:020d}{suffix}"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "t-3"


def test_torn_tail_cut_at_every_byte_of_the_last_batch(path):
    log, bases = filled(path)
    last_base = log.segment_base_offsets()[-1]
    reads = snapshot(log)
    log.close()
    active = seg(path, last_base)
    original = active.read_bytes()
    *_, (header, start, end) = iter_batches(original)
    expected = {o: without_last(r, header.base_offset) for o, r in reads.items() if o < header.base_offset}
    for cut in range(start + 1, end):
        active.write_bytes(original[:cut])
        log = PartitionLog.open(path, CONFIG, now_ms=T0)
        assert log.log_end_offset == header.base_offset
        assert active.stat().st_size == start
        assert snapshot(log) == expected
        log.close()
    active.write_bytes(original)
    log = PartitionLog.open(path, CONFIG, now_ms=T0)
    assert snapshot(log) == reads


@pytest.mark.parametrize("garbage", [b"\x00" * 5000, os.urandom(3000), b"\x00" * 7, None])
def test_garbage_after_the_last_batch_is_cut_with_a_warning(path, caplog, garbage):
    log, _ = filled(path)
    reads = snapshot(log)
    end = log.log_end_offset
    log.close()
    active = seg(path, log.segment_base_offsets()[-1])
    size = active.stat().st_size
    if garbage is None:  # a valid-looking batch header whose body was never written
        garbage = batch(1)[:70]
    with open(active, "ab") as f:
        f.write(garbage)
    with caplog.at_level(logging.WARNING):
        log = PartitionLog.open(path, CONFIG, now_ms=T0)
    assert f"truncating {len(garbage)} bytes" in caplog.text
    assert active.stat().st_size == size and log.log_end_offset == end
    assert snapshot(log) == reads
    assert log.append_as_leader(batch(0), now_ms=T0).base_offset == end


def test_a_corrupt_batch_in_the_active_segment_cuts_the_log_there(path):
    log, _ = filled(path)
    log.close()
    active = seg(path, log.segment_base_offsets()[-1])
    data = bytearray(active.read_bytes())
    (_, _, _), (second, start, _end), *_ = iter_batches(bytes(data))
    data[start + 70] ^= 0xFF
    active.write_bytes(bytes(data))
    log = PartitionLog.open(path, CONFIG, now_ms=T0)
    assert log.log_end_offset == second.base_offset
    assert active.stat().st_size == start


@pytest.mark.parametrize("damage", ["delete", "odd size", "garbage", "stale"])
def test_closed_segment_indexes_are_rebuilt_when_missing_or_inconsistent(path, damage):
    log, _ = filled(path)
    reads = snapshot(log)
    timestamps = {t: log.offset_for_timestamp(t) for t in range(T0 - 1, T0 + 100)}
    log.close()
    closed = log.segment_base_offsets()[:-1]
    assert len(closed) >= 3
    originals = {p.name: p.read_bytes() for p in path.iterdir() if "index" in p.name}
    for base in closed:
        for suffix in (".index", ".timeindex"):
            p = seg(path, base, suffix)
            if damage == "delete":
                p.unlink()
            elif damage == "odd size":
                p.write_bytes(p.read_bytes() + b"\x01")
            elif damage == "garbage":
                p.write_bytes(b"\x7f" * (24 if suffix == ".index" else 36))
            elif suffix == ".index":  # entries of a longer, older log
                p.write_bytes(p.read_bytes() + (10_000).to_bytes(4, "big") + (10).to_bytes(4, "big"))
    log = PartitionLog.open(path, CONFIG, now_ms=T0)
    assert snapshot(log) == reads
    assert {t: log.offset_for_timestamp(t) for t in range(T0 - 1, T0 + 100)} == timestamps
    log.close()
    assert {p.name: p.read_bytes() for p in path.iterdir() if "index" in p.name} == originals


def test_a_lost_final_time_index_entry_is_noticed(path, caplog):
    log, _ = filled(path)
    expected = log.max_timestamp()
    log.close()
    # Drop time index entries of the segment holding the max timestamp: its tail then disagrees.
    for base in log.segment_base_offsets()[:-1]:
        p = seg(path, base, ".timeindex")
        p.write_bytes(p.read_bytes()[:-12])
    with caplog.at_level(logging.WARNING):
        log = PartitionLog.open(path, CONFIG, now_ms=T0)
    assert log.max_timestamp() == expected
    assert caplog.text.count("rebuilding") == len(log.segment_base_offsets()) - 1


def test_empty_last_segment_after_a_crash_during_roll(path):
    log, _ = filled(path)
    end = log.log_end_offset
    reads = snapshot(log)
    log.close()
    seg(path, end).touch()  # the new segment's file was created, nothing else
    log = PartitionLog.open(path, CONFIG, now_ms=T0)
    assert log.log_end_offset == end and log.segment_base_offsets()[-1] == end
    assert snapshot(log) == reads
    assert log.append_as_leader(batch(0), now_ms=T0).base_offset == end
    assert log.read(end, 100)


def test_leftover_and_orphan_files_are_removed(path):
    log, _ = filled(path)
    log.close()
    leftovers = [seg(path, 0, ".log.deleted"), seg(path, 5, ".log.cleaned"), seg(path, 0, ".index.swap"),
                 path / "log-start-offset-checkpoint.tmp", seg(path, 999_999, ".index"),
                 seg(path, 999_999, ".timeindex")]
    for p in leftovers:
        p.write_bytes(b"junk")
    (path / "leader-epoch-checkpoint").write_text("0\n0\n")  # files we do not know stay
    PartitionLog.open(path, CONFIG, now_ms=T0).close()
    assert not any(p.exists() for p in leftovers)
    assert (path / "leader-epoch-checkpoint").exists()


def test_unflushed_closed_segments_are_recovered_and_later_ones_dropped(path):
    log, _ = filled(path)  # never flushed: the recovery point is still 0
    bases = log.segment_base_offsets()
    assert not (path / RECOVERY_POINT_CHECKPOINT).exists()
    # simulate a crash: no close(); the second segment lost its tail
    victim = seg(path, bases[1])
    victim_batches = list(iter_batches(victim.read_bytes()))
    with open(victim, "r+b") as f:
        f.truncate(victim_batches[-1][1] + 10)
    log = PartitionLog.open(path, CONFIG, now_ms=T0)
    assert log.segment_base_offsets() == bases[:2]
    assert log.log_end_offset == victim_batches[-1][0].base_offset
    for base in bases[2:]:
        assert not seg(path, base).exists()


def test_flushed_segments_are_not_rescanned(path, caplog):
    log, _ = filled(path)
    log.flush()
    bases = log.segment_base_offsets()
    assert (path / RECOVERY_POINT_CHECKPOINT).read_text() == f"0\n1\nt 3 {bases[-1]}\n"
    # A flipped byte inside a flushed, closed segment is not looked for at open (as in Kafka) ...
    victim = seg(path, bases[0])
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xFF
    victim.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        log = PartitionLog.open(path, CONFIG, now_ms=T0)
    assert "truncating" not in caplog.text
    assert log.segment_base_offsets() == bases


def test_a_log_start_offset_past_the_recovered_end_restarts_the_log_there(path):
    log, _ = filled(path)
    end = log.log_end_offset
    log.delete_records(end)
    log.close()
    for base in log.segment_base_offsets():
        seg(path, base).write_bytes(b"")  # the data never reached the disk
    log = PartitionLog.open(path, CONFIG, now_ms=T0)
    assert (log.log_start_offset, log.log_end_offset, log.segment_base_offsets()) == (end, end, [end])
    assert (path / LOG_START_OFFSET_CHECKPOINT).exists()


def test_unreadable_checkpoints_are_ignored(path, caplog):
    log, _ = filled(path)
    reads = snapshot(log)
    log.close()
    (path / LOG_START_OFFSET_CHECKPOINT).write_text("garbage")
    (path / RECOVERY_POINT_CHECKPOINT).write_text("")
    log = PartitionLog.open(path, CONFIG, now_ms=T0)
    assert snapshot(log) == reads
    assert "ignoring unreadable" in caplog.text


def index_files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.iterdir() if p.suffix in (".log", ".index", ".timeindex")}


def test_after_a_clean_shutdown_nothing_is_scanned_and_appends_go_on_as_after_a_recovery(tmp_path, scanned):
    config = CONFIG
    clean, twin = tmp_path / "t-0", tmp_path / "u-0"
    log = PartitionLog.open(clean, config, now_ms=T0)
    for i in range(40):
        log.append_as_leader(batch(i), now_ms=T0)
    log.close()
    shutil.copytree(clean, twin)
    scanned.clear()
    loaded = PartitionLog.open(clean, config, now_ms=T0, clean_shutdown=True)
    assert scanned == []
    assert loaded.flushed_offset == loaded.log_end_offset
    recovered = PartitionLog.open(twin, config, now_ms=T0)
    assert scanned == ["u-0"]
    assert snapshot(loaded) == snapshot(recovered)
    # The active segment's state (index spacing, the timestamp segment.ms counts from) is what a scan
    # rebuilds: further appends roll and index alike, and the files end up the same.
    for i in range(40, 90):
        for log in (loaded, recovered):
            log.append_as_leader(batch(i), now_ms=T0 + 1000)
    assert loaded.segment_base_offsets() == recovered.segment_base_offsets()
    loaded.close()
    recovered.close()
    assert index_files(clean) == index_files(twin)


def test_after_a_clean_shutdown_segment_ms_counts_from_the_active_segments_first_batch(path):
    config = LogConfig(segment_ms=1000)

    def at(timestamp: int) -> bytes:
        return build_batch([Record(0, 0, b"key", b"value")], base_timestamp=timestamp)

    log = PartitionLog.open(path, config, now_ms=T0)
    log.append_as_leader(at(T0), now_ms=T0)
    log.close()
    log = PartitionLog.open(path, config, now_ms=T0 + 5000, clean_shutdown=True)
    log.append_as_leader(at(T0 + 500), now_ms=T0 + 5000)
    assert log.segment_count == 1  # 500 ms after the segment's first batch
    log.append_as_leader(at(T0 + 1500), now_ms=T0 + 5000)
    assert log.segment_count == 2


def test_a_clean_shutdown_open_still_recovers_an_active_segment_whose_indexes_disagree(path, scanned, caplog):
    log, _ = filled(path)
    reads = snapshot(log)
    expected = log.max_timestamp()
    log.close()
    active = log.segment_base_offsets()[-1]
    seg(path, active, ".index").write_bytes(b"\x7f" * 24)
    with caplog.at_level(logging.WARNING):
        log = PartitionLog.open(path, CONFIG, now_ms=T0, clean_shutdown=True)
    assert scanned == [path.name]
    assert "rebuilding" in caplog.text
    assert snapshot(log) == reads
    assert log.max_timestamp() == expected


def test_after_a_crash_the_active_segment_is_scanned_but_not_synced_until_the_first_flush(path, scanned,
                                                                                        monkeypatch):
    log, _ = filled(path)
    log.flush()  # the closed segments are durable: only the active one is scanned after the crash
    for i in range(40, 45):
        log.append_as_leader(batch(i), now_ms=T0)
    reads = snapshot(log)
    active = log.segment_base_offsets()[-1]
    synced: list[int] = []
    fdatasync = os.fdatasync

    def counting(fd: int) -> None:
        synced.append(fd)
        fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", counting)
    crashed = PartitionLog.open(path, CONFIG, now_ms=T0)  # the first one was never closed
    assert scanned == [path.name]
    assert synced == []
    assert snapshot(crashed) == reads
    # Only what the recovery point covers counts as durable; a flush (an acks=all wait) syncs the rest.
    assert crashed.flushed_offset == active < crashed.log_end_offset
    crashed.flush()
    assert synced
    assert crashed.flushed_offset == crashed.log_end_offset


def test_an_index_rewrite_leaves_an_equal_file_alone_and_fixes_any_other(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100, 1000)
    for i in range(5):
        index.append(100 + 10 * i, 200 * i)
    index.rewrite()
    expected = path.read_bytes()
    assert len(expected) == 40
    os.utime(path, ns=(0, 0))
    index.rewrite()
    assert path.stat().st_mtime_ns == 0  # not written again
    for damaged in (expected + b"\x00" * 16, expected[:20], b"\x7f" * 40, b""):
        path.write_bytes(damaged)
        index.rewrite()
        assert path.read_bytes() == expected
    index.clear()
    index.rewrite()
    assert path.read_bytes() == b""
