"""ShareGroupDescribe (KIP-932): state, epochs, assignor and members of share groups."""

from __future__ import annotations

from typing import Any

from broker.handlers.consumer_group_describe import AUTHORIZED_OPERATIONS_OMITTED, _assignment
from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_operations
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    groups = ctx.broker.groups
    await groups.loaded.wait()
    out = []
    for group_id in req.group_ids:
        base = {"group_id": group_id, "group_state": "", "assignor_name": "", "members": []}
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            out.append({**base, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED})
            continue
        group = groups.share.groups.get(group_id)
        if group is None:
            other = groups.other_group_type(group_id)
            message = f"Group {group_id} is not a share group." if other not in (None, "simple") \
                else f"Group {group_id} not found."
            out.append({**base, "error_code": ErrorCode.GROUP_ID_NOT_FOUND, "error_message": message})
            continue
        out.append({
            "error_code": ErrorCode.NONE, "group_id": group_id, "group_state": group.state.value,
            "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch, "assignor_name": "simple",
            "members": [{"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "subscribed_topic_names": list(m.subscribed_topic_names),
                         "assignment": _assignment(ctx, m.assigned_partitions)} for m in group.members.values()],
            "authorized_operations": authorized_operations(ctx, ResourceType.GROUP, group_id)
            if req.include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED})
    return {"throttle_time_ms": 0, "groups": out}
