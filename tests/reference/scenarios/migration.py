"""KIP-848's online migration of a group with members (group.consumer.migration.policy): a classic group whose
consumer-protocol member joins becomes a consumer group with its classic member inside (it heartbeats, rejoins
and syncs with the classic APIs, its assignment computed by the broker), and becomes classic again when the last
consumer-protocol member leaves; with the policy disabled, the consumer-protocol member is refused."""

from __future__ import annotations

import time
from typing import Any

from protocol.schema import message
from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import LIST_GROUPS, OFFSET_COMMIT, SYNC_GROUP, create_topic
from tests.reference.scenarios.consumer_groups import MEMBER_B, describe, heartbeat, join, owned, settle
from tests.reference.scenarios.groups import (
    assignment,
    find_coordinator,
    join_body,
    join_new_member,
)
from tests.reference.scenarios.groups import describe as describe_classic
from tests.reference.scenarios.groups import heartbeat as classic_heartbeat

RELEASES = ("4.2", "4.4")


def _sync(s: Session, step: str, group: str, generation: int, member: str, assignments: list[dict[str, Any]],
          protocol: str | None = "range", conn: str = "main") -> dict[str, Any]:
    return s.request(step, SYNC_GROUP, 5, {"group_id": group, "generation_id": generation, "member_id": member,
                                           "group_instance_id": None, "protocol_type": "consumer",
                                           "protocol_name": protocol, "assignments": assignments}, conn) or {}


def _classic_member(s: Session, group: str, topic: str) -> tuple[str, int]:
    """A classic member that leads the group and assigns itself every partition: (member id, generation)."""
    joined = join_new_member(s, "classic member joins", group, topic=topic)
    member, generation = joined.get("member_id", ""), joined.get("generation_id", -1)
    _sync(s, "classic member syncs", group, generation, member,
          [{"member_id": member, "assignment": assignment(topic, 0, 1)}])
    return member, generation


def _list(s: Session, step: str) -> None:
    s.request(step, LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})


@scenario(releases=RELEASES, fresh=True)
def group_online_migration(s: Session) -> None:
    """Upgrade: a consumer-protocol member joins a Stable classic group with a member; the classic member,
    now inside a consumer group, heartbeats, is told to rejoin, rejoins and syncs its new assignment. Downgrade:
    the consumer-protocol member leaves and the group is classic again; its classic member rejoins."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic, partitions=2)
    find_coordinator(s, group)
    member, generation = _classic_member(s, group, topic)
    classic_heartbeat(s, "classic heartbeat before", group, generation, member)
    upgraded = join(s, "consumer-protocol member joins", group, MEMBER_B, [topic], conn="b")
    describe(s, "described as a consumer group", group)
    describe_classic(s, "DescribeGroups of the upgraded group", group)
    _list(s, "listed")
    beat = classic_heartbeat(s, "classic member heartbeats", group, generation, member)
    rejoined = s.request("classic member rejoins", 11, 9, join_body(group, member=member, topic=topic)) or {}
    new_generation = rejoined.get("generation_id", generation)
    synced = _sync(s, "classic member syncs again", group, new_generation, member, [])
    s.note("the classic member's new assignment", {"assignment": (synced.get("assignment") or "")})
    epoch, _ = settle(s, "consumer-protocol member settles", group, MEMBER_B, upgraded.get("member_epoch", 0),
                      [], conn="b")
    classic_heartbeat(s, "classic heartbeat after the rebalance", group, new_generation, member)
    describe(s, "two members, one of each protocol", group)
    s.note("heartbeat before the rejoin", {"error_code": beat.get("error_code")})
    heartbeat(s, "consumer-protocol member leaves", group, MEMBER_B, -1, conn="b")
    describe_classic(s, "DescribeGroups after the downgrade", group)
    describe(s, "ConsumerGroupDescribe after the downgrade", group)
    _list(s, "listed after the downgrade")
    classic_heartbeat(s, "classic member heartbeats after the downgrade", group, new_generation, member)
    again = s.request("classic member rejoins the classic group", 11, 9,
                      join_body(group, member=member, topic=topic)) or {}
    _sync(s, "classic member syncs in the classic group", group, again.get("generation_id", -1), member,
          [{"member_id": member, "assignment": assignment(topic, 0, 1)}])
    describe_classic(s, "DescribeGroups at the end", group)


@scenario(releases=RELEASES, fresh=True, config={"group.consumer.migration.policy": "disabled"})
def group_migration_disabled(s: Session) -> None:
    """group.consumer.migration.policy=disabled: a consumer-protocol member meets a classic group with a member,
    a classic member a consumer group with a member; empty groups are not converted either."""
    topic, group, other = s.name("t"), s.name("g"), s.name("g2")
    create_topic(s, "create", topic)
    find_coordinator(s, group)
    _classic_member(s, group, topic)
    join(s, "consumer-protocol member at the classic group", group, MEMBER_B, [topic], conn="b")
    find_coordinator(s, other)
    joined = join(s, "consumer-protocol member creates a consumer group", other, MEMBER_B, [topic], conn="b")
    s.request("classic member at the consumer group", 11, 9, join_body(other, topic=topic))
    heartbeat(s, "consumer-protocol member leaves", other, MEMBER_B, -1, conn="b")
    s.request("classic member at the empty consumer group", 11, 9, join_body(other, topic=topic))
    s.note("joined", {"error_code": joined.get("error_code")})


# ---- mixed membership: what a classic member of a consumer group is told ---------------------------
MEMBER_D = "member-d-0000000000000"
ASSIGNMENT_INTERVAL_S = 1.1  # Kafka 4.3+'s group.consumer.assignment.interval.ms (1 s) and a margin


def _subscription_v1(topic: str, owned: list[int]) -> bytes:
    """ConsumerProtocolSubscription v1: the topic and the partitions the member owns (a cooperative member)."""
    body = {"topics": [topic], "user_data": None, "owned_partitions": [{"topic": topic, "partitions": owned}]}
    return b"\x00\x01" + message("ConsumerProtocolSubscription").encode(1, body)


def _join_v1(s: Session, step: str, group: str, member: str, topic: str, owned: list[int]) -> dict[str, Any]:
    body = join_body(group, member=member, topic=topic)
    body["protocols"] = [{"name": "range", "metadata": _subscription_v1(topic, owned)}]
    return s.request(step, 11, 9, body) or {}


def _assignment_interval(s: Session) -> None:
    """Kafka 4.3+ computes a group's target assignment at most once a second: what follows a pause starts from
    a fresh assignment on both brokers (4.2 computes at every change)."""
    if s.release >= "4.3":
        time.sleep(ASSIGNMENT_INTERVAL_S)


@scenario(releases=("4.2", "4.3", "4.4"), fresh=True)
def group_mixed_membership(s: Session) -> None:
    """A classic member of a consumer group: its heartbeat, sync and commit with wrong generations and protocols,
    a consumer-protocol member's id in a classic heartbeat, its rejoin while it still owns a partition to give
    up (cooperative), then again once it gave it up; a second classic member joining and leaving (LeaveGroup),
    a consumer-protocol member joining while an assignment waits (4.3+ batch them: the classic member is told
    to rejoin only once the assignment is computed), the downgrade when the consumer-protocol members leave."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic, partitions=2)
    find_coordinator(s, group)
    first = s.request("classic member joins: member id required", 11, 9,
                      {**join_body(group, topic=topic), "protocols": [
                          {"name": "range", "metadata": _subscription_v1(topic, [])}]}) or {}
    member = first.get("member_id", "")
    joined = _join_v1(s, "classic member joins", group, member, topic, [])
    generation = joined.get("generation_id", -1)
    _sync(s, "classic member assigns itself both partitions", group, generation, member,
          [{"member_id": member, "assignment": assignment(topic, 0, 1)}])
    upgraded = join(s, "consumer-protocol member joins", group, MEMBER_B, [topic], conn="b")
    classic_heartbeat(s, "classic heartbeat, wrong generation", group, 5, member)
    classic_heartbeat(s, "classic heartbeat of the consumer-protocol member", group,
                      upgraded.get("member_epoch", 0), MEMBER_B)
    _sync(s, "classic sync, another protocol", group, generation, member, [], protocol="roundrobin")
    _sync(s, "classic sync while it must rejoin", group, generation, member, [])
    commit_classic(s, "classic commit at its generation", group, topic, 5, generation, member)
    commit_classic(s, "classic commit, wrong generation", group, topic, 6, 7, member)
    still = _join_v1(s, "classic member rejoins, owning both", group, member, topic, [0, 1])
    _sync(s, "classic member syncs, one partition to give up", group, still.get("generation_id", -1), member, [])
    describe(s, "revoking", group)
    classic_heartbeat(s, "classic heartbeat while revoking", group, still.get("generation_id", -1), member)
    gave_up = _join_v1(s, "classic member rejoins, owning one", group, member, topic, [0])
    generation = gave_up.get("generation_id", -1)
    _sync(s, "classic member syncs its partition", group, generation, member, [])
    epoch, mine = settle(s, "consumer-protocol member settles", group, MEMBER_B, upgraded.get("member_epoch", 0),
                         [], conn="b")

    _assignment_interval(s)
    second = join_new_member(s, "second classic member joins", group, topic=topic, conn="c")
    second_id = second.get("member_id", "")
    classic_heartbeat(s, "first classic member heartbeats", group, generation, member)
    again = _join_v1(s, "first classic member rejoins", group, member, topic, [0])
    generation = again.get("generation_id", -1)
    _sync(s, "first classic member syncs", group, generation, member, [])
    join(s, "another consumer-protocol member joins", group, MEMBER_D, [topic], conn="d")
    classic_heartbeat(s, "classic heartbeat after the join", group, generation, member)
    _assignment_interval(s)
    heartbeat(s, "consumer-protocol member heartbeats", group, MEMBER_B, epoch, owned=mine, conn="b")
    classic_heartbeat(s, "classic heartbeat once assigned", group, generation, member)
    _list(s, "listed")
    s.request("second classic member leaves", 13, 5, {"group_id": group, "members": [
        {"member_id": second_id, "group_instance_id": None, "reason": None}]}, "c")
    heartbeat(s, "another consumer-protocol member leaves", group, MEMBER_D, -1, conn="d")
    describe(s, "one member of each protocol", group)
    heartbeat(s, "the last consumer-protocol member leaves", group, MEMBER_B, -1, conn="b")
    describe_classic(s, "classic again", group)
    commit_classic(s, "classic commit while it rebalances", group, topic, 7, generation, member)
    rejoined = s.request("classic member rejoins the classic group", 11, 9,
                         join_body(group, member=member, topic=topic)) or {}
    _sync(s, "classic member leads the classic group", group, rejoined.get("generation_id", -1), member,
          [{"member_id": member, "assignment": assignment(topic, 0, 1)}])
    s.request("classic member leaves", 13, 5, {"group_id": group, "members": [
        {"member_id": member, "group_instance_id": None, "reason": None}]})
    describe_classic(s, "empty", group)


def commit_classic(s: Session, step: str, group: str, topic: str, offset: int, generation: int,
                   member: str) -> None:
    s.request(step, OFFSET_COMMIT, 8, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
        "group_instance_id": None, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]})


@scenario(releases=RELEASES, fresh=True, config={"group.consumer.migration.policy": "upgrade"})
def group_migration_upgrade_only(s: Session) -> None:
    """group.consumer.migration.policy=upgrade: a classic group with a member is upgraded, but when the
    consumer-protocol member leaves the group stays a consumer group of its classic member, which rejoins,
    takes every partition and leaves it empty; a classic member then turns the empty group classic."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic, partitions=2)
    find_coordinator(s, group)
    member, generation = _classic_member(s, group, topic)
    upgraded = join(s, "consumer-protocol member joins", group, MEMBER_B, [topic], conn="b")
    classic_heartbeat(s, "classic member heartbeats", group, generation, member)
    rejoined = s.request("classic member rejoins", 11, 9, join_body(group, member=member, topic=topic)) or {}
    _sync(s, "classic member syncs", group, rejoined.get("generation_id", -1), member, [])
    settle(s, "consumer-protocol member settles", group, MEMBER_B, upgraded.get("member_epoch", 0), [], conn="b")
    heartbeat(s, "consumer-protocol member leaves", group, MEMBER_B, -1, conn="b")
    describe(s, "a consumer group of a classic member", group)
    _list(s, "listed")
    beat = classic_heartbeat(s, "classic member heartbeats again", group, rejoined.get("generation_id", -1), member)
    last = s.request("classic member rejoins alone", 11, 9, join_body(group, member=member, topic=topic)) or {}
    _sync(s, "classic member takes both", group, last.get("generation_id", -1), member, [])
    s.request("classic member leaves", 13, 5, {"group_id": group, "members": [
        {"member_id": member, "group_instance_id": None, "reason": None}]})
    describe(s, "empty consumer group", group)
    s.request("a classic member at the empty consumer group", 11, 9, join_body(group, topic=topic), "c")
    s.note("heartbeat before the rejoin", {"error_code": beat.get("error_code")})


@scenario(releases=RELEASES, fresh=True, config={"group.consumer.migration.policy": "downgrade"})
def group_migration_downgrade_only(s: Session) -> None:
    """group.consumer.migration.policy=downgrade: a consumer-protocol member meets a classic group with a member
    (refused), a classic member joins a consumer group with members (served), and the consumer group becomes
    classic when its consumer-protocol member leaves."""
    topic, group, other = s.name("t"), s.name("g"), s.name("g2")
    create_topic(s, "create", topic, partitions=2)
    find_coordinator(s, group)
    _classic_member(s, group, topic)
    join(s, "consumer-protocol member at the classic group", group, MEMBER_B, [topic], conn="b")
    find_coordinator(s, other)
    created = join(s, "consumer-protocol member creates a consumer group", other, MEMBER_B, [topic], conn="b")
    classic = join_new_member(s, "classic member joins the consumer group", other, topic=topic, conn="c")
    member = classic.get("member_id", "")
    _sync(s, "classic member syncs", other, classic.get("generation_id", -1), member, [], conn="c")
    describe(s, "mixed", other)
    settle(s, "consumer-protocol member settles", other, MEMBER_B, created.get("member_epoch", 0),
           owned(created), conn="b")
    heartbeat(s, "consumer-protocol member leaves", other, MEMBER_B, -1, conn="b")
    describe_classic(s, "downgraded", other)
    _list(s, "listed")
