"""StreamsGroupHeartbeat's request and answer as the streams coordinator takes and gives them, and the checks of
a request that need no group (Kafka's throwIfStreamsGroupHeartbeatRequestIsInvalid) or only the member (its
epoch) or the configured topology (the tasks it reports)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.group_interfaces import LEAVE_GROUP_STATIC_MEMBER_EPOCH, GroupError
from coordinator.streams_group import StreamsGroup, StreamsGroupMember, TasksTuple
from coordinator.streams_topology import ConfiguredTopology, InternalTopic, StreamsStatus, StreamsTopology
from protocol.header import ErrorCode


@dataclass(frozen=True, slots=True)
class Status:
    code: StreamsStatus
    detail: str


@dataclass(frozen=True, slots=True)
class EndpointPartitions:
    """One member's share of PartitionsByUserEndpoint: (topic, partitions) of its active and standby tasks."""

    endpoint: tuple[str, int]
    active: list[tuple[str, list[int]]]
    standby: list[tuple[str, list[int]]]


@dataclass(frozen=True, slots=True)
class StreamsHeartbeatResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    task_offset_interval_ms: int = 0
    acceptable_recovery_lag: int = -1  # -1: not told (as a leave's answer)
    statuses: list[Status] = field(default_factory=list)
    tasks: TasksTuple | None = None  # None: unchanged, not sent
    endpoint_information_epoch: int = 0
    partitions_by_endpoint: list[EndpointPartitions] | None = None
    topics_to_create: dict[str, InternalTopic] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """StreamsGroupHeartbeat's fields as the coordinator takes them (task lists as {subtopology: partitions})."""

    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: StreamsTopology | None = None
    active_tasks: dict[str, frozenset[int]] | None = None
    standby_tasks: dict[str, frozenset[int]] | None = None
    warmup_tasks: dict[str, frozenset[int]] | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    task_offsets: dict[tuple[str, int], int] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""


def validate_request(r: HeartbeatRequest) -> None:
    """Kafka's GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid (and its check of features
    4.4 does not support: source topic regular expressions)."""
    if r.topology is not None and any(s.source_topic_regex for s in r.topology.subtopologies):
        raise GroupError(ErrorCode.INVALID_REQUEST, "Regular expressions for source topics are not supported yet.")
    for value, what in ((r.member_id, "MemberId"), (r.group_id, "GroupId"), (r.instance_id, "InstanceId"),
                        (r.rack_id, "RackId")):
        if value is not None and not value.strip():
            raise GroupError(ErrorCode.INVALID_REQUEST, f"{what} can't be empty.")
    if r.member_epoch == 0:
        if r.rebalance_timeout_ms == -1:
            raise GroupError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        for tasks, what in ((r.active_tasks, "ActiveTasks"), (r.standby_tasks, "StandbyTasks"),
                            (r.warmup_tasks, "WarmupTasks")):
            if tasks:
                raise GroupError(ErrorCode.INVALID_REQUEST, f"{what} must be empty when (re-)joining.")
        if r.topology is None:
            raise GroupError(ErrorCode.INVALID_REQUEST, "Topology must be non-null when (re-)joining.")
        for subtopology in r.topology.subtopologies:
            for changelog in subtopology.state_changelog_topics:
                if changelog.partitions != 0:
                    raise GroupError(ErrorCode.STREAMS_INVALID_TOPOLOGY, f"Changelog topic {changelog.name} must "
                                     f"have an undefined partition count, but it is set to {changelog.partitions}.")
    elif r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if r.instance_id is None:
            raise GroupError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    elif r.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise GroupError(ErrorCode.INVALID_REQUEST, f"MemberEpoch is {r.member_epoch}, but must be greater than or "
                         "equal to -2.")
    given = [t is not None for t in (r.active_tasks, r.standby_tasks, r.warmup_tasks)]
    if any(given) and not all(given):
        raise GroupError(ErrorCode.INVALID_REQUEST, "If one task-type is non-null, all must be non-null.")
    if r.member_epoch != 0 and r.topology is not None:
        raise GroupError(ErrorCode.INVALID_REQUEST, "Topology can only be provided when (re-)joining.")


def check_epoch(member: StreamsGroupMember, received: int, owned: TasksTuple | None) -> None:
    """Kafka's throwIfStreamsGroupMemberEpochIsInvalid: a member one epoch behind that owns no more than it was
    given lost a response and is let through."""
    if received > member.member_epoch:
        raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, f"The streams group member has a greater member epoch "
                         f"({received}) than the one known by the group coordinator ({member.member_epoch}). The "
                         "member must abandon all its tasks and rejoin.")
    if received < member.member_epoch:
        assigned = member.assigned
        contained = owned is not None and all(
            parts <= frozenset(have.get(sub, ())) for owned_set, have in (
                (owned.active, assigned.active), (owned.standby, assigned.standby), (owned.warmup, assigned.warmup))
            for sub, parts in owned_set.items())
        if received != member.previous_member_epoch or not contained:
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, f"The streams group member has a smaller member epoch "
                             f"({received}) than the one known by the group coordinator ({member.member_epoch}). The "
                             "member must abandon all its tasks and rejoin.")


def check_tasks(configured: ConfiguredTopology, tasks: Mapping[str, Iterable[int]] | None) -> None:
    """Kafka's throwIfRequestContainsInvalidTasks: owned tasks must be tasks of the topology."""
    subtopologies = configured.subtopologies or {}
    for sub, parts in (tasks or {}).items():
        subtopology = subtopologies.get(sub)
        if subtopology is None:
            raise GroupError(ErrorCode.INVALID_REQUEST, f"Subtopology {sub} does not exist in the topology.")
        for p in parts:
            if not 0 <= p < subtopology.number_of_tasks:
                raise GroupError(ErrorCode.INVALID_REQUEST, f"Task {p} for subtopology {sub} is invalid. Number of "
                                 f"tasks for this subtopology: {subtopology.number_of_tasks}")


def request_from_fields(fields: Any, client_id: str, client_host: str) -> HeartbeatRequest:
    """A decoded StreamsGroupHeartbeatRequest as the coordinator takes it."""
    def tasks(entries: Any) -> dict[str, frozenset[int]] | None:
        if entries is None:
            return None
        out: dict[str, frozenset[int]] = {}
        for entry in entries:
            out[entry["subtopology_id"]] = out.get(entry["subtopology_id"], frozenset()) | set(entry["partitions"])
        return out

    offsets = None
    if fields["task_offsets"] is not None:
        offsets = {(o["subtopology_id"], o["partition"]): o["offset"] for o in fields["task_offsets"]}
    endpoint = fields["user_endpoint"]
    tags = fields["client_tags"]
    return HeartbeatRequest(
        fields["group_id"], fields["member_id"], fields["member_epoch"], fields["endpoint_information_epoch"],
        fields["instance_id"], fields["rack_id"], fields["rebalance_timeout_ms"],
        None if fields["topology"] is None else StreamsTopology.from_fields(fields["topology"]),
        tasks(fields["active_tasks"]), tasks(fields["standby_tasks"]), tasks(fields["warmup_tasks"]),
        fields["process_id"], None if endpoint is None else (endpoint["host"], endpoint["port"]),
        None if tags is None else tuple(sorted((t["key"], t["value"]) for t in tags)), offsets,
        bool(fields["shutdown_application"]), client_id, client_host)


def task_ids(tasks: Mapping[str, Iterable[int]]) -> list[dict[str, Any]]:
    """TaskIds entries of a response, sorted."""
    return [{"subtopology_id": sub, "partitions": sorted(parts)} for sub, parts in sorted(tasks.items()) if parts]




def partitions_by_endpoint(group: StreamsGroup, configured: ConfiguredTopology,
                           partition_count: Callable[[str], int | None]) -> list[EndpointPartitions]:
    """Kafka's EndpointToPartitionsManager: for every member with an endpoint, the partitions of the topics its
    active and its standby (and warm-up) tasks read."""
    subtopologies = configured.subtopologies or {}

    def partitions(tasks: Mapping[str, Iterable[int]]) -> list[tuple[str, list[int]]]:
        out: dict[str, set[int]] = {}
        for sub, parts in tasks.items():
            subtopology = subtopologies.get(sub)
            for topic in subtopology.input_topics() if subtopology is not None else ():
                count = partition_count(topic) or 0
                out.setdefault(topic, set()).update(p for p in parts if p < count)
        return [(topic, sorted(ps)) for topic, ps in sorted(out.items())]

    out = []
    for m in group.members.values():
        if m.user_endpoint is not None:
            standby = {s: m.assigned.standby.get(s, frozenset()) | m.assigned.warmup.get(s, frozenset())
                       for s in {*m.assigned.standby, *m.assigned.warmup}}
            out.append(EndpointPartitions(m.user_endpoint, partitions(m.assigned.active), partitions(standby)))
    return out
