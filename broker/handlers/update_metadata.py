"""UpdateMetadata (from the controller): the live brokers and the partitions' leaders, epochs, replicas
and ISRs, into this broker's metadata cache (broker.cluster.zk_cluster)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.control import control_error, zookeeper_mode
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    error = control_error(ctx, req)
    if not error:
        cluster, _ = zookeeper_mode(ctx)
        await cluster.admin.ensure_topic_configs(t.topic_name for t in req.topic_states)
        if control_error(ctx, req):  # a newer controller spoke meanwhile
            return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH}
        error = cluster.apply_update_metadata(req)
    return {"error_code": error}
