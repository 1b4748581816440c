"""DescribeCluster (KIP-700): this broker, as Metadata describes it, and the cluster id."""

from __future__ import annotations

from typing import Any

from broker.access import AclOperation, ResourceType, authorized_operations, cluster_authorized
from broker.acls import CLUSTER_NAME
from broker.dispatch import RequestContext
from protocol.header import ErrorCode

BROKERS = 1
NO_OPERATIONS = -(2**31)  # not requested


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    version = ctx.header.api_version
    endpoint_type = req.endpoint_type if version >= 1 else BROKERS
    body = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "endpoint_type": endpoint_type, "cluster_id": state.cluster_id, "controller_id": state.node_id,
            "brokers": [], "cluster_authorized_operations": NO_OPERATIONS}
    if endpoint_type != BROKERS:
        # A broker answers for brokers only; controllers are asked directly (KIP-919).
        body.update(error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                    error_message=f"The broker does not support endpoint type {endpoint_type}")
        return body
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):
        body.update(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.")
        return body
    body["brokers"] = [{"broker_id": state.node_id, "host": ctx.endpoint.host, "port": ctx.endpoint.port,
                        "rack": None, "is_fenced": False}]
    if req.include_cluster_authorized_operations:
        body["cluster_authorized_operations"] = authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
    return body
