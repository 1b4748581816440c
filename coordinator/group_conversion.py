"""Classic and consumer groups under one group id space (KIP-848's online migration, group.consumer.migration.policy),
as pure conversions:

- a new consumer group for a group id no consumer group holds (Kafka's getOrMaybeCreateConsumerGroup): an
  empty classic group becomes one (its GroupMetadata tombstoned, its offsets kept);
- a classic group with members becomes a consumer group in place when a consumer-protocol member joins (Kafka's
  ConsumerGroup.fromClassicGroup): each classic member a consumer group member of the classic protocol, at the
  group's generation, subscribed to the topics of its JoinGroup metadata and owning its SyncGroup assignment;
- a consumer group whose members all use the classic protocol becomes a classic group again (Kafka's
  ClassicGroup.fromConsumerGroup): Stable at the group epoch, each member handed its target assignment.

The other way for an empty consumer group (a classic member joins it) is the shell's: it deletes the group.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping

from coordinator.assignors import Assignment
from coordinator.consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    current_assignment_record,
    epoch_record,
    member_subscription_record,
    replay,
    target_assignment_record,
    target_epoch_record,
)
from coordinator.group import CONSUMER_PROTOCOL_TYPE, Group, GroupState, Member
from coordinator.group_interfaces import GroupError, GroupRecord, TopicsView
from protocol.consumer_protocol import (
    SubscriptionError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    protocol_version,
)
from protocol.header import ErrorCode
from protocol.kafka4_group_records import GroupRecordType

log = logging.getLogger(__name__)

UPGRADE_POLICIES = ("bidirectional", "upgrade")  # group.consumer.migration.policy values that allow it
DOWNGRADE_POLICIES = ("bidirectional", "downgrade")


class CustomAssignorData(Exception):
    """A classic assignment with user data: a custom assignor's, which a consumer group would lose."""


def new_member_id() -> str:
    """A member id the coordinator makes up: Kafka's Uuid.randomUuid().toString() (URL-safe base64)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def consumer_group_for(group_id: str, other: str | None, create: bool, migration_policy: str,
                       records: list[GroupRecord], now_ms: int) -> ConsumerGroup:
    """A new consumer group for a group id no consumer group holds, with the records that convert an empty
    classic group; GroupError when the id cannot become a consumer group. `other` is what the id is to the
    other coordinators (the shell's `other_group_type`): "simple" (offsets only), "classic-empty",
    "classic", "share", or None (unknown). A classic group with members is `upgrade_records`' business."""
    if other is None or other == "simple":
        if not create:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        return ConsumerGroup(group_id, now_ms)
    if other == "classic-empty" and create:
        # An empty classic group becomes a consumer group: its metadata goes, its offsets stay.
        records.append((GroupRecordType.GROUP_METADATA, {"group_id": group_id}, None))
        log.info("[GroupId %s] Converted the empty classic group to a consumer group.", group_id)
        return ConsumerGroup(group_id, now_ms)
    raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")


def check_upgrade(classic: Group, migration_policy: str, max_size: int) -> None:
    """Kafka's validateOnlineUpgrade: GroupError (GROUP_ID_NOT_FOUND) when the classic group may not become a
    consumer group."""
    group_id = classic.group_id
    if migration_policy not in UPGRADE_POLICIES:
        reason = "online upgrade is disabled"
    elif classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        reason = "the group does not use the consumer embedded protocol"
    elif len(classic.members) > max_size:
        reason = "the group size exceeds the consumer group maximum size"
    else:
        return
    log.info("Cannot upgrade classic group %s to consumer group because %s.", group_id, reason)
    raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                     f"Cannot upgrade classic group {group_id} to consumer group because {reason}.")


def topic_partitions(partitions: Mapping[str, Iterable[int]], topics: TopicsView) -> dict[uuid.UUID, frozenset[int]]:
    """Partitions by topic name as partitions by topic id; topics that no longer exist are left out (Kafka's
    toTopicPartitionMap)."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for name, parts in partitions.items():
        topic_id = topics.topic_id(name)
        if topic_id is not None and parts:
            out[topic_id] = out.get(topic_id, frozenset()) | frozenset(parts)
    return out


def assignment_bytes(assignment: Assignment, metadata: bytes, topics: TopicsView) -> bytes:
    """A classic member's SyncGroup assignment, at the version of its subscription (Kafka's prepareAssignment)."""
    by_name: dict[str, list[int]] = {}
    for topic_id, parts in assignment.items():
        name = topics.topic_name(topic_id)
        if name is not None:
            by_name[name] = sorted(parts)
    return encode_assignment(by_name, protocol_version(metadata))


def classic_member(member: Member, epoch: int, protocol: str | None, topics: TopicsView
                   ) -> tuple[ConsumerGroupMember, Assignment]:
    """One member of a classic group as a consumer group member of the classic protocol, and its assignment
    (SubscriptionError or KeyError when its embedded protocol does not parse, CustomAssignorData)."""
    name = protocol or member.protocols[0][0]
    subscription = decode_subscription(member.metadata(name))
    assigned: Assignment = {}
    if member.assignment:
        given = decode_assignment(member.assignment)
        if given.user_data:
            raise CustomAssignorData("userData from a custom assignor would be lost")
        assigned = topic_partitions(given.partitions, topics)
    return ConsumerGroupMember(
        member.member_id, member_epoch=epoch, previous_member_epoch=epoch, state=MemberState.STABLE,
        instance_id=member.group_instance_id, rack_id=subscription.rack_id or None,
        rebalance_timeout_ms=member.rebalance_timeout_ms, client_id=member.client_id, client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))), subscribed_topic_regex="",
        assigned_partitions=assigned,
        classic=ClassicMemberMetadata(member.session_timeout_ms, tuple(member.protocols))), assigned


def upgrade_records(classic: Group, topics: TopicsView, metadata_hash: Callable[[Collection[str]], int]
                    ) -> list[GroupRecord]:
    """The records that turn a classic group with members into a consumer group (Kafka's convertToConsumerGroup):
    its GroupMetadata tombstone, then every member's subscription, the group epoch (the generation), every
    member's target (what it owns), the target's epoch, every member's current assignment. GroupError
    (GROUP_ID_NOT_FOUND) when a member's embedded protocol does not parse or carries a custom assignor's data."""
    group_id, epoch = classic.group_id, classic.generation_id
    members: list[ConsumerGroupMember] = []
    owners: dict[tuple[uuid.UUID, int], str] = {}
    for member in classic.members.values():
        try:
            converted, assigned = classic_member(member, epoch, classic.protocol_name, topics)
        except (SubscriptionError, KeyError) as exc:
            log.warning("Cannot upgrade classic group %s to consumer group because the embedded consumer protocol "
                        "is malformed: %s.", group_id, exc)
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {group_id} to "
                             "consumer group because the embedded consumer protocol is malformed.") from None
        except CustomAssignorData as exc:
            log.warning("Cannot upgrade classic group %s to consumer group: %s.", group_id, exc)
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer "
                             "group because an unsupported custom assignor is in use. Please refer to the "
                             "documentation or switch to a default assignor before re-attempting the upgrade.") \
                from None
        for topic_id, parts in assigned.items():
            for partition in parts:
                if owners.setdefault((topic_id, partition), member.member_id) != member.member_id:
                    # Kafka's ConsumerGroup.updateMember refuses a partition owned twice (IllegalStateException).
                    raise GroupError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Cannot upgrade classic group {group_id}: "
                                     f"partition {topic_id}-{partition} is assigned to two members.")
        members.append(converted)
    subscribed = {name for m in members for name in m.subscribed_topic_names}
    records: list[GroupRecord] = [(GroupRecordType.GROUP_METADATA, {"group_id": group_id}, None)]
    records += [member_subscription_record(group_id, m) for m in members]
    records.append(epoch_record(group_id, epoch, metadata_hash(subscribed)))
    records += [target_assignment_record(group_id, m.member_id, m.assigned_partitions) for m in members]
    records.append(target_epoch_record(group_id, epoch))
    records += [current_assignment_record(group_id, m) for m in members]
    return records


def group_from_records(group_id: str, records: Iterable[GroupRecord], now_ms: int) -> ConsumerGroup:
    """The consumer group the records build (a conversion seen before it is written)."""
    groups: dict[str, ConsumerGroup] = {}
    for record in records:
        if record[0] is not GroupRecordType.GROUP_METADATA:
            replay(groups, record, now_ms)
    return groups.get(group_id) or ConsumerGroup(group_id, now_ms)


def classic_group_from(group: ConsumerGroup, leaving: Collection[str], topics: TopicsView, now_ms: int,
                       joining: ConsumerGroupMember | None = None) -> Group:
    """The classic group a consumer group of classic members becomes (Kafka's ClassicGroup.fromConsumerGroup):
    Stable at the group epoch, its members those that stay (`joining` in the place of the static member it
    replaces), each holding its target assignment. GroupError (GROUP_ID_NOT_FOUND) when a member's embedded
    protocol does not parse."""
    classic = Group(group.group_id, state=GroupState.STABLE, state_timestamp_ms=now_ms,
                    generation_id=group.group_epoch, protocol_type=CONSUMER_PROTOCOL_TYPE)
    targets: dict[str, Assignment] = {}
    for member_id, member in group.members.items():
        if member_id in leaving:
            continue
        target = group.target_assignment.get(member_id, {})
        if joining is not None and joining.instance_id is not None and member.instance_id == joining.instance_id:
            member = joining
        if member.classic is None:
            raise ValueError(f"member {member.member_id} of group {group.group_id} does not use the classic protocol")
        targets[member.member_id] = target
        classic.add(Member(member.member_id, member.instance_id, member.client_id, member.client_host,
                           member.rebalance_timeout_ms, member.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE,
                           list(member.classic.protocols)), None)
    classic.protocol_name = classic.select_protocol()
    classic.subscribed_topics = classic.consumer_subscriptions()
    try:
        for member in classic.members.values():
            member.assignment = assignment_bytes(targets[member.member_id], member.metadata(classic.protocol_name),
                                                 topics)
    except SubscriptionError as exc:
        log.warning("Cannot downgrade the consumer group %s: fail to parse the Consumer Protocol consumer.",
                    group.group_id)
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                         f"Cannot downgrade the classic group {group.group_id}: {exc}.") from None
    return classic
