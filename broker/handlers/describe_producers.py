"""DescribeProducers (KIP-664): the active producers of each requested partition, from its producer
state (Kafka's KafkaApis.handleDescribeProducersRequest and UnifiedLog.activeProducers)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized_names
from protocol.header import ErrorCode

UNKNOWN_TOPIC_OR_PARTITION_MESSAGE = "This server does not host this topic-partition."


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = ctx.broker.topics
    readable = authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in req.topics))
    out = []
    for t in req.topics:
        partitions = []
        for index in t.partition_indexes:
            if t.name not in readable:
                partitions.append({"partition_index": index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                   "error_message": None, "active_producers": []})
                continue
            partition = topics.leader_partition(t.name, index)
            if isinstance(partition, ErrorCode):
                message = UNKNOWN_TOPIC_OR_PARTITION_MESSAGE if partition == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION \
                    else None
                partitions.append({"partition_index": index, "error_code": partition,
                                   "error_message": message, "active_producers": []})
                continue
            partitions.append({
                "partition_index": index, "error_code": ErrorCode.NONE, "error_message": None,
                "active_producers": [
                    {"producer_id": e.producer_id, "producer_epoch": e.epoch, "last_sequence": e.last_seq,
                     "last_timestamp": e.last_timestamp, "coordinator_epoch": e.coordinator_epoch,
                     "current_txn_start_offset": -1 if e.current_txn_first_offset is None
                     else e.current_txn_first_offset}
                    for e in partition.producers.producers.values()
                ],
            })
        out.append({"name": t.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": out}
