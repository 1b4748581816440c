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


def _check_assignments(ctx: RequestContext, assignments: Any, current: int, count: int) -> str | None:
    """Kafka's checks of manual assignments for the new partitions (one broker, replication factor 1)."""
    if len(assignments) != count - current:
        return (f"Attempted to add {count - current} additional partition(s), but only {len(assignments)} "
                "assignment(s) were specified.")
    for a in assignments:
        ids = list(a.broker_ids)
        if not ids:
            return "Replica assignment of a partition must not be empty."
        if len(set(ids)) != len(ids):
            return f"Duplicate brokers in replica assignment: {ids}"
        if any(b != ctx.broker.node_id for b in ids):
            return f"The manual partition assignment includes broker(s) that are not registered: {ids}"
        if len(ids) != 1:
            return (f"The manual partition assignment includes a partition with {len(ids)} replica(s), but this "
                    "is not consistent with previous partitions, which have 1 replica(s).")
    return None


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = ctx.broker.topics
    counts = Counter(t.name for t in req.topics)
    results = []
    for t in req.topics:
        if counts[t.name] > 1:
            results.append(_result(t.name, ErrorCode.INVALID_REQUEST, "Duplicate topic in request."))
            continue
        if not authorized(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name):
            results.append(_result(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
            continue
        try:
            topic = topics.check_add_partitions(t.name, t.count)
            if t.assignments is not None:
                error = _check_assignments(ctx, t.assignments, len(topic.partitions), t.count)
                if error:
                    results.append(_result(t.name, ErrorCode.INVALID_REPLICA_ASSIGNMENT, error))
                    continue
            if not req.validate_only:
                topics.add_partitions(t.name, t.count, now_ms=ctx.broker.now_ms())
        except TopicError as exc:
            results.append(_result(t.name, ErrorCode[exc.error], exc.message))
            continue
        except OSError as exc:
            results.append(_result(t.name, ErrorCode.KAFKA_STORAGE_ERROR, str(exc)))
            continue
        results.append(_result(t.name, ErrorCode.NONE))
    return {"throttle_time_ms": 0, "results": results}
