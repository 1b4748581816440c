"""The KIP-848 consumer group coordinator as pure logic, driven by explicit `now`: joins, epochs, revocation
before reassignment, static members, session and rebalance timeouts, regular expressions, leaving, offset
checks, and the group rebuilt from its own `__consumer_offsets` records."""

from __future__ import annotations

import uuid

import pytest

from coordinator.assignors import GroupSpec, MemberSpec, RangeAssignor, SubscriptionType, UniformAssignor
from coordinator.consumer_group import ConsumerGroupState, MemberState
from coordinator.consumer_group_coordinator import ConsumerGroupConfig, ConsumerGroupCoordinator, HeartbeatResult
from coordinator.group_interfaces import StoreError
from coordinator.topic_regex import InvalidRegex, compile_regex
from protocol.header import ErrorCode
from protocol.kafka4_group_records import decode_group_record


class Topics:
    """The cluster's topics as the coordinator sees them (a plain dict, changed by the tests)."""

    def __init__(self, **partitions: int) -> None:
        self.ids = {name: uuid.uuid5(uuid.NAMESPACE_DNS, name) for name in partitions}
        self.partitions = dict(partitions)

    def add(self, name: str, count: int) -> None:
        self.ids[name] = uuid.uuid5(uuid.NAMESPACE_DNS, name)
        self.partitions[name] = count

    def topic_id(self, name: str) -> uuid.UUID | None:
        return self.ids.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, i in self.ids.items() if i == topic_id), None)

    def partition_count(self, topic_id: uuid.UUID) -> int:
        name = self.topic_name(topic_id)
        return -1 if name is None else self.partitions[name]

    def topic_names(self) -> list[str]:
        return list(self.ids)


class Log:
    """The `__consumer_offsets` partition: every written (key, value), in order."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []
        self.fail = False

    def write(self, group_id: str, records: list[tuple[bytes, bytes | None]], now_ms: int) -> None:
        if self.fail:
            raise StoreError(ErrorCode.NOT_COORDINATOR, "disk gone")
        self.records += records


def make(**partitions: int) -> tuple[ConsumerGroupCoordinator, Topics, Log]:
    topics, store = Topics(**partitions), Log()
    return ConsumerGroupCoordinator(ConsumerGroupConfig(), store, topics), topics, store


def hb(c: ConsumerGroupCoordinator, member_id: str, epoch: int, now: int, *, owned=None, topics=None,
       regex=None, instance=None, group="g", assignor=None, rebalance_timeout=-1) -> HeartbeatResult:
    if epoch == 0:
        owned = [] if owned is None else owned
        rebalance_timeout = 30_000 if rebalance_timeout == -1 else rebalance_timeout
        if topics is None and regex is None:
            topics = ["t"]
    return c.heartbeat(group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance, rack_id=None,
                       rebalance_timeout_ms=rebalance_timeout, subscribed_topic_names=topics,
                       subscribed_topic_regex=regex, server_assignor=assignor, topic_partitions=owned,
                       client_id="client", client_host="/127.0.0.1", api_version=1, now_ms=now)


def owned_list(assignment) -> list[dict]:
    return [{"topic_id": t, "partitions": sorted(p)} for t, p in (assignment or {}).items()]


def parts(assignment) -> set[int]:
    return {p for ps in (assignment or {}).values() for p in ps}


def test_first_member_gets_every_partition() -> None:
    c, _, store = make(t=4)
    r = hb(c, "m1", 0, 0)
    assert r.error == ErrorCode.NONE and r.member_epoch == 1 and r.heartbeat_interval_ms == 5000
    assert parts(r.assignment) == {0, 1, 2, 3}
    group = c.groups["g"]
    assert group.state is ConsumerGroupState.STABLE and group.group_epoch == 1 == group.assignment_epoch
    kinds = [decode_group_record(k, v)[0].name for k, v in store.records]
    assert kinds == ["CONSUMER_GROUP_MEMBER_METADATA", "CONSUMER_GROUP_METADATA",
                     "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER", "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA",
                     "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT"]


def test_scaling_out_revokes_before_reassigning() -> None:
    """A partition moves only after its owner reported it gone: never two owners at once."""
    c, _, _ = make(t=6)
    owners: dict[str, dict] = {}
    r1 = hb(c, "m1", 0, 0)
    owners["m1"] = r1.assignment
    epochs = {"m1": r1.member_epoch}
    r2 = hb(c, "m2", 0, 10)
    assert r2.member_epoch == 2 and parts(r2.assignment) == set()  # m1 still owns everything
    assert c.groups["g"].state is ConsumerGroupState.RECONCILING
    owners["m2"] = r2.assignment
    epochs["m2"] = r2.member_epoch
    # m1 heartbeats with what it owns: asked to revoke 3 partitions, stays in epoch 1.
    r = hb(c, "m1", 1, 20, owned=owned_list(owners["m1"]))
    assert r.member_epoch == 1 and len(parts(r.assignment)) == 3
    assert c.groups["g"].members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    owners["m1"] = r.assignment
    # m2 still gets nothing: the partitions are not released yet.
    r = hb(c, "m2", 2, 30, owned=[])
    assert r.assignment is None and c.groups["g"].members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    # m1 reports the revocation done: it moves to epoch 2.
    r = hb(c, "m1", 1, 40, owned=owned_list(owners["m1"]))
    assert r.member_epoch == 2 and r.assignment is None
    # now m2 gets the released partitions.
    r = hb(c, "m2", 2, 50, owned=[])
    assert len(parts(r.assignment)) == 3 and parts(r.assignment).isdisjoint(parts(owners["m1"]))
    assert c.groups["g"].state is ConsumerGroupState.STABLE


def test_one_to_three_members_never_share_a_partition() -> None:
    c, _, _ = make(t=7)
    owned: dict[str, dict] = {}
    epochs: dict[str, int] = {}
    now = 0
    for member in ("a", "b", "c"):
        r = hb(c, member, 0, now)
        owned[member], epochs[member] = r.assignment or {}, r.member_epoch
        for _ in range(6):  # rounds of heartbeats until stable
            for m in list(owned):
                now += 100
                r = hb(c, m, epochs[m], now, owned=owned_list(owned[m]))
                assert r.error == ErrorCode.NONE, r
                if r.assignment is not None:
                    owned[m] = r.assignment
                epochs[m] = r.member_epoch
                all_owned = [p for a in owned.values() for p in parts(a)]
                assert len(all_owned) == len(set(all_owned)), owned
    assert c.groups["g"].state is ConsumerGroupState.STABLE
    sizes = sorted(len(parts(a)) for a in owned.values())
    assert sizes == [2, 2, 3] and set().union(*(parts(a) for a in owned.values())) == set(range(7))


def test_unknown_and_fenced_members() -> None:
    c, _, _ = make(t=2)
    assert hb(c, "x", 3, 0, owned=[]).error == ErrorCode.GROUP_ID_NOT_FOUND
    hb(c, "m1", 0, 0)
    assert hb(c, "x", 1, 0, owned=[]).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert hb(c, "m1", 5, 0, owned=[]).error == ErrorCode.FENCED_MEMBER_EPOCH
    # One epoch behind with nothing more than it was given: a lost response, let through (Kafka).
    assert hb(c, "m1", 0, 0).error == ErrorCode.NONE


def test_request_validation() -> None:
    c, _, _ = make(t=1)
    r = c.heartbeat(group_id="g", member_id="m", member_epoch=0, instance_id=None, rack_id=None,
                    rebalance_timeout_ms=-1, subscribed_topic_names=["t"], subscribed_topic_regex=None,
                    server_assignor=None, topic_partitions=[], client_id="c", client_host="h", api_version=1,
                    now_ms=0)
    assert (r.error, r.message) == (ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
    assert hb(c, "", 0, 0).error == ErrorCode.INVALID_REQUEST  # v1: the client generates the member id
    r = hb(c, "m", 0, 0, assignor="sticky")
    assert r.error == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert r.message == "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    assert hb(c, "m", -3, 0).error == ErrorCode.INVALID_REQUEST


def test_session_timeout_fences_a_silent_member_and_rebalances() -> None:
    c, _, _ = make(t=4)
    a = hb(c, "a", 0, 0)
    b = hb(c, "b", 0, 0)
    a = hb(c, "a", a.member_epoch, 1000, owned=owned_list(a.assignment))
    assert c.timers.deadline(("session", "g", "b")) == 45_000
    assert c.timers.deadline(("session", "g", "a")) == 46_000
    for now in range(1000, 45_000, 5000):
        a2 = hb(c, "a", c.groups["g"].members["a"].member_epoch, now,
                owned=owned_list(c.groups["g"].members["a"].assigned_partitions))
        assert a2.error == ErrorCode.NONE
    c.tick(45_000)
    assert "b" not in c.groups["g"].members
    r = hb(c, "a", c.groups["g"].members["a"].member_epoch, 45_001,
           owned=owned_list(c.groups["g"].members["a"].assigned_partitions))
    assert parts(c.groups["g"].members["a"].assigned_partitions) == {0, 1, 2, 3} and r.error == ErrorCode.NONE
    assert any("session expired" in what for _, what in c.groups["g"].events)
    assert b.member_id == "b"


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    c, _, _ = make(t=2)
    a = hb(c, "a", 0, 0, rebalance_timeout=10_000)
    hb(c, "b", 0, 0)
    r = hb(c, "a", a.member_epoch, 100, owned=owned_list(a.assignment))
    assert c.groups["g"].members["a"].state is MemberState.UNREVOKED_PARTITIONS and r.member_epoch == 1
    c.tick(10_099)
    assert "a" in c.groups["g"].members
    c.tick(10_100)
    assert "a" not in c.groups["g"].members


def test_leave_and_empty_group_can_be_deleted() -> None:
    c, _, _ = make(t=2)
    hb(c, "a", 0, 0)
    r = hb(c, "a", -1, 10)
    assert (r.error, r.member_id, r.member_epoch) == (ErrorCode.NONE, "a", -1)
    group = c.groups["g"]
    assert group.state is ConsumerGroupState.EMPTY and group.group_epoch == 2
    assert c.delete_group("g", 20) == ErrorCode.NONE and "g" not in c.groups
    assert c.describe(["g"])[0].error == ErrorCode.GROUP_ID_NOT_FOUND


def test_static_member_restart_keeps_its_assignment() -> None:
    c, _, _ = make(t=4)
    hb(c, "a1", 0, 0, instance="A")
    hb(c, "b", 0, 0)
    for _ in range(3):
        hb(c, "a1", c.groups["g"].members["a1"].member_epoch, 100,
               owned=owned_list(c.groups["g"].members["a1"].assigned_partitions))
        hb(c, "b", c.groups["g"].members["b"].member_epoch, 100,
               owned=owned_list(c.groups["g"].members["b"].assigned_partitions))
    before = c.groups["g"].members["a1"].assigned_partitions
    epoch = c.groups["g"].group_epoch
    assert len(parts(before)) == 2
    # Another instance with the same id while A is active: refused.
    assert hb(c, "a2", 0, 200, instance="A").error == ErrorCode.UNRELEASED_INSTANCE_ID
    r = hb(c, "a1", -2, 300, instance="A")
    assert r.member_epoch == -2
    r = hb(c, "a2", 0, 400, instance="A")
    assert r.error == ErrorCode.NONE and parts(r.assignment) == parts(before)
    assert "a1" not in c.groups["g"].members and c.groups["g"].static_members["A"] == "a2"
    assert c.groups["g"].group_epoch == epoch  # no rebalance
    assert hb(c, "a1", 3, 500, instance="A", owned=[]).error == ErrorCode.FENCED_INSTANCE_ID


def test_regex_subscription_picks_up_new_topics() -> None:
    c, topics, _ = make(**{"orders-1": 2, "other": 1})
    r = hb(c, "a", 0, 0, regex="orders-.*")
    # The regex is resolved right after the join; the member gets the partitions at its next heartbeat.
    assert c.groups["g"].resolved_regexes["orders-.*"].topics == {"orders-1"}
    r = hb(c, "a", r.member_epoch, 100, owned=owned_list(r.assignment))
    assert parts(r.assignment) == {0, 1}
    topics.add("orders-2", 3)
    c.on_topics_changed(["orders-2"], created=True)
    r = hb(c, "a", r.member_epoch, 5_000, owned=owned_list(r.assignment))
    assert c.groups["g"].resolved_regexes["orders-.*"].topics == {"orders-1"}  # within 10 s of the last refresh
    r = hb(c, "a", r.member_epoch, 10_001, owned=owned_list(c.groups["g"].members["a"].assigned_partitions))
    assert c.groups["g"].resolved_regexes["orders-.*"].topics == {"orders-1", "orders-2"}
    r = hb(c, "a", c.groups["g"].members["a"].member_epoch, 10_100,
           owned=owned_list(c.groups["g"].members["a"].assigned_partitions))
    assert {topics.topic_name(t) for t in r.assignment} == {"orders-1", "orders-2"}


def test_invalid_regex_is_refused_like_re2() -> None:
    c, _, _ = make(t=1)
    r = hb(c, "a", 0, 0, regex="(?=x)t")
    assert r.error == ErrorCode.INVALID_REGULAR_EXPRESSION and "not a valid regular expression" in r.message
    assert hb(c, "a", 0, 0, regex="t[").error == ErrorCode.INVALID_REGULAR_EXPRESSION
    for bad in (r"(a)\1", "a++", "(?<=a)b", "(?>a)"):
        with pytest.raises(InvalidRegex):
            compile_regex(bad)
    assert compile_regex(r"a\\1").fullmatch("a\\1")


def test_topic_growth_bumps_the_group_epoch() -> None:
    c, topics, _ = make(t=2)
    r = hb(c, "a", 0, 0)
    topics.partitions["t"] = 4
    c.on_topics_changed(["t"], created=False)
    r = hb(c, "a", r.member_epoch, 100, owned=owned_list(r.assignment))
    assert r.member_epoch == 2 and parts(r.assignment) == {0, 1, 2, 3}


def test_range_assignor_chosen_by_the_client() -> None:
    c, _, _ = make(t=4)
    hb(c, "b", 0, 0, assignor="range")
    hb(c, "a", 0, 0, assignor="range")
    group = c.groups["g"]
    assert c.describe(["g"])[0].assignor == "range"
    assert {m: parts(t) for m, t in group.target_assignment.items()} == {"a": {0, 1}, "b": {2, 3}}


def test_uniform_assignor_is_balanced_and_sticky() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    counts = {t1: 5, t2: 3}
    spec = GroupSpec({"a": MemberSpec(frozenset({t1, t2}), {t1: frozenset({0, 1, 2, 3, 4}), t2: frozenset({0})}),
                      "b": MemberSpec(frozenset({t1, t2}))}, SubscriptionType.HOMOGENEOUS,
                     {(t1, p): "a" for p in range(5)} | {(t2, 0): "a"})
    out = UniformAssignor().assign(spec, counts.__getitem__)
    assert sorted(sum(len(p) for p in a.values()) for a in out.values()) == [4, 4]
    assert out["a"][t1] <= {0, 1, 2, 3, 4} and not out["b"].get(t2, set()) & out["a"].get(t2, set())
    hetero = GroupSpec({"a": MemberSpec(frozenset({t1})), "b": MemberSpec(frozenset({t1, t2}))},
                       SubscriptionType.HETEROGENEOUS)
    out = UniformAssignor().assign(hetero, counts.__getitem__)
    assert out["b"][t2] == {0, 1, 2} and len(out["a"][t1]) + len(out["b"].get(t1, ())) == 5
    assert abs(sum(map(len, out["a"].values())) - sum(map(len, out["b"].values()))) <= 1
    rng = RangeAssignor().assign(GroupSpec({"x": MemberSpec(frozenset({t1}), instance_id="i2"),
                                            "y": MemberSpec(frozenset({t1}), instance_id="i1")},
                                           SubscriptionType.HOMOGENEOUS), counts.__getitem__)
    assert rng == {"y": {t1: {0, 1, 2}}, "x": {t1: {3, 4}}}


def test_offset_commit_member_epochs() -> None:
    c, _, _ = make(t=1)
    r = hb(c, "a", 0, 0)
    assert c.validate_offset_commit("g", "a", None, r.member_epoch, False, 9) == ErrorCode.NONE
    assert c.validate_offset_commit("g", "a", None, r.member_epoch - 1, False, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert c.validate_offset_commit("g", "zz", None, 1, False, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.validate_offset_commit("g", "a", None, r.member_epoch, False, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert c.validate_offset_commit("g", "", None, -1, True, 3) == ErrorCode.NONE
    assert c.validate_offset_fetch("g", "a", 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert c.validate_offset_fetch("g", None, -1) == ErrorCode.NONE


def test_store_failure_changes_nothing() -> None:
    c, _, store = make(t=1)
    store.fail = True
    r = hb(c, "a", 0, 0)
    assert r.error == ErrorCode.NOT_COORDINATOR and "g" not in c.groups


def test_reload_from_records_rebuilds_the_group() -> None:
    c, topics, store = make(t=5, orders=2)
    hb(c, "a", 0, 0, instance="A")
    hb(c, "b", 0, 0, regex="ord.*")
    for now in (100, 200, 10_500, 10_600):
        for m in ("a", "b"):
            member = c.groups["g"].members[m]
            hb(c, m, member.member_epoch, now, owned=owned_list(member.assigned_partitions),
               instance="A" if m == "a" else None)
    hb(c, "c", 0, 11_000)
    hb(c, "c", -1, 11_100)
    fresh = ConsumerGroupCoordinator(ConsumerGroupConfig(), Log(), topics)
    fresh.load([decode_group_record(k, v) for k, v in store.records], 20_000)
    old, new = c.groups["g"], fresh.groups["g"]
    assert (new.group_epoch, new.assignment_epoch, new.state) == (old.group_epoch, old.assignment_epoch, old.state)
    assert new.members == old.members and new.target_assignment == old.target_assignment
    assert new.static_members == {"A": "a"} and new.resolved_regexes == old.resolved_regexes
    assert new.partition_epochs == old.partition_epochs
    assert fresh.next_deadline() == 20_000 + 45_000


# -- how Kafka 4.3 and 4.4 number epochs and batch assignments (consumer_group_epochs recordings) -------------
def make_44(interval: int = 1000, empty_on_leave: bool = True, **partitions: int
            ) -> tuple[ConsumerGroupCoordinator, Topics, Log]:
    topics, store = Topics(**partitions), Log()
    config = ConsumerGroupConfig(initial_epoch=1, assignment_interval_ms=interval,
                                 empty_assignment_on_leave=empty_on_leave)
    return ConsumerGroupCoordinator(config, store, topics), topics, store


def test_a_new_group_starts_at_epoch_1_so_its_first_assignment_is_epoch_2() -> None:
    c, _, _ = make_44(t=2)
    r = hb(c, "a", 0, 0)
    assert r.member_epoch == 2 and parts(r.assignment) == {0, 1}
    group = c.groups["g"]
    assert (group.group_epoch, group.assignment_epoch, group.state) == (2, 2, ConsumerGroupState.STABLE)


def test_assignments_are_batched_within_the_interval() -> None:
    c, _, _ = make_44(t=2)
    a = hb(c, "a", 0, 0)
    b = hb(c, "b", 0, 100)  # 100 ms after the last assignment: the group epoch moves, the assignment waits
    group = c.groups["g"]
    assert (group.group_epoch, group.assignment_epoch, group.state) == (3, 2, ConsumerGroupState.ASSIGNING)
    assert b.member_epoch == 2 and parts(b.assignment) == set()
    assert hb(c, "a", 2, 500, owned=owned_list(a.assignment)).assignment is None  # nothing new yet
    assert c.next_deadline() == 1000
    c.tick(1000)  # the interval has passed: the assignment of epoch 3
    assert group.assignment_epoch == 3 and group.state is ConsumerGroupState.RECONCILING
    given = hb(c, "a", 2, 1100, owned=owned_list(a.assignment))
    assert len(parts(given.assignment)) == 1  # a gives one partition up
    done = hb(c, "a", given.member_epoch, 1200, owned=owned_list(given.assignment))
    assert done.member_epoch == 3
    taken = hb(c, "b", 2, 1300, owned=[])
    assert taken.member_epoch == 3 and len(parts(taken.assignment)) == 1


def test_the_last_member_leaving_brings_the_empty_assignment_up_to_date() -> None:
    for empty_on_leave, expected in ((True, (3, 3)), (False, (3, 2))):  # 4.4, 4.3
        c, _, _ = make_44(empty_on_leave=empty_on_leave, t=2)
        hb(c, "a", 0, 0)
        hb(c, "a", -1, 50)
        group = c.groups["g"]
        assert (group.group_epoch, group.assignment_epoch) == expected
        again = hb(c, "a", 0, 100)  # 4.4: assigned at once; 4.3: within the interval, it waits
        assert (again.member_epoch == 4) is empty_on_leave
