"""OffsetDelete: remove a group's committed offsets of partitions it does not consume."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    groups = broker.groups
    await groups.loaded.wait()
    if not authorized(ctx, AclOperation.DELETE, ResourceType.GROUP, req.group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "throttle_time_ms": 0, "topics": []}
    not_here = groups.runtime.error_for(req.group_id)
    if not_here:
        return {"error_code": not_here, "throttle_time_ms": 0, "topics": []}
    readable = authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in req.topics))
    errors: dict[tuple[str, int], ErrorCode] = {}
    known: list[tuple[str, int]] = []
    for t in req.topics:
        topic = broker.topics.get(t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if t.name not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p.partition_index < len(topic.partitions):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                known.append(tp)
    group_error, partition_errors = groups.coordinator.delete_offsets(req.group_id, known, broker.now_ms())
    if group_error != ErrorCode.NONE:
        return {"error_code": group_error, "throttle_time_ms": 0, "topics": []}
    errors.update(partition_errors)
    groups.changed()
    await groups.durable(req.group_id)
    return {"error_code": ErrorCode.NONE, "throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index,
                                         "error_code": errors[(t.name, p.partition_index)]}
                                        for p in t.partitions]}
        for t in req.topics]}
