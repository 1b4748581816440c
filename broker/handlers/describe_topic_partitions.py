"""DescribeTopicPartitions (KIP-966, Kafka 4.x profiles): topics and their partitions, a page at a time.

As Kafka's DescribeTopicPartitionsRequestHandler: no topics named means every topic the client may
describe; topics are taken in name order from the cursor on; a page holds at most the request's partition
limit (capped by the broker's max.request.partition.size.limit, 2000), and `next_cursor` says where the
next page starts. Unknown named topics get UNKNOWN_TOPIC_OR_PARTITION, unauthorized ones
TOPIC_AUTHORIZATION_FAILED without their id.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.access import AclOperation, ResourceType, authorized, authorized_operations
from broker.dispatch import RequestContext
from broker.topics import TopicError, validate_topic_name
from protocol.header import ErrorCode

MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000  # Kafka's max.request.partition.size.limit default
ZERO_UUID = uuid.UUID(int=0)


def _invalid(req: Any) -> dict[str, Any]:
    """Kafka's answer to an InvalidRequestException: every named topic carries INVALID_REQUEST (the response
    has no field for a message)."""
    return {"throttle_time_ms": 0, "next_cursor": None, "topics": [
        {"error_code": ErrorCode.INVALID_REQUEST, "name": t.name, "topic_id": ZERO_UUID, "is_internal": False,
         "partitions": [], "topic_authorized_operations": -2147483648} for t in req.topics]}


def _topic_error(error: ErrorCode, name: str) -> dict[str, Any]:
    return {"error_code": error, "name": name, "topic_id": ZERO_UUID, "is_internal": False, "partitions": [],
            "topic_authorized_operations": -2147483648}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not req.topics
    if fetch_all:
        names = {t.name for t in state.topics if t.name >= cursor_topic}
    else:
        names = {t.name for t in req.topics if t.name >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            return _invalid(req)  # the named topics must include the cursor's
    if cursor is not None and cursor.partition_index < 0:
        return _invalid(req)
    unauthorized = []
    allowed = []
    for name in sorted(names):
        if authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            allowed.append(name)
        elif not fetch_all:
            unauthorized.append(_topic_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name))
    remaining = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, req.response_partition_limit), 1)
    node = state.node_id
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in allowed:
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = state.topics.get(name)
        if topic is None:
            if not fetch_all:
                try:
                    validate_topic_name(name)
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                except TopicError:
                    error = ErrorCode.INVALID_TOPIC_EXCEPTION
                topics.append(_topic_error(error, name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(len(topic.partitions), start + remaining)
        topics.append({
            "error_code": ErrorCode.NONE, "name": name, "topic_id": topic.topic_id, "is_internal": topic.is_internal,
            "partitions": [{"error_code": ErrorCode.NONE, "partition_index": i, "leader_id": node, "leader_epoch": 0,
                            "replica_nodes": [node], "isr_nodes": [node], "eligible_leader_replicas": None,
                            "last_known_elr": None, "offline_replicas": []} for i in range(start, upper)],
            "topic_authorized_operations": authorized_operations(ctx, ResourceType.TOPIC, name)})
        if upper < len(topic.partitions):
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= max(0, upper - start)
    return {"throttle_time_ms": 0, "topics": topics + unauthorized, "next_cursor": next_cursor}
