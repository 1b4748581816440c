"""WriteTxnMarkers: the transaction coordinator's COMMIT/ABORT control batches for each partition of a
transaction (the partition side is broker.services.marker_writer)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    # Kafka: ALTER or CLUSTER_ACTION on the cluster (the brokers' own request), else every partition fails.
    if not (cluster_authorized(ctx, AclOperation.ALTER) or cluster_authorized(ctx, AclOperation.CLUSTER_ACTION)):
        return {"markers": [{"producer_id": m.producer_id, "topics": [
            {"name": t.name, "partitions": [{"partition_index": i, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
                                            for i in t.partition_indexes]} for t in m.topics]} for m in req.markers]}
    out = []
    for m in req.markers:
        topics = {t.name: list(t.partition_indexes) for t in m.topics}
        results = await ctx.broker.markers.write([(m.producer_id, m.producer_epoch, bool(m.transaction_result),
                                                   m.coordinator_epoch, topics)])
        out.append({"producer_id": m.producer_id, "topics": [
            {"name": name, "partitions": [{"partition_index": i, "error_code": results[(name, i)]}
                                          for i in indexes]}
            for name, indexes in topics.items()]})
    return {"markers": out}
