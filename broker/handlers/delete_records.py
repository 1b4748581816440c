"""DeleteRecords: move partitions' log start offset up (Kafka's Partition.deleteRecordsOnLeader)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.log.partition_log import OffsetOutOfRangeError
from broker.security.access import AclOperation, ResourceType, authorized_names
from protocol.header import ErrorCode

HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK: everything produced so far


def _delete(ctx: RequestContext, topic_name: str, index: int, offset: int) -> tuple[ErrorCode, int]:
    topics = ctx.broker.topics
    topic = topics.get(topic_name)
    if topic is not None and topic.is_internal:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, -1  # "Cannot delete records of internal topic"
    partition = topics.leader_partition(topic_name, index)
    if isinstance(partition, ErrorCode):
        return partition, -1
    log = partition.log
    if not log.config.delete_enabled:
        return ErrorCode.POLICY_VIOLATION, -1  # compacted only: "can not be deleted due to the configured policy"
    target = partition.high_watermark if offset == HIGH_WATERMARK else offset
    try:
        log.delete_records(target, now_ms=ctx.broker.now_ms())
    except OffsetOutOfRangeError:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    except OSError:
        return ErrorCode.KAFKA_STORAGE_ERROR, -1
    partition.producers.remove_before(log.log_start_offset)
    return ErrorCode.NONE, log.log_start_offset


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    deletable = authorized_names(ctx, AclOperation.DELETE, ResourceType.TOPIC, (t.name for t in req.topics))
    topics = []
    for t in req.topics:
        partitions = []
        for p in t.partitions:
            error, low = _delete(ctx, t.name, p.partition_index, p.offset) if t.name in deletable else \
                (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)
            partitions.append({"partition_index": p.partition_index, "low_watermark": low, "error_code": error})
        topics.append({"name": t.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
