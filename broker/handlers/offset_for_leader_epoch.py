"""OffsetForLeaderEpoch: where a leader epoch ended in the leader's log (Kafka's
LeaderEpochFileCache.endOffsetFor), asked by consumers after a leader change (KIP-320) and by followers
before they truncate (KIP-101/279; replica id set, v3+). A single broker has led every partition since
epoch 0, so epoch 0 ends at the log end offset and any later epoch is unknown."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized_names
from protocol.header import ErrorCode

UNDEFINED = -1


def _end_offset(ctx: RequestContext, topic_name: str, index: int, current: int, requested: int) -> dict[str, Any]:
    out = {"partition": index, "error_code": ErrorCode.NONE, "leader_epoch": UNDEFINED, "end_offset": UNDEFINED}
    topics = ctx.broker.topics
    partition = topics.leader_partition(topic_name, index)
    error = partition if isinstance(partition, ErrorCode) else topics.check_leader_epoch(partition, current)
    if error:
        out["error_code"] = error
        return out
    epoch, end = partition.log.end_offset_for_epoch(requested)
    out.update(leader_epoch=epoch, end_offset=end)
    return out


def _denied(index: int) -> dict[str, Any]:
    return {"partition": index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "leader_epoch": UNDEFINED,
            "end_offset": UNDEFINED}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    describable = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.topic for t in req.topics))
    return {"throttle_time_ms": 0, "topics": [
        {"topic": t.topic, "partitions": [
            _end_offset(ctx, t.topic, p.partition, p.current_leader_epoch, p.leader_epoch)
            if t.topic in describable else _denied(p.partition) for p in t.partitions]}
        for t in req.topics]}
