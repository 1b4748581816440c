"""ListGroups: every group, filtered by state (v4+) and type (v5+: "classic", "consumer" (KIP-848), "share"
(KIP-932) or "streams" (KIP-1071))."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, cluster_authorized
from protocol.header import ErrorCode

CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"
STREAMS = "streams"


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    groups = ctx.broker.groups
    if not groups.loaded.is_set():
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "groups": []}
    types = {t.lower() for t in req.types_filter} if version >= 5 else set()
    states = req.states_filter if version >= 4 else ()
    listed: list[tuple[Any, str]] = []
    if not types or CLASSIC in types:
        # A consumer or streams group's committed offsets are held like a simple group's: it is listed as such.
        listed += [(g, CLASSIC) for g in groups.coordinator.list_groups(states)
                   if g.group_id not in groups.consumer.groups and g.group_id not in groups.streams.groups]
    if not types or CONSUMER in types:
        wanted = {s.lower() for s in states}
        listed += [(_Listed(gid, CONSUMER, g.state.value), CONSUMER) for gid, g in groups.consumer.groups.items()
                   if not wanted or g.state.value.lower() in wanted]
    if not types or SHARE in types:
        wanted = {s.lower() for s in states}
        listed += [(_Listed(gid, SHARE, g.state.value), SHARE) for gid, g in groups.share.groups.items()
                   if not wanted or g.state.value.lower() in wanted]
    if not types or STREAMS in types:
        wanted = {s.lower() for s in states}
        listed += [(_Listed(gid, STREAMS, g.state.value), STREAMS) for gid, g in groups.streams.groups.items()
                   if not wanted or g.state.value.lower() in wanted]
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):
        # Without DESCRIBE on the cluster, the groups the client may describe (KafkaApis.handleListGroupsRequest).
        listed = [(g, t) for g, t in listed if authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": [
        {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state, "group_type": t}
        for g, t in listed]}


@dataclass(frozen=True, slots=True)
class _Listed:
    group_id: str
    protocol_type: str
    state: str
