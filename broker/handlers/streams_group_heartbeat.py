"""StreamsGroupHeartbeat (KIP-1071, the 4.2-4.4 profiles): join with the application's topology, heartbeat and
leave of a streams group whose tasks the coordinator assigns; the answer carries the member's epoch, its tasks
when they changed, the group's conditions (statuses) and where every member's partitions are served (for
interactive queries). As Kafka's KafkaApis, the topology's topic names are checked first, and the internal
topics the coordinator finds missing are created here, for a client allowed to create them."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.join_group import client_host
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names, cluster_authorized
from broker.services.topics import INTERNAL_TOPICS, TopicError, validate_topic_name
from coordinator.streams_heartbeat import StreamsHeartbeatResult, request_from_fields, task_ids
from coordinator.streams_topology import StreamsStatus
from protocol.header import ErrorCode

INT32_MAX = 2**31 - 1


def _error(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "member_id": "",
            "member_epoch": 0, "heartbeat_interval_ms": 0, "acceptable_recovery_lag_legacy": 0,
            "task_offset_interval_ms": 0, "acceptable_recovery_lag": -1, "status": [], "active_tasks": None,
            "standby_tasks": None, "warmup_tasks": None, "topology_description_required": False,
            "endpoint_information_epoch": 0, "partitions_by_user_endpoint": None}


def _topology_error(ctx: RequestContext, topology: Any) -> dict[str, Any] | None:
    """KafkaApis' checks of the topology's topics: no Kafka internal topics, valid names, describable."""
    names: list[str] = []
    for s in topology.subtopologies:
        names += [*s.source_topics, *s.repartition_sink_topics, *(t.name for t in s.repartition_source_topics),
                  *(t.name for t in s.state_changelog_topics)]
    names = list(dict.fromkeys(names))
    internal = [n for n in names if n in INTERNAL_TOPICS]
    if internal:
        return _error(ErrorCode.STREAMS_INVALID_TOPOLOGY, f"Use of Kafka internal topics {','.join(internal)} in "
                      "a Kafka Streams topology is prohibited.")
    invalid = []
    for name in names:
        try:
            validate_topic_name(name)
        except TopicError:
            invalid.append(name)
    if invalid:
        return _error(ErrorCode.STREAMS_INVALID_TOPOLOGY, f"Topic names {','.join(invalid)} are not valid topic "
                      "names.")
    denied = sorted(set(names) - authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names))
    if denied:
        return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The client is not authorized to describe topics: "
                      f"{', '.join(denied)}.")
    return None


def _create_internal_topics(ctx: RequestContext, result: StreamsHeartbeatResult,
                            statuses: list[dict[str, Any]]) -> None:
    """Create the missing internal topics the client may create; name the others in the status."""
    topics = result.topics_to_create
    if not topics:
        return
    allowed = set(topics) if cluster_authorized(ctx, AclOperation.CREATE) else \
        authorized_names(ctx, AclOperation.CREATE, ResourceType.TOPIC, topics)
    denied = sorted(set(topics) - allowed)
    if denied:
        detail = f"Unauthorized to CREATE on topics {','.join(denied)}."
        missing = next((s for s in statuses if s["status_code"] == StreamsStatus.MISSING_INTERNAL_TOPICS), None)
        if missing is not None:
            missing["status_detail"] = f"{missing['status_detail']} {detail}"
        else:
            statuses.append({"status_code": StreamsStatus.MISSING_INTERNAL_TOPICS, "status_detail": detail})
    ctx.broker.cluster.create_internal_topics([
        (t.name, t.partitions, t.replication_factor or -1, dict(t.configs))
        for name, t in sorted(topics.items()) if name in allowed])


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if req.topology is not None:
        refused = _topology_error(ctx, req.topology)
        if refused is not None:
            return refused
    request = request_from_fields(req, ctx.header.client_id or "", client_host(ctx.peer))
    result = await ctx.broker.groups.streams_group_heartbeat(request)
    if result.error != ErrorCode.NONE:
        return _error(result.error, result.message)
    statuses = [{"status_code": s.code, "status_detail": s.detail} for s in result.statuses]
    _create_internal_topics(ctx, result, statuses)
    tasks = result.tasks
    endpoints = None
    if result.partitions_by_endpoint is not None:
        endpoints = [{"user_endpoint": {"host": e.endpoint[0], "port": e.endpoint[1]},
                      "active_partitions": [{"topic": t, "partitions": p} for t, p in e.active],
                      "standby_partitions": [{"topic": t, "partitions": p} for t, p in e.standby]}
                     for e in result.partitions_by_endpoint]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms,
            "acceptable_recovery_lag_legacy": min(max(result.acceptable_recovery_lag, 0), INT32_MAX),
            "task_offset_interval_ms": result.task_offset_interval_ms,
            "acceptable_recovery_lag": result.acceptable_recovery_lag, "status": statuses,
            "active_tasks": None if tasks is None else task_ids(tasks.active),
            "standby_tasks": None if tasks is None else task_ids(tasks.standby),
            "warmup_tasks": None if tasks is None else task_ids(tasks.warmup),
            # No topology description plugin (group.streams.topology.description.plugin.class) is configured,
            # as on a Kafka broker by default: descriptions are never asked for.
            "topology_description_required": False,
            "endpoint_information_epoch": result.endpoint_information_epoch,
            "partitions_by_user_endpoint": endpoints}
