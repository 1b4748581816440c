"""Heartbeat: keeps a member's session; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    groups = ctx.broker.groups
    not_here = groups.runtime.error_for(req.group_id)  # NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
    if not_here:
        return {"throttle_time_ms": 0, "error_code": not_here}
    error = groups.coordinator.heartbeat(
        group_id=req.group_id, generation_id=req.generation_id, member_id=req.member_id,
        group_instance_id=req.group_instance_id if ctx.header.api_version >= 3 else None,
        now_ms=ctx.broker.now_ms())
    groups.changed()
    return {"throttle_time_ms": 0, "error_code": error}
