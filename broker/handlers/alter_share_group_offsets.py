"""AlterShareGroupOffsets (KIP-932): a new share-partition start offset for partitions of an empty share group
(NON_EMPTY_GROUP while it has members): the group coordinator initializes their state again at the share
coordinator, at the group's epoch. A group not there yet is created empty, as Kafka 4.2+ does; Kafka 4.1 answers
without a partition and changes nothing (recorded: share_group_epochs)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    groups = broker.groups
    await groups.loaded.wait()

    def answer(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "responses": []}

    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not broker.versions.since("4.2"):  # Kafka 4.1 answers with no partition and changes nothing (recorded)
        return answer(ErrorCode.NONE)
    elsewhere = groups.runtime.error_for(req.group_id)
    if elsewhere:
        return answer(elsewhere)
    group = groups.share.groups.get(req.group_id)
    if group is not None and group.members:
        return answer(ErrorCode.NON_EMPTY_GROUP, f"Share group {req.group_id} is not empty.")
    readable = set(authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC, (t.topic_name for t in req.topics)))
    responses = []
    altered: dict[tuple[Any, int], int] = {}
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
                offset = p.start_offset if log is None else \
                    min(max(p.start_offset, log.log_start_offset), log.log_end_offset)
                altered[(topic.topic_id, p.partition_index)] = offset
                error = ErrorCode.NONE
            partitions.append({"partition_index": p.partition_index, "error_code": error})
        responses.append({"topic_name": t.topic_name, "topic_id": topic.topic_id if topic else None,
                          "partitions": partitions})
    if altered and group is None:  # Kafka creates the share group, empty, to hold the state
        # Kafka 4.4 creates it at group epoch 1, 4.2 at 0 (recorded against both)
        error = await groups.create_share_group(req.group_id, 1 if broker.versions.since("4.3") else 0)
        if error:
            return answer(error, f"Group {req.group_id} is not a share group."
                          if error == ErrorCode.GROUP_ID_NOT_FOUND else None)
    if altered:
        error = await groups.alter_share_offsets(req.group_id, altered)
        if error:
            return answer(error)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "responses": responses}
