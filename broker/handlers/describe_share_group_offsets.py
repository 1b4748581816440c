"""DescribeShareGroupOffsets (KIP-932): the share-partition start offset of each partition a share group
consumes, as the share coordinator holds it (ReadShareGroupStateSummary: -1 until the partition leader's first
state write, then the start offset from before its latest write, as a live Kafka 4.4 reports it), for the named
topics or all of them; v1 (Kafka 4.2+, KIP-1226) also the lag: the records from the start offset to the high
watermark not yet acknowledged or archived (the summary's delivery complete count)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from protocol.header import ErrorCode


def _lag(high_watermark: int | None, start_offset: int, delivery_complete_count: int) -> int:
    if high_watermark is None or start_offset < 0 or delivery_complete_count < 0:
        return -1
    return max(high_watermark - start_offset - delivery_complete_count, 0)


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    groups = broker.groups
    await groups.loaded.wait()
    out = []
    for g in req.groups:
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id):
            out.append({"group_id": g.group_id, "topics": [], "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED})
            continue
        elsewhere = groups.runtime.error_for(g.group_id)
        if elsewhere:
            out.append({"group_id": g.group_id, "topics": [], "error_code": elsewhere})
            continue
        if g.group_id not in groups.share.groups:
            out.append({"group_id": g.group_id, "topics": [], "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                        "error_message": f"Group {g.group_id} is not a share group."})
            continue
        summaries = await groups.share_offsets(g.group_id)
        starts: dict[tuple[str, int], tuple[int, int, int]] = {}  # (start offset, leader epoch, lag)
        for (topic_id, index), summary in summaries.items():
            topic = broker.topics.get_by_id(topic_id)
            if topic is None or summary.error:
                continue
            partition = topic.partitions[index] if index < len(topic.partitions) else None
            hw = partition.high_watermark if partition is not None and partition.log is not None else None
            starts[(topic.name, index)] = (summary.start_offset, summary.leader_epoch,
                                           _lag(hw, summary.start_offset, summary.delivery_complete_count))
        if g.topics is None:
            wanted: dict[str, list[int]] = {}
            for name, index in sorted(starts):
                wanted.setdefault(name, []).append(index)
        else:
            wanted = {t.topic_name: list(t.partitions) for t in g.topics}
        describable = set(authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, wanted))
        topics = []
        for name, indexes in wanted.items():
            topic = broker.topics.get(name)
            partitions = []
            for index in indexes:
                if name not in describable:
                    error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif topic is None or not 0 <= index < len(topic.partitions):
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    error = ErrorCode.NONE
                start, epoch, lag = starts.get((name, index), (-1, 0, -1)) if error == ErrorCode.NONE \
                    else (-1, -1, -1)
                partitions.append({"partition_index": index, "start_offset": start, "lag": lag,
                                   "leader_epoch": epoch, "error_code": error})
            topics.append({"topic_name": name, "topic_id": topic.topic_id if topic else None,
                           "partitions": partitions})
        out.append({"group_id": g.group_id, "topics": topics, "error_code": ErrorCode.NONE})
    return {"throttle_time_ms": 0, "groups": out}
