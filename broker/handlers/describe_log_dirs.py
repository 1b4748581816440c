"""DescribeLogDirs: the one log directory (the data dir) with each partition's size on disk, or its
KAFKA_STORAGE_ERROR once it failed (broker.cluster.replica_manager.ReplicaManager.log_dir_failed)."""

from __future__ import annotations

import os
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):  # Kafka: DESCRIBE on the cluster, else no directory
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
    broker = ctx.broker
    log_dir = str(os.path.abspath(broker.config.data_dir))
    if broker.topics.log_dir_offline:  # as Kafka describes an offline log directory: its error, nothing in it
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": [
            {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": log_dir, "topics": [], "total_bytes": -1,
             "usable_bytes": -1}]}
    wanted = None if req.topics is None else {t.topic: set(t.partitions) for t in req.topics}
    topics = []
    for topic in broker.topics:
        if wanted is not None and topic.name not in wanted:
            continue
        partitions = [{"partition_index": p.index, "partition_size": p.log.size_in_bytes, "offset_lag": 0,
                       "is_future_key": False}
                      for p in topic.partitions
                      if p.log is not None and (wanted is None or p.index in wanted[topic.name])]
        if partitions:
            topics.append({"name": topic.name, "partitions": partitions})
    try:
        stat = os.statvfs(log_dir)
        total, usable = stat.f_blocks * stat.f_frsize, stat.f_bavail * stat.f_frsize
    except OSError:
        total = usable = -1
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": [
        {"error_code": ErrorCode.NONE, "log_dir": log_dir, "topics": topics, "total_bytes": total,
         "usable_bytes": usable}]}
