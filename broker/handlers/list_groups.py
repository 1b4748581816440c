"""ListGroups: every group, filtered by state (v4+) and type (v5+; all groups here are "classic")."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, cluster_authorized
from protocol.header import ErrorCode

CLASSIC = "classic"


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    groups = ctx.broker.groups
    if not groups.loaded.is_set():
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "groups": []}
    types = {t.lower() for t in req.types_filter} if version >= 5 else set()
    if types and CLASSIC not in types:
        listed = []
    else:
        listed = groups.coordinator.list_groups(req.states_filter if version >= 4 else ())
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):
        # Without DESCRIBE on the cluster, the groups the client may describe (KafkaApis.handleListGroupsRequest).
        listed = [g for g in listed if authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": [
        {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state, "group_type": CLASSIC}
        for g in listed]}
