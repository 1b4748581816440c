"""AlterReplicaLogDirs: this broker has one log directory; moving a replica there is a no-op, any other
path is LOG_DIR_NOT_FOUND (Kafka's answers)."""

from __future__ import annotations

import os
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    allowed = cluster_authorized(ctx, AclOperation.ALTER)  # Kafka: ALTER on the cluster, else every partition fails
    log_dir = os.path.abspath(broker.config.data_dir)
    results: dict[str, list[dict[str, Any]]] = {}
    for d in req.dirs:
        known_dir = os.path.abspath(d.path) == log_dir
        for t in d.topics:
            topic = broker.topics.get(t.name)
            for index in t.partitions:
                if not allowed:
                    error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                elif topic is None or not 0 <= index < len(topic.partitions):
                    error = ErrorCode.REPLICA_NOT_AVAILABLE
                elif not known_dir:
                    error = ErrorCode.LOG_DIR_NOT_FOUND
                else:
                    error = ErrorCode.NONE
                results.setdefault(t.name, []).append({"partition_index": index, "error_code": error})
    return {"throttle_time_ms": 0, "results": [{"topic_name": name, "partitions": partitions}
                                               for name, partitions in results.items()]}
