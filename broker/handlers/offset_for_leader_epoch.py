"""OffsetForLeaderEpoch: this broker has led every partition since epoch 0, so epoch 0 ends at the log end
offset and any later epoch is unknown (Kafka's LeaderEpochFileCache.endOffsetFor)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized_names
from protocol.header import ErrorCode

LEADER_EPOCH = 0
UNDEFINED = -1


def _end_offset(ctx: RequestContext, topic_name: str, index: int, current: int, requested: int) -> dict[str, Any]:
    out = {"partition": index, "error_code": ErrorCode.NONE, "leader_epoch": UNDEFINED, "end_offset": UNDEFINED}
    partition = ctx.broker.topics.partition(topic_name, index)
    if partition is None:
        out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    elif current > LEADER_EPOCH:
        out["error_code"] = ErrorCode.UNKNOWN_LEADER_EPOCH  # the client knows a newer leader than us
    elif requested == LEADER_EPOCH:
        out.update(leader_epoch=LEADER_EPOCH, end_offset=partition.log.log_end_offset)
    # Any other epoch: later than ours, or undefined: (-1, -1).
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
