"""LeaderAndIsr (from the controller): become the leader or a follower of partitions (Kafka's
ReplicaManager.becomeLeaderOrFollower; broker.cluster.replica_manager). Refused from an older controller
(STALE_CONTROLLER_EPOCH) or for another incarnation of this broker (STALE_BROKER_EPOCH)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.control import control_error, zookeeper_mode
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    error = control_error(ctx, req)
    if not error:
        cluster, replicas = zookeeper_mode(ctx)
        await cluster.admin.ensure_topic_configs(t.topic_name for t in req.topic_states)
        error = control_error(ctx, req)  # a newer controller may have spoken meanwhile
    results = {} if error else replicas.apply_leader_and_isr(req)
    topics = []
    for topic_state in req.topic_states:
        partitions = [{"topic_name": topic_state.topic_name, "partition_index": p.partition_index,
                       "error_code": error or results.get((topic_state.topic_name, p.partition_index),
                                                          ErrorCode.NONE)}
                      for p in topic_state.partition_states]
        topics.append({"topic_id": topic_state.topic_id, "partition_errors": partitions})
    return {"error_code": error, "topics": topics,
            "partition_errors": [p for t in topics for p in t["partition_errors"]]}
