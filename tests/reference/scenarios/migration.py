"""KIP-848's online migration of a group with members (group.consumer.migration.policy): a classic group whose
consumer-protocol member joins becomes a consumer group with its classic member inside (it heartbeats, rejoins
and syncs with the classic APIs, its assignment computed by the broker), and becomes classic again when the last
consumer-protocol member leaves; with the policy disabled, the consumer-protocol member is refused."""

from __future__ import annotations

from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import LIST_GROUPS, SYNC_GROUP, create_topic
from tests.reference.scenarios.consumer_groups import MEMBER_B, describe, heartbeat, join, settle
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
          protocol: str | None = "range") -> dict[str, Any]:
    return s.request(step, SYNC_GROUP, 5, {"group_id": group, "generation_id": generation, "member_id": member,
                                           "group_instance_id": None, "protocol_type": "consumer",
                                           "protocol_name": protocol, "assignments": assignments}) or {}


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
