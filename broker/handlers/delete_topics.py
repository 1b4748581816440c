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
    version = ctx.header.api_version
    wanted = [(t.name, t.topic_id) for t in req.topics] if version >= 6 else \
        [(name, ZERO_UUID) for name in req.topic_names]
    results = []
    deleted = []
    for name, topic_id in wanted:
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
        try:
            topic = topics.delete(name)
        except TopicError as exc:
            results.append({"name": name, "topic_id": topic_id, "error_code": ErrorCode[exc.error],
                            "error_message": exc.message})
            continue
        deleted.append(name)
        results.append({"name": name, "topic_id": topic.topic_id, "error_code": ErrorCode.NONE,
                        "error_message": None})
    if deleted:
        groups = ctx.broker.groups
        await groups.loaded.wait()
        changed = groups.coordinator.topics_deleted(deleted, ctx.broker.now_ms())
        groups.changed()
        for group_id in changed:
            await groups.durable(group_id)
    return {"throttle_time_ms": 0, "responses": results}
