"""CreateTopics: Kafka's validation and errors; validate_only; v5+ reports the resulting configs."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from broker.config.topic import TOPIC_CONFIGS
from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized_names, cluster_authorized
from broker.services.topics import TopicError
from protocol.header import ErrorCode

ZERO_UUID = uuid.UUID(int=0)
# DescribeConfigs config sources: DYNAMIC_TOPIC_CONFIG=1, DEFAULT_CONFIG=5.
DYNAMIC_TOPIC_CONFIG = 1
DEFAULT_CONFIG = 5


def _result(name: str, error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"name": name, "topic_id": ZERO_UUID, "error_code": error, "error_message": message,
            "num_partitions": -1, "replication_factor": -1, "configs": None}


def _configs(ctx: RequestContext, overrides: dict[str, str]) -> list[dict[str, Any]]:
    values = ctx.broker.topics.config
    out = []
    for name, definition in TOPIC_CONFIGS.items():
        out.append({"name": name, "value": overrides.get(name, definition.default(values)),
                    "read_only": False,
                    "config_source": DYNAMIC_TOPIC_CONFIG if name in overrides else DEFAULT_CONFIG,
                    "is_sensitive": False})
    return out


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = ctx.broker.topics
    counts = Counter(t.name for t in req.topics)
    # CREATE on the cluster, or on each topic (KafkaApis.handleCreateTopicsRequest).
    creatable = set(counts) if cluster_authorized(ctx, AclOperation.CREATE) else \
        authorized_names(ctx, AclOperation.CREATE, ResourceType.TOPIC, counts)
    results = []
    for t in req.topics:
        if counts[t.name] > 1:
            results.append(_result(t.name, ErrorCode.INVALID_REQUEST,
                                    f"Create topics request from client contains duplicate topic {t.name}"))
            continue
        if t.name not in creatable:
            results.append(_result(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
            continue
        if t.assignments and (t.num_partitions != -1 or t.replication_factor != -1):
            results.append(_result(t.name, ErrorCode.INVALID_REQUEST,
                                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                                    "Both cannot be used at the same time."))
            continue
        num_partitions, replication_factor = t.num_partitions, t.replication_factor
        if t.assignments:
            error = _check_assignments(ctx, t.assignments)
            if error:
                results.append(_result(t.name, ErrorCode.INVALID_REPLICA_ASSIGNMENT, error))
                continue
            num_partitions = len(t.assignments)
            replication_factor = len(t.assignments[0].broker_ids)
        configs = {c.name: c.value for c in t.configs}
        try:
            if req.validate_only:
                num_partitions, overrides = topics.check_create(t.name, num_partitions, replication_factor,
                                                                configs)
                topic_id = ZERO_UUID
            else:
                topic = topics.create(t.name, num_partitions, replication_factor, configs,
                                      now_ms=ctx.broker.now_ms())
                num_partitions, overrides, topic_id = len(topic.partitions), topic.configs, topic.topic_id
        except TopicError as exc:
            results.append(_result(t.name, ErrorCode[exc.error], exc.message))
            continue
        results.append({"name": t.name, "topic_id": topic_id, "error_code": ErrorCode.NONE,
                        "error_message": None, "num_partitions": num_partitions, "replication_factor": 1,
                        "configs": _configs(ctx, overrides)})
    return {"throttle_time_ms": 0, "topics": results}


def _check_assignments(ctx: RequestContext, assignments: Any) -> str | None:
    indexes = sorted(a.partition_index for a in assignments)
    if indexes != list(range(len(indexes))):
        return "Partitions should be 0-based and consecutive."
    for a in assignments:
        if not a.broker_ids:
            return "Replica assignment of a partition must not be empty."
        if len(set(a.broker_ids)) != len(a.broker_ids):
            return f"Duplicate brokers in replica assignment: {list(a.broker_ids)}"
        if any(b != ctx.broker.node_id for b in a.broker_ids):
            return f"Unknown broker in replica assignment: {list(a.broker_ids)}"
    return None
