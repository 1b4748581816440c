"""Kafka's share coordinator as pure logic (coordinator/share_coordinator.py): the state APIs' checks and
answers as Kafka 4.4 gives them (recorded: share_coordinator_state_apis), ShareSnapshot/ShareUpdate records and
their replay, the batch combiner, snapshots every N updates, and what pruning may delete."""

from __future__ import annotations

import uuid

from coordinator.share_coordinator import (
    PersisterBatch,
    ShareCoordinatorConfig,
    ShareCoordinatorShard,
    combine,
    coordinator_key,
    kafka_uuid,
    parse_coordinator_key,
)
from protocol.header import ErrorCode
from protocol.kafka4_group_records import ShareStateRecordType, decode_share_state_record

T = uuid.UUID("07d9f66f-2185-41fc-8abb-204b4974d470")
KEY = ("g", T, 1)


class Topics:
    def partition_count(self, topic_id: uuid.UUID) -> int:
        return 2 if topic_id == T else -1


class Harness:
    """A shard whose records are "appended" at increasing offsets of partition 0 and replayed, as the service
    does."""

    def __init__(self, per_snapshot: int = 500) -> None:
        self.shard = ShareCoordinatorShard(ShareCoordinatorConfig(per_snapshot), Topics())
        self.offset = 0
        self.kinds: list[ShareStateRecordType] = []

    def apply(self, outcome, key=KEY):
        if outcome.record is not None:
            kind, _, value = decode_share_state_record(*outcome.record)
            self.kinds.append(kind)
            self.shard.replay(0, self.offset, kind, key, value)
            self.offset += 1
        return outcome


def B(first: int, last: int, state: int, count: int) -> PersisterBatch:
    return PersisterBatch(first, last, state, count)


def test_keys_as_kafka_writes_them() -> None:
    assert kafka_uuid(T) == "B9n2byGFQfyKuyBLSXTUcA"
    assert coordinator_key("g", T, 0) == "g:B9n2byGFQfyKuyBLSXTUcA:0"
    assert parse_coordinator_key("g:B9n2byGFQfyKuyBLSXTUcA:-1") == ("g", T, -1)
    for bad in (f"g:{T}:0", "g:x:0", "nocolon", "g::0", ":B9n2byGFQfyKuyBLSXTUcA:0", "a:b:c:d"):
        try:
            parse_coordinator_key(bad)
        except ValueError:
            continue
        raise AssertionError(bad)


def test_combine_lays_newer_batches_over_older_ones() -> None:
    current = (B(8, 9, 2, 1), B(10, 12, 0, 2))
    assert combine(current, (B(11, 11, 4, 3),), 8) == (B(8, 9, 2, 1), B(10, 10, 0, 2), B(11, 11, 4, 3),
                                                       B(12, 12, 0, 2))
    assert combine(current, (), 9) == (B(9, 9, 2, 1), B(10, 12, 0, 2))
    assert combine((B(0, 3, 2, 1),), (B(4, 6, 2, 1),), 0) == (B(0, 6, 2, 1),)


def test_the_state_apis_answer_as_kafka_44() -> None:
    h = Harness()
    s = h.shard
    assert h.apply(s.read(KEY, 0, 0)).error == ErrorCode.INVALID_REQUEST  # uninitialized
    assert h.apply(s.write(KEY, 0, 0, 5, 0, [], 0)).error == ErrorCode.INVALID_REQUEST
    assert s.summary(KEY).state is None and s.summary(KEY).error == ErrorCode.NONE
    assert h.apply(s.initialize(("g", uuid.uuid4(), 0), 0, 0, 0)).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert h.apply(s.initialize(("g", T, 9), 0, 0, 0)).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert h.apply(s.initialize(KEY, 3, 7, 1)).error == ErrorCode.NONE
    read = h.apply(s.read(KEY, 2, 2))
    assert (read.state.state_epoch, read.state.start_offset, read.state.batches) == (3, 7, ())
    assert s.summary(KEY).state.leader_epoch == 2  # a read of a newer leader raised it
    assert h.apply(s.read(KEY, 1, 3)).error == ErrorCode.FENCED_LEADER_EPOCH
    assert h.apply(s.write(KEY, 3, 2, 8, 2, [B(8, 9, 2, 1), B(10, 12, 0, 2)], 4)).error == ErrorCode.NONE
    assert h.apply(s.write(KEY, 3, 2, -1, -1, [B(11, 11, 4, 3)], 5)).error == ErrorCode.NONE
    summary = s.summary(KEY).state
    assert (summary.start_offset, summary.delivery_complete_count) == (8, 2)  # -1: unchanged
    assert h.apply(s.read(KEY, 2, 6)).state.batches == (B(8, 9, 2, 1), B(10, 10, 0, 2), B(11, 11, 4, 3),
                                                        B(12, 12, 0, 2))
    assert h.apply(s.write(KEY, 3, 1, 9, -1, [], 7)).error == ErrorCode.FENCED_LEADER_EPOCH
    assert h.apply(s.write(KEY, 2, 2, 9, -1, [], 7)).error == ErrorCode.FENCED_STATE_EPOCH
    assert h.apply(s.write(KEY, 3, -1, 9, -1, [], 7)).error == ErrorCode.INVALID_REQUEST
    # A newer state epoch may write; the state keeps its epoch (a ShareUpdate has none).
    assert h.apply(s.write(KEY, 4, 3, 9, -1, [], 8)).error == ErrorCode.NONE
    read = h.apply(s.read(KEY, 3, 9)).state
    assert (read.state_epoch, read.start_offset, read.batches[0]) == (3, 9, B(9, 9, 2, 1))
    assert h.apply(s.initialize(KEY, 2, 1, 10)).error == ErrorCode.FENCED_STATE_EPOCH
    assert h.apply(s.initialize(KEY, 5, 1, 10)).error == ErrorCode.NONE
    read = h.apply(s.read(KEY, 3, 11)).state
    assert (read.state_epoch, read.start_offset, read.batches) == (5, 1, ())
    assert h.apply(s.delete(KEY)).error == ErrorCode.NONE
    assert h.apply(s.read(KEY, 3, 12)).error == ErrorCode.INVALID_REQUEST
    assert h.apply(s.delete(KEY)).record is None  # nothing to delete: no error, no record
    assert s.read(("g", T, -1), 0, 0).error == ErrorCode.INVALID_REQUEST


def test_a_snapshot_every_so_many_updates_and_what_pruning_may_delete() -> None:
    h = Harness(per_snapshot=2)
    s = h.shard
    h.apply(s.initialize(KEY, 0, 0, 0))
    for i in range(5):
        h.apply(s.write(KEY, 0, 0, i, -1, [B(i, i, 2, 1)], i))
    S, U = ShareStateRecordType.SHARE_SNAPSHOT, ShareStateRecordType.SHARE_UPDATE
    assert h.kinds == [S, U, U, S, U, U]
    assert s.summary(KEY).state.start_offset == 4 and s.entries[KEY].state.batches == (B(4, 4, 2, 1),)
    # Records before the key's latest snapshot (offset 3) are not needed any more.
    assert s.redundant_offset(0, lambda key: True) == 3
    h.apply(s.delete(KEY))
    assert s.redundant_offset(0, lambda key: True) == h.offset  # nothing needed: everything may go
