"""CreatePartitions: grow topics, with Kafka's validation and errors; validate_only."""

from __future__ import annotations

from collections import Counter
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from broker.services.topics import TopicError
from protocol.header import ErrorCode


def _result(name: str, error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"name": name, "error_code": error, "error_message": message}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    cluster = ctx.broker.cluster
    counts = Counter(t.name for t in req.topics)
    timeout_s = max(0, req.timeout_ms) / 1000
    results = []
    for t in req.topics:
        if counts[t.name] > 1:
            results.append(_result(t.name, ErrorCode.INVALID_REQUEST, "Duplicate topic in request."))
            continue
        if not authorized(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name):
            results.append(_result(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
            continue
        if cluster.not_controller():  # ZooKeeper mode: the controller grows topics
            results.append(_result(t.name, ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this "
                                                                     "cluster."))
            continue
        try:
            assignments = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
            await cluster.create_partitions(t.name, t.count, assignments, validate_only=req.validate_only,
                                            timeout_s=timeout_s)
        except TopicError as exc:
            results.append(_result(t.name, ErrorCode[exc.error], exc.message))
            continue
        except OSError as exc:
            results.append(_result(t.name, ErrorCode.KAFKA_STORAGE_ERROR, str(exc)))
            continue
        results.append(_result(t.name, ErrorCode.NONE))
    return {"throttle_time_ms": 0, "results": results}
