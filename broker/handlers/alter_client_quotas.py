"""AlterClientQuotas (KIP-546): quotas of users, client ids and IPs set or removed (broker/services/
client_quotas.py), each entry on its own. ALTER_CONFIGS on the cluster, as Kafka authorizes it."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from broker.services.client_quotas import AlterEntry
from protocol.header import ErrorCode


def _entity(components: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    return [{"entity_type": kind, "entity_name": name} for kind, name in components]


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    entries = [AlterEntry([(c.entity_type, c.entity_name) for c in e.entity],
                          [(op.key, op.value, op.remove) for op in e.ops]) for e in req.entries]
    if not cluster_authorized(ctx, AclOperation.ALTER_CONFIGS):
        return {"throttle_time_ms": 0, "entries": [
            {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None,
             "entity": _entity(e.entity)} for e in entries]}
    outcomes = await ctx.broker.client_quotas.alter(entries, req.validate_only)
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": error, "error_message": message, "entity": _entity(entity)}
        for error, message, entity in outcomes]}
