"""DescribeShareGroupOffsets (KIP-932): the share-partition start offset of each partition a share group
consumes (-1 where it has no state yet), for the named topics or all of them; v1 (Kafka 4.2+, KIP-1226) also
the lag: the records from the start offset to the high watermark not yet acknowledged or archived. The start
offset is the one Kafka's share-group state holds (SharePartition.persisted_start: -1 before the first
acknowledgement, then one state write behind), as a live Kafka 4.4 reports it."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    groups = broker.groups
    await groups.loaded.wait()
    shares = broker.share_partitions
    await shares.loaded.wait()
    out = []
    for g in req.groups:
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id):
            out.append({"group_id": g.group_id, "topics": [], "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED})
            continue
        if g.group_id not in groups.share.groups:
            out.append({"group_id": g.group_id, "topics": [], "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                        "error_message": f"Group {g.group_id} is not a share group."})
            continue
        starts: dict[tuple[str, int], tuple[int, int]] = {}  # (start offset, lag)
        for (_gid, topic_id, index), sp in shares.group_partitions(g.group_id):
            topic = broker.topics.get_by_id(topic_id)
            if topic is not None:
                starts[(topic.name, index)] = (sp.persisted_start, sp.lag(topic.partitions[index].high_watermark))
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
                start, lag = starts.get((name, index), (-1, -1)) if error == ErrorCode.NONE else (-1, -1)
                partitions.append({"partition_index": index, "start_offset": start, "lag": lag,
                                   "leader_epoch": 0 if error == ErrorCode.NONE else -1, "error_code": error})
            topics.append({"topic_name": name, "topic_id": topic.topic_id if topic else None,
                           "partitions": partitions})
        out.append({"group_id": g.group_id, "topics": topics, "error_code": ErrorCode.NONE})
    return {"throttle_time_ms": 0, "groups": out}
