"""ConsumerGroupHeartbeat (KIP-848, the 4.x profiles): join, heartbeat and leave of a consumer group whose
assignment the coordinator computes; the answer carries the member's epoch and, when it changed, its
partitions."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.join_group import client_host
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from protocol.header import ErrorCode


def _error(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if ctx.broker.features.level("group.version") < 1:
        # The consumer group protocol is off (UpdateFeatures took group.version to 0), as Kafka answers.
        return _error(ErrorCode.UNSUPPORTED_VERSION)
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    names = req.subscribed_topic_names
    if names:
        # KafkaApis: every subscribed topic must be describable.
        allowed = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
        denied = sorted(set(names) - set(allowed))
        if denied:
            return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                          f"The client is not authorized to describe topics: {', '.join(denied)}.")
    result = await ctx.broker.groups.consumer_group_heartbeat(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
        instance_id=req.instance_id, rack_id=req.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=None if names is None else list(names),
        subscribed_topic_regex=req.subscribed_topic_regex if ctx.header.api_version >= 1 else None,
        server_assignor=req.server_assignor,
        topic_partitions=None if req.topic_partitions is None else
        [{"topic_id": t.topic_id, "partitions": list(t.partitions)} for t in req.topic_partitions],
        client_id=ctx.header.client_id or "", client_host=client_host(ctx.peer),
        api_version=ctx.header.api_version)
    if result.error != ErrorCode.NONE:
        return _error(result.error, result.message)
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [{"topic_id": topic_id, "partitions": sorted(parts)}
                                           for topic_id, parts in result.assignment.items()]}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms, "assignment": assignment}
