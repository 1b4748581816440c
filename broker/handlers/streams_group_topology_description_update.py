"""StreamsGroupTopologyDescriptionUpdate (KIP-1331, the 4.4 profile): a member pushes its application's full
topology description for the broker's topology description plugin to keep. Kafka keeps descriptions only when
`group.streams.topology.description.plugin.class` names a plugin, and none is configured by default; minibroker
has no plugins, and answers as such a broker: UNSUPPORTED_VERSION (its heartbeats never ask for a push)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode

NO_PLUGIN = "The broker has no streams group topology description plugin configured."


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION, "error_message": NO_PLUGIN}
