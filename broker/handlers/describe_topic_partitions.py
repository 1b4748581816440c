"""DescribeTopicPartitions (KIP-966, Kafka 4.x profiles): topics and their partitions, a page at a time.

As Kafka's DescribeTopicPartitionsRequestHandler: no topics named means every topic the client may
describe; topics are taken in name order from the cursor on; a page holds at most the request's partition
limit (capped by the broker's max.request.partition.size.limit, 2000), and `next_cursor` says where the
next page starts. Unknown named topics get UNKNOWN_TOPIC_OR_PARTITION, unauthorized ones
TOPIC_AUTHORIZATION_FAILED without their id.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.metadata import topic_error, topic_metadata
from broker.security.access import AclOperation, ResourceType, authorized
from broker.services.topics import TopicError, validate_topic_name
from protocol.header import ErrorCode

MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000  # Kafka's max.request.partition.size.limit default


def _invalid(req: Any) -> dict[str, Any]:
    """Kafka's answer to an InvalidRequestException: every named topic carries INVALID_REQUEST (the response
    has no field for a message)."""
    return {"throttle_time_ms": 0, "next_cursor": None,
            "topics": [topic_error(ErrorCode.INVALID_REQUEST, t.name) for t in req.topics]}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not req.topics
    if fetch_all:
        names = {t.name for t in broker.topics if t.name >= cursor_topic}
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
            unauthorized.append(topic_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name))
    remaining = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, req.response_partition_limit), 1)
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in allowed:
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = broker.topics.get(name)
        if topic is None:
            if not fetch_all:
                try:
                    validate_topic_name(name)
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                except TopicError:
                    error = ErrorCode.INVALID_TOPIC_EXCEPTION
                topics.append(topic_error(error, name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(len(topic.partitions), start + remaining)
        described = topic_metadata(ctx, topic, include_ops=True)  # as Metadata describes it; ELR: none
        described["partitions"] = described["partitions"][start:upper]
        topics.append(described)
        if upper < len(topic.partitions):
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= max(0, upper - start)
    return {"throttle_time_ms": 0, "topics": topics + unauthorized, "next_cursor": next_cursor}
