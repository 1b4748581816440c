"""ListPartitionReassignments: on one broker no reassignment is ever in progress."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):  # Kafka: DESCRIBE on the cluster
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Request is not authorized.", "topics": [
                    {"name": t.name, "partitions": [{"partition_index": i, "replicas": [], "adding_replicas": [],
                                                     "removing_replicas": []} for i in t.partition_indexes]}
                    for t in req.topics or []]}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "topics": []}
