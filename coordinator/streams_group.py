"""A KIP-1071 streams group (Kafka 4.4's StreamsGroup and StreamsGroupMember): members with epochs and processes,
the group's topology, the target assignment of tasks (active, standby, warm-up) and what each member runs now.
Pure data and the rules that keep its derived state (the group state, who runs which task) consistent.

As for consumer groups (coordinator/consumer_group.py), the group changes only by replaying records: a
heartbeat computes the records of its changes, the coordinator writes them to `__consumer_offsets` and replays
them, and loading after a restart is the same replay.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from coordinator.group_interfaces import (
    EVENTS_KEPT,
    LEAVE_GROUP_MEMBER_EPOCH,
    GroupRecord,
    tombstone,
)
from coordinator.streams_topology import ConfiguredTopology, StreamsTopology
from protocol.header import ErrorCode
from protocol.kafka4_group_records import GroupRecordType

TaskSet = dict[str, frozenset[int]]  # subtopology id -> partitions
TaskEpochs = dict[str, dict[int, int]]  # subtopology id -> {partition: epoch it was assigned at}


class MemberState(Enum):
    """Kafka's streams MemberState; `value` is the byte of StreamsGroupCurrentMemberAssignmentValue.State."""

    STABLE = 0
    UNREVOKED_TASKS = 1
    UNRELEASED_TASKS = 2
    UNKNOWN = 127

    @classmethod
    def from_code(cls, code: int) -> MemberState:
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class StreamsGroupState(Enum):
    """Kafka's StreamsGroupState, with the names ListGroups and StreamsGroupDescribe report."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


# Every state is derived from the members and epochs after a change (Kafka's maybeUpdateGroupState); Dead is
# entered only by deleting the group, and never left.
_LIVE = {StreamsGroupState.EMPTY, StreamsGroupState.NOT_READY, StreamsGroupState.ASSIGNING,
         StreamsGroupState.RECONCILING, StreamsGroupState.STABLE}
VALID_PREVIOUS: dict[StreamsGroupState, set[StreamsGroupState]] = {
    **{state: set(_LIVE) for state in _LIVE},
    StreamsGroupState.DEAD: set(_LIVE),
}


@dataclass(frozen=True, slots=True)
class TasksTuple:
    """Active, standby and warm-up tasks (a target assignment)."""

    active: TaskSet = field(default_factory=dict)
    standby: TaskSet = field(default_factory=dict)
    warmup: TaskSet = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)


@dataclass(frozen=True, slots=True)
class AssignedTasks:
    """What a member runs (or must give up): active tasks with the epoch each was assigned at (Kafka's
    TasksTupleWithEpochs; an offset commit older than it is stale), standby and warm-up tasks."""

    active: TaskEpochs = field(default_factory=dict)
    standby: TaskSet = field(default_factory=dict)
    warmup: TaskSet = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def tasks(self) -> TasksTuple:
        return TasksTuple({s: frozenset(p) for s, p in self.active.items()}, self.standby, self.warmup)

    def merge(self, other: AssignedTasks) -> AssignedTasks:
        active = {s: dict(p) for s, p in self.active.items()}
        for s, parts in other.active.items():
            active.setdefault(s, {}).update(parts)
        return AssignedTasks(active, merge_sets(self.standby, other.standby), merge_sets(self.warmup, other.warmup))


def merge_sets(a: Mapping[str, frozenset[int]], b: Mapping[str, frozenset[int]]) -> TaskSet:
    out = dict(a)
    for s, parts in b.items():
        out[s] = out.get(s, frozenset()) | parts
    return out


@dataclass(frozen=True, slots=True)
class StreamsGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()  # sorted by key
    assigned: AssignedTasks = field(default_factory=AssignedTasks)
    pending_revocation: AssignedTasks = field(default_factory=AssignedTasks)

    def replace(self, **changes: Any) -> StreamsGroupMember:
        return dataclasses.replace(self, **changes)

    def with_epoch(self, epoch: int) -> StreamsGroupMember:
        return self.replace(previous_member_epoch=self.member_epoch, member_epoch=epoch)

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def metadata_equals(self, other: StreamsGroupMember) -> bool:
        """Whether the StreamsGroupMemberMetadata record would be the same."""
        keys = ("instance_id", "rack_id", "client_id", "client_host", "rebalance_timeout_ms", "topology_epoch",
                "process_id", "user_endpoint", "client_tags")
        return all(getattr(self, k) == getattr(other, k) for k in keys)

    def assignment_equals(self, other: StreamsGroupMember) -> bool:
        keys = ("member_epoch", "previous_member_epoch", "state", "assigned", "pending_revocation")
        return all(getattr(self, k) == getattr(other, k) for k in keys)


class StreamsGroup:
    def __init__(self, group_id: str, now_ms: int = -1, assignment_epoch: int = 0) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.validated_topology_epoch = -1
        self.last_assignment_configs: dict[str, str] = {}
        self.stored_description_epoch = -1  # KIP-1331's plugin state, kept as written
        self.failed_description_epoch = -1
        self.assignment_epoch = assignment_epoch
        self.assignment_timestamp_ms = 0
        self.topology: StreamsTopology | None = None
        self.configured_topology: ConfiguredTopology | None = None  # in memory, recomputed after a load
        self.state = StreamsGroupState.EMPTY
        self.state_timestamp_ms = now_ms
        self.members: dict[str, StreamsGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target_assignment: dict[str, TasksTuple] = {}
        self.task_offsets: dict[str, dict[tuple[str, int], int]] = {}  # member -> (task) -> offset sum, in memory
        self.endpoint_information_epoch = 0
        self.shutdown_request_member_id: str | None = None
        self.metadata_refresh_deadline_ms = 0
        self.metadata_refresh_epoch = -1
        self.events: deque[tuple[int, str]] = deque(maxlen=EVENTS_KEPT)
        # Who runs which task now (assigned or still to revoke), by process: Kafka's currentActiveTaskToProcessId
        # and its standby and warm-up counterparts.
        self._active_owner: dict[tuple[str, int], str] = {}
        self._standby_owners: dict[tuple[str, int], Counter[str]] = {}
        self._warmup_owners: dict[tuple[str, int], Counter[str]] = {}

    # -- look ups ----------------------------------------------------------------------------------------
    def static_member(self, instance_id: str | None) -> StreamsGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def target_of(self, member_id: str, instance_id: str | None = None) -> TasksTuple:
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            if previous is not None:
                return self.target_assignment.get(previous, TasksTuple())
        return self.target_assignment.get(member_id, TasksTuple())

    def active_process(self, subtopology: str, partition: int) -> str | None:
        return self._active_owner.get((subtopology, partition))

    def standby_processes(self, subtopology: str, partition: int) -> set[str]:
        return set(self._standby_owners.get((subtopology, partition), ()))

    def warmup_processes(self, subtopology: str, partition: int) -> set[str]:
        return set(self._warmup_owners.get((subtopology, partition), ()))

    def metadata_expired(self, now_ms: int) -> bool:
        return now_ms >= self.metadata_refresh_deadline_ms or self.group_epoch < self.metadata_refresh_epoch

    def request_metadata_refresh(self) -> None:
        self.metadata_refresh_deadline_ms = 0

    def is_subscribed_to(self, topic: str) -> bool:
        return self.topology is not None and topic in self.topology.required_topics()

    # -- offsets (Kafka's StreamsGroup.validateOffsetCommit and validateOffsetFetch) ------------------------
    def validate_offset_commit(self, member_id: str, instance_id: str | None, member_epoch: int,
                               transactional: bool, api_version: int
                               ) -> ErrorCode | Callable[[str, int], ErrorCode]:
        """An error for the whole request, or a check per partition for a member one epoch or more behind (a
        task it still owns, assigned no later than that epoch, may still commit)."""
        if member_epoch < 0 and not self.members:
            return ErrorCode.NONE
        if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
            return ErrorCode.NONE
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch == member.member_epoch:
            return ErrorCode.NONE
        if member_epoch > member.member_epoch or self.topology is None:
            return ErrorCode.STALE_MEMBER_EPOCH
        sources = self.topology.source_topic_subtopology()

        def check(topic: str, partition: int) -> ErrorCode:
            subtopology = sources.get(topic)
            if subtopology is None:
                return ErrorCode.STALE_MEMBER_EPOCH
            sid = subtopology.subtopology_id
            epoch = member.assigned.active.get(sid, {}).get(partition)
            if epoch is None:
                epoch = member.pending_revocation.active.get(sid, {}).get(partition)
            return ErrorCode.STALE_MEMBER_EPOCH if epoch is None or member_epoch < epoch else ErrorCode.NONE
        return check

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode:
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.STALE_MEMBER_EPOCH if member_epoch != member.member_epoch else ErrorCode.NONE

    # -- replay: the only way the group changes ----------------------------------------------------------
    def update_member(self, new: StreamsGroupMember, now_ms: int) -> None:
        old = self.members.get(new.member_id)
        self.members[new.member_id] = new
        if old is not None:
            self._index(old, -1)
        self._index(new, 1)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        self.update_state(now_ms)

    def remove_member(self, member_id: str, now_ms: int) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._index(old, -1)
        self.task_offsets.pop(member_id, None)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self.update_state(now_ms)

    def _index(self, member: StreamsGroupMember, delta: int) -> None:
        for tasks in (member.assigned, member.pending_revocation):
            for sub, parts in tasks.active.items():
                for p in parts:
                    if delta > 0:
                        self._active_owner[(sub, p)] = member.process_id
                    elif self._active_owner.get((sub, p)) == member.process_id:
                        del self._active_owner[(sub, p)]
            for owners, task_set in ((self._standby_owners, tasks.standby), (self._warmup_owners, tasks.warmup)):
                for sub, parts in task_set.items():
                    for p in parts:
                        counter = owners.setdefault((sub, p), Counter())
                        counter[member.process_id] += delta
                        if counter[member.process_id] <= 0:
                            del counter[member.process_id]
                        if not counter:
                            del owners[(sub, p)]

    def update_target(self, member_id: str, tasks: TasksTuple | None) -> None:
        if tasks is None:
            self.target_assignment.pop(member_id, None)
        else:
            self.target_assignment[member_id] = tasks

    def set_metadata(self, now_ms: int, **values: Any) -> None:
        for key, value in values.items():
            setattr(self, key, value)
        self.update_state(now_ms)

    def update_state(self, now_ms: int) -> None:
        """Kafka's StreamsGroup.maybeUpdateGroupState."""
        if not self.members:
            state = StreamsGroupState.EMPTY
            self.shutdown_request_member_id = None
        elif self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            state = StreamsGroupState.NOT_READY
        elif self.group_epoch > self.assignment_epoch:
            state = StreamsGroupState.ASSIGNING
        elif any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            state = StreamsGroupState.RECONCILING
        else:
            state = StreamsGroupState.STABLE
        self.transition_to(state, now_ms)

    def transition_to(self, state: StreamsGroupState, now_ms: int) -> None:
        if state is self.state:
            return
        if self.state not in VALID_PREVIOUS[state]:
            raise RuntimeError(f"streams group {self.group_id}: no transition from {self.state.value} to {state.value}")
        self.events.append((now_ms, f"{self.state.value} -> {state.value}"))
        self.state = state
        self.state_timestamp_ms = now_ms


# == records (Kafka's StreamsCoordinatorRecordHelpers) ======================================================
def _task_ids(tasks: Mapping[str, Iterable[int]]) -> list[dict[str, Any]]:
    return [{"subtopology_id": s, "partitions": sorted(p)} for s, p in sorted(tasks.items()) if p]


def _task_ids_with_epochs(tasks: TaskEpochs) -> list[dict[str, Any]]:
    return [{"subtopology_id": s, "partitions": sorted(p), "assignment_epochs": [p[i] for i in sorted(p)]}
            for s, p in sorted(tasks.items()) if p]


def _task_set(entries: Iterable[Mapping[str, Any]] | None) -> TaskSet:
    out: TaskSet = {}
    for entry in entries or ():
        if entry["partitions"]:
            out[entry["subtopology_id"]] = out.get(entry["subtopology_id"], frozenset()) | set(entry["partitions"])
    return out


def _task_epochs(entries: Iterable[Mapping[str, Any]] | None, member_epoch: int) -> TaskEpochs:
    """Kafka's parseActiveTasksWithEpochs: records written before 4.4 have no epochs (the member's then)."""
    out: TaskEpochs = {}
    for entry in entries or ():
        epochs = list(entry.get("assignment_epochs") or ())
        parts = list(entry["partitions"])
        if len(epochs) != len(parts):
            epochs = [member_epoch] * len(parts)
        if parts:
            out.setdefault(entry["subtopology_id"], {}).update(zip(parts, epochs, strict=True))
    return out


def metadata_record(group: StreamsGroup, epoch: int, metadata_hash: int, validated_topology_epoch: int,
                    assignment_configs: Mapping[str, str]) -> GroupRecord:
    return (GroupRecordType.STREAMS_GROUP_METADATA, {"group_id": group.group_id},
            {"epoch": epoch, "metadata_hash": metadata_hash, "validated_topology_epoch": validated_topology_epoch,
             "last_assignment_configs": [{"key": k, "value": v} for k, v in sorted(assignment_configs.items())],
             "stored_description_topology_epoch": group.stored_description_epoch,
             "failed_description_topology_epoch": group.failed_description_epoch})


def topology_record(group_id: str, topology: StreamsTopology) -> GroupRecord:
    return (GroupRecordType.STREAMS_GROUP_TOPOLOGY, {"group_id": group_id}, topology.to_fields())


def member_record(group_id: str, member: StreamsGroupMember) -> GroupRecord:
    endpoint = None if member.user_endpoint is None else {"host": member.user_endpoint[0],
                                                          "port": member.user_endpoint[1]}
    return (GroupRecordType.STREAMS_GROUP_MEMBER_METADATA, {"group_id": group_id, "member_id": member.member_id},
            {"instance_id": member.instance_id, "rack_id": member.rack_id, "client_id": member.client_id,
             "client_host": member.client_host, "rebalance_timeout_ms": member.rebalance_timeout_ms,
             "topology_epoch": member.topology_epoch, "process_id": member.process_id, "user_endpoint": endpoint,
             "client_tags": [{"key": k, "value": v} for k, v in member.client_tags]})


def target_record(group_id: str, member_id: str, tasks: TasksTuple) -> GroupRecord:
    return (GroupRecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER, {"group_id": group_id, "member_id": member_id},
            {"active_tasks": _task_ids(tasks.active), "standby_tasks": _task_ids(tasks.standby),
             "warmup_tasks": _task_ids(tasks.warmup)})


def target_metadata_record(group_id: str, epoch: int, timestamp_ms: int) -> GroupRecord:
    return (GroupRecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA, {"group_id": group_id},
            {"assignment_epoch": epoch, "assignment_timestamp": timestamp_ms})


def current_assignment_record(group_id: str, member: StreamsGroupMember) -> GroupRecord:
    a, r = member.assigned, member.pending_revocation
    return (GroupRecordType.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT, {"group_id": group_id,
                                                                     "member_id": member.member_id},
            {"member_epoch": member.member_epoch, "previous_member_epoch": member.previous_member_epoch,
             "state": member.state.value, "active_tasks": _task_ids_with_epochs(a.active),
             "standby_tasks": _task_ids(a.standby), "warmup_tasks": _task_ids(a.warmup),
             "active_tasks_pending_revocation": _task_ids_with_epochs(r.active),
             "standby_tasks_pending_revocation": _task_ids(r.standby),
             "warmup_tasks_pending_revocation": _task_ids(r.warmup)})


def member_tombstones(group_id: str, member_id: str) -> list[GroupRecord]:
    """Kafka's removeStreamsMember: current assignment, target assignment, then the member."""
    return [tombstone(GroupRecordType.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id=member_id),
            tombstone(GroupRecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id=member_id),
            tombstone(GroupRecordType.STREAMS_GROUP_MEMBER_METADATA, group_id, member_id=member_id)]


def group_tombstones(group: StreamsGroup) -> list[GroupRecord]:
    """Kafka's StreamsGroup.createGroupTombstoneRecords."""
    gid = group.group_id
    records = [tombstone(GroupRecordType.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT, gid, member_id=m)
               for m in group.members]
    records += [tombstone(GroupRecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER, gid, member_id=m)
                for m in group.members]
    records.append(tombstone(GroupRecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA, gid))
    records += [tombstone(GroupRecordType.STREAMS_GROUP_MEMBER_METADATA, gid, member_id=m) for m in group.members]
    records.append(tombstone(GroupRecordType.STREAMS_GROUP_TOPOLOGY, gid))
    records.append(tombstone(GroupRecordType.STREAMS_GROUP_METADATA, gid))
    return records


def replay(groups: dict[str, StreamsGroup], record: GroupRecord, now_ms: int,
           new_group: Callable[[str, int], StreamsGroup] = StreamsGroup) -> None:
    """Apply one record (Kafka's GroupMetadataManager.replay for the streams group types); tombstones for a
    group or member that does not exist are ignored. `new_group(group_id, now_ms)` makes a group a record
    names first."""
    kind, key, value = record
    group_id = key["group_id"]
    group = groups.get(group_id)
    if group is None:
        if value is None:
            return
        group = groups[group_id] = new_group(group_id, now_ms)
    if kind is GroupRecordType.STREAMS_GROUP_METADATA:
        if value is None:
            if group.members or group.target_assignment:
                raise RuntimeError(f"tombstone of streams group {group_id} while it still has members")
            group.transition_to(StreamsGroupState.DEAD, now_ms)
            del groups[group_id]
            return
        group.set_metadata(now_ms, group_epoch=value["epoch"], metadata_hash=value["metadata_hash"],
                           validated_topology_epoch=value["validated_topology_epoch"],
                           last_assignment_configs={c["key"]: c["value"]
                                                    for c in value["last_assignment_configs"] or ()},
                           stored_description_epoch=value["stored_description_topology_epoch"],
                           failed_description_epoch=value["failed_description_topology_epoch"])
    elif kind is GroupRecordType.STREAMS_GROUP_TOPOLOGY:
        group.set_metadata(now_ms, topology=None if value is None else StreamsTopology.from_fields(value),
                           configured_topology=None)
    elif kind is GroupRecordType.STREAMS_GROUP_MEMBER_METADATA:
        member_id = key["member_id"]
        old = group.members.get(member_id)
        if value is None:
            group.remove_member(member_id, now_ms)
            return
        endpoint = value["user_endpoint"]
        base = old if old is not None else StreamsGroupMember(member_id)
        group.update_member(base.replace(
            instance_id=value["instance_id"], rack_id=value["rack_id"], client_id=value["client_id"],
            client_host=value["client_host"], rebalance_timeout_ms=value["rebalance_timeout_ms"],
            topology_epoch=value["topology_epoch"], process_id=value["process_id"],
            user_endpoint=None if endpoint is None else (endpoint["host"], endpoint["port"]),
            client_tags=tuple(sorted((t["key"], t["value"]) for t in value["client_tags"]))), now_ms)
    elif kind is GroupRecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER:
        group.update_target(key["member_id"], None if value is None else TasksTuple(
            _task_set(value["active_tasks"]), _task_set(value["standby_tasks"]), _task_set(value["warmup_tasks"])))
    elif kind is GroupRecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA:
        if value is None:
            group.set_metadata(now_ms, assignment_epoch=-1, assignment_timestamp_ms=0)
        else:
            group.set_metadata(now_ms, assignment_epoch=value["assignment_epoch"],
                               assignment_timestamp_ms=value["assignment_timestamp"])
    elif kind is GroupRecordType.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        member_id = key["member_id"]
        old = group.members.get(member_id)
        if value is None:
            if old is not None:
                group.update_member(old.replace(member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                                assigned=AssignedTasks(), pending_revocation=AssignedTasks()), now_ms)
            return
        base = old if old is not None else StreamsGroupMember(member_id)
        epoch = value["member_epoch"]
        group.update_member(base.replace(
            member_epoch=epoch, previous_member_epoch=value["previous_member_epoch"],
            state=MemberState.from_code(value["state"]),
            assigned=AssignedTasks(_task_epochs(value["active_tasks"], epoch), _task_set(value["standby_tasks"]),
                                   _task_set(value["warmup_tasks"])),
            pending_revocation=AssignedTasks(_task_epochs(value["active_tasks_pending_revocation"], epoch),
                                             _task_set(value["standby_tasks_pending_revocation"]),
                                             _task_set(value["warmup_tasks_pending_revocation"]))), now_ms)
    else:
        raise ValueError(f"not a streams group record: {kind!r}")
