"""DeleteShareGroupOffsets (KIP-932): forget an empty share group's state for whole topics, at the share
coordinator (they start again from share.auto.offset.reset)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    groups = broker.groups
    await groups.loaded.wait()

    def answer(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "responses": []}

    if not authorized(ctx, AclOperation.DELETE, ResourceType.GROUP, req.group_id):
        return answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    elsewhere = groups.runtime.error_for(req.group_id)
    if elsewhere:
        return answer(elsewhere)
    group = groups.share.groups.get(req.group_id)
    if group is None:
        return answer(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a share group.")
    if group.members:
        return answer(ErrorCode.NON_EMPTY_GROUP, f"Share group {req.group_id} is not empty.")
    readable = set(authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC, (t.topic_name for t in req.topics)))
    errors = {}
    deleted = []
    for t in req.topics:
        topic = broker.topics.get(t.topic_name)
        if t.topic_name not in readable:
            errors[t.topic_name] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif topic is None:
            errors[t.topic_name] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            deleted.append(topic.topic_id)
    error = await groups.delete_share_state(req.group_id, deleted) if deleted else ErrorCode.NONE
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "responses": [
        {"topic_name": t.topic_name, "topic_id": topic.topic_id if (topic := broker.topics.get(t.topic_name)) else None,
         "error_code": errors.get(t.topic_name, error)} for t in req.topics]}
