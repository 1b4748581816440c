"""The classic group coordinator as pure logic: time is driven by the test, records go to a list."""

from __future__ import annotations

import struct

import pytest

from coordinator.group import Group, GroupConfig, GroupState, IllegalTransitionError, JoinResult, SyncResult
from coordinator.group_coordinator import GroupCoordinator
from coordinator.group_interfaces import StoreError
from protocol.group_records import GroupKey, OffsetKey, OffsetValue, decode_group_value, decode_key
from protocol.header import ErrorCode as E

SESSION = 10_000
REBALANCE = 30_000


class MemStore:
    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []
        self.fail: E | None = None

    def write(self, group_id: str, records: list[tuple[bytes, bytes | None]], now_ms: int) -> None:
        if self.fail is not None:
            raise StoreError(self.fail, "disk on fire")
        self.records.extend(records)


def subscription(*topics: str) -> bytes:
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)  # null user data


def coordinator(**config: int) -> GroupCoordinator:
    return GroupCoordinator(GroupConfig(**config), MemStore())


class Consumer:
    """One client's view: its member id, generation and the last answers it got."""

    def __init__(self, coord: GroupCoordinator, group: str = "g", *, instance: str | None = None,
                 protocols: list[tuple[str, bytes]] | None = None, session: int = SESSION,
                 rebalance: int = REBALANCE) -> None:
        self.coord, self.group, self.instance = coord, group, instance
        self.protocols = protocols or [("range", subscription("t"))]
        self.session, self.rebalance = session, rebalance
        self.member_id = ""
        self.generation = -1
        self.joins: list[JoinResult] = []
        self.syncs: list[SyncResult] = []

    def join(self, now: int, *, version: int = 9) -> list[JoinResult]:
        before = len(self.joins)

        def got(result: JoinResult) -> None:
            self.joins.append(result)
            if result.error in (E.NONE, E.MEMBER_ID_REQUIRED):
                self.member_id = result.member_id
            if result.error == E.NONE:
                self.generation = result.generation_id

        self.coord.join_group(group_id=self.group, member_id=self.member_id, group_instance_id=self.instance,
                              client_id="client", client_host="/127.0.0.1", rebalance_timeout_ms=self.rebalance,
                              session_timeout_ms=self.session, protocol_type="consumer", protocols=self.protocols,
                              require_known_member_id=version >= 4, supports_skip_assignment=version >= 9,
                              respond=got, now_ms=now)
        return self.joins[before:]

    def join_fully(self, now: int) -> list[JoinResult]:
        """Join, doing the MEMBER_ID_REQUIRED round trip when it comes."""
        got = self.join(now)
        if got and got[0].error == E.MEMBER_ID_REQUIRED:
            got = self.join(now)
        return got

    @property
    def last_join(self) -> JoinResult:
        return self.joins[-1]

    def sync(self, now: int, assignments: dict[str, bytes] | None = None) -> list[SyncResult]:
        before = len(self.syncs)
        self.coord.sync_group(group_id=self.group, generation_id=self.generation, member_id=self.member_id,
                              group_instance_id=self.instance, protocol_type="consumer", protocol_name=None,
                              assignments=assignments or {}, respond=self.syncs.append, now_ms=now)
        return self.syncs[before:]

    def heartbeat(self, now: int) -> E:
        return self.coord.heartbeat(group_id=self.group, generation_id=self.generation, member_id=self.member_id,
                                    group_instance_id=self.instance, now_ms=now)

    def leave(self, now: int) -> E:
        error, errors = self.coord.leave_group(group_id=self.group, members=[(self.member_id, self.instance)],
                                               now_ms=now)
        assert error == E.NONE
        return errors[0]

    def commit(self, now: int, offset: int, *, generation: int | None = None, version: int = 9) -> E:
        result = self.coord.commit_offsets(
            group_id=self.group, generation_id=self.generation if generation is None else generation,
            member_id=self.member_id, group_instance_id=self.instance,
            offsets={("t", 0): OffsetValue(offset, 3, "meta", now)}, api_version=version, now_ms=now)
        return result[("t", 0)]


def state(coord: GroupCoordinator, group: str = "g") -> GroupState:
    return coord.groups[group].state


def leader_assigns(leader: Consumer, now: int, members: list[Consumer]) -> None:
    leader.sync(now, {m.member_id: f"assignment-{i}".encode() for i, m in enumerate(members)})


# -- joining ---------------------------------------------------------------------------------------

def test_first_v4_join_needs_a_member_id_then_joins() -> None:
    coord = coordinator()
    c = Consumer(coord)
    [first] = c.join(0)
    assert first.error == E.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("client-")
    assert state(coord) == GroupState.EMPTY
    assert c.join(0) == []  # waits for the (zero) initial delay
    assert state(coord) == GroupState.PREPARING_REBALANCE
    coord.tick(0)
    assert c.last_join.error == E.NONE
    assert c.last_join.generation_id == 1 and c.last_join.leader_id == c.member_id
    assert c.last_join.members == [(c.member_id, None, subscription("t"))]
    assert state(coord) == GroupState.COMPLETING_REBALANCE


def test_pre_v4_join_gets_a_member_id_at_once() -> None:
    coord = coordinator()
    c = Consumer(coord)
    assert c.join(0, version=3) == []
    coord.tick(0)
    assert c.last_join.error == E.NONE and c.member_id


def test_three_consumers_joining_at_once_make_one_rebalance() -> None:
    coord = coordinator()
    consumers = [Consumer(coord) for _ in range(3)]
    for c in consumers:
        c.join_fully(0)
    coord.tick(0)
    results = [c.last_join for c in consumers]
    assert {r.generation_id for r in results} == {1}
    leader = consumers[0]
    assert all(r.leader_id == leader.member_id for r in results)
    assert len(results[0].members) == 3 and results[1].members == [] and results[2].members == []
    leader_assigns(leader, 1, consumers)
    for i, c in enumerate(consumers[1:], 1):
        assert c.sync(1)[0].assignment == f"assignment-{i}".encode()
    assert leader.syncs[0].assignment == b"assignment-0"
    assert state(coord) == GroupState.STABLE
    assert coord.groups["g"].generation_id == 1


def test_staggered_joins_rebalance_again_for_each_newcomer() -> None:
    coord = coordinator()
    a, b, c = Consumer(coord), Consumer(coord), Consumer(coord)
    a.join_fully(0)
    coord.tick(0)
    leader_assigns(a, 0, [a])
    assert state(coord) == GroupState.STABLE and a.generation == 1
    b.join_fully(100)  # a newcomer: rebalance; it waits for a to rejoin
    assert state(coord) == GroupState.PREPARING_REBALANCE
    assert a.heartbeat(200) == E.REBALANCE_IN_PROGRESS
    a.join(300)  # everyone is back: completes without waiting
    assert a.generation == 2 and b.generation == 2
    leader_assigns(a, 300, [a, b])
    b.sync(300)
    c.join_fully(400)
    a.join(450)
    b.join(500)
    assert {x.generation for x in (a, b, c)} == {3}
    assert coord.groups["g"].size == 3


def test_initial_delay_waits_for_more_members_within_the_rebalance_timeout() -> None:
    coord = coordinator(initial_rebalance_delay_ms=3000)
    a, b = Consumer(coord), Consumer(coord)
    a.join_fully(0)
    coord.tick(2000)
    b.join_fully(2000)  # arrives during the delay: the delay starts over
    coord.tick(3000)
    assert a.joins[-1].error == E.MEMBER_ID_REQUIRED
    coord.tick(6000)
    assert a.last_join.error == E.NONE and b.last_join.error == E.NONE
    assert a.last_join.generation_id == 1 and len(a.last_join.members) == 2


def test_protocol_chosen_by_vote_among_common_protocols() -> None:
    coord = coordinator()
    a = Consumer(coord, protocols=[("roundrobin", b"a"), ("range", b"a")])
    b = Consumer(coord, protocols=[("range", b"b"), ("roundrobin", b"b")])
    c = Consumer(coord, protocols=[("range", b"c"), ("sticky", b"c")])
    for x in (a, b, c):
        x.join_fully(0)
    coord.tick(0)
    # Common to all: range only (c lacks roundrobin).
    assert a.last_join.protocol_name == "range"
    assert a.last_join.members[0][2] == b"a"


def test_no_common_protocol_is_inconsistent() -> None:
    coord = coordinator()
    a, b = Consumer(coord, protocols=[("range", b"")]), Consumer(coord, protocols=[("sticky", b"")])
    a.join_fully(0)
    coord.tick(0)
    [result] = b.join(0)
    assert result.error == E.INCONSISTENT_GROUP_PROTOCOL


def test_session_timeout_outside_the_bounds_is_refused() -> None:
    coord = coordinator()
    assert Consumer(coord, session=5999).join(0)[0].error == E.INVALID_SESSION_TIMEOUT
    assert Consumer(coord, session=1_800_001).join(0)[0].error == E.INVALID_SESSION_TIMEOUT


def test_unknown_member_id_for_an_unknown_group() -> None:
    coord = coordinator()
    c = Consumer(coord)
    c.member_id = "made-up"
    assert c.join(0)[0].error == E.UNKNOWN_MEMBER_ID


def test_group_max_size() -> None:
    coord = coordinator(max_size=2)
    a, b, c = Consumer(coord), Consumer(coord), Consumer(coord)
    for x in (a, b):
        x.join_fully(0)
    coord.tick(0)
    leader_assigns(a, 0, [a, b])
    [result] = c.join_fully(10)
    assert result.error == E.GROUP_MAX_SIZE_REACHED
    assert coord.groups["g"].size == 2


def test_empty_group_id_is_invalid() -> None:
    coord = coordinator()
    assert Consumer(coord, group="").join(0)[0].error == E.INVALID_GROUP_ID


# -- members missing responses ----------------------------------------------------------------------

def stable_pair(coord: GroupCoordinator) -> tuple[Consumer, Consumer]:
    a, b = Consumer(coord), Consumer(coord)
    a.join_fully(0)
    b.join_fully(0)
    coord.tick(0)
    leader_assigns(a, 0, [a, b])
    b.sync(0)
    assert state(coord) == GroupState.STABLE
    return a, b


def test_leader_that_missed_its_join_response_gets_it_again() -> None:
    coord = coordinator()
    a, b = Consumer(coord), Consumer(coord)
    a.join_fully(0)
    b.join_fully(0)
    coord.tick(0)
    assert state(coord) == GroupState.COMPLETING_REBALANCE
    [again] = a.join(10)  # same metadata: the current generation, with the member list
    assert again.error == E.NONE and again.generation_id == 1 and len(again.members) == 2
    [again_b] = b.join(10)
    assert again_b.error == E.NONE and again_b.members == [] and again_b.leader_id == a.member_id
    assert state(coord) == GroupState.COMPLETING_REBALANCE


def test_follower_that_missed_its_join_response_in_stable_gets_the_generation() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    [again] = b.join(10)
    assert again.error == E.NONE and again.generation_id == 1
    assert state(coord) == GroupState.STABLE


def test_leader_rejoining_in_stable_forces_a_rebalance() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    assert a.join(10) == []
    assert state(coord) == GroupState.PREPARING_REBALANCE
    assert b.heartbeat(20) == E.REBALANCE_IN_PROGRESS
    b.join(30)
    assert a.generation == b.generation == 2


def test_member_that_never_rejoins_is_removed_after_the_rebalance_timeout() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    b.heartbeat(1000)
    a.join(1000)  # rebalance; b keeps heartbeating but never rejoins
    for t in range(2000, 31_000, 3000):
        assert b.heartbeat(t) == E.REBALANCE_IN_PROGRESS
    coord.tick(31_000)
    assert a.last_join.error == E.NONE and a.last_join.generation_id == 2
    assert [m[0] for m in a.last_join.members] == [a.member_id]
    assert b.heartbeat(31_001) == E.UNKNOWN_MEMBER_ID


def test_leader_that_does_not_rejoin_is_replaced() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    b.join(10)  # follower changes nothing but rejoins: rebalance led by whoever rejoins
    assert state(coord) == GroupState.STABLE  # a follower with the same metadata does not rebalance
    b.protocols = [("range", subscription("t", "u"))]
    b.join(20)
    assert state(coord) == GroupState.PREPARING_REBALANCE
    coord.tick(20 + REBALANCE)
    assert b.last_join.leader_id == b.member_id and b.last_join.generation_id == 2
    assert len(b.last_join.members) == 1


# -- sessions ---------------------------------------------------------------------------------------

def test_session_expiry_removes_the_member_and_rebalances() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    for t in range(3000, SESSION + 3000, 3000):
        assert a.heartbeat(t) == E.NONE
    coord.tick(SESSION - 1)
    assert coord.groups["g"].has(b.member_id)
    coord.tick(SESSION)
    assert not coord.groups["g"].has(b.member_id)
    assert state(coord) == GroupState.PREPARING_REBALANCE
    assert a.heartbeat(SESSION + 1) == E.REBALANCE_IN_PROGRESS
    a.join(SESSION + 2)
    assert a.generation == 2 and len(a.last_join.members) == 1


def test_heartbeat_errors() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    stale = Consumer(coord)
    stale.member_id, stale.generation = "nobody", 1
    assert stale.heartbeat(1) == E.UNKNOWN_MEMBER_ID
    b.generation = 7
    assert b.heartbeat(1) == E.ILLEGAL_GENERATION
    assert Consumer(coord, group="other").heartbeat(1) == E.UNKNOWN_MEMBER_ID


def test_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    coord = coordinator()
    # Both sessions outlast the sync deadline, so only the missing SyncGroup can remove b.
    a, b = Consumer(coord, session=60_000), Consumer(coord, session=60_000)
    a.join_fully(0)
    b.join_fully(0)
    coord.tick(0)
    leader_assigns(a, 5, [a, b])
    assert state(coord) == GroupState.STABLE
    coord.tick(REBALANCE - 1)
    assert coord.groups["g"].has(b.member_id)
    coord.tick(REBALANCE)  # b never sent SyncGroup
    assert not coord.groups["g"].has(b.member_id) and coord.groups["g"].has(a.member_id)
    assert state(coord) == GroupState.PREPARING_REBALANCE


def test_pending_member_expires_after_its_session_timeout() -> None:
    coord = coordinator()
    c = Consumer(coord)
    c.join(0)
    assert coord.groups["g"].pending_members == {c.member_id}
    coord.tick(SESSION)
    assert coord.groups["g"].pending_members == set()
    assert c.join(SESSION + 1)[0].error == E.UNKNOWN_MEMBER_ID


# -- sync and leave -----------------------------------------------------------------------------------

def test_sync_during_preparing_rebalance_and_follower_waiting_for_the_leader() -> None:
    coord = coordinator()
    a, b = Consumer(coord), Consumer(coord)
    a.join_fully(0)
    b.join_fully(0)
    coord.tick(0)
    assert b.sync(1) == []  # waits for the leader's assignment
    leader_assigns(a, 2, [a, b])
    assert b.syncs[-1].error == E.NONE and b.syncs[-1].assignment == b"assignment-1"
    assert b.syncs[-1].protocol_name == "range"
    a.join(3)
    assert b.sync(4)[0].error == E.REBALANCE_IN_PROGRESS


def test_leave_during_completing_rebalance_sends_waiting_members_back_to_join() -> None:
    coord = coordinator()
    a, b, c = Consumer(coord), Consumer(coord), Consumer(coord)
    for x in (a, b, c):
        x.join_fully(0)
    coord.tick(0)
    assert b.sync(1) == []
    assert c.leave(2) == E.NONE
    assert b.syncs[-1].error == E.REBALANCE_IN_PROGRESS
    assert state(coord) == GroupState.PREPARING_REBALANCE
    a.join(3)
    b.join(3)
    assert a.generation == b.generation == 2 and len(a.last_join.members) == 2


def test_last_member_leaving_empties_the_group_and_stores_it() -> None:
    coord = coordinator()
    c = Consumer(coord)
    c.join_fully(0)
    coord.tick(0)
    leader_assigns(c, 0, [c])
    assert c.leave(1) == E.NONE
    assert state(coord) == GroupState.EMPTY
    key, value = coord.store.records[-1]
    assert decode_key(key) == GroupKey("g")
    stored = decode_group_value(value)
    assert stored.generation == 2 and stored.members == [] and stored.protocol is None


def test_leave_errors_and_batched_leave() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    error, errors = coord.leave_group(group_id="g", members=[(a.member_id, None), ("ghost", None)], now_ms=1)
    assert error == E.NONE and errors == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert coord.leave_group(group_id="nope", members=[("x", None)], now_ms=1) == (E.NONE, [E.UNKNOWN_MEMBER_ID])


# -- static membership --------------------------------------------------------------------------------

def test_static_member_restart_takes_over_without_rebalance() -> None:
    coord = coordinator()
    a = Consumer(coord, instance="instance-a")
    b = Consumer(coord, instance="instance-b")
    a.join_fully(0)
    b.join_fully(0)
    coord.tick(0)
    leader_assigns(a, 0, [a, b])
    b.sync(0)
    old_b = b.member_id
    restarted = Consumer(coord, instance="instance-b")
    [result] = restarted.join(100)
    assert result.error == E.NONE and result.member_id != old_b
    assert result.generation_id == 1 and not result.skip_assignment
    assert state(coord) == GroupState.STABLE
    assert restarted.sync(101)[0].assignment == b"assignment-1"
    # The old instance is fenced.
    assert b.heartbeat(102) == E.FENCED_INSTANCE_ID
    # A restarted static leader learns it leads, but skips the assignment (v9).
    restarted_a = Consumer(coord, instance="instance-a")
    [result] = restarted_a.join(200)
    assert result.leader_id == result.member_id and result.skip_assignment and len(result.members) == 2


def test_static_member_not_rejoining_stays_in_the_group() -> None:
    coord = coordinator()
    a = Consumer(coord, instance="a")
    b = Consumer(coord, instance="b", session=60_000)  # alive, just not rejoining
    a.join_fully(0)
    b.join_fully(0)
    coord.tick(0)
    leader_assigns(a, 0, [a, b])
    b.sync(0)
    a.join(10)
    coord.tick(10 + REBALANCE)
    assert a.generation == 2 and len(a.last_join.members) == 2


def test_leave_of_a_static_member_by_instance_id() -> None:
    coord = coordinator()
    a = Consumer(coord, instance="a")
    a.join_fully(0)
    coord.tick(0)
    error, errors = coord.leave_group(group_id="g", members=[("", "a"), ("", "zzz")], now_ms=1)
    assert errors == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert coord.groups["g"].size == 0


# -- offsets --------------------------------------------------------------------------------------------

def test_commit_validation() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    assert a.commit(1, 42) == E.NONE
    assert coord.fetch_offsets("g", [("t", 0), ("t", 1)]) == [
        (("t", 0), OffsetValue(42, 3, "meta", 1)), (("t", 1), None)]
    assert a.commit(1, 43, generation=5) == E.ILLEGAL_GENERATION
    stranger = Consumer(coord)
    stranger.member_id, stranger.generation = "x", 1
    assert stranger.commit(1, 1) == E.UNKNOWN_MEMBER_ID
    # Commits without group management are refused while the group has members.
    simple = Consumer(coord)
    assert simple.commit(1, 1, generation=-1) == E.UNKNOWN_MEMBER_ID
    # During CompletingRebalance the member has no assignment yet.
    a.join(2)
    b.join(2)
    assert a.commit(3, 44) == E.REBALANCE_IN_PROGRESS
    # Unknown group with a generation: v9 names it, older versions say ILLEGAL_GENERATION.
    other = Consumer(coord, group="other")
    other.member_id = "m"
    assert other.commit(1, 1, generation=1, version=9) == E.GROUP_ID_NOT_FOUND
    assert other.commit(1, 1, generation=1, version=8) == E.ILLEGAL_GENERATION


def test_simple_group_commits_and_metadata_limit() -> None:
    coord = coordinator(offset_metadata_max_bytes=4)
    result = coord.commit_offsets(group_id="simple", generation_id=-1, member_id="", group_instance_id=None,
                                  offsets={("t", 0): OffsetValue(5, -1, "1234", 0),
                                           ("t", 1): OffsetValue(6, -1, "12345", 0)}, api_version=9, now_ms=0)
    assert result == {("t", 0): E.NONE, ("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    assert state(coord, "simple") == GroupState.EMPTY
    assert coord.list_groups()[0].group_id == "simple"


def test_store_failure_is_reported_and_nothing_changes() -> None:
    coord = coordinator()
    coord.store.fail = E.COORDINATOR_NOT_AVAILABLE
    result = coord.commit_offsets(group_id="s", generation_id=-1, member_id="", group_instance_id=None,
                                  offsets={("t", 0): OffsetValue(5)}, api_version=9, now_ms=0)
    assert result == {("t", 0): E.COORDINATOR_NOT_AVAILABLE}
    assert coord.fetch_offsets("s", [("t", 0)]) == [(("t", 0), None)]


def test_offsets_of_an_empty_group_expire_after_retention() -> None:
    coord = coordinator(offsets_retention_ms=1000)
    c = Consumer(coord)
    c.join_fully(0)
    coord.tick(0)
    leader_assigns(c, 0, [c])
    c.commit(0, 7)
    assert coord.expire_offsets(10_000) == 0  # the group is Stable and consumes t
    c.leave(20_000)
    assert coord.expire_offsets(20_999) == 0
    assert coord.expire_offsets(21_000) == 1
    assert "g" not in coord.groups  # empty, no offsets: gone
    assert decode_key(coord.store.records[-1][0]) == GroupKey("g") and coord.store.records[-1][1] is None


def test_delete_groups_and_offsets() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    a.commit(0, 1)
    assert coord.delete_groups(["g", "nope"], 1) == {"g": E.NON_EMPTY_GROUP, "nope": E.GROUP_ID_NOT_FOUND}
    # The group consumes t: its offsets cannot be deleted; others can.
    coord.commit_offsets(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id=None,
                         offsets={("u", 0): OffsetValue(9)}, api_version=9, now_ms=1)
    assert coord.delete_offsets("g", [("t", 0), ("u", 0)], 2) == (
        E.NONE, {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): E.NONE})
    assert coord.fetch_offsets("g", None) == [(("t", 0), OffsetValue(1, 3, "meta", 0))]
    a.leave(3)
    b.leave(3)
    assert coord.delete_groups(["g"], 4) == {"g": E.NONE}
    assert "g" not in coord.groups
    assert coord.delete_offsets("g", [("t", 0)], 5) == (E.GROUP_ID_NOT_FOUND, {})


def test_deleting_a_topic_removes_its_offsets() -> None:
    coord = coordinator()
    a, _ = stable_pair(coord)
    a.commit(0, 1)
    coord.commit_offsets(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id=None,
                         offsets={("u", 0): OffsetValue(9)}, api_version=9, now_ms=1)
    written = len(coord.store.records)
    assert coord.topics_deleted(["u", "unrelated"], 2) == ["g"]
    assert [tp for tp, _ in coord.fetch_offsets("g", None)] == [("t", 0)]
    assert len(coord.store.records) == written + 1
    assert decode_key(coord.store.records[-1][0]) == OffsetKey("g", "u", 0) and coord.store.records[-1][1] is None
    assert coord.topics_deleted(["u"], 3) == [] and len(coord.store.records) == written + 1


# -- describe, list, persistence -------------------------------------------------------------------------

def test_describe_and_list() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    d = coord.describe_group("g")
    assert (d.state, d.protocol_type, d.protocol) == ("Stable", "consumer", "range")
    assert [m.assignment for m in d.members] == [b"assignment-0", b"assignment-1"]
    assert d.members[0].metadata == subscription("t") and d.members[0].client_host == "/127.0.0.1"
    a.join(1)
    d = coord.describe_group("g")
    assert d.state == "PreparingRebalance" and d.protocol == "" and d.members[0].metadata == b""
    assert coord.describe_group("missing").state == "Dead"
    assert [g.state for g in coord.list_groups(["preparingrebalance"])] == ["PreparingRebalance"]
    assert coord.list_groups(["Stable"]) == []


def test_replay_restores_groups_and_offsets() -> None:
    coord = coordinator()
    a, b = stable_pair(coord)
    a.commit(5, 100)
    coord.commit_offsets(group_id="simple", generation_id=-1, member_id="", group_instance_id=None,
                         offsets={("t", 0): OffsetValue(3)}, api_version=9, now_ms=5)
    coord.delete_offsets("simple", [("t", 0)], 6)  # the simple group dies
    fresh = coordinator()
    fresh.load(coord.store.records, now_ms=1000)
    assert set(fresh.groups) == {"g"}
    group = fresh.groups["g"]
    assert group.state == GroupState.STABLE and group.generation_id == 1
    assert group.leader_id == a.member_id and list(group.members) == [a.member_id, b.member_id]
    assert group.get(b.member_id).assignment == b"assignment-1"
    assert fresh.fetch_offsets("g", [("t", 0)]) == [(("t", 0), OffsetValue(100, 3, "meta", 5))]
    # Members keep their generation after the restart, and lose their session if silent.
    a.coord = fresh
    assert a.heartbeat(2000) == E.NONE
    fresh.tick(1000 + SESSION)
    assert not group.has(b.member_id) and group.state == GroupState.PREPARING_REBALANCE


def test_offset_records_use_kafka_keys() -> None:
    coord = coordinator()
    coord.commit_offsets(group_id="s", generation_id=-1, member_id="", group_instance_id=None,
                         offsets={("t", 2): OffsetValue(3)}, api_version=9, now_ms=0)
    assert decode_key(coord.store.records[0][0]) == OffsetKey("s", "t", 2)


def test_illegal_transitions_raise() -> None:
    group = Group("g")
    with pytest.raises(IllegalTransitionError):
        group.transition_to(GroupState.STABLE, 0)
    group.transition_to(GroupState.PREPARING_REBALANCE, 0)
    with pytest.raises(IllegalTransitionError):
        group.transition_to(GroupState.STABLE, 0)
