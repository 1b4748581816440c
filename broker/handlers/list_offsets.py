"""ListOffsets: earliest, latest, max timestamp, and the first offset at or after a timestamp.

Kafka's Partition.fetchOffsetForTimestamp and ReplicaManager.fetchOffset: a consumer's request (replica
id -1) is bounded by its last fetchable offset, the high watermark for read_uncommitted and the last
stable offset for read_committed (isolation level 1, v2+). LATEST answers that bound; a timestamp or
MAX_TIMESTAMP lookup that lands at or beyond it answers "no offset" (-1, -1) without an error.

v0 (3.x profiles) answers Kafka's legacy lookup instead: up to max_num_offsets segment base offsets
(newest first) of the segments last modified before the timestamp (UnifiedLog.legacyFetchOffsetsBefore).
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
EARLIEST_PENDING_UPLOAD = -6
CONSUMER_REPLICA_ID = -1
READ_COMMITTED = 1
NOT_FOUND = (-1, -1, -1)
# The special (negative) timestamps and the request version each needs (ReplicaManager's
# timestampMinSupportedVersion; v0 takes -1 and -2 as well): any other negative timestamp, or one sent in an
# older version, gets UNSUPPORTED_VERSION.
SPECIAL_SINCE = {EARLIEST: 0, LATEST: 0, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                 EARLIEST_PENDING_UPLOAD: 11}


def _error(index: int, error: ErrorCode) -> dict[str, Any]:
    return {"partition_index": index, "error_code": error, "timestamp": -1, "offset": -1, "leader_epoch": -1}


def _lookup(log: Any, ts: int, last_fetchable: int) -> tuple[int, int, int]:
    """(timestamp, offset, leader epoch) as Kafka's UnifiedLog.fetchOffsetByTimestamp answers."""
    if ts == LATEST:
        return -1, last_fetchable, log.epoch_for_offset(last_fetchable - 1) if last_fetchable > 0 \
            else log.leader_epoch
    if ts in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset, log.epoch_for_offset(log.log_start_offset)
    if ts in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return NOT_FOUND  # no tiered storage: nothing tiered, nothing waiting to be uploaded (KIP-1023)
    if ts == MAX_TIMESTAMP:
        offset, timestamp = log.max_timestamp()
    else:
        found = log.offset_for_timestamp(ts)
        if found is None:
            return NOT_FOUND
        offset, timestamp = found
    if offset < 0 or offset >= last_fetchable:
        return NOT_FOUND
    return timestamp, offset, log.epoch_for_offset(offset)


def _legacy(ctx: RequestContext, partition: Any, p: Any, replica_id: int) -> dict[str, Any]:
    """ListOffsets v0 (KafkaApis.handleListOffsetRequestV0): only LATEST and EARLIEST of the special
    timestamps; a consumer never gets an offset above the high watermark."""
    answer = {"partition_index": p.partition_index, "error_code": ErrorCode.NONE, "old_style_offsets": []}
    if p.timestamp < EARLIEST:
        answer["error_code"] = ErrorCode.UNSUPPORTED_VERSION
        return answer
    offsets = partition.log.legacy_offsets_before(p.timestamp, p.max_num_offsets, ctx.broker.now_ms())
    hw = partition.high_watermark
    if replica_id == CONSUMER_REPLICA_ID and any(o > hw for o in offsets):
        offsets = [hw] + [o for o in offsets if o <= hw]
    answer["old_style_offsets"] = offsets
    return answer


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = ctx.broker.topics
    version = ctx.header.api_version
    read_committed = (version >= 2 and req.replica_id == CONSUMER_REPLICA_ID
                      and req.isolation_level == READ_COMMITTED)
    describable = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in req.topics))
    asked = [(t.name, p.partition_index) for t in req.topics for p in t.partitions]
    # v1+ refuses a partition asked twice (v0, Kafka's legacy path, does not check).
    duplicates = {tp for tp in asked if asked.count(tp) > 1} if version >= 1 and len(asked) != len(set(asked)) \
        else set()
    # Kafka 4 answers a partition asked twice once (its answers are keyed by partition); 3.x once per ask.
    once = ctx.broker.versions.since("4.0")
    out = []
    for t in req.topics:
        partitions = []
        answered: set[int] = set()
        for p in t.partitions:
            if t.name not in describable:
                partitions.append(_error(p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            if (t.name, p.partition_index) in duplicates:
                if not (once and p.partition_index in answered):
                    partitions.append(_error(p.partition_index, ErrorCode.INVALID_REQUEST))
                answered.add(p.partition_index)
                continue
            if p.timestamp < 0 and version < SPECIAL_SINCE.get(p.timestamp, version + 1):
                partitions.append(_error(p.partition_index, ErrorCode.UNSUPPORTED_VERSION))
                continue
            partition = topics.leader_partition(t.name, p.partition_index)
            error = partition if isinstance(partition, ErrorCode) else \
                topics.check_leader_epoch(partition, p.current_leader_epoch)
            if error:
                partitions.append({"partition_index": p.partition_index, "error_code": error,
                                   "timestamp": -1, "offset": -1, "leader_epoch": -1})
                continue
            log = partition.log
            if ctx.header.api_version == 0:
                partitions.append(_legacy(ctx, partition, p, req.replica_id))
                continue
            hw = partition.high_watermark
            last_fetchable = (partition.producers.last_stable_offset(hw, log.log_start_offset)
                              if read_committed else hw)
            timestamp, offset, epoch = _lookup(log, p.timestamp, last_fetchable)
            partitions.append({"partition_index": p.partition_index, "error_code": ErrorCode.NONE,
                               "timestamp": timestamp, "offset": offset, "leader_epoch": epoch})
        out.append({"name": t.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": out}
