"""ListPartitionReassignments (to the controller in ZooKeeper mode): the reassignments in progress, each with
its replicas and those being added and removed. A single broker never has one."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):  # Kafka: DESCRIBE on the cluster
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Request is not authorized.", "topics": [
                    {"name": t.name, "partitions": [{"partition_index": i, "replicas": [], "adding_replicas": [],
                                                     "removing_replicas": []} for i in t.partition_indexes]}
                    for t in req.topics or []]}
    cluster = ctx.broker.cluster
    if cluster.not_controller():
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER, "error_message": None, "topics": []}
    wanted = None if req.topics is None else {(t.name, p) for t in req.topics for p in t.partition_indexes}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), (replicas, adding, removing) in sorted(cluster.reassignments().items()):
        if wanted is None or (topic, index) in wanted:
            by_topic.setdefault(topic, []).append({"partition_index": index, "replicas": list(replicas),
                                                   "adding_replicas": list(adding),
                                                   "removing_replicas": list(removing)})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
