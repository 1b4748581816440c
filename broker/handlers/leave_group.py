"""LeaveGroup: one member (v0-2) or a batch of members, dynamic or static by instance id (v3+)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "members": []}
    leaving = [(m.member_id, m.group_instance_id) for m in req.members] if version >= 3 else \
        [(req.member_id, None)]
    error, member_errors = await ctx.broker.groups.leave_group(req.group_id, leaving)
    if version < 3:
        # One member: its error is the answer (LeaveGroupResponse's getError).
        first = next((e for e in member_errors if e != ErrorCode.NONE), ErrorCode.NONE)
        return {"throttle_time_ms": 0, "error_code": error if error != ErrorCode.NONE else first}
    return {"throttle_time_ms": 0, "error_code": error,
            "members": [{"member_id": member_id, "group_instance_id": instance_id, "error_code": e}
                        for (member_id, instance_id), e in zip(leaving, member_errors, strict=False)]}
