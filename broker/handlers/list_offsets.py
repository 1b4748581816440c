"""ListOffsets: earliest, latest, max timestamp, and the first offset at or after a timestamp."""

from __future__ import annotations

from typing import Any

from broker.dispatch import RequestContext
from protocol.header import ErrorCode

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
LEADER_EPOCH = 0  # a single broker that has always been the leader


def _lookup(log: Any, ts: int) -> tuple[int, int, int]:
    """(timestamp, offset, leader epoch) as Kafka's UnifiedLog.fetchOffsetByTimestamp answers."""
    if ts == LATEST:
        return -1, log.log_end_offset, LEADER_EPOCH
    if ts in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset, LEADER_EPOCH
    if ts == LATEST_TIERED:
        return -1, -1, -1  # no tiered storage: nothing has been tiered
    if ts == MAX_TIMESTAMP:
        offset, timestamp = log.max_timestamp()
        return (timestamp, offset, LEADER_EPOCH) if offset >= 0 else (-1, -1, -1)
    found = log.offset_for_timestamp(ts)
    if found is None:
        return -1, -1, -1
    offset, timestamp = found
    return timestamp, offset, LEADER_EPOCH


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = ctx.state.topics
    out = []
    for t in req.topics:
        topic = topics.get(t.name)
        partitions = []
        for p in t.partitions:
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                partitions.append({"partition_index": p.partition_index,
                                   "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   "timestamp": -1, "offset": -1, "leader_epoch": -1})
                continue
            if p.current_leader_epoch > LEADER_EPOCH:
                partitions.append({"partition_index": p.partition_index,
                                   "error_code": ErrorCode.UNKNOWN_LEADER_EPOCH,
                                   "timestamp": -1, "offset": -1, "leader_epoch": -1})
                continue
            timestamp, offset, epoch = _lookup(topic.partitions[p.partition_index].log, p.timestamp)
            partitions.append({"partition_index": p.partition_index, "error_code": ErrorCode.NONE,
                               "timestamp": timestamp, "offset": offset, "leader_epoch": epoch})
        out.append({"name": t.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": out}
