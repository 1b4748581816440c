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


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    cluster = ctx.broker.cluster
    counts = Counter(t.name for t in req.topics)
    # CREATE on the cluster, or on each topic (KafkaApis.handleCreateTopicsRequest).
    creatable = set(counts) if cluster_authorized(ctx, AclOperation.CREATE) else \
        authorized_names(ctx, AclOperation.CREATE, ResourceType.TOPIC, counts)
    not_controller = cluster.not_controller()  # ZooKeeper mode: the controller creates topics
    timeout_s = max(0, req.timeout_ms) / 1000
    results = []
    for t in req.topics:
        if counts[t.name] > 1:
            results.append(_result(t.name, ErrorCode.INVALID_REQUEST,
                                    f"Create topics request from client contains duplicate topic {t.name}"))
            continue
        if not_controller:
            results.append(_result(t.name, ErrorCode.NOT_CONTROLLER, "This is not the correct controller for "
                                                                     "this cluster."))
            continue
        if t.name not in creatable:
            results.append(_result(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
            continue
        if t.assignments and (t.num_partitions != -1 or t.replication_factor != -1):
            results.append(_result(t.name, ErrorCode.INVALID_REQUEST,
                                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                                    "Both cannot be used at the same time."))
            continue
        assignments = None
        if t.assignments:
            error = _check_assignments(t.assignments)
            if error:
                results.append(_result(t.name, ErrorCode.INVALID_REPLICA_ASSIGNMENT, error))
                continue
            assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        configs = {c.name: c.value for c in t.configs}
        try:
            created = await cluster.create_topic(t.name, t.num_partitions, t.replication_factor, assignments,
                                                 configs, validate_only=req.validate_only, timeout_s=timeout_s)
        except TopicError as exc:
            results.append(_result(t.name, ErrorCode[exc.error], exc.message))
            continue
        results.append({"name": t.name, "topic_id": created.topic_id or ZERO_UUID, "error_code": ErrorCode.NONE,
                        "error_message": None, "num_partitions": created.num_partitions,
                        "replication_factor": created.replication_factor,
                        "configs": _configs(ctx, created.configs)})
    return {"throttle_time_ms": 0, "topics": results}


def _check_assignments(assignments: Any) -> str | None:
    indexes = sorted(a.partition_index for a in assignments)
    if indexes != list(range(len(indexes))):
        return "Partitions should be 0-based and consecutive."
    for a in assignments:
        if not a.broker_ids:
            return "Replica assignment of a partition must not be empty."
        if len(set(a.broker_ids)) != len(a.broker_ids):
            return f"Duplicate brokers in replica assignment: {list(a.broker_ids)}"
    return None
