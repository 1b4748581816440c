"""A KIP-848 consumer group (Kafka 4.1's ConsumerGroup and ConsumerGroupMember): members with epochs, the
group epoch, the target assignment and its epoch, the partitions each member currently owns, static members,
regular expression subscriptions. Pure data and the rules that keep its derived state (group state,
subscription counts, partition epochs) consistent.

Like Kafka's coordinator, the group changes only by replaying records (`replay`): a heartbeat computes the
records of its changes from a read-only look at the group, the coordinator writes them to `__consumer_offsets`,
then replays them. Loading after a restart is the same replay, so the group a restarted broker rebuilds is the
group that was written.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from coordinator.assignors import Assignment, SubscriptionType
from coordinator.group_interfaces import (
    EVENTS_KEPT,
    LEAVE_GROUP_MEMBER_EPOCH,
    GroupRecord,
    tombstone,
)
from protocol.header import ErrorCode
from protocol.kafka4_group_records import GroupRecordType


class MemberState(Enum):
    """Kafka's MemberState; `code` is the byte of ConsumerGroupCurrentMemberAssignmentValue.State."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def from_code(cls, code: int) -> MemberState:
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class ConsumerGroupState(Enum):
    """Kafka's ConsumerGroupState, with the names ListGroups and ConsumerGroupDescribe report. The state is
    derived from the members and epochs after every change (Kafka's maybeUpdateGroupState)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member that speaks the classic protocol (JoinGroup/SyncGroup) keeps in a consumer group (KIP-848
    mixed membership): its session timeout and its protocols as it joined with them, in its order."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol it is answered with: its first (Kafka's supportedClassicProtocols().iterator().next())."""
        return self.protocols[0][0]

    def record(self) -> dict[str, Any]:
        return {"session_timeout_ms": self.session_timeout_ms,
                "supported_protocols": [{"name": n, "metadata": m} for n, m in self.protocols]}


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None  # a member that uses the classic protocol

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def replace(self, **changes: Any) -> ConsumerGroupMember:
        return dataclasses.replace(self, **changes)

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        """Kafka's Builder.updateMemberEpoch: the previous epoch follows."""
        return self.replace(previous_member_epoch=self.member_epoch, member_epoch=epoch)

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def subscription_equals(self, other: ConsumerGroupMember) -> bool:
        """Whether the subscription record (ConsumerGroupMemberMetadataValue) would be the same."""
        keys = ("instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names",
                "subscribed_topic_regex", "rebalance_timeout_ms", "server_assignor", "classic")
        return all(getattr(self, k) == getattr(other, k) for k in keys)

    def assignment_equals(self, other: ConsumerGroupMember) -> bool:
        keys = ("member_epoch", "previous_member_epoch", "state", "assigned_partitions",
                "partitions_pending_revocation")
        return all(getattr(self, k) == getattr(other, k) for k in keys)


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    topics: frozenset[str]
    version: int  # the topics' version it was resolved against
    timestamp_ms: int


@dataclass(slots=True)
class SubscriptionCount:
    by_name: int = 0
    by_regex: int = 0


class ConsumerGroup:
    def __init__(self, group_id: str, now_ms: int = -1) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        self.state = ConsumerGroupState.EMPTY
        self.state_timestamp_ms = now_ms
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target_assignment: dict[str, Assignment] = {}
        self.partition_owners: dict[tuple[uuid.UUID, int], str] = {}  # of the target assignment
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}  # owned now, at the owner's epoch
        self.server_assignors: Counter[str] = Counter()
        self.subscribed_topics: dict[str, SubscriptionCount] = {}
        self.subscribed_regexes: Counter[str] = Counter()
        self.resolved_regexes: dict[str, ResolvedRegex] = {}
        self.subscription_type = SubscriptionType.HOMOGENEOUS
        # When the target assignment was last computed (not a record: after a load the next one is at once).
        self.last_assignment_ms: int | None = None
        # The metadata hash is recomputed when this passes (Kafka's metadataRefreshDeadline): a topic the group
        # subscribes to changed.
        self.metadata_refresh_deadline_ms = 0
        self.metadata_refresh_epoch = -1
        self.has_subscription_metadata_record = False
        self.events: deque[tuple[int, str]] = deque(maxlen=EVENTS_KEPT)

    # -- look ups ----------------------------------------------------------------------------------------
    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def target_of(self, member_id: str, instance_id: str | None = None) -> Assignment:
        """The target assignment of a member; a static member taking an instance id over gets its previous
        member's (Kafka's targetAssignment(memberId, instanceId))."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            return self.target_assignment.get(previous, {}) if previous is not None else {}
        return self.target_assignment.get(member_id, {})

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def num_subscribed_members(self, regex: str) -> int:
        return self.subscribed_regexes.get(regex, 0)

    def preferred_assignor(self, counts: Counter[str] | None = None) -> str | None:
        counts = self.server_assignors if counts is None else counts
        best = [(n, name) for name, n in counts.items() if n > 0]
        return max(best)[1] if best else None

    def metadata_expired(self, now_ms: int) -> bool:
        return now_ms >= self.metadata_refresh_deadline_ms or self.group_epoch < self.metadata_refresh_epoch

    def request_metadata_refresh(self) -> None:
        self.metadata_refresh_deadline_ms = 0

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.subscribed_topics

    # -- members of the classic protocol (KIP-848 mixed membership) ------------------------------------------
    def supports_classic_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Kafka's ConsumerGroup.supportsClassicProtocols: a classic member joins with the consumer protocol type
        and a protocol every classic member already in the group supports."""
        if protocol_type != "consumer":
            return False
        names = set(names)
        if not self.members:
            return bool(names)
        classic = [m.classic for m in self.members.values() if m.classic is not None]
        return any(all(name in {n for n, _ in c.protocols} for c in classic) for name in names)

    def all_members_use_classic_except(self, leaving: Iterable[str]) -> bool:
        leaving = set(leaving)
        return all(m.uses_classic_protocol for mid, m in self.members.items() if mid not in leaving)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a member in UNRELEASED_PARTITIONS still waits for a partition of its target that another member
        owns (a classic member is told to rejoin once they are all free)."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target_assignment.get(member.member_id, {}).items():
            mine = member.assigned_partitions.get(topic_id, frozenset())
            if any(p not in mine and self.current_partition_epoch(topic_id, p) != -1 for p in partitions):
                return True
        return False

    # -- subscriptions, as they would be after a member change (Kafka's computeSubscribed*) ----------------
    def subscribed_topics_after(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
                                ) -> dict[str, SubscriptionCount]:
        counts = {name: SubscriptionCount(c.by_name, c.by_regex) for name, c in self.subscribed_topics.items()}
        if old is not None:
            for name in old.subscribed_topic_names:
                _add(counts, name, by_name=-1)
        if new is not None:
            for name in new.subscribed_topic_names:
                _add(counts, name, by_name=1)
        old_regex = _regex(old)
        if old_regex is not None and old_regex != _regex(new) and self.num_subscribed_members(old_regex) == 1:
            resolved = self.resolved_regexes.get(old_regex)
            if resolved is not None:
                for name in resolved.topics:
                    _add(counts, name, by_regex=-1)
        return counts

    def subscribed_topics_without(self, removed: Iterable[ConsumerGroupMember], removed_regexes: Iterable[str]
                                  ) -> dict[str, SubscriptionCount]:
        counts = {name: SubscriptionCount(c.by_name, c.by_regex) for name, c in self.subscribed_topics.items()}
        for member in removed:
            for name in member.subscribed_topic_names:
                _add(counts, name, by_name=-1)
        for regex in removed_regexes:
            resolved = self.resolved_regexes.get(regex)
            if resolved is not None:
                for name in resolved.topics:
                    _add(counts, name, by_regex=-1)
        return counts

    def subscribed_regexes_after(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
                                 ) -> Counter[str]:
        counts = Counter(self.subscribed_regexes)
        old_regex, new_regex = _regex(old), _regex(new)
        if old_regex != new_regex:
            if old_regex is not None:
                counts[old_regex] -= 1
            if new_regex is not None:
                counts[new_regex] += 1
        return +counts

    def assignors_after(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None) -> Counter[str]:
        counts = Counter(self.server_assignors)
        if old is not None and old.server_assignor is not None:
            counts[old.server_assignor] -= 1
        if new is not None and new.server_assignor is not None:
            counts[new.server_assignor] += 1
        return +counts

    # -- the member epoch checks of offset commits and fetches --------------------------------------------
    def validate_offset_commit(self, member_id: str, instance_id: str | None, member_epoch: int,
                               transactional: bool, api_version: int) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetCommit."""
        if member_epoch < 0 and not self.members:
            return ErrorCode.NONE
        if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
            return ErrorCode.NONE
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and api_version < 9 and not member.uses_classic_protocol:
            return ErrorCode.UNSUPPORTED_VERSION
        return _check_member_epoch(member, member_epoch)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetFetch."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return _check_member_epoch(member, member_epoch)

    # -- replay: the only way the group changes ----------------------------------------------------------
    def update_member(self, new: ConsumerGroupMember, now_ms: int) -> None:
        old = self.members.get(new.member_id)
        self.members[new.member_id] = new
        self._count_member(old, -1)
        self._count_member(new, 1)
        if old is not None:
            self._remove_partition_epochs(old)
        self._add_partition_epochs(new.assigned_partitions, new.member_epoch)
        self._add_partition_epochs(new.partitions_pending_revocation, new.member_epoch)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        self._update_state(now_ms)

    def remove_member(self, member_id: str, now_ms: int) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._count_member(old, -1)
        self._remove_partition_epochs(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self._update_state(now_ms)

    def update_target(self, member_id: str, assignment: Assignment) -> None:
        for key in [k for k, owner in self.partition_owners.items() if owner == member_id]:
            del self.partition_owners[key]
        self.target_assignment[member_id] = assignment
        for topic_id, partitions in assignment.items():
            for partition in partitions:
                self.partition_owners[(topic_id, partition)] = member_id

    def remove_target(self, member_id: str) -> None:
        if self.target_assignment.pop(member_id, None) is not None:
            for key in [k for k, owner in self.partition_owners.items() if owner == member_id]:
                del self.partition_owners[key]

    def update_resolved_regex(self, regex: str, resolved: ResolvedRegex | None) -> None:
        old = self.resolved_regexes.pop(regex, None)
        if old is not None:
            for name in old.topics:
                _add(self.subscribed_topics, name, by_regex=-1)
        if resolved is not None:
            self.resolved_regexes[regex] = resolved
            for name in resolved.topics:
                _add(self.subscribed_topics, name, by_regex=1)
        self._update_subscription_type()

    def set_epochs(self, now_ms: int, *, group_epoch: int | None = None, assignment_epoch: int | None = None
                   ) -> None:
        if group_epoch is not None:
            self.group_epoch = group_epoch
        if assignment_epoch is not None:
            self.assignment_epoch = assignment_epoch
        self._update_state(now_ms)

    def _count_member(self, member: ConsumerGroupMember | None, delta: int) -> None:
        if member is None:
            return
        for name in member.subscribed_topic_names:
            _add(self.subscribed_topics, name, by_name=delta)
        if member.server_assignor is not None:
            self.server_assignors[member.server_assignor] += delta
            self.server_assignors = +self.server_assignors
        regex = _regex(member)
        if regex is not None:
            self.subscribed_regexes[regex] += delta
            self.subscribed_regexes = +self.subscribed_regexes
        self._update_subscription_type()

    def _update_subscription_type(self) -> None:
        self.subscription_type = subscription_type(self.subscribed_regexes, self.subscribed_topics,
                                                   len(self.members))

    def _add_partition_epochs(self, assignment: Assignment, epoch: int) -> None:
        for topic_id, partitions in assignment.items():
            for partition in partitions:
                previous = self.partition_epochs.get((topic_id, partition))
                if previous is not None and previous >= epoch:
                    raise RuntimeError(f"group {self.group_id}: cannot set the epoch of {topic_id}-{partition} to "
                                       f"{epoch}: still owned at epoch {previous}")
                self.partition_epochs[(topic_id, partition)] = epoch

    def _remove_partition_epochs(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, partitions in assignment.items():
                for partition in partitions:
                    if self.partition_epochs.get((topic_id, partition)) == member.member_epoch:
                        del self.partition_epochs[(topic_id, partition)]

    def _update_state(self, now_ms: int) -> None:
        if not self.members:
            state = ConsumerGroupState.EMPTY
        elif self.group_epoch > self.assignment_epoch:
            state = ConsumerGroupState.ASSIGNING
        elif any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            state = ConsumerGroupState.RECONCILING
        else:
            state = ConsumerGroupState.STABLE
        if state is not self.state:
            self.events.append((now_ms, f"{self.state.value} -> {state.value}"))
            self.state = state
            self.state_timestamp_ms = now_ms


def _check_member_epoch(member: ConsumerGroupMember, epoch: int) -> ErrorCode:
    """Kafka's ConsumerGroup.validateMemberEpoch: a classic member names its generation (ILLEGAL_GENERATION)."""
    if epoch == member.member_epoch:
        return ErrorCode.NONE
    return ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH


def subscription_type(regexes: Mapping[str, int], topics: Mapping[str, SubscriptionCount], members: int
                      ) -> SubscriptionType:
    """Kafka's ConsumerGroup.subscriptionType: homogeneous when every member subscribes to the same topics
    (all by the same names, or all by one single regular expression)."""
    if not regexes:
        if all(c.by_name == members for c in topics.values()):
            return SubscriptionType.HOMOGENEOUS
        return SubscriptionType.HETEROGENEOUS
    if next(iter(regexes.values())) == members:
        if all(c.by_regex == 1 and c.by_name == 0 for c in topics.values()):
            return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS


def _regex(member: ConsumerGroupMember | None) -> str | None:
    if member is None or not member.subscribed_topic_regex:
        return None
    return member.subscribed_topic_regex


def _add(counts: dict[str, SubscriptionCount], name: str, *, by_name: int = 0, by_regex: int = 0) -> None:
    count = counts.setdefault(name, SubscriptionCount())
    count.by_name += by_name
    count.by_regex += by_regex
    if count.by_name <= 0 and count.by_regex <= 0:
        del counts[name]


# == records (Kafka's GroupCoordinatorRecordHelpers) =========================================================
def _partitions_list(assignment: Assignment) -> list[dict[str, Any]]:
    return [{"topic_id": topic_id, "partitions": sorted(parts)}
            for topic_id, parts in sorted(assignment.items(), key=lambda item: str(item[0]))]


def _assignment_from(entries: Iterable[Mapping[str, Any]] | None) -> dict[uuid.UUID, frozenset[int]]:
    out: dict[uuid.UUID, frozenset[int]] = {}
    for entry in entries or ():
        if entry["partitions"]:
            out[entry["topic_id"]] = frozenset(out.get(entry["topic_id"], frozenset()) | set(entry["partitions"]))
    return out


def _classic_metadata(value: Mapping[str, Any] | None) -> ClassicMemberMetadata | None:
    """A record's ClassicMemberMetadata: null for a consumer-protocol member (Kafka writes the null; an absent
    field decodes as a struct of defaults, without protocols, which no classic member has)."""
    if value is None or not value["supported_protocols"]:
        return None
    return ClassicMemberMetadata(value["session_timeout_ms"], tuple((p["name"], bytes(p["metadata"]))
                                                                    for p in value["supported_protocols"]))


def epoch_record(group_id: str, epoch: int, metadata_hash: int) -> GroupRecord:
    return (GroupRecordType.CONSUMER_GROUP_METADATA, {"group_id": group_id},
            {"epoch": epoch, "metadata_hash": metadata_hash})


def member_subscription_record(group_id: str, member: ConsumerGroupMember) -> GroupRecord:
    return (GroupRecordType.CONSUMER_GROUP_MEMBER_METADATA, {"group_id": group_id, "member_id": member.member_id},
            {"instance_id": member.instance_id, "rack_id": member.rack_id, "client_id": member.client_id,
             "client_host": member.client_host, "subscribed_topic_names": list(member.subscribed_topic_names),
             "subscribed_topic_regex": member.subscribed_topic_regex,
             "rebalance_timeout_ms": member.rebalance_timeout_ms, "server_assignor": member.server_assignor,
             "classic_member_metadata": None if member.classic is None else member.classic.record()})


def target_assignment_record(group_id: str, member_id: str, assignment: Assignment) -> GroupRecord:
    return (GroupRecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, {"group_id": group_id, "member_id": member_id},
            {"topic_partitions": _partitions_list(assignment)})


def target_epoch_record(group_id: str, epoch: int) -> GroupRecord:
    return (GroupRecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, {"group_id": group_id},
            {"assignment_epoch": epoch})


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> GroupRecord:
    return (GroupRecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
            {"group_id": group_id, "member_id": member.member_id},
            {"member_epoch": member.member_epoch, "previous_member_epoch": member.previous_member_epoch,
             "state": member.state.value, "assigned_partitions": _partitions_list(member.assigned_partitions),
             "partitions_pending_revocation": _partitions_list(member.partitions_pending_revocation)})


def regex_record(group_id: str, regex: str, resolved: ResolvedRegex) -> GroupRecord:
    return (GroupRecordType.CONSUMER_GROUP_REGULAR_EXPRESSION, {"group_id": group_id, "regular_expression": regex},
            {"topics": sorted(resolved.topics), "version": resolved.version, "timestamp": resolved.timestamp_ms})


def member_tombstones(group_id: str, member_id: str) -> list[GroupRecord]:
    """Kafka's removeMember: current assignment, target assignment, then subscription."""
    return [tombstone(GroupRecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id=member_id),
            tombstone(GroupRecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id=member_id),
            tombstone(GroupRecordType.CONSUMER_GROUP_MEMBER_METADATA, group_id, member_id=member_id)]


def group_tombstones(group: ConsumerGroup, member_ids: Iterable[str] | None = None) -> list[GroupRecord]:
    """Kafka's ConsumerGroup.createGroupTombstoneRecords: everything the group wrote, deleted (`member_ids`: its
    members but with a replaced static member's new id, createGroupTombstoneRecordsWithReplacedMember)."""
    gid = group.group_id
    ids = list(group.members if member_ids is None else member_ids)
    records = [tombstone(GroupRecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, gid, member_id=m) for m in ids]
    records += [tombstone(GroupRecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, gid, member_id=m) for m in ids]
    records.append(tombstone(GroupRecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, gid))
    records += [tombstone(GroupRecordType.CONSUMER_GROUP_MEMBER_METADATA, gid, member_id=m) for m in ids]
    records += [tombstone(GroupRecordType.CONSUMER_GROUP_REGULAR_EXPRESSION, gid, regular_expression=r)
                for r in group.resolved_regexes]
    records.append(tombstone(GroupRecordType.CONSUMER_GROUP_PARTITION_METADATA, gid))
    records.append(tombstone(GroupRecordType.CONSUMER_GROUP_METADATA, gid))
    return records


def replay(groups: dict[str, ConsumerGroup], record: GroupRecord, now_ms: int) -> None:
    """Apply one record (Kafka's GroupMetadataManager.replay for the consumer group types). Tombstones for a
    group or member that does not exist are ignored, as Kafka does."""
    kind, key, value = record
    group_id = key["group_id"]
    group = groups.get(group_id)
    if group is None:
        if value is None:
            return
        group = groups[group_id] = ConsumerGroup(group_id, now_ms)
    if kind is GroupRecordType.CONSUMER_GROUP_METADATA:
        if value is None:
            if group.members or group.target_assignment:
                raise RuntimeError(f"tombstone of group {group_id} while it still has members")
            del groups[group_id]
        else:
            group.metadata_hash = value["metadata_hash"]
            group.set_epochs(now_ms, group_epoch=value["epoch"])
    elif kind is GroupRecordType.CONSUMER_GROUP_PARTITION_METADATA:
        # Kafka 4.0 wrote subscription metadata; 4.1 replaced it with the metadata hash and deletes it.
        group.has_subscription_metadata_record = value is not None
    elif kind is GroupRecordType.CONSUMER_GROUP_MEMBER_METADATA:
        member_id = key["member_id"]
        old = group.members.get(member_id)
        if value is None:
            if old is not None:
                group.remove_member(member_id, now_ms)
            return
        base = old if old is not None else ConsumerGroupMember(member_id)
        group.update_member(base.replace(
            instance_id=value["instance_id"], rack_id=value["rack_id"], client_id=value["client_id"],
            client_host=value["client_host"], subscribed_topic_names=tuple(value["subscribed_topic_names"]),
            subscribed_topic_regex=value["subscribed_topic_regex"],
            rebalance_timeout_ms=value["rebalance_timeout_ms"], server_assignor=value["server_assignor"],
            classic=_classic_metadata(value.get("classic_member_metadata"))), now_ms)
    elif kind is GroupRecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        if value is None:
            group.remove_target(key["member_id"])
        else:
            group.update_target(key["member_id"], _assignment_from(value["topic_partitions"]))
    elif kind is GroupRecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        group.set_epochs(now_ms, assignment_epoch=-1 if value is None else value["assignment_epoch"])
    elif kind is GroupRecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        member_id = key["member_id"]
        old = group.members.get(member_id)
        if value is None:
            if old is not None:
                group.update_member(old.replace(member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                                assigned_partitions={}, partitions_pending_revocation={}), now_ms)
            return
        base = old if old is not None else ConsumerGroupMember(member_id)
        group.update_member(base.replace(
            member_epoch=value["member_epoch"], previous_member_epoch=value["previous_member_epoch"],
            state=MemberState.from_code(value["state"]),
            assigned_partitions=_assignment_from(value["assigned_partitions"]),
            partitions_pending_revocation=_assignment_from(value["partitions_pending_revocation"])), now_ms)
    elif kind is GroupRecordType.CONSUMER_GROUP_REGULAR_EXPRESSION:
        regex = key["regular_expression"]
        group.update_resolved_regex(regex, None if value is None else ResolvedRegex(
            frozenset(value["topics"]), value["version"], value["timestamp"]))
    else:
        raise ValueError(f"not a consumer group record: {kind!r}")
