"""WriteTxnMarkers: the transaction coordinator's COMMIT/ABORT control batches for each partition of a
transaction (the partition side is broker.services.markers)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
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
