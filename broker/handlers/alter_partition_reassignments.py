"""AlterPartitionReassignments on one broker: the only replica set a partition can have is this broker, so
such a "reassignment" completes at once. v1 (KIP-860) lets the client forbid a change of replication
factor."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from protocol.header import ErrorCode


def _alter_one(ctx: RequestContext, name: str, index: int, replicas: list[int] | None,
               allow_rf_change: bool) -> tuple[ErrorCode, str | None]:
    topic = ctx.broker.topics.get(name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No reassignment in progress for this partition."
    if not allow_rf_change and len(replicas) != 1:
        return ErrorCode.INVALID_REPLICATION_FACTOR, (
            f"The replication factor is changed from 1 to {len(replicas)}")
    if replicas != [ctx.broker.node_id]:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
            f"The manual partition assignment includes broker(s) that are not registered or a replication "
            f"factor other than 1: {replicas}")
    return ErrorCode.NONE, None


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    allow_rf_change = ctx.header.api_version < 1 or req.allow_replication_factor_change
    responses = []
    for t in req.topics:
        partitions = []
        for p in t.partitions:
            error, message = _alter_one(ctx, t.name, p.partition_index,
                                        None if p.replicas is None else list(p.replicas), allow_rf_change)
            partitions.append({"partition_index": p.partition_index, "error_code": error, "error_message": message})
        responses.append({"name": t.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "responses": responses}
