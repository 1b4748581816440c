"""ControlledShutdown (to the controller, from a broker about to stop): its leaderships move to other
in-sync replicas and it leaves the ISRs; the answer lists the partitions it still leads."""

from __future__ import annotations

from typing import Any

from broker.cluster.controller_events import ControlledShutdown
from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not cluster_authorized(ctx, AclOperation.CLUSTER_ACTION):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "remaining_partitions": []}
    cluster = ctx.broker.zk_cluster
    controller = cluster.controller if cluster is not None else None
    if controller is None or not controller.active:
        return {"error_code": ErrorCode.NOT_CONTROLLER, "remaining_partitions": []}
    result = await controller.call(ControlledShutdown(req.broker_id, req.broker_epoch))
    if isinstance(result, Exception):
        return {"error_code": ErrorCode.NOT_CONTROLLER, "remaining_partitions": []}
    error, remaining = result
    return {"error_code": error,
            "remaining_partitions": [{"topic_name": t, "partition_index": p} for t, p in remaining]}
