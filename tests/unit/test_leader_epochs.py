"""The leader epoch cache (Kafka's LeaderEpochFileCache) and a replicated log's use of it: the answers of
OffsetForLeaderEpoch, truncation at both ends, the checkpoint file, and rebuilding from the batches."""

from __future__ import annotations

from pathlib import Path

from broker.log.config import LogConfig
from broker.log.leader_epochs import CHECKPOINT, LeaderEpochCache
from broker.log.partition_log import PartitionLog
from protocol.records import Record, build_batch, iter_batches, parse_batch_header

NOW = 1_700_000_000_000


def test_end_offset_for_as_kafka(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path)
    for epoch, start in ((0, 0), (2, 10), (5, 25)):
        assert cache.assign(epoch, start)
    assert cache.end_offset_for(5, 40) == (5, 40)  # the latest epoch ends at the log end
    assert cache.end_offset_for(2, 40) == (2, 25)
    assert cache.end_offset_for(3, 40) == (2, 25)  # an unknown epoch between: the floor one, next start
    assert cache.end_offset_for(0, 40) == (0, 10)
    assert cache.end_offset_for(6, 40) == (-1, -1)
    assert cache.end_offset_for(-1, 40) == (-1, -1)
    assert cache.epoch_for_offset(24) == 2 and cache.epoch_for_offset(25) == 5 and cache.epoch_for_offset(0) == 0


def test_assign_drops_contradicted_entries_and_persists(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path)
    cache.assign(1, 0)
    cache.assign(3, 10)
    assert not cache.assign(3, 12)  # the same epoch, later: nothing new
    cache.assign(2, 5)  # an older epoch at an earlier offset: epoch 3's entry is contradicted
    assert cache.entries == [(1, 0), (2, 5)]
    assert (tmp_path / CHECKPOINT).read_text() == "0\n2\n1 0\n2 5\n"
    assert LeaderEpochCache.load(tmp_path).entries == [(1, 0), (2, 5)]


def test_truncation_at_both_ends(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path, [(0, 0), (2, 10), (5, 25)])
    cache.truncate_from_end(25)
    assert cache.entries == [(0, 0), (2, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [(2, 12)]
    cache.truncate_from_start(5)  # below the first start: nothing changes
    assert cache.entries == [(2, 12)]


def test_unreadable_checkpoint_is_rebuilt(tmp_path: Path) -> None:
    (tmp_path / CHECKPOINT).write_text("0\n3\n1 0\n")
    assert LeaderEpochCache.load(tmp_path) is None


def _batch(epoch: int, base_offset: int, values: list[bytes]) -> bytes:
    data = bytearray(build_batch([Record(i, 0, None, v) for i, v in enumerate(values)], base_timestamp=NOW))
    data[0:8] = base_offset.to_bytes(8, "big", signed=True)
    data[12:16] = epoch.to_bytes(4, "big", signed=True)  # partitionLeaderEpoch, outside the CRC
    return bytes(data)


def test_a_follower_appends_the_leaders_batches_unchanged(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=NOW, track_epochs=True)
    leader_bytes = _batch(0, 0, [b"a", b"b"]) + _batch(3, 2, [b"c"])
    headers = plog.append_as_follower(leader_bytes, now_ms=NOW)
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 0), (2, 3)]
    assert plog.log_end_offset == 3
    assert plog.read(0, 1 << 20) == leader_bytes  # offsets and epochs as the leader wrote them
    assert plog.epochs.entries == [(0, 0), (3, 2)]
    assert plog.end_offset_for_epoch(0) == (0, 2)
    plog.truncate_to(2)
    assert plog.log_end_offset == 2 and plog.epochs.entries == [(0, 0)]
    plog.close()
    # Without its checkpoint the cache is rebuilt from the batches.
    (tmp_path / "t-0" / CHECKPOINT).unlink()
    again = PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=NOW, track_epochs=True)
    assert again.epochs.entries == [(0, 0)]
    again.close()


def test_a_leader_stamps_its_epoch_and_starts_it_at_the_log_end(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=NOW, track_epochs=True)
    plog.become_leader(0)
    plog.append_as_leader(build_batch([Record(0, 0, None, b"x")], base_timestamp=NOW), now_ms=NOW)
    plog.become_leader(4)
    plog.append_as_leader(build_batch([Record(0, 0, None, b"y")], base_timestamp=NOW), now_ms=NOW)
    stored = plog.read(0, 1 << 20)
    assert [parse_batch_header(stored[s:e]).partition_leader_epoch for _, s, e in iter_batches(stored)] == [0, 4]
    assert plog.epochs.entries == [(0, 0), (4, 1)]
    assert plog.epoch_for_offset(0) == 0 and plog.epoch_for_offset(1) == 4
    plog.close()
