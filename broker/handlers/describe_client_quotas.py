"""DescribeClientQuotas (KIP-546): the quotas of the entities a filter matches (broker/services/client_quotas.py).
DESCRIBE_CONFIGS on the cluster, as Kafka authorizes it."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not cluster_authorized(ctx, AclOperation.DESCRIBE_CONFIGS):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None,
                "entries": None}
    error, message, found = ctx.broker.client_quotas.describe(
        [(c.entity_type, c.match_type, c.match) for c in req.components], req.strict)
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "entries": None if found is None
            else [{"entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
                   "values": [{"key": key, "value": value} for key, value in sorted(quotas.items())]}
                  for entity, quotas in found]}
