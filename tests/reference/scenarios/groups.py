"""The classic group coordinator's error paths: bad session timeouts, unknown members, illegal generations,
rebalances in progress, inconsistent protocols, static member fencing, offsets of a dead group."""

from __future__ import annotations

import struct
from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    SYNC_GROUP,
    create_topic,
)

# Group settings the scenarios rely on: Kafka's defaults, stated so both brokers surely have them.
GROUP_CONFIG = {"group.min.session.timeout.ms": "6000", "group.max.session.timeout.ms": "1800000"}


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: the topics, no user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def assignment(topic: str, *partitions: int) -> bytes:
    """ConsumerProtocolAssignment v0."""
    return (struct.pack(">hih", 0, 1, len(topic)) + topic.encode() + struct.pack(">i", len(partitions))
            + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1))


def find_coordinator(s: Session, group: str) -> None:
    """Until the group coordinator is ready: Kafka creates __consumer_offsets on the first lookup, and its
    partition is loaded a moment after FindCoordinator names the coordinator (NOT_COORDINATOR meanwhile)."""
    s.wait_for("find coordinator", FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]},
               until=lambda a: a["coordinators"][0]["error_code"] == 0, timeout=60)
    s.wait_for("coordinator loaded", DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False},
               until=lambda a: a["groups"][0]["error_code"] not in (14, 15, 16), timeout=60, record=False)


def join_body(group: str, member: str = "", topic: str = "t", session_ms: int = 10000, instance: str | None = None,
              protocol_type: str = "consumer", rebalance_ms: int = 30000) -> dict[str, Any]:
    return {"group_id": group, "session_timeout_ms": session_ms, "rebalance_timeout_ms": rebalance_ms,
            "member_id": member, "group_instance_id": instance, "protocol_type": protocol_type,
            "protocols": [{"name": "range", "metadata": subscription(topic)}], "reason": None}


def join(s: Session, step: str, group: str, conn: str = "main", **kwargs: Any) -> dict[str, Any]:
    return s.request(step, JOIN_GROUP, 9, join_body(group, **kwargs), conn) or {}


def join_new_member(s: Session, step: str, group: str, conn: str = "main", **kwargs: Any) -> dict[str, Any]:
    """JoinGroup v9 twice: MEMBER_ID_REQUIRED gives the member id (KIP-394), the second join uses it."""
    first = join(s, f"{step}: member id required", group, conn, **kwargs)
    return join(s, step, group, conn, member=first.get("member_id", ""), **kwargs)


def sync(s: Session, step: str, group: str, generation: int, member: str, assignments: list[dict[str, Any]],
         conn: str = "main", instance: str | None = None) -> dict[str, Any]:
    return s.request(step, SYNC_GROUP, 5, {"group_id": group, "generation_id": generation, "member_id": member,
                                           "group_instance_id": instance, "protocol_type": "consumer",
                                           "protocol_name": "range", "assignments": assignments}, conn) or {}


def heartbeat(s: Session, step: str, group: str, generation: int, member: str, conn: str = "main",
              instance: str | None = None) -> dict[str, Any]:
    return s.request(step, HEARTBEAT, 4, {"group_id": group, "generation_id": generation, "member_id": member,
                                          "group_instance_id": instance}, conn) or {}


def commit(s: Session, step: str, group: str, topic: str, offset: int, generation: int = -1, member: str = "",
           conn: str = "main", instance: str | None = None) -> dict[str, Any]:
    return s.request(step, OFFSET_COMMIT, 8, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
        "group_instance_id": instance, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": "m"}]}]}, conn) or {}


def offset_fetch(s: Session, step: str, group: str, topic: str | None, require_stable: bool = False) -> None:
    topics = None if topic is None else [{"name": topic, "partition_indexes": [0]}]
    s.request(step, OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": topics}],
                                      "require_stable": require_stable})


def describe(s: Session, step: str, *groups: str) -> None:
    s.request(step, DESCRIBE_GROUPS, 5, {"groups": list(groups), "include_authorized_operations": True})


@scenario(config=GROUP_CONFIG, fresh=True)  # lists the broker's groups
def group_join_errors(s: Session) -> None:
    """JoinGroup/SyncGroup/Heartbeat of one member: timeouts out of bounds, unknown members, wrong
    generations, a second protocol type, leaving."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic)
    find_coordinator(s, group)
    join(s, "session timeout below the minimum", group, topic=topic, session_ms=1000)
    join(s, "session timeout above the maximum", group, topic=topic, session_ms=2_000_000)
    join(s, "unknown member id", group, topic=topic, member="not-a-member")
    s.request("empty protocol type", JOIN_GROUP, 9, join_body(group, protocol_type="") | {"protocols": []})
    joined = join_new_member(s, "first member", group, topic=topic)
    member, generation = joined.get("member_id", ""), joined.get("generation_id", -1)
    sync(s, "sync, wrong generation", group, generation + 1, member, [])
    sync(s, "sync, unknown member", group, generation, "not-a-member", [])
    sync(s, "sync as leader", group, generation, member, [{"member_id": member, "assignment": assignment(topic, 0)}])
    heartbeat(s, "heartbeat", group, generation, member)
    heartbeat(s, "heartbeat, wrong generation", group, generation + 3, member)
    heartbeat(s, "heartbeat, unknown member", group, generation, "not-a-member")
    heartbeat(s, "heartbeat, unknown group", s.name("nogroup"), 1, member)
    join(s, "other protocol type", group, topic=topic, protocol_type="connect")
    commit(s, "commit, member's generation", group, topic, 5, generation, member)
    commit(s, "commit, wrong generation", group, topic, 6, generation + 1, member)
    commit(s, "commit, unknown member", group, topic, 6, generation, "not-a-member")
    commit(s, "commit without generation to an active group", group, topic, 7)
    offset_fetch(s, "fetch offsets", group, topic)
    offset_fetch(s, "fetch all offsets", group, None)
    describe(s, "describe stable", group, s.name("nogroup"))
    s.request("list stable groups", LIST_GROUPS, 4, {"states_filter": ["Stable"]})
    s.request("delete a non-empty group", DELETE_GROUPS, 2, {"groups_names": [group]})
    s.request("offset delete while subscribed", OFFSET_DELETE, 0, {"group_id": group, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0}]}]})
    s.request("leave, unknown member", LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": "not-a-member", "group_instance_id": None, "reason": None}]})
    s.request("leave", LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": member, "group_instance_id": None, "reason": "done"}]})
    describe(s, "describe empty", group)
    heartbeat(s, "heartbeat after leaving", group, generation, member)


@scenario(config=GROUP_CONFIG)
def group_rebalance(s: Session) -> None:
    """A second member joins a stable group: the first hears REBALANCE_IN_PROGRESS, both rejoin, the
    follower's SyncGroup waits for the leader's; commits during the rebalance."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic, partitions=2)
    find_coordinator(s, group)
    a = join_new_member(s, "member a", group, conn="a", topic=topic)
    a_id, gen = a.get("member_id", ""), a.get("generation_id", -1)
    sync(s, "a syncs", group, gen, a_id, [{"member_id": a_id, "assignment": assignment(topic, 0, 1)}], conn="a")
    b_first = join(s, "member b: member id required", group, conn="b", topic=topic)
    b_id = b_first.get("member_id", "")
    s.send("member b joins (waits)", JOIN_GROUP, 9, join_body(group, member=b_id, topic=topic), conn="b")
    # B's JoinGroup travels on its own connection: wait until the coordinator has taken it.
    s.wait_for("a's heartbeat during the rebalance", HEARTBEAT, 4, {
        "group_id": group, "generation_id": gen, "member_id": a_id, "group_instance_id": None},
               until=lambda a: a["error_code"] == 27, timeout=20, conn="a")
    commit(s, "a commits during the rebalance", group, topic, 3, gen, a_id, conn="a")
    a2 = join(s, "a rejoins", group, conn="a", member=a_id, topic=topic)
    b2 = s.receive("b") or {}
    gen2 = a2.get("generation_id", -1)
    leader = a2.get("leader")
    s.note("same generation and leader for both", {
        "generation": gen2 == b2.get("generation_id"), "leader_is_a": leader == a_id,
        "b_sees_members": len(b2.get("members") or [])})
    s.send("b syncs (waits for the leader)", SYNC_GROUP, 5, {
        "group_id": group, "generation_id": gen2, "member_id": b_id, "group_instance_id": None,
        "protocol_type": "consumer", "protocol_name": "range", "assignments": []}, conn="b")
    sync(s, "a syncs as leader", group, gen2, a_id, [{"member_id": a_id, "assignment": assignment(topic, 0)},
                                                    {"member_id": b_id, "assignment": assignment(topic, 1)}],
         conn="a")
    s.receive("b")
    heartbeat(s, "a's old generation", group, gen, a_id, conn="a")
    commit(s, "b commits", group, topic, 4, gen2, b_id, conn="b")
    describe(s, "two members", group)
    sync(s, "sync again after stable", group, gen2, b_id, [], conn="b")
    s.request("a leaves", LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": a_id, "group_instance_id": None, "reason": None}]}, conn="a")
    heartbeat(s, "b hears of the rebalance", group, gen2, b_id, conn="b")
    b3 = join(s, "b rejoins alone", group, conn="b", member=b_id, topic=topic)
    s.note("b leads generation 3", {"leader_is_b": b3.get("leader") == b_id,
                                    "generation": b3.get("generation_id", 0) - gen2})


@scenario(config=GROUP_CONFIG)
def group_static_members(s: Session) -> None:
    """Static membership (group.instance.id, KIP-345): a restarted instance takes the old member's place and
    the old member id is fenced."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic)
    find_coordinator(s, group)
    first = join(s, "static member joins", group, topic=topic, instance="instance-1")
    old, gen = first.get("member_id", ""), first.get("generation_id", -1)
    sync(s, "sync", group, gen, old, [{"member_id": old, "assignment": assignment(topic, 0)}], instance="instance-1")
    again = join(s, "same instance, new join", group, conn="restarted", topic=topic, instance="instance-1")
    new = again.get("member_id", "")
    s.note("a new member id", {"changed": new != old})
    heartbeat(s, "old member id heartbeats", group, gen, old, instance="instance-1")
    heartbeat(s, "new member id heartbeats", group, again.get("generation_id", -1), new, conn="restarted",
              instance="instance-1")
    commit(s, "old member commits", group, topic, 1, gen, old, instance="instance-1")
    sync(s, "old member syncs", group, gen, old, [], instance="instance-1")
    join(s, "instance id with an unknown member id", group, topic=topic, instance="instance-1", member="not-a-member")
    describe(s, "describe", group)
    s.request("leave by instance id", LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": "", "group_instance_id": "instance-1", "reason": None}]})
    s.request("leave an unknown instance", LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": "", "group_instance_id": "instance-9", "reason": None}]})
    describe(s, "after leaving", group)


@scenario(config=GROUP_CONFIG, fresh=True)  # lists the broker's groups
def group_offsets_lifecycle(s: Session) -> None:
    """Offsets of a group without members, then of a deleted (dead) group; deleting unknown groups; offset
    deletion."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic, partitions=1)
    find_coordinator(s, group)
    offset_fetch(s, "unknown group", group, topic)
    commit(s, "simple commit creates the group", group, topic, 10)
    describe(s, "a group of offsets only", group)
    s.request("list groups", LIST_GROUPS, 4, {"states_filter": ["Empty"]})
    commit(s, "commit with a generation to an empty group", group, topic, 11, 1, "someone")
    s.request("commit, unknown topic", OFFSET_COMMIT, 8, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": s.name("nope"), "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    s.request("commit, metadata too large", OFFSET_COMMIT, 8, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
             "committed_metadata": "m" * 5000}]}]})
    offset_fetch(s, "fetch", group, topic)
    s.request("offset delete", OFFSET_DELETE, 0, {"group_id": group, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0}]}]})
    offset_fetch(s, "after offset delete", group, topic)
    commit(s, "commit again", group, topic, 12)
    s.request("delete the group", DELETE_GROUPS, 2, {"groups_names": [group]})
    describe(s, "dead group", group)
    offset_fetch(s, "offsets of the dead group", group, topic)
    heartbeat(s, "heartbeat to the dead group", group, 1, "someone")
    s.request("delete again", DELETE_GROUPS, 2, {"groups_names": [group, s.name("never")]})
    commit(s, "commit revives it", group, topic, 13)
    offset_fetch(s, "offsets again", group, topic)
    s.request("delete with an invalid group id", DELETE_GROUPS, 2, {"groups_names": [""]})
    join(s, "join with an empty group id", "", topic=topic)
