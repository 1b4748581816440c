"""DescribeCluster (KIP-700): the live brokers, as Metadata describes them, the controller and the cluster id."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized_operations, cluster_authorized
from broker.security.acls import CLUSTER_NAME
from protocol.header import ErrorCode

BROKERS = 1
NO_OPERATIONS = -(2**31)  # not requested


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    version = ctx.header.api_version
    endpoint_type = req.endpoint_type if version >= 1 else BROKERS
    body = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "endpoint_type": endpoint_type, "cluster_id": broker.cluster_id,
            "controller_id": broker.cluster.controller_id,
            "brokers": [], "cluster_authorized_operations": NO_OPERATIONS}
    if endpoint_type != BROKERS:
        # A broker answers for brokers only; controllers are asked directly (KIP-919).
        body.update(error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                    error_message=f"The broker does not support endpoint type {endpoint_type}")
        return body
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):
        body.update(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.")
        return body
    body["brokers"] = [{"broker_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack, "is_fenced": False}
                       for n in broker.cluster.nodes(ctx.endpoint)]
    if req.include_cluster_authorized_operations:
        body["cluster_authorized_operations"] = authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
    return body
