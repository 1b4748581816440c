"""How a KIP-848 consumer group's assignment moves: the group's target (Kafka's TargetAssignmentBuilder: the
server assignor over every member's subscription) and each member's next step towards its own target
(Kafka's CurrentAssignmentBuilder: partitions to give up are revoked first, partitions another member still
owns are given once it has released them). Pure: the coordinator writes the records.
"""

from __future__ import annotations

import hashlib
import logging
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping

from coordinator.assignors import (
    ASSIGNORS,
    DEFAULT_ASSIGNOR,
    Assignment,
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    SubscriptionType,
)
from coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    target_assignment_record,
    target_epoch_record,
)
from coordinator.group_interfaces import GroupError, GroupRecord, TopicsView
from protocol.header import ErrorCode

log = logging.getLogger(__name__)


def metadata_hash(subscribed: Iterable[str], topics: TopicsView) -> int:
    """A hash of the subscribed topics' ids and partition counts (0 for none): a change bumps the group epoch.
    (Kafka hashes more, with its own function; only equality matters.)"""
    names = sorted(subscribed)
    digest = hashlib.blake2b(digest_size=8)
    for name in names:
        topic_id = topics.topic_id(name)
        if topic_id is not None:
            digest.update(name.encode() + b"\0" + topic_id.bytes + struct.pack(">i", topics.partition_count(topic_id)))
    return struct.unpack(">q", digest.digest())[0] if names else 0


def member_spec(group: ConsumerGroup, member: ConsumerGroupMember, assignment: Assignment,
                topics: TopicsView) -> MemberSpec:
    names = set(member.subscribed_topic_names)
    regex = member.subscribed_topic_regex
    if regex:
        resolved = group.resolved_regexes.get(regex)
        if resolved is not None:
            names |= resolved.topics
    ids = frozenset(tid for tid in (topics.topic_id(n) for n in names) if tid is not None)
    return MemberSpec(ids, assignment, member.instance_id, member.rack_id)


def target_assignment(group: ConsumerGroup, epoch: int, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                      sub_type: SubscriptionType, records: list[GroupRecord], topics: TopicsView,
                      default_assignor: str) -> Assignment:
    """Kafka's TargetAssignmentBuilder: the preferred server assignor over every member's subscription (the
    member being updated as it will be), the changed targets recorded; returns the updated member's target."""
    counts = group.assignors_after(member if member.member_id in group.members else None, updated)
    name = group.preferred_assignor(counts) or default_assignor or DEFAULT_ASSIGNOR
    specs = {mid: member_spec(group, m, group.target_assignment.get(mid, {}), topics)
             for mid, m in group.members.items()}
    assignment = group.target_assignment.get(updated.member_id, {})
    previous = group.static_members.get(updated.instance_id) if updated.instance_id is not None else None
    if previous is not None and previous != updated.member_id:
        assignment = group.target_assignment.get(previous, {})
        specs.pop(previous, None)
    specs[updated.member_id] = member_spec(group, updated, assignment, topics)
    spec = GroupSpec(specs, sub_type, {k: v for k, v in group.partition_owners.items() if v in specs})
    try:
        result = ASSIGNORS[name].assign(spec, topics.partition_count)
    except PartitionAssignorError as exc:
        raise GroupError(ErrorCode.UNKNOWN_SERVER_ERROR,
                         f"Failed to compute a new target assignment for epoch {epoch}: {exc}") from None
    for mid in specs:
        new = {tid: frozenset(parts) for tid, parts in result.get(mid, {}).items() if parts}
        old = group.target_assignment.get(mid)
        if old is None or dict(old) != new:
            records.append(target_assignment_record(group.group_id, mid, new))
    records.append(target_epoch_record(group.group_id, epoch))
    log.info("[GroupId %s] Computed a new target assignment for epoch %d with '%s' assignor.",
             group.group_id, epoch, name)
    return {tid: frozenset(parts) for tid, parts in result.get(updated.member_id, {}).items() if parts}


def next_assignment(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
                    partition_epoch: Callable[[uuid.UUID, int], int],
                    owned: Mapping[uuid.UUID, frozenset[int]] | None) -> ConsumerGroupMember:
    """Kafka's CurrentAssignmentBuilder.build: the member's next step towards its target. Partitions it must
    give up are revoked first (it stays in its epoch, UNREVOKED_PARTITIONS, until it reports them gone);
    partitions another member still owns are not given yet (UNRELEASED_PARTITIONS)."""
    def owns_any(revoking: Mapping[uuid.UUID, frozenset[int]]) -> bool:
        if owned is None:
            return True
        return any(parts & revoking.get(topic_id, frozenset()) for topic_id, parts in owned.items())

    def compute(epoch: int, assigned: Mapping[uuid.UUID, frozenset[int]]) -> ConsumerGroupMember:
        unreleased = False
        new_assigned: dict[uuid.UUID, frozenset[int]] = {}
        revoking: dict[uuid.UUID, frozenset[int]] = {}
        pending: dict[uuid.UUID, frozenset[int]] = {}
        for topic_id in set(target) | set(assigned):
            want = target.get(topic_id, frozenset())
            have = assigned.get(topic_id, frozenset())
            keep = have & want
            revoke = have - keep
            mine = member.partitions_pending_revocation.get(topic_id, frozenset())
            add = set()
            for partition in want - keep:
                if partition_epoch(topic_id, partition) != -1 and partition not in mine:
                    unreleased = True
                else:
                    add.add(partition)
            if keep:
                new_assigned[topic_id] = keep
            if revoke:
                revoking[topic_id] = revoke
            if add:
                pending[topic_id] = frozenset(add)
        if revoking and owns_any(revoking):
            return member.replace(state=MemberState.UNREVOKED_PARTITIONS, assigned_partitions=new_assigned,
                                  partitions_pending_revocation=revoking).with_epoch(epoch)
        for topic_id, parts in pending.items():
            new_assigned[topic_id] = new_assigned.get(topic_id, frozenset()) | parts
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return member.replace(state=state, assigned_partitions=new_assigned,
                              partitions_pending_revocation={}).with_epoch(target_epoch)

    if member.state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return compute(member.member_epoch, member.assigned_partitions)
        return member
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(member.partitions_pending_revocation):
            return member
        return compute(member.member_epoch + 1, member.assigned_partitions)
    if member.state is MemberState.UNRELEASED_PARTITIONS:
        return compute(member.member_epoch, member.assigned_partitions)
    if owned is None or owned:
        raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                         "The member must abandon all its partitions and rejoin.")
    return compute(target_epoch, member.assigned_partitions)

