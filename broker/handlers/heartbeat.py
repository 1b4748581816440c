"""Heartbeat: keeps a member's session; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    # NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, or the member's group's answer.
    error = ctx.broker.groups.heartbeat(
        group_id=req.group_id, generation_id=req.generation_id, member_id=req.member_id,
        group_instance_id=req.group_instance_id if ctx.header.api_version >= 3 else None)
    return {"throttle_time_ms": 0, "error_code": error}
