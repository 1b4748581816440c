"""StreamsGroupDescribe (KIP-1071): state, epochs, the configured topology (its subtopologies with the internal
topics as they were decided) and the members of streams groups, each with its process, endpoint, current and
target tasks. v1 (Kafka 4.4) may ask for the full topology description (KIP-1331), which only a broker with a
topology description plugin keeps: here, as on a Kafka broker without one, there is none."""

from __future__ import annotations

from typing import Any

from broker.handlers.consumer_group_describe import AUTHORIZED_OPERATIONS_OMITTED
from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names, authorized_operations
from coordinator.streams_group import StreamsGroup, StreamsGroupMember, TasksTuple
from coordinator.streams_heartbeat import task_ids
from coordinator.streams_topology import InternalTopic, TopicInfo
from protocol.header import ErrorCode

NOT_REQUESTED, NOT_STORED = 0, 1  # TopologyDescriptionStatus


def _topic_info(topic: InternalTopic | TopicInfo) -> dict[str, Any]:
    replication = topic.replication_factor or 0
    return {"name": topic.name, "partitions": topic.partitions, "replication_factor": replication,
            "topic_configs": [{"key": k, "value": v} for k, v in sorted(topic.configs)]}


def _topology(group: StreamsGroup) -> dict[str, Any] | None:
    """The configured topology (internal topics with their decided partition counts), or, before it could be
    configured, the topology as the application sent it (counts 0 where the broker decides them)."""
    if group.topology is None:
        return None
    configured = group.configured_topology
    sinks = {s.subtopology_id: s.repartition_sink_topics for s in group.topology.subtopologies}
    subtopologies: list[Any]
    if configured is not None and configured.is_ready and configured.subtopologies is not None:
        subtopologies = [(sid, s.source_topics, s.state_changelog_topics, s.repartition_source_topics)
                         for sid, s in configured.subtopologies.items()]
    else:
        subtopologies = [(s.subtopology_id, s.source_topics, s.state_changelog_topics, s.repartition_source_topics)
                         for s in sorted(group.topology.subtopologies, key=lambda s: s.subtopology_id)]
    return {"epoch": group.topology.epoch, "subtopologies": [
        {"subtopology_id": sid, "source_topics": sorted(sources), "repartition_sink_topics": sorted(sinks.get(sid, ())),
         "state_changelog_topics": [_topic_info(t) for t in changelogs],
         "repartition_source_topics": [_topic_info(t) for t in repartitions]}
        for sid, sources, changelogs, repartitions in subtopologies]}


def _tasks(tasks: TasksTuple) -> dict[str, Any]:
    return {"active_tasks": task_ids(tasks.active), "standby_tasks": task_ids(tasks.standby),
            "warmup_tasks": task_ids(tasks.warmup)}


def _member(group: StreamsGroup, m: StreamsGroupMember) -> dict[str, Any]:
    offsets = [{"subtopology_id": s, "partition": p, "offset": o}
               for (s, p), o in sorted(group.task_offsets.get(m.member_id, {}).items())]
    return {"member_id": m.member_id, "member_epoch": m.member_epoch, "instance_id": m.instance_id,
            "rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
            "topology_epoch": m.topology_epoch, "process_id": m.process_id,
            "user_endpoint": None if m.user_endpoint is None else {"host": m.user_endpoint[0],
                                                                   "port": m.user_endpoint[1]},
            "client_tags": [{"key": k, "value": v} for k, v in m.client_tags], "task_offsets": offsets,
            "task_end_offsets": [], "assignment": _tasks(m.assigned.tasks()),
            "target_assignment": _tasks(group.target_of(m.member_id)), "is_classic": False}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    groups = ctx.broker.groups
    await groups.loaded.wait()
    status = NOT_STORED if req.include_topology_description else NOT_REQUESTED
    out = []
    for group_id in req.group_ids:
        base = {"group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "topology": None,
                "members": [], "topology_description": None, "topology_description_status": status,
                "assignor_name": None}
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            out.append({**base, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED})
            continue
        error = groups.runtime.error_for(group_id)
        group = groups.streams.groups.get(group_id) if error is None else None
        if error is not None or group is None:
            other = groups.other_group_type(group_id)
            message = None if error is not None else f"Group {group_id} is not a streams group." \
                if other not in (None, "simple") else f"Group {group_id} not found."
            out.append({**base, "error_code": error or ErrorCode.GROUP_ID_NOT_FOUND, "error_message": message})
            continue
        if group.topology is not None:
            topics = group.topology.required_topics()
            if topics - authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topics):
                out.append({**base, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": "The "
                            "described group uses topics that the client is not authorized to describe."})
                continue
        out.append({
            **base, "error_code": ErrorCode.NONE, "error_message": None, "group_state": group.state.value,
            "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
            "topology": _topology(group), "members": [_member(group, m) for m in group.members.values()],
            "authorized_operations": authorized_operations(ctx, ResourceType.GROUP, group_id)
            if req.include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED,
            "assignor_name": groups.streams_config(group_id).assignor})
    return {"throttle_time_ms": 0, "groups": out}
