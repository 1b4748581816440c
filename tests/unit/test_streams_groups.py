"""The KIP-1071 streams group coordinator as pure logic, driven by explicit `now`: topologies configured against
the topics (missing, copartitioned and internal topics), the sticky task assignor, joins behind the initial
rebalance delay, revocation before reassignment, standby tasks, static members, timeouts, offset checks, and the
group rebuilt from its own `__consumer_offsets` records."""

from __future__ import annotations

import pytest

from coordinator.streams_assignor import AssignmentMember, assign
from coordinator.streams_group import MemberState, StreamsGroupState
from coordinator.streams_group_coordinator import StreamsGroupConfig, StreamsGroupCoordinator
from coordinator.streams_heartbeat import HeartbeatRequest, StreamsHeartbeatResult
from coordinator.streams_topology import (
    CopartitionGroup,
    StreamsStatus,
    StreamsTopology,
    Subtopology,
    TopicInfo,
    configure_topics,
)
from protocol.header import ErrorCode
from protocol.kafka4_group_records import decode_group_record
from tests.unit.test_consumer_group_coordinator import Log, Topics

APP = "app"
REPARTITION = f"{APP}-by-word-repartition"
CHANGELOG = f"{APP}-counts-changelog"
# A word count: subtopology 0 reads the input and writes the repartition topic, subtopology 1 counts.
WORD_COUNT = StreamsTopology(1, (
    Subtopology("0", source_topics=("input",), repartition_sink_topics=(REPARTITION,)),
    Subtopology("1", repartition_source_topics=(TopicInfo(REPARTITION, configs=(("cleanup.policy", "delete"),)),),
                state_changelog_topics=(TopicInfo(CHANGELOG, configs=(("cleanup.policy", "compact"),)),)),
))


def make(config: StreamsGroupConfig | None = None, **partitions: int) -> tuple[StreamsGroupCoordinator, Topics, Log]:
    topics, store = Topics(**partitions), Log()
    config = config or StreamsGroupConfig(initial_rebalance_delay_ms=0, assignment_interval_ms=0)
    return StreamsGroupCoordinator(lambda group_id: config, store, topics), topics, store


def hb(c: StreamsGroupCoordinator, member: str, epoch: int, now: int, *, process: str | None = None,
       owned: dict | None = None, topology: StreamsTopology | None = None, instance: str | None = None,
       group: str = "g", **fields) -> StreamsHeartbeatResult:
    if epoch == 0:
        fields.setdefault("rebalance_timeout_ms", 30_000)
        topology = topology or WORD_COUNT
        process = process or f"process-{member}"
        owned = {"active": {}, "standby": {}, "warmup": {}} if owned is None else owned
    request = HeartbeatRequest(
        group, member, epoch, instance_id=instance, topology=topology, process_id=process,
        active_tasks=None if owned is None else owned["active"],
        standby_tasks=None if owned is None else owned["standby"],
        warmup_tasks=None if owned is None else owned["warmup"], client_id="client", client_host="/127.0.0.1",
        **fields)
    return c.heartbeat(request, now)


def owned(result: StreamsHeartbeatResult, previous: dict | None = None) -> dict:
    """What a member runs after this answer (the tasks it got, or what it had when none came)."""
    if result.tasks is None:
        assert previous is not None
        return previous
    return {"active": dict(result.tasks.active), "standby": dict(result.tasks.standby),
            "warmup": dict(result.tasks.warmup)}


def count(tasks: dict) -> int:
    return sum(len(p) for p in tasks.values())


def ready(**partitions: int) -> tuple[StreamsGroupCoordinator, Topics, Log]:
    """A coordinator whose cluster has the word count's input and internal topics."""
    return make(**{"input": 4, REPARTITION: 4, CHANGELOG: 4, **partitions})


# == topology configuration ==================================================================================
def test_missing_source_topics() -> None:
    configured = configure_topics(WORD_COUNT, 0, lambda name: None)
    assert not configured.is_ready and configured.subtopologies is None
    assert configured.error is not None and configured.error.status is StreamsStatus.MISSING_SOURCE_TOPICS


def test_internal_topics_get_the_input_partition_count_and_are_created() -> None:
    configured = configure_topics(WORD_COUNT, 0, {"input": 6}.get)
    assert configured.error is not None and configured.error.status is StreamsStatus.MISSING_INTERNAL_TOPICS
    assert {n: t.partitions for n, t in configured.topics_to_create.items()} == {REPARTITION: 6, CHANGELOG: 6}
    assert configured.topics_to_create[CHANGELOG].configs == (("cleanup.policy", "compact"),)
    assert configured.topics_to_create[REPARTITION].replication_factor is None
    done = configure_topics(WORD_COUNT, 0, {"input": 6, REPARTITION: 6, CHANGELOG: 6}.get)
    assert done.is_ready and done.subtopologies is not None
    assert {s: (c.number_of_tasks, c.stateful) for s, c in done.subtopologies.items()} == {"0": (6, False),
                                                                                          "1": (6, True)}


def test_existing_internal_topic_with_other_partitions_is_refused() -> None:
    configured = configure_topics(WORD_COUNT, 0, {"input": 6, REPARTITION: 6, CHANGELOG: 2}.get)
    assert configured.error is not None
    assert configured.error.status is StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS


def test_copartitioned_sources_must_agree_and_repartition_topics_follow_them() -> None:
    join = StreamsTopology(1, (
        Subtopology("0", source_topics=("left", "right"),
                    copartition_groups=(CopartitionGroup(source_topics=(0, 1)),)),))
    bad = configure_topics(join, 0, {"left": 3, "right": 4}.get)
    assert bad.error is not None and bad.error.status is StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS
    assert configure_topics(join, 0, {"left": 3, "right": 3}.get).is_ready
    mixed = StreamsTopology(1, (
        Subtopology("0", source_topics=("big",), repartition_sink_topics=("r",)),
        Subtopology("1", source_topics=("small",), repartition_source_topics=(TopicInfo("r"),),
                    copartition_groups=(CopartitionGroup(source_topics=(0,), repartition_source_topics=(0,)),)),))
    configured = configure_topics(mixed, 0, {"big": 8, "small": 2}.get)
    assert {n: t.partitions for n, t in configured.topics_to_create.items()} == {"r": 2}


def test_repartition_topics_chain() -> None:
    chain = StreamsTopology(1, (
        Subtopology("0", source_topics=("in",), repartition_sink_topics=("r1",)),
        Subtopology("1", repartition_source_topics=(TopicInfo("r1"),), repartition_sink_topics=("r2",)),
        Subtopology("2", repartition_source_topics=(TopicInfo("r2"),)),
        Subtopology("3", source_topics=("fixed-in",), repartition_sink_topics=("r3",)),
        Subtopology("4", repartition_source_topics=(TopicInfo("r3", partitions=7),)),
    ))
    configured = configure_topics(chain, 0, {"in": 5, "fixed-in": 2}.get)
    assert {n: t.partitions for n, t in configured.topics_to_create.items()} == {"r1": 5, "r2": 5, "r3": 7}


def test_topology_round_trips_through_its_record() -> None:
    assert StreamsTopology.from_fields(WORD_COUNT.to_fields()) == WORD_COUNT


# == the sticky task assignor ================================================================================
def test_active_tasks_spread_evenly_and_stay_where_they_are() -> None:
    subtopologies = {"0": (4, False), "1": (4, True)}
    first = assign({"a": AssignmentMember("p1"), "b": AssignmentMember("p2")}, subtopologies, 0)
    assert count(first["a"].active) == count(first["b"].active) == 4
    members = {m: AssignmentMember(f"p-{m}", first[m].active) for m in ("a", "b")} | {"c": AssignmentMember("p3")}
    second = assign(members, subtopologies, 0)
    assert sorted(count(second[m].active) for m in "abc") == [2, 3, 3]
    for m in "ab":  # what a and b keep, they had before: only the surplus moved to c
        assert all(parts <= first[m].active.get(sub, frozenset()) for sub, parts in second[m].active.items())


def test_standby_replicas_go_to_other_processes() -> None:
    result = assign({"a": AssignmentMember("p1"), "b": AssignmentMember("p2"), "c": AssignmentMember("p2")},
                    {"0": (2, False), "1": (3, True)}, 1)
    process = {"a": "p1", "b": "p2", "c": "p2"}
    standby = [(process[m], (s, p)) for m, t in result.items() for s, ps in t.standby.items() for p in ps]
    assert sorted(t for _, t in standby) == [("1", 0), ("1", 1), ("1", 2)]  # stateful tasks only, once each
    for proc, task in standby:
        active = [process[m] for m, t in result.items() if task[1] in t.active.get(task[0], ())]
        assert active and proc not in active


def test_standby_without_another_process_is_left_out() -> None:
    result = assign({"a": AssignmentMember("p1"), "b": AssignmentMember("p1")}, {"1": (2, True)}, 1)
    assert all(not t.standby for t in result.values())
    assert sum(count(t.active) for t in result.values()) == 2


# == heartbeats ==============================================================================================
def test_first_member_creates_internal_topics_then_gets_every_task() -> None:
    c, topics, store = make(input=4)
    r = hb(c, "m1", 0, 0)
    assert r.error == ErrorCode.NONE and r.member_epoch == 2  # a new group's first epoch is 2, as in Kafka
    assert [s.code for s in r.statuses] == [StreamsStatus.MISSING_INTERNAL_TOPICS]
    assert set(r.topics_to_create) == {REPARTITION, CHANGELOG} and r.tasks is not None and r.tasks.is_empty()
    assert c.groups["g"].state is StreamsGroupState.NOT_READY
    topics.add(REPARTITION, 4)
    topics.add(CHANGELOG, 4)
    c.on_topics_changed([REPARTITION, CHANGELOG])
    r = hb(c, "m1", 2, 100, owned=owned(r))
    assert r.statuses == [] and r.member_epoch == 3 and r.tasks is not None
    assert {s: sorted(p) for s, p in r.tasks.active.items()} == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    assert c.groups["g"].state is StreamsGroupState.STABLE
    kinds = [decode_group_record(k, v)[0].name for k, v in store.records]
    assert "STREAMS_GROUP_TOPOLOGY" in kinds and "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT" in kinds


def test_initial_rebalance_delay_holds_the_assignment_back() -> None:
    c, _, _ = make(StreamsGroupConfig(initial_rebalance_delay_ms=3_000), input=4, **{REPARTITION: 4, CHANGELOG: 4})
    r = hb(c, "m1", 0, 0)
    assert [s.code for s in r.statuses] == [StreamsStatus.ASSIGNMENT_DELAYED] and r.tasks is not None
    assert r.tasks.is_empty() and c.next_deadline() == 3_000
    c.tick(3_000)
    r = hb(c, "m1", r.member_epoch, 3_100, owned=owned(r))
    assert r.statuses == [] and count(r.tasks.active) == 8


def test_task_moves_only_after_its_owner_revoked_it() -> None:
    c, _, _ = ready()
    r1 = hb(c, "m1", 0, 0)
    mine = owned(r1)
    assert count(mine["active"]) == 8
    r2 = hb(c, "m2", 0, 10)
    assert r2.member_epoch == 3 and r2.tasks is not None and r2.tasks.is_empty()  # everything is still m1's
    assert c.groups["g"].members["m2"].state is MemberState.UNRELEASED_TASKS
    r1 = hb(c, "m1", r1.member_epoch, 20, owned=mine)
    assert c.groups["g"].members["m1"].state is MemberState.UNREVOKED_TASKS and r1.member_epoch == 2
    mine = owned(r1, mine)
    assert count(mine["active"]) == 4  # told to give half up; still in its epoch until it says it did
    r1 = hb(c, "m1", r1.member_epoch, 30, owned=mine)
    assert r1.member_epoch == 3 and c.groups["g"].members["m1"].state is MemberState.STABLE
    r2 = hb(c, "m2", r2.member_epoch, 40, owned=owned(r2))
    assert count(r2.tasks.active) == 4 and c.groups["g"].state is StreamsGroupState.STABLE
    assert set(r2.tasks.active["1"]).isdisjoint(mine["active"]["1"])


def test_standby_tasks_with_two_processes() -> None:
    c, _, _ = make(StreamsGroupConfig(initial_rebalance_delay_ms=0, assignment_interval_ms=0,
                                      num_standby_replicas=1), input=2, **{REPARTITION: 2, CHANGELOG: 2})
    r1 = hb(c, "m1", 0, 0)
    assert count(r1.tasks.standby) == 0  # one process: no other to hold a standby
    m1 = owned(r1)
    r2 = hb(c, "m2", 0, 10)
    m2 = owned(r2)
    for now in range(20, 200, 10):  # both heartbeat until the group is stable
        r1 = hb(c, "m1", r1.member_epoch, now, owned=m1)
        m1 = owned(r1, m1)
        r2 = hb(c, "m2", r2.member_epoch, now + 5, owned=m2)
        m2 = owned(r2, m2)
    assert c.groups["g"].state is StreamsGroupState.STABLE
    for a, b in ((m1, m2), (m2, m1)):
        assert all(set(parts) <= set(b["active"].get(sub, ())) for sub, parts in a["standby"].items())
    assert count(m1["standby"]) + count(m2["standby"]) == 2  # each stateful task has one standby


def test_request_checks() -> None:
    c, _, _ = ready()
    assert hb(c, "", 0, 0).error == ErrorCode.INVALID_REQUEST
    assert hb(c, "m1", 0, 0, rebalance_timeout_ms=-1).error == ErrorCode.INVALID_REQUEST
    assert hb(c, "m1", 0, 0, owned={"active": {"0": frozenset({0})}, "standby": {}, "warmup": {}}).error \
        == ErrorCode.INVALID_REQUEST
    regex = StreamsTopology(1, (Subtopology("0", source_topic_regex=("in.*",)),))
    assert hb(c, "m1", 0, 0, topology=regex).error == ErrorCode.INVALID_REQUEST
    sized = StreamsTopology(1, (Subtopology("0", source_topics=("input",),
                                            state_changelog_topics=(TopicInfo("c", partitions=3),)),))
    assert hb(c, "m1", 0, 0, topology=sized).error == ErrorCode.STREAMS_INVALID_TOPOLOGY
    assert hb(c, "m1", -3, 0).error == ErrorCode.INVALID_REQUEST
    assert hb(c, "m1", 1, 0).error == ErrorCode.GROUP_ID_NOT_FOUND
    r = hb(c, "m1", 0, 0)
    assert hb(c, "m2", 1, 1).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert hb(c, "m1", r.member_epoch + 1, 2).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert hb(c, "m1", 1, 3, topology=WORD_COUNT).error == ErrorCode.INVALID_REQUEST  # topology only on join
    other = StreamsTopology(1, (Subtopology("0", source_topics=("input",)),))
    assert hb(c, "m2", 0, 4, topology=other).error == ErrorCode.INVALID_REQUEST  # same epoch, other topology
    bad = {"active": {"9": frozenset({0})}, "standby": {}, "warmup": {}}
    assert hb(c, "m1", r.member_epoch, 5, owned=bad).error == ErrorCode.INVALID_REQUEST


def test_older_topology_epoch_is_stale() -> None:
    c, _, _ = ready()
    newer = StreamsTopology(2, WORD_COUNT.subtopologies)
    hb(c, "m1", 0, 0, topology=newer)
    r = hb(c, "m2", 0, 10)  # joins with epoch 1
    assert r.error == ErrorCode.NONE and StreamsStatus.STALE_TOPOLOGY in [s.code for s in r.statuses]


def test_leaving_and_session_timeout_fence_members() -> None:
    c, _, _ = ready()
    r1 = hb(c, "m1", 0, 0)
    hb(c, "m2", 0, 10)
    group = c.groups["g"]
    epoch = group.group_epoch
    left = hb(c, "m1", -1, 20)
    assert left.error == ErrorCode.NONE and left.member_epoch == -1 and "m1" not in group.members
    assert group.group_epoch == epoch + 1
    assert hb(c, "m1", r1.member_epoch, 30).error == ErrorCode.UNKNOWN_MEMBER_ID
    c.tick(10 + 45_000)
    assert not group.members and group.state is StreamsGroupState.EMPTY


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    c, _, _ = ready()
    r1 = hb(c, "m1", 0, 0, rebalance_timeout_ms=5_000)
    hb(c, "m2", 0, 10)
    hb(c, "m1", r1.member_epoch, 20, owned=owned(r1))
    assert c.groups["g"].members["m1"].state is MemberState.UNREVOKED_TASKS
    c.tick(20 + 5_000)
    assert "m1" not in c.groups["g"].members


def test_static_member_leaves_for_a_while_and_comes_back() -> None:
    c, _, _ = ready()
    r = hb(c, "m1", 0, 0, instance="i1")
    tasks = owned(r)
    assert hb(c, "m2", 0, 10, instance="i1").error == ErrorCode.UNRELEASED_INSTANCE_ID
    assert hb(c, "m1", -2, 20, instance="i9").error == ErrorCode.UNKNOWN_MEMBER_ID
    away = hb(c, "m1", -2, 20, instance="i1")
    assert away.error == ErrorCode.NONE and away.member_epoch == -2
    back = hb(c, "m3", 0, 30, instance="i1", process="process-m1")  # Streams keeps its process id on disk
    assert back.error == ErrorCode.NONE and back.member_epoch == r.member_epoch  # no rebalance
    assert owned(back) == tasks and set(c.groups["g"].members) == {"m3"}
    assert hb(c, "m1", r.member_epoch, 40, instance="i1").error == ErrorCode.FENCED_INSTANCE_ID


def test_offset_commit_epochs() -> None:
    c, _, _ = ready()
    r1 = hb(c, "m1", 0, 0)
    epoch = r1.member_epoch
    assert c.validate_offset_commit("g", "m1", None, epoch, False, 9) == ErrorCode.NONE
    assert c.validate_offset_commit("g", "m1", None, epoch + 1, False, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert c.validate_offset_commit("g", "nobody", None, epoch, False, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.validate_offset_commit("g", "m1", None, epoch, False, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert c.validate_offset_commit("other", "x", None, 5, False, 9) == ErrorCode.NONE
    hb(c, "m2", 0, 10)
    r1 = hb(c, "m1", epoch, 20, owned=owned(r1))
    r1 = hb(c, "m1", r1.member_epoch, 30, owned=owned(r1, owned(r1)))
    assert r1.member_epoch == epoch + 1
    check = c.validate_offset_commit("g", "m1", None, epoch, False, 9)  # one epoch behind: per task
    assert callable(check)
    kept = next(p for p in c.groups["g"].members["m1"].assigned.active["0"])
    assert check("input", kept) == ErrorCode.NONE
    assert check("unrelated", 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert c.validate_offset_fetch("g", "m1", epoch) == ErrorCode.STALE_MEMBER_EPOCH


def test_group_is_rebuilt_from_its_records_and_deleted() -> None:
    c, topics, store = ready()
    r1 = hb(c, "m1", 0, 0, user_endpoint=("localhost", 8080), client_tags=(("zone", "a"),))
    hb(c, "m2", 0, 10)
    hb(c, "m1", r1.member_epoch, 20, owned=owned(r1))
    before = c.groups["g"]
    copy = StreamsGroupCoordinator(c.config, Log(), topics)
    copy.load((decode_group_record(k, v) for k, v in store.records), 100)
    after = copy.groups["g"]
    assert after.members == before.members and after.target_assignment == before.target_assignment
    assert (after.group_epoch, after.assignment_epoch, after.topology, after.state) == \
        (before.group_epoch, before.assignment_epoch, before.topology, before.state)
    assert c.delete_group("g", 30) == ErrorCode.NON_EMPTY_GROUP
    hb(c, "m1", -1, 40)
    hb(c, "m2", -1, 50)
    assert c.delete_group("g", 60) == ErrorCode.NONE and "g" not in c.groups
    assert c.delete_group("g", 70) == ErrorCode.GROUP_ID_NOT_FOUND
    gone = StreamsGroupCoordinator(c.config, Log(), topics)
    gone.load((decode_group_record(k, v) for k, v in store.records), 100)
    assert "g" not in gone.groups


def test_a_failed_write_changes_nothing() -> None:
    c, _, store = ready()
    store.fail = True
    assert hb(c, "m1", 0, 0).error == ErrorCode.NOT_COORDINATOR
    assert "g" not in c.groups


def test_endpoints_are_shared_with_every_member() -> None:
    c, _, _ = ready()
    r = hb(c, "m1", 0, 0, user_endpoint=("host-a", 8080))
    assert r.endpoint_information_epoch == 0  # a group created by this heartbeat
    mine = owned(r)
    r = hb(c, "m1", r.member_epoch, 10, owned=mine, endpoint_information_epoch=0)
    mine = owned(r, mine)
    assert r.partitions_by_endpoint is not None
    (entry,) = r.partitions_by_endpoint
    assert entry.endpoint == ("host-a", 8080)
    assert dict(entry.active) == {"input": [0, 1, 2, 3], REPARTITION: [0, 1, 2, 3]}
    again = hb(c, "m1", r.member_epoch, 20, owned=mine,
               endpoint_information_epoch=r.endpoint_information_epoch)
    assert again.partitions_by_endpoint is None


@pytest.mark.parametrize("status", list(StreamsStatus))
def test_status_codes_are_kafkas(status: StreamsStatus) -> None:
    assert status.value == list(StreamsStatus).index(status)
