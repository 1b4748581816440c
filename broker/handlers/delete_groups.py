"""DeleteGroups: empty groups go with their offsets (tombstones); others get NON_EMPTY_GROUP."""

from __future__ import annotations

from typing import Any

from broker.dispatch import RequestContext


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    groups = ctx.state.groups
    await groups.loaded.wait()
    errors = groups.coordinator.delete_groups(req.groups_names, ctx.state.now_ms())
    groups.changed()
    for group_id in errors:
        await groups.durable(group_id)
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": errors[g]} for g in req.groups_names]}
