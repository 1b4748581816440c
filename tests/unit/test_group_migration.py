"""KIP-848's online migration as pure logic: the conversions both ways (Kafka's ConsumerGroup.fromClassicGroup and
ClassicGroup.fromConsumerGroup), and mixed membership, classic members served by a consumer group, driven
through the classic and the consumer group coordinators wired as the shell wires them, with explicit `now`."""

from __future__ import annotations

import uuid

import pytest

from coordinator.consumer_group import ClassicMemberMetadata, ConsumerGroupState, MemberState
from coordinator.consumer_group_coordinator import ConsumerGroupConfig, ConsumerGroupCoordinator
from coordinator.group import Group, GroupConfig, GroupState, JoinResult, Member, SyncResult
from coordinator.group_conversion import classic_group_from, group_from_records, upgrade_records
from coordinator.group_coordinator import GroupCoordinator
from coordinator.group_interfaces import GroupError
from protocol.consumer_protocol import decode_assignment, encode_assignment
from protocol.group_records import OffsetValue
from protocol.header import ErrorCode as E
from protocol.kafka4_group_records import (
    KAFKA4_GROUP_RECORD_TYPES,
    GroupRecordType,
    decode_group_record,
    record_type,
)
from protocol.schema import message
from tests.unit.test_consumer_group_coordinator import Log, Topics, hb

SESSION, REBALANCE = 10_000, 30_000


def subscription(*topics: str, owned: dict[str, list[int]] | None = None, version: int = 0) -> bytes:
    body = {"topics": list(topics), "user_data": None,
            "owned_partitions": [{"topic": t, "partitions": p} for t, p in (owned or {}).items()],
            "generation_id": -1, "rack_id": None}
    return version.to_bytes(2, "big") + message("ConsumerProtocolSubscription").encode(version, body)


def other_group_type(classic: GroupCoordinator, group_id: str) -> str | None:
    """What the shell's GroupService.other_group_type says of a group id the classic coordinator holds."""
    group = classic.groups.get(group_id)
    if group is None or group.is_in(GroupState.DEAD):
        return None
    if group.is_empty_of_members() and group.protocol_type is None:
        return "simple"
    if group.is_empty_of_members() and group.is_in(GroupState.EMPTY):
        return "classic-empty"
    return "classic"


class Cluster:
    """Both coordinators on one `__consumer_offsets` (a list), as the shell wires them."""

    def __init__(self, policy: str = "bidirectional", **config: object) -> None:
        self.topics, self.store = Topics(t=2), Log()
        self.classic = GroupCoordinator(GroupConfig(), self.store)
        self.consumer = ConsumerGroupCoordinator(ConsumerGroupConfig(migration_policy=policy, **config), self.store,
                                                 self.topics, self.classic)
        self.consumer.other_group_type = lambda group_id: other_group_type(self.classic, group_id)

    def tick(self, now: int) -> None:
        self.classic.tick(now)
        self.consumer.tick(now)

    def reloaded(self) -> Cluster:
        """Fresh coordinators that replay what was written (a restart)."""
        fresh = Cluster(self.consumer.config.migration_policy)
        fresh.topics = self.topics
        fresh.consumer.topics = self.topics
        classic = [(k, v) for k, v in self.store.records if record_type(k) not in KAFKA4_GROUP_RECORD_TYPES]
        modern = [decode_group_record(k, v) for k, v in self.store.records
                  if record_type(k) in KAFKA4_GROUP_RECORD_TYPES]
        fresh.classic.load(classic, 0)
        fresh.consumer.load([(kind, dict(k), None if v is None else dict(v)) for kind, k, v in modern], 0)
        return fresh


class Classic:
    """A classic-protocol consumer: JoinGroup, SyncGroup, Heartbeat and LeaveGroup go to the coordinator that holds
    the group, as the shell routes them."""

    def __init__(self, cluster: Cluster, *, owned: dict[str, list[int]] | None = None, version: int = 0,
                 instance: str | None = None) -> None:
        self.cluster, self.instance = cluster, instance
        self.metadata = subscription("t", owned=owned, version=version)
        self.member_id, self.generation = "", -1
        self.assignment: list[int] = []

    def _in_consumer_group(self) -> bool:
        return "g" in self.cluster.consumer.groups

    def join(self, now: int, owned: dict[str, list[int]] | None = None) -> JoinResult:
        if owned is not None:
            self.metadata = subscription("t", owned=owned, version=1)
        request = dict(group_id="g", member_id=self.member_id, group_instance_id=self.instance, client_id="classic",
                       client_host="/127.0.0.1", rebalance_timeout_ms=REBALANCE, session_timeout_ms=SESSION,
                       protocol_type="consumer", protocols=[("range", self.metadata)], require_known_member_id=True,
                       supports_skip_assignment=True, now_ms=now)
        for _ in range(2):  # the MEMBER_ID_REQUIRED round trip
            got: list[JoinResult] = []
            if self._in_consumer_group() and self.cluster.consumer.groups["g"].members:
                got.append(self.cluster.consumer.classic_join(**request))
            else:
                self.cluster.classic.join_group(**request, respond=got.append)
                if not got:  # the delayed join completes by its timer (initial delay 0)
                    self.cluster.classic.tick(now)
            if got and got[0].error == E.MEMBER_ID_REQUIRED:
                self.member_id = request["member_id"] = got[0].member_id
                continue
            break
        if got and got[0].error == E.NONE:
            self.member_id, self.generation = got[0].member_id, got[0].generation_id
        return got[0] if got else JoinResult(-1)

    def sync(self, now: int, leader_assigns: bool = False) -> SyncResult:
        assignments = {self.member_id: encode_assignment({"t": [0, 1]}, 0)} if leader_assigns else {}
        request = dict(group_id="g", generation_id=self.generation, member_id=self.member_id,
                       group_instance_id=self.instance, protocol_type="consumer", protocol_name="range",
                       assignments=assignments, now_ms=now)
        got: list[SyncResult] = []
        if self._in_consumer_group():
            got.append(self.cluster.consumer.classic_sync(**request))
        else:
            self.cluster.classic.sync_group(**request, respond=got.append)
        if got and got[0].error == E.NONE:
            self.assignment = decode_assignment(got[0].assignment).partitions.get("t", [])
        return got[0]

    def heartbeat(self, now: int) -> E:
        owner = self.cluster.consumer.classic_heartbeat if self._in_consumer_group() else self.cluster.classic.heartbeat
        return owner(group_id="g", generation_id=self.generation, member_id=self.member_id,
                     group_instance_id=self.instance, now_ms=now)

    def leave(self, now: int) -> E:
        owner = self.cluster.consumer.classic_leave if self._in_consumer_group() else self.cluster.classic.leave_group
        error, errors = owner(group_id="g", members=[(self.member_id, self.instance)], now_ms=now)
        return error if error != E.NONE else errors[0]


def stable_classic_group(cluster: Cluster, now: int = 0) -> Classic:
    """A Stable classic group of one member that owns both partitions of t."""
    member = Classic(cluster)
    assert member.join(now).error == E.NONE
    assert member.sync(now, leader_assigns=True).error == E.NONE
    assert member.assignment == [0, 1]
    return member


def upgraded(cluster: Cluster, now: int = 100) -> tuple[Classic, object]:
    member = stable_classic_group(cluster)
    joined = hb(cluster.consumer, "b", 0, now)
    assert joined.error == E.NONE, joined
    return member, joined


def parts(assignment) -> list[int]:
    return sorted(p for ps in (assignment or {}).values() for p in ps)


# == the conversions ============================================================================================

def classic_group(generation: int = 3) -> tuple[Group, Topics]:
    topics = Topics(t=2)
    group = Group("g", state=GroupState.STABLE, generation_id=generation, protocol_type="consumer",
                  protocol_name="range")
    for member_id, partition, version in (("a", 0, 0), ("b", 1, 3)):
        group.add(Member(member_id, None, f"client-{member_id}", "/127.0.0.1", REBALANCE, SESSION, "consumer",
                         [("range", subscription("t", version=version)), ("sticky", b"\x00\x00")],
                         assignment=encode_assignment({"t": [partition]}, version)), None)
    return group, topics


def test_a_classic_group_becomes_a_consumer_group_at_its_generation() -> None:
    group, topics = classic_group()
    records = upgrade_records(group, topics, lambda names: len(names))
    kinds = [kind for kind, _key, _value in records]
    T = GroupRecordType
    assert kinds == [T.GROUP_METADATA, T.CONSUMER_GROUP_MEMBER_METADATA, T.CONSUMER_GROUP_MEMBER_METADATA,
                     T.CONSUMER_GROUP_METADATA, T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                     T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
                     T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT]
    assert records[0][2] is None  # the classic group's metadata goes, its offsets stay
    assert records[3][2] == {"epoch": 3, "metadata_hash": 1}
    converted = group_from_records("g", records, 0)
    assert (converted.group_epoch, converted.assignment_epoch, converted.state) == (3, 3, ConsumerGroupState.STABLE)
    a, b = converted.members["a"], converted.members["b"]
    assert (a.member_epoch, a.previous_member_epoch, a.state) == (3, 3, MemberState.STABLE)
    assert parts(a.assigned_partitions) == [0] and parts(converted.target_assignment["b"]) == [1]
    assert a.subscribed_topic_names == ("t",) and a.client_id == "client-a" and a.rebalance_timeout_ms == REBALANCE
    assert b.classic == ClassicMemberMetadata(SESSION, (("range", subscription("t", version=3)),
                                                        ("sticky", b"\x00\x00")))


@pytest.mark.parametrize(("assignment", "error", "says"), [
    (b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03abc", E.GROUP_ID_NOT_FOUND, "custom assignor"),
    (b"\x00\x00\x00\x00\x00\x05", E.GROUP_ID_NOT_FOUND, "malformed"),
])
def test_what_cannot_become_a_consumer_group(assignment: bytes, error: E, says: str) -> None:
    group, topics = classic_group()
    group.members["a"].assignment = assignment
    with pytest.raises(GroupError) as refused:
        upgrade_records(group, topics, lambda names: 0)
    assert refused.value.error == error and says in (refused.value.message or "")


def test_a_partition_assigned_twice_is_refused_before_anything_is_written() -> None:
    group, topics = classic_group()
    group.members["b"].assignment = encode_assignment({"t": [0]}, 3)
    with pytest.raises(GroupError) as refused:
        upgrade_records(group, topics, lambda names: 0)
    assert refused.value.error == E.UNKNOWN_SERVER_ERROR


def test_a_consumer_group_of_classic_members_becomes_a_classic_group() -> None:
    group, topics = classic_group(generation=5)
    records = upgrade_records(group, topics, lambda names: 0)
    converted = group_from_records("g", records, 0)
    converted.update_target("a", {topics.topic_id("t"): frozenset({0, 1})})
    back = classic_group_from(converted, {"b"}, topics, now_ms=7)
    assert (back.state, back.generation_id, back.protocol_type, back.protocol_name) == \
        (GroupState.STABLE, 5, "consumer", "range")
    assert list(back.members) == ["a"] and back.leader_id == "a" and back.state_timestamp_ms == 7
    member = back.members["a"]
    assert (member.session_timeout_ms, member.rebalance_timeout_ms, member.client_id) == \
        (SESSION, REBALANCE, "client-a")
    assert member.protocols == group.members["a"].protocols
    assert member.assignment == encode_assignment({"t": [0, 1]}, 0)  # its target, at its subscription's version
    assert back.subscribed_topics == frozenset({"t"})


# == mixed membership ===========================================================================================

def test_online_upgrade_serves_the_classic_member_from_the_consumer_group() -> None:
    cluster = Cluster()
    classic, joined = upgraded(cluster)
    assert (joined.member_epoch, parts(joined.assignment)) == (2, [])  # partition 1 is the classic member's still
    group = cluster.consumer.groups["g"]
    assert (group.group_epoch, group.assignment_epoch, group.state) == (2, 2, ConsumerGroupState.RECONCILING)
    assert group.members[classic.member_id].uses_classic_protocol and not group.members["b"].uses_classic_protocol
    held = cluster.classic.groups["g"]  # what stays with the classic coordinator: a simple group
    assert not held.members and held.protocol_type is None and other_group_type(cluster.classic, "g") == "simple"

    assert classic.heartbeat(200) == E.REBALANCE_IN_PROGRESS
    rejoined = classic.join(300)
    assert (rejoined.error, rejoined.generation_id, rejoined.leader_id, rejoined.members) == (E.NONE, 2, "", [])
    assert rejoined.protocol_name == "range"
    assert classic.sync(300).error == E.NONE and classic.assignment == [0]
    assert classic.heartbeat(400) == E.NONE
    settled = hb(cluster.consumer, "b", 2, 500, owned=[])
    assert (settled.member_epoch, parts(settled.assignment)) == (2, [1])
    assert group.state is ConsumerGroupState.STABLE


def test_the_last_consumer_protocol_member_leaving_downgrades_and_the_group_rebalances() -> None:
    cluster = Cluster()
    classic, _ = upgraded(cluster)
    classic.heartbeat(200)
    classic.join(300)
    classic.sync(300)
    hb(cluster.consumer, "b", 2, 400, owned=[])
    cluster.classic.commit_offsets(group_id="g", generation_id=-1, member_id="", group_instance_id=None,
                                   offsets={("t", 0): OffsetValue(42, -1, "", 400)}, api_version=9, now_ms=400)
    left = hb(cluster.consumer, "b", -1, 500)
    assert (left.error, left.member_epoch) == (E.NONE, -1)
    assert "g" not in cluster.consumer.groups
    group = cluster.classic.groups["g"]
    assert (group.state, group.generation_id) == (GroupState.PREPARING_REBALANCE, 2)
    assert group.members[classic.member_id].assignment == encode_assignment({"t": [0]}, 0)
    assert group.offsets[("t", 0)].offset == 42  # the offsets stay with the group
    assert cluster.classic.describe_group("g", True).members[0].assignment == encode_assignment({"t": [0]}, 0)
    assert cluster.classic.describe_group("g").members[0].assignment == b""  # Kafka 3's coordinator
    assert classic.heartbeat(600) == E.REBALANCE_IN_PROGRESS
    again = classic.join(700)
    assert (again.generation_id, again.leader_id) == (3, classic.member_id)
    assert classic.sync(700, leader_assigns=True).error == E.NONE and state(cluster) is GroupState.STABLE
    kinds = [record_type(k) for k, _ in cluster.store.records]
    assert kinds[-1] == GroupRecordType.GROUP_METADATA  # the downgrade's batch ends with the classic group


def state(cluster: Cluster) -> GroupState:
    return cluster.classic.groups["g"].state


def test_a_classic_member_owning_partitions_revokes_before_they_move() -> None:
    cluster = Cluster()
    classic = Classic(cluster, version=1)
    classic.join(0)
    classic.sync(0, leader_assigns=True)
    hb(cluster.consumer, "b", 0, 100)
    assert classic.heartbeat(200) == E.REBALANCE_IN_PROGRESS
    first = classic.join(300, owned={"t": [0, 1]})  # cooperative: it still owns both
    assert first.generation_id == 1 and classic.sync(300).error == E.NONE and classic.assignment == [0]
    member = cluster.consumer.groups["g"].members[classic.member_id]
    assert member.state is MemberState.UNREVOKED_PARTITIONS
    assert classic.heartbeat(400) == E.REBALANCE_IN_PROGRESS  # revoke, then rejoin
    second = classic.join(500, owned={"t": [0]})
    assert second.generation_id == 2
    assert parts(hb(cluster.consumer, "b", 2, 600, owned=[]).assignment) == [1]


def test_a_classic_member_that_does_not_rejoin_or_sync_in_time_is_fenced() -> None:
    cluster = Cluster()
    classic, _ = upgraded(cluster)
    for now in range(1_000, 1_000 + REBALANCE, 5_000):  # it heartbeats (its session lives) but never rejoins
        assert classic.heartbeat(now) == E.REBALANCE_IN_PROGRESS
        cluster.tick(now)
    cluster.tick(1_000 + REBALANCE - 1)
    assert classic.member_id in cluster.consumer.groups["g"].members
    cluster.tick(1_000 + REBALANCE)
    assert classic.member_id not in cluster.consumer.groups["g"].members
    newcomer = Classic(cluster)
    assert newcomer.join(40_000).error == E.NONE
    for now in range(40_000, 40_000 + REBALANCE, 5_000):
        assert newcomer.heartbeat(now) == E.NONE
        hb(cluster.consumer, "b", cluster.consumer.groups["g"].members["b"].member_epoch, now)
        cluster.tick(now)
    cluster.tick(40_000 + REBALANCE)  # it never sent SyncGroup
    assert newcomer.member_id not in cluster.consumer.groups["g"].members


def test_a_classic_member_keeps_its_own_session_timeout() -> None:
    cluster = Cluster(session_timeout_ms=45_000)
    classic, _ = upgraded(cluster)
    hb(cluster.consumer, "b", 2, SESSION)
    cluster.tick(100 + SESSION)
    assert classic.member_id not in cluster.consumer.groups.get("g", Group("g")).members
    assert other_group_type(cluster.classic, "g") == "simple"  # b stays: the group is a consumer group still
    assert list(cluster.consumer.groups["g"].members) == ["b"]


def test_classic_requests_are_checked_as_kafka_checks_them() -> None:
    cluster = Cluster()
    classic, _ = upgraded(cluster)
    consumer = cluster.consumer
    base = dict(group_id="g", member_id=classic.member_id, group_instance_id=None, now_ms=200)
    assert consumer.classic_heartbeat(**base, generation_id=7) == E.ILLEGAL_GENERATION
    assert consumer.classic_heartbeat(**{**base, "member_id": "b"}, generation_id=2) == E.UNKNOWN_MEMBER_ID
    assert consumer.classic_heartbeat(**{**base, "member_id": "nobody"}, generation_id=1) == E.UNKNOWN_MEMBER_ID
    sync = dict(base, generation_id=1, protocol_type="consumer", assignments={})
    assert consumer.classic_sync(**sync, protocol_name="roundrobin").error == E.INCONSISTENT_GROUP_PROTOCOL
    assert consumer.classic_sync(**sync, protocol_name="range").error == E.REBALANCE_IN_PROGRESS
    join = dict(group_id="g", member_id="", group_instance_id=None, client_id="c", client_host="/h",
                rebalance_timeout_ms=REBALANCE, session_timeout_ms=SESSION, protocol_type="consumer",
                require_known_member_id=True, supports_skip_assignment=True, now_ms=300)
    other = consumer.classic_join(**join, protocols=[("roundrobin", subscription("t"))])
    assert other.error == E.INCONSISTENT_GROUP_PROTOCOL  # the classic member speaks range only
    joined = consumer.classic_join(**join, protocols=[("range", subscription("t"))])
    assert joined.error == E.MEMBER_ID_REQUIRED and len(joined.member_id) == 22  # Kafka's Uuid string
    assert consumer.classic_join(**{**join, "session_timeout_ms": 1}, protocols=[("range", b"")]).error == \
        E.INVALID_SESSION_TIMEOUT
    group = consumer.groups["g"]
    assert group.validate_offset_commit(classic.member_id, None, 1, False, 8) == E.NONE  # classic: any version
    assert group.validate_offset_commit(classic.member_id, None, 5, False, 8) == E.ILLEGAL_GENERATION
    assert group.validate_offset_commit("b", None, 1, False, 9) == E.STALE_MEMBER_EPOCH
    assert group.validate_offset_commit("b", None, 2, False, 8) == E.UNSUPPORTED_VERSION


def test_a_classic_member_leaving_a_group_with_consumer_members_is_fenced() -> None:
    cluster = Cluster()
    classic, _ = upgraded(cluster)
    assert classic.leave(200) == E.NONE
    group = cluster.consumer.groups["g"]
    assert list(group.members) == ["b"] and group.group_epoch == 3
    assert parts(hb(cluster.consumer, "b", 2, 300).assignment) == [0, 1]


@pytest.mark.parametrize("policy", ["downgrade", "disabled"])
def test_policies_that_refuse_the_upgrade(policy: str) -> None:
    cluster = Cluster(policy)
    stable_classic_group(cluster)
    refused = hb(cluster.consumer, "b", 0, 100)
    assert refused.error == E.GROUP_ID_NOT_FOUND and "online upgrade is disabled" in refused.message
    assert cluster.classic.groups["g"].state is GroupState.STABLE and "g" not in cluster.consumer.groups


def test_the_upgrade_policy_keeps_a_consumer_group_of_classic_members() -> None:
    cluster = Cluster("upgrade")
    classic, _ = upgraded(cluster)
    hb(cluster.consumer, "b", -1, 200)
    group = cluster.consumer.groups["g"]
    assert list(group.members) == [classic.member_id]
    assert classic.heartbeat(300) == E.REBALANCE_IN_PROGRESS
    assert classic.join(400).generation_id == 3 and classic.sync(400).error == E.NONE
    assert classic.assignment == [0, 1]


def test_classic_members_cannot_join_a_consumer_group_when_migration_is_disabled() -> None:
    cluster = Cluster("disabled")
    hb(cluster.consumer, "b", 0, 0)
    joined = Classic(cluster).join(100)
    assert joined.error == E.INCONSISTENT_GROUP_PROTOCOL


def test_the_mixed_group_and_the_downgraded_group_are_what_is_written() -> None:
    cluster = Cluster()
    classic, _ = upgraded(cluster)
    classic.heartbeat(200)
    classic.join(300)
    reloaded = cluster.reloaded()
    group = reloaded.consumer.groups["g"]
    assert group.members == cluster.consumer.groups["g"].members
    assert group.members[classic.member_id].classic is not None and group.members["b"].classic is None
    assert "g" not in reloaded.classic.groups  # its GroupMetadata is a tombstone (and it has no offsets)
    hb(cluster.consumer, "b", -1, 400)
    reloaded = cluster.reloaded()
    assert "g" not in reloaded.consumer.groups
    back = reloaded.classic.groups["g"]
    assert list(back.members) == [classic.member_id] and back.generation_id == 2
    assert back.members[classic.member_id].assignment == encode_assignment({"t": [0]}, 0)


def test_a_failed_write_leaves_the_classic_group_as_it_was() -> None:
    cluster = Cluster()
    classic = stable_classic_group(cluster)
    cluster.store.fail = True
    assert hb(cluster.consumer, "b", 0, 100).error == E.NOT_COORDINATOR
    assert cluster.classic.groups["g"].state is GroupState.STABLE and "g" not in cluster.consumer.groups
    cluster.store.fail = False
    assert classic.heartbeat(200) == E.NONE


def test_from_kafka_4_3_a_classic_member_rejoins_for_the_assignment_epoch() -> None:
    cluster = Cluster(initial_epoch=1, assignment_interval_ms=1_000, classic_rejoin_at_assignment_epoch=True)
    classic, joined = upgraded(cluster, now=100)
    assert joined.member_epoch == 2
    hb(cluster.consumer, "c", 0, 200)  # within the interval: the group epoch moves, the assignment waits
    group = cluster.consumer.groups["g"]
    assert (group.group_epoch, group.assignment_epoch) == (3, 2)
    classic.heartbeat(250)
    classic.join(300)
    assert classic.heartbeat(400) == E.NONE  # at the assignment's epoch: nothing to rejoin for yet
    cluster.tick(1_100)
    assert group.assignment_epoch == 3 and classic.heartbeat(1_200) == E.REBALANCE_IN_PROGRESS


def test_a_static_classic_member_replacing_the_last_consumer_protocol_member_downgrades() -> None:
    cluster = Cluster()
    classic = stable_classic_group(cluster)
    hb(cluster.consumer, "b", 0, 100, instance="i-b")
    assert hb(cluster.consumer, "b", -2, 150, instance="i-b").error == E.NONE  # leaves for a while
    replacement = Classic(cluster, instance="i-b")
    joined = replacement.join(200)
    assert joined.error == E.NONE and "g" not in cluster.consumer.groups
    group = cluster.classic.groups["g"]
    assert set(group.members) == {classic.member_id, replacement.member_id}
    assert group.static_members == {"i-b": replacement.member_id}


def test_uuid_member_ids_of_the_consumer_protocol_are_left_alone() -> None:
    cluster = Cluster()
    upgraded(cluster)
    member_id = str(uuid.uuid4())
    assert hb(cluster.consumer, member_id, 0, 200).error == E.NONE
    assert cluster.consumer.groups["g"].members[member_id].classic is None
