"""JoinGroup: answered when the group's rebalance completes (or at once with an error, or with
MEMBER_ID_REQUIRED for a first v4+ join)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode


def client_host(peer: str) -> str:
    """A member's host as Kafka reports it (InetAddress.toString): "/127.0.0.1"."""
    host = peer.rpartition(":")[0] if ":" in peer else peer
    return "/" + host

async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "generation_id": -1,
                "protocol_type": None, "protocol_name": None if version >= 7 else "", "leader": "",
                "skip_assignment": False, "member_id": req.member_id, "members": []}
    result = await ctx.broker.groups.join_group(
        group_id=req.group_id, member_id=req.member_id,
        group_instance_id=req.group_instance_id if version >= 5 else None,
        client_id=ctx.header.client_id or "", client_host=client_host(ctx.peer),
        # v0 has no rebalance timeout: the session timeout serves as both.
        rebalance_timeout_ms=req.rebalance_timeout_ms if version >= 1 else req.session_timeout_ms,
        session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in req.protocols],
        require_known_member_id=version >= 4, supports_skip_assignment=version >= 9)
    return {
        "throttle_time_ms": 0,
        "error_code": result.error,
        "generation_id": result.generation_id,
        "protocol_type": result.protocol_type,
        # Before v7 the protocol name is not nullable: "" when there is none.
        "protocol_name": result.protocol_name if version >= 7 else (result.protocol_name or ""),
        "leader": result.leader_id,
        "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        "members": [{"member_id": member_id, "group_instance_id": instance_id, "metadata": metadata}
                    for member_id, instance_id, metadata in result.members],
    }
