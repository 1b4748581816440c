"""DeleteGroups: empty groups go with their offsets (tombstones); others get NON_EMPTY_GROUP."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized_names
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    groups = ctx.broker.groups
    await groups.loaded.wait()
    names = [g for g in req.groups_names if g is not None]  # a null id is INVALID_GROUP_ID, not a resource
    deletable = authorized_names(ctx, AclOperation.DELETE, ResourceType.GROUP, names)
    elsewhere = {g: e for g in deletable if (e := groups.error_for(g))}  # coordinated by another broker
    errors = groups.coordinator.delete_groups([g for g in req.groups_names if g is None or
                                               (g in deletable and g not in elsewhere)], ctx.broker.now_ms())
    errors.update(elsewhere)
    groups.changed()
    for group_id in errors:
        if group_id not in elsewhere:
            await groups.durable(group_id)
    errors.update({g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in names if g not in deletable})
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": errors[g]} for g in req.groups_names]}
