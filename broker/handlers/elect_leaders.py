"""ElectLeaders: on one broker every partition already has its only replica, the preferred one, as leader:
ELECTION_NOT_NEEDED for each (Kafka's answer for a stable cluster)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = ctx.broker.topics
    if req.topic_partitions is None:  # every partition
        wanted = [(t.name, list(range(len(t.partitions)))) for t in topics if not t.is_internal]
    else:
        wanted = [(t.topic, list(t.partitions)) for t in req.topic_partitions]
    results = []
    for name, indexes in wanted:
        topic = topics.get(name)
        partitions = []
        for index in indexes:
            if topic is None or not 0 <= index < len(topic.partitions):
                partitions.append({"partition_id": index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   "error_message": "The partition does not exist."})
            else:
                partitions.append({"partition_id": index, "error_code": ErrorCode.ELECTION_NOT_NEEDED,
                                   "error_message": "Leader election not needed for topic partition."})
        results.append({"topic": name, "partition_result": partitions})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "replica_election_results": results}
