"""KIP-932 share groups as pure logic, explicit `now`: the share partition's record states (acquire, ACCEPT,
RELEASE, REJECT, delivery count limit, lock expiry, start offset, the changes written to the share coordinator
and the state read back) and the share group's membership (heartbeat, share state initialized before the
partitions are assigned, simple assignor sharing partitions, session timeout, each release's epochs)."""

from __future__ import annotations

import uuid

from coordinator.assignors import GroupSpec, MemberSpec, SubscriptionType
from coordinator.share_assignors import HashingSimpleAssignor, SimpleAssignor, java_hash_order, java_string_hash
from coordinator.share_coordinator import PersisterBatch, combine
from coordinator.share_group import ShareGroupConfig, ShareGroupCoordinator
from coordinator.share_partition import AcknowledgeType, AcquiredRange, RecordState, ShareAcquireMode, SharePartition
from protocol.header import ErrorCode
from tests.unit.test_consumer_group_coordinator import Log, Topics

ACCEPT, RELEASE, REJECT, GAP = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT,
                                AcknowledgeType.GAP)
BATCH_OPTIMIZED, RECORD_LIMIT = ShareAcquireMode.BATCH_OPTIMIZED, ShareAcquireMode.RECORD_LIMIT


def single_records(high_watermark: int) -> list[tuple[int, int]]:
    """A log of one-record batches up to the high watermark, as (first, last) offsets."""
    return [(offset, offset) for offset in range(high_watermark)]


def test_records_are_acquired_once_and_accepted() -> None:
    sp = SharePartition(0, lock_duration_ms=1000)
    assert sp.acquire("a", single_records(10), 4, now_ms=0) == [AcquiredRange(0, 3, 1)]
    assert sp.acquire("b", single_records(10), 100, now_ms=0) == [AcquiredRange(4, 9, 1)]
    assert sp.acquire("c", single_records(10), 100, now_ms=0) == []  # nothing left
    assert sp.acknowledge("b", 0, 3, [ACCEPT]) == ErrorCode.INVALID_RECORD_STATE  # a holds them
    assert sp.acknowledge("a", 0, 3, [ACCEPT]) == ErrorCode.NONE
    assert sp.start_offset == 4
    assert sp.acknowledge("a", 0, 0, [ACCEPT]) == ErrorCode.INVALID_RECORD_STATE  # already done


def test_release_and_reject_and_the_delivery_limit() -> None:
    sp = SharePartition(0, delivery_count_limit=3)
    sp.acquire("a", single_records(3), 10, 0)
    assert sp.acknowledge("a", 0, 2, [RELEASE, REJECT, ACCEPT]) == ErrorCode.NONE
    states = [sp.in_flight[o].state for o in range(3)]
    assert states == [RecordState.AVAILABLE, RecordState.ARCHIVED, RecordState.ACKNOWLEDGED]
    assert sp.start_offset == 0  # offset 0 is still to do
    for delivery in (2, 3):
        assert sp.acquire("b", single_records(3), 10, 0) == [AcquiredRange(0, 0, delivery)]
        sp.acknowledge("b", 0, 0, [RELEASE])
    # Released after its 3rd delivery: archived, never offered again.
    assert sp.acquire("b", single_records(3), 10, 0) == [] and sp.start_offset == 3


def test_lock_expiry_offers_the_records_again() -> None:
    sp = SharePartition(5, lock_duration_ms=30_000, delivery_count_limit=2)
    sp.acquire("a", single_records(8), 10, now_ms=100)
    assert sp.next_lock_deadline() == 30_100
    assert sp.expire_locks(30_099) == 0
    assert sp.expire_locks(30_100) == 3
    assert sp.acquire("b", single_records(8), 10, now_ms=30_200) == [AcquiredRange(5, 7, 2)]
    assert sp.acknowledge("a", 5, 5, [ACCEPT]) == ErrorCode.INVALID_RECORD_STATE  # a's lock is gone
    sp.expire_locks(60_200)
    assert sp.start_offset == 8 and sp.counts()["ARCHIVED"] == 0  # archived ones left the in-flight window


def test_member_leaving_releases_its_records() -> None:
    sp = SharePartition(0)
    sp.acquire("a", single_records(4), 2, 0)
    sp.acquire("b", single_records(4), 2, 0)
    assert sp.release_member("a") == 2
    assert sp.acquire("c", single_records(4), 10, 0) == [AcquiredRange(0, 1, 2)]


def test_changes_are_written_and_read_back_as_kafka_persists_them() -> None:
    sp = SharePartition(0, delivery_count_limit=5)
    sp.acquire("a", single_records(6), 10, 0)
    assert sp.take_changes() is None  # acquisitions stay in memory
    sp.acknowledge("a", 0, 5, [ACCEPT, ACCEPT, RELEASE, ACCEPT, REJECT, ACCEPT])
    batches, moved = sp.take_changes()
    # The write carries the start offset from before the change, and what the change did.
    assert sp.persisted_start == 0 and sp.start_offset == 2 and not moved
    assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in batches] == [
        (0, 1, 2, 1), (2, 2, 0, 1), (3, 3, 2, 1), (4, 4, 4, 1), (5, 5, 2, 1)]
    assert sp.delivery_complete_count() == 5  # 0, 1, 3, 4, 5 done from offset 0 on
    sp.acquire("a", single_records(8), 10, 0)  # re-acquires 2 (delivery 2), 6 and 7: left acquired
    state = combine((), batches, 0)
    restored = SharePartition.from_state(sp.persisted_start, state, delivery_count_limit=5)
    assert restored.start_offset == 2
    # The acquisitions are lost with the leader: 2 is offered with its one written delivery, 6 and 7 as new.
    assert restored.acquire("b", single_records(8), 10, 0) == [AcquiredRange(2, 2, 2), AcquiredRange(6, 7, 1)]
    assert restored.acknowledge("b", 2, 2, [ACCEPT]) == ErrorCode.NONE and restored.start_offset == 6


def test_offsets_between_the_state_batches_read_are_offered_again() -> None:
    # Acquired and never acknowledged records leave no state: a gap the next leader hands out again.
    state = (PersisterBatch(10, 11, 2, 1), PersisterBatch(14, 14, 4, 3))
    sp = SharePartition.from_state(10, state)
    assert sp.start_offset == 12 and sp.end_offset == 15
    assert sp.acquire("a", single_records(16), 10, 0) == [AcquiredRange(12, 13, 1), AcquiredRange(15, 15, 1)]


def test_a_failed_write_goes_into_the_next_one() -> None:
    sp = SharePartition(0)
    sp.acquire("a", single_records(3), 10, 0)
    sp.acknowledge("a", 0, 0, [ACCEPT])
    first = sp.take_changes()
    sp.acknowledge("a", 1, 1, [REJECT])
    sp.restore_changes(*first)
    batches, _ = sp.take_changes()
    assert [(b.first_offset, b.last_offset, b.delivery_state) for b in batches] == [(0, 0, 2), (1, 1, 4)]


def test_gap_acknowledgements_and_bad_batches() -> None:
    sp = SharePartition(0)
    sp.acquire("a", single_records(3), 10, 0)
    assert sp.acknowledge("a", 0, 2, [ACCEPT, GAP]) == ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", 0, 2, [GAP]) == ErrorCode.NONE and sp.start_offset == 3


def test_records_are_acquired_from_the_batches_read_whole_batches_at_a_time() -> None:
    """The batch a ShareFetch reads is acquired whole in the batch-optimized mode (as Kafka 4.4 did: 67 records
    of one batch for MaxRecords 20), so no acquired offset is left without its record: a client takes such an
    offset as a gap, and its GAP acknowledgement archives a record nobody was given (issue 34)."""
    log = [(0, 66), (67, 71), (72, 101)]
    sp = SharePartition(0)
    assert sp.next_fetch_offset() == 0
    assert sp.acquire("a", log, 20, 0) == [AcquiredRange(0, 66, 1)]
    assert sp.next_fetch_offset() == 67
    # Batches are added while fewer than MaxRecords are acquired: 5 + 30.
    assert sp.acquire("a", log[1:], 20, 0) == [AcquiredRange(67, 101, 1)]
    # Only what was read can be acquired: nothing past the batches given.
    sp = SharePartition(0)
    assert sp.acquire("a", log[:1], 500, 0) == [AcquiredRange(0, 66, 1)] and sp.end_offset == 67


def test_the_record_limit_mode_stops_at_max_records() -> None:
    sp = SharePartition(0)
    assert sp.acquire("a", [(0, 66)], 20, 0, RECORD_LIMIT) == [AcquiredRange(0, 19, 1)]
    assert sp.next_fetch_offset() == 20
    assert sp.acquire("b", [(0, 66)], 20, 0, RECORD_LIMIT) == [AcquiredRange(20, 39, 1)]
    # The batch is in flight whole: its other records are available, not past the records acquired.
    assert sp.end_offset == 67 and sp.counts()["AVAILABLE"] == 27
    assert sp.acknowledge("a", 60, 61, [ACCEPT]) == ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("a", 60, 67, [ACCEPT]) == ErrorCode.INVALID_REQUEST


def test_a_record_released_inside_a_batch_is_read_again_from_its_batch() -> None:
    """RELEASE of one record of a larger batch: the next fetch reads from that record's batch and acquires the
    record again (delivery 2), then new records after it; nothing else of the batch."""
    sp = SharePartition(0)
    sp.acquire("a", [(0, 66)], 20, 0)
    assert sp.acknowledge("a", 0, 66, [ACCEPT] * 5 + [RELEASE] + [ACCEPT] * 61) == ErrorCode.NONE
    assert sp.start_offset == 5 and sp.next_fetch_offset() == 5
    assert sp.acquire("b", [(0, 66), (67, 71)], 20, 0) == [AcquiredRange(5, 5, 2), AcquiredRange(67, 71, 1)]
    assert sp.next_fetch_offset() == 72
    assert sp.acknowledge("b", 5, 5, [REJECT]) == ErrorCode.NONE and sp.start_offset == 67


def test_offsets_the_log_no_longer_has_go_with_the_next_batch() -> None:
    """Compaction left 3-4 out: they are acquired with the batch after them, and acknowledged as gaps."""
    sp = SharePartition(0)
    assert sp.acquire("a", [(0, 2)], 1, 0) == [AcquiredRange(0, 2, 1)]
    assert sp.acquire("a", [(5, 9)], 10, 0) == [AcquiredRange(3, 9, 1)]
    assert sp.acknowledge("a", 3, 9, [GAP, GAP, ACCEPT, ACCEPT, ACCEPT, ACCEPT, ACCEPT]) == ErrorCode.NONE


def test_the_in_flight_limit_stops_new_acquisitions() -> None:
    sp = SharePartition(0, max_in_flight=10)
    assert sp.acquire("a", [(0, 6), (7, 13)], 100, 0) == [AcquiredRange(0, 9, 1)]
    assert sp.acquire("b", [(7, 13)], 100, 0) == []
    sp.acknowledge("a", 0, 4, [ACCEPT])
    assert sp.acquire("b", [(7, 13)], 100, 0) == [AcquiredRange(10, 13, 1)]


def test_records_of_aborted_transactions_are_archived_unread() -> None:
    """share.isolation.level=read_committed: the batches of aborted transactions are archived as they are read,
    never handed out; the start offset moves past them."""
    sp = SharePartition(0)
    batches = [(0, 2), (3, 5), (6, 6), (7, 9)]  # 3-5 aborted, 6 its abort marker
    assert sp.acquire("a", batches, 100, 0, aborted={3}) == [AcquiredRange(0, 2, 1), AcquiredRange(6, 9, 1)]
    assert sp.acknowledge("a", 0, 2, [ACCEPT]) == ErrorCode.NONE and sp.start_offset == 6
    # An aborted batch after offsets the log no longer has: those are archived with it.
    sp = SharePartition(0)
    assert sp.acquire("a", [(2, 4)], 10, 0, aborted={2}) == [] and sp.start_offset == 5


def test_kafka_41_simple_assignor_shares_a_partition_between_members() -> None:
    t = uuid.uuid4()
    spec = GroupSpec({m: MemberSpec(frozenset({t})) for m in ("a", "b", "c")}, SubscriptionType.HOMOGENEOUS)
    out = HashingSimpleAssignor().assign(spec, lambda _: [0])
    assert all(out[m] == {t: {0}} for m in "abc")
    spec = GroupSpec({m: MemberSpec(frozenset({t})) for m in ("a", "b")}, SubscriptionType.HOMOGENEOUS)
    out = HashingSimpleAssignor().assign(spec, lambda _: range(6))
    assert set().union(*(out[m][t] for m in "ab")) == set(range(6))
    # Only the partitions whose share state is initialized are assigned.
    out = HashingSimpleAssignor().assign(spec, lambda _: [1, 4])
    assert set().union(*(out[m].get(t, set()) for m in "ab")) == {1, 4}
    assert java_string_hash("hello") == 99162322 and java_string_hash("member-é") == java_string_hash("member-é")


def test_kafka_42_simple_assignor_balances_then_keeps() -> None:
    t, u = uuid.uuid4(), uuid.uuid4()
    a, b, c = "a" * 22, "b" * 22, "c" * 22
    # The first member has both partitions; a second takes one of them (recorded from 4.2 to 4.4: one each).
    spec = GroupSpec({b: MemberSpec(frozenset({t})), a: MemberSpec(frozenset({t}), {t: frozenset({0, 1})})},
                     SubscriptionType.HOMOGENEOUS)
    out = SimpleAssignor().assign(spec, lambda _: [0, 1])
    assert sorted(len(out[m][t]) for m in (a, b)) == [1, 1] and out[a][t] | out[b][t] == {0, 1}
    # More members than partitions: each partition shared by ceil(3 / 2) members, the four assignments spread
    # 2, 1, 1 (Kafka's desired counts).
    spec = GroupSpec({m: MemberSpec(frozenset({t})) for m in (a, b, c)}, SubscriptionType.HOMOGENEOUS)
    out = SimpleAssignor().assign(spec, lambda _: [0, 1])
    assert [len(out[m][t]) for m in (a, b, c)] == [2, 1, 1]
    assert sorted(sum(p in out[m][t] for m in (a, b, c)) for p in (0, 1)) == [2, 2]
    # Members keep what they have where the balance allows.
    spec = GroupSpec({a: MemberSpec(frozenset({t}), {t: frozenset({2, 3})}), b: MemberSpec(frozenset({t}),
                                                                                            {t: frozenset({0, 1})})},
                     SubscriptionType.HOMOGENEOUS)
    assert SimpleAssignor().assign(spec, lambda _: range(4)) == {a: {t: {2, 3}}, b: {t: {0, 1}}}
    # Heterogeneous subscriptions: each topic balanced between its own subscribers.
    spec = GroupSpec({a: MemberSpec(frozenset({t})), b: MemberSpec(frozenset({t, u}))}, SubscriptionType.HETEROGENEOUS)
    out = SimpleAssignor().assign(spec, lambda topic: range(2) if topic == t else range(3))
    assert len(out[a][t]) == len(out[b][t]) == 1 and out[b][u] == {0, 1, 2}
    # Kafka takes the members in the order of a Java HashMap of their ids.
    assert java_hash_order([a, b]) == [b, a]


def hb(c: ShareGroupCoordinator, member: str, epoch: int, now: int, topics: list[str] | None = None):
    return c.heartbeat(group_id="s", member_id=member, member_epoch=epoch, rack_id=None,
                       subscribed_topic_names=topics, client_id="c", client_host="h", now_ms=now)


def test_share_group_heartbeats_and_session_timeout() -> None:
    topics, store = Topics(q=1), Log()
    gone: list[tuple[str, str]] = []
    q = topics.ids["q"]
    c = ShareGroupCoordinator(ShareGroupConfig(session_timeout_ms=45_000, reassign_after_leave=True), store, topics)
    c.on_member_gone = lambda g, m: gone.append((g, m))
    r = hb(c, "m1", 0, 0, ["q"])
    # Nothing is assigned before the partition's share state is initialized at the share coordinator.
    assert (r.error, r.member_epoch, r.assignment) == (ErrorCode.NONE, 1, {})
    assert (r.initialize, r.state_epoch) == ({q: frozenset({0})}, 1)
    assert hb(c, "m1", 1, 5).initialize == {}  # being initialized: asked once
    c.initialized("s", r.initialize, {}, 6)
    r = hb(c, "m1", 1, 7)
    assert (r.member_epoch, r.assignment) == (2, {q: frozenset({0})})
    r2 = hb(c, "m2", 0, 10, ["q"])
    assert r2.member_epoch == 3 and r2.assignment == {q: frozenset({0})}
    r = hb(c, "m1", 2, 20)
    assert r.member_epoch == 3 and r.assignment is None  # the same partition, a new epoch
    assert hb(c, "m1", 7, 20).error == ErrorCode.FENCED_MEMBER_EPOCH
    c.tick(45_010)
    assert list(c.groups["s"].members) == ["m1"] and gone == [("s", "m2")]
    assert (c.groups["s"].group_epoch, c.groups["s"].assignment_epoch) == (4, 3)
    # Kafka 4.1/4.2: the heartbeat after a member left moves the epoch on once more.
    assert hb(c, "m1", 3, 45_015).member_epoch == 5
    r = hb(c, "m1", -1, 45_020)
    assert r.member_epoch == -1 and c.groups["s"].state.value == "Empty"
    assert c.delete_group("s", 45_030) == ErrorCode.NONE
    fresh = ShareGroupCoordinator(ShareGroupConfig(), Log(), topics)
    assert hb(fresh, "m1", 3, 0).error == ErrorCode.GROUP_ID_NOT_FOUND


def test_kafka_44_epochs_start_at_one_and_assign_at_most_every_interval() -> None:
    topics = Topics(q=2)
    q = topics.ids["q"]
    c = ShareGroupCoordinator(ShareGroupConfig(initial_epoch=1, assignment_interval_ms=1000,
                                               empty_assignment_on_leave=True), Log(), topics)
    r = hb(c, "a", 0, 0, ["q"])
    assert (r.member_epoch, r.assignment, r.state_epoch) == (2, {}, 2)
    c.initialized("s", r.initialize, {}, 10)
    assert hb(c, "a", 2, 1_000).member_epoch == 3
    r = hb(c, "b", 0, 1_100, ["q"])  # within the interval: the last assignment's epoch, nothing for b yet
    assert (r.member_epoch, r.assignment) == (3, {})
    assert (c.groups["s"].group_epoch, c.groups["s"].assignment_epoch) == (4, 3)
    c.tick(2_000)  # the interval passed: the assignment is computed
    assert c.groups["s"].assignment_epoch == 4
    r = hb(c, "b", 3, 2_100)
    assert r.member_epoch == 4 and r.assignment and set(r.assignment[q]) < {0, 1}
    hb(c, "b", -1, 2_200)
    hb(c, "a", -1, 2_300)
    assert (c.groups["s"].group_epoch, c.groups["s"].assignment_epoch) == (6, 6)


def test_share_state_records_survive_a_restart_of_the_coordinator() -> None:
    from protocol.kafka4_group_records import decode_group_record

    topics, store = Topics(q=2), Log()
    c = ShareGroupCoordinator(ShareGroupConfig(), store, topics)
    r = hb(c, "a", 0, 0, ["q"])
    c.initialized("s", {topics.ids["q"]: frozenset({0})}, {topics.ids["q"]: frozenset({1})}, 1)
    reloaded = ShareGroupCoordinator(ShareGroupConfig(), Log(), topics)
    decoded = [decode_group_record(k, v) for k, v in store.records]
    reloaded.load(((kind, dict(k), None if v is None else dict(v)) for kind, k, v in decoded), 2)
    group = reloaded.groups["s"]
    # Partition 0 is initialized; 1 failed and is initialized again by the next heartbeat.
    assert group.initialized == {topics.ids["q"]: frozenset({0})} and group.initializing == {}
    assert r.initialize == {topics.ids["q"]: frozenset({0, 1})}
    assert reloaded.prepare_delete("s", [topics.ids["q"]], 3) == ErrorCode.NONE
    assert reloaded.state_partitions("s") == {} and reloaded.groups["s"].deleting == {topics.ids["q"]}
