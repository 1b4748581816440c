"""AlterShareGroupOffsets (KIP-932): a new share-partition start offset for partitions of an empty share
group (NON_EMPTY_GROUP while it has members)."""

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

    def answer(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "responses": []}

    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    group = groups.share.groups.get(req.group_id)
    if group is None:
        return answer(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a share group.")
    if group.members:
        return answer(ErrorCode.NON_EMPTY_GROUP, f"Share group {req.group_id} is not empty.")
    readable = set(authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC, (t.topic_name for t in req.topics)))
    responses = []
    for t in req.topics:
        topic = broker.topics.get(t.topic_name)
        partitions = []
        for p in t.partitions:
            if t.topic_name not in readable:
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p.partition_index < len(topic.partitions):
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                log = topic.partitions[p.partition_index].log
                offset = min(max(p.start_offset, log.log_start_offset), log.log_end_offset)
                shares.alter_start(req.group_id, topic.topic_id, p.partition_index, offset)
                error = ErrorCode.NONE
            partitions.append({"partition_index": p.partition_index, "error_code": error})
        responses.append({"topic_name": t.topic_name, "topic_id": topic.topic_id if topic else None,
                          "partitions": partitions})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "responses": responses}
