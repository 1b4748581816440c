"""AlterPartitionReassignments (KIP-455; to the controller in ZooKeeper mode): move a partition's replicas to
a new list (the new ones are added, catch up, then the old ones go), or cancel a move in progress (null
replicas). v1 (KIP-860) lets the client forbid a change of replication factor. On a single broker the only
replica list a partition can have is this broker's, so such a "reassignment" completes at once."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    def answer(error: ErrorCode, message: str | None = None, responses: list[Any] | None = None) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "responses": responses or []}

    if not cluster_authorized(ctx, AclOperation.ALTER):  # Kafka: ALTER on the cluster, the error everywhere
        error, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Request is not authorized."
        return answer(error, message, [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": error, "error_message": message}
            for p in t.partitions]} for t in req.topics])
    cluster = ctx.broker.cluster
    if cluster.not_controller():
        return answer(ErrorCode.NOT_CONTROLLER)
    allow_rf_change = ctx.header.api_version < 1 or req.allow_replication_factor_change
    targets: dict[tuple[str, int], list[int] | None] = {}
    refused: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
    for t in req.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            replicas = None if p.replicas is None else list(p.replicas)
            current = ctx.broker.topics.partition(*tp)
            if replicas is not None and not allow_rf_change and current is not None and \
                    len(replicas) != len(current.replicas):
                refused[tp] = (ErrorCode.INVALID_REPLICATION_FACTOR,
                               f"The replication factor is changed from {len(current.replicas)} to {len(replicas)}")
                continue
            targets[tp] = replicas
    outcome = await cluster.alter_reassignments(targets)
    if isinstance(outcome, ErrorCode):
        return answer(outcome)
    outcome.update(refused)
    responses = [{"name": t.name, "partitions": [
        {"partition_index": p.partition_index, "error_code": outcome[(t.name, p.partition_index)][0],
         "error_message": outcome[(t.name, p.partition_index)][1]} for p in t.partitions]} for t in req.topics]
    return answer(ErrorCode.NONE, None, responses)
