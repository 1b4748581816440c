"""DeleteTopics: by name (v1-5) or by name or topic id (v6+)."""

from __future__ import annotations

import uuid
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from broker.services.topics import TopicError
from protocol.header import ErrorCode

ZERO_UUID = uuid.UUID(int=0)


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = ctx.broker.topics
    cluster = ctx.broker.cluster
    version = ctx.header.api_version
    timeout_s = max(0, req.timeout_ms) / 1000
    wanted = [(t.name, t.topic_id) for t in req.topics] if version >= 6 else \
        [(name, ZERO_UUID) for name in req.topic_names]
    results = []
    deleted = []
    for name, topic_id in wanted:
        if name is not None and topic_id != ZERO_UUID:
            results.append({"name": name, "topic_id": topic_id, "error_code": ErrorCode.INVALID_REQUEST,
                            "error_message": "You may not specify both topic name and topic id."})
            continue
        if name is None and topic_id == ZERO_UUID:
            # Kafka 4 calls this an invalid request; Kafka 3 (ZooKeeper mode) answered an authorization error.
            error = ErrorCode.INVALID_REQUEST if ctx.broker.versions.since("4.0") else \
                ErrorCode.TOPIC_AUTHORIZATION_FAILED
            results.append({"name": None, "topic_id": topic_id, "error_code": error,
                            "error_message": "Neither topic name nor id were specified."})
            continue
        if name is None:
            topic = topics.get_by_id(topic_id)
            if topic is None:
                results.append({"name": None, "topic_id": topic_id, "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                                "error_message": "This server does not host this topic ID."})
                continue
            name = topic.name
            if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                # Kafka does not tell whether an id the client may not describe exists.
                results.append({"name": None, "topic_id": topic_id, "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                                "error_message": "This server does not host this topic ID."})
                continue
        if not authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, name):
            results.append({"name": name, "topic_id": topic_id, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            "error_message": "Authorization failed."})
            continue
        if cluster.not_controller():  # ZooKeeper mode: the controller deletes topics
            results.append({"name": name, "topic_id": topic_id, "error_code": ErrorCode.NOT_CONTROLLER,
                            "error_message": "This is not the correct controller for this cluster."})
            continue
        try:
            deleted_id = await cluster.delete_topic(name, timeout_s)
        except TopicError as exc:
            results.append({"name": name, "topic_id": topic_id, "error_code": ErrorCode[exc.error],
                            "error_message": exc.message})
            continue
        deleted.append(name)
        # Kafka 4 names the deleted topic's id; Kafka 3 (ZooKeeper mode) answers a deletion by name without.
        answered_id = deleted_id if topic_id != ZERO_UUID or ctx.broker.versions.since("4.0") else ZERO_UUID
        results.append({"name": name, "topic_id": answered_id, "error_code": ErrorCode.NONE,
                        "error_message": None})
    if deleted and not ctx.broker.cluster.replicated:  # a cluster's brokers each do it when the topic goes
        groups = ctx.broker.groups
        await groups.loaded.wait()
        await groups.forget_topics(deleted)
    return {"throttle_time_ms": 0, "responses": results}
