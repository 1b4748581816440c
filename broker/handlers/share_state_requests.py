"""What the five share-group state APIs (the share coordinator's: Initialize/Read/Write/DeleteShareGroupState,
ReadShareGroupStateSummary) have in common, as Kafka's KafkaApis and ShareCoordinatorService answer them:
CLUSTER_ACTION on the cluster (brokers send them to each other), else every partition fails; no group id, no
topics or a topic without partitions is an empty answer; each share partition is answered on its own, the
partitions of a request all at once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from coordinator.share_coordinator import Key, Outcome
from protocol.header import ErrorCode

Answer = Callable[[Outcome], dict[str, Any]]  # one partition's answer fields (besides partition, errors)


async def answer(ctx: RequestContext, req: Any, serve: Callable[[Key, Any], Awaitable[Outcome]],
                 fields: Answer) -> dict[str, Any]:
    """{"results": [{"topic_id", "partitions": [...]}]}: `serve(key, partition request)` per share partition,
    `fields(outcome)` for its answer."""
    if not req.group_id or not req.topics or any(not t.partitions for t in req.topics):
        return {"results": []}
    results: dict[tuple[int, int], Outcome] = {}
    if not cluster_authorized(ctx, AclOperation.CLUSTER_ACTION):
        denied = Outcome(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        results = {(i, j): denied for i, t in enumerate(req.topics) for j in range(len(t.partitions))}
    else:
        async def one(i: int, j: int, topic_id: Any, partition: Any) -> None:
            results[(i, j)] = await serve((req.group_id, topic_id, partition.partition), partition)

        async with trio.open_nursery() as nursery:
            for i, t in enumerate(req.topics):
                for j, p in enumerate(t.partitions):
                    nursery.start_soon(one, i, j, t.topic_id, p)
    return {"results": [{"topic_id": t.topic_id, "partitions": [
        {"partition": p.partition, "error_code": results[(i, j)].error, "error_message": results[(i, j)].message,
         **fields(results[(i, j)])} for j, p in enumerate(t.partitions)]} for i, t in enumerate(req.topics)]}
