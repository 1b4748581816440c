"""UpdateMetadata (from the controller): the live brokers and the partitions' leaders, epochs, replicas
and ISRs, into this broker's metadata cache (broker.cluster.zk_cluster)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.control import control_error


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    error = control_error(ctx, req)
    if not error:
        error = ctx.broker.cluster.apply_update_metadata(req)
    return {"error_code": error}
