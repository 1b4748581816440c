"""ListOffsets: earliest, latest, max timestamp, and the first offset at or after a timestamp.

Kafka's Partition.fetchOffsetForTimestamp and ReplicaManager.fetchOffset: a consumer's request (replica
id -1) is bounded by its last fetchable offset, the high watermark for read_uncommitted and the last
stable offset for read_committed (isolation level 1, v2+). LATEST answers that bound; a timestamp or
MAX_TIMESTAMP lookup that lands at or beyond it answers "no offset" (-1, -1) without an error.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized_names
from protocol.header import ErrorCode

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
LEADER_EPOCH = 0  # a single broker that has always been the leader
CONSUMER_REPLICA_ID = -1
READ_COMMITTED = 1
NOT_FOUND = (-1, -1, -1)


def _lookup(log: Any, ts: int, last_fetchable: int) -> tuple[int, int, int]:
    """(timestamp, offset, leader epoch) as Kafka's UnifiedLog.fetchOffsetByTimestamp answers."""
    if ts == LATEST:
        return -1, last_fetchable, LEADER_EPOCH
    if ts in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset, LEADER_EPOCH
    if ts == LATEST_TIERED:
        return -1, -1, -1  # no tiered storage: nothing has been tiered
    if ts == MAX_TIMESTAMP:
        offset, timestamp = log.max_timestamp()
    else:
        found = log.offset_for_timestamp(ts)
        if found is None:
            return NOT_FOUND
        offset, timestamp = found
    if offset < 0 or offset >= last_fetchable:
        return NOT_FOUND
    return timestamp, offset, LEADER_EPOCH


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = ctx.broker.topics
    read_committed = (ctx.header.api_version >= 2 and req.replica_id == CONSUMER_REPLICA_ID
                      and req.isolation_level == READ_COMMITTED)
    describable = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in req.topics))
    out = []
    for t in req.topics:
        topic = topics.get(t.name)
        partitions = []
        for p in t.partitions:
            if t.name not in describable:
                partitions.append({"partition_index": p.partition_index,
                                   "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                   "timestamp": -1, "offset": -1, "leader_epoch": -1})
                continue
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
            partition = topic.partitions[p.partition_index]
            log = partition.log
            # The high watermark is the log end offset on a single broker.
            last_fetchable = (partition.producers.last_stable_offset(log.log_end_offset, log.log_start_offset)
                              if read_committed else log.log_end_offset)
            timestamp, offset, epoch = _lookup(log, p.timestamp, last_fetchable)
            partitions.append({"partition_index": p.partition_index, "error_code": ErrorCode.NONE,
                               "timestamp": timestamp, "offset": offset, "leader_epoch": epoch})
        out.append({"name": t.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": out}
