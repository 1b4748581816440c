"""ListGroups: every group, filtered by state (v4+) and type (v5+; all groups here are "classic")."""

from __future__ import annotations

from typing import Any

from broker.dispatch import RequestContext
from protocol.header import ErrorCode

CLASSIC = "classic"


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    groups = ctx.state.groups
    if not groups.loaded.is_set():
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "groups": []}
    types = {t.lower() for t in req.types_filter} if version >= 5 else set()
    if types and CLASSIC not in types:
        listed = []
    else:
        listed = groups.coordinator.list_groups(req.states_filter if version >= 4 else ())
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": [
        {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state, "group_type": CLASSIC}
        for g in listed]}
