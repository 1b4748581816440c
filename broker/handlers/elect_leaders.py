"""ElectLeaders (KIP-460; to the controller in ZooKeeper mode): PREFERRED moves each partition's leadership
back to its first replica when it is live and in sync; UNCLEAN elects a live replica outside the ISR where
no in-sync one is left. A single broker's partitions have one replica, already their leader:
ELECTION_NOT_NEEDED (Kafka's answer for a stable cluster)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode

MESSAGES = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "The partition does not exist.",
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "Failed to elect leader for partition: preferred replica is not "
                                              "live or not in the ISR.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Failed to elect leader: no live replica is eligible.",
}
UNCLEAN = 1


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    if not cluster_authorized(ctx, AclOperation.ALTER):  # Kafka: ALTER on the cluster; each named partition fails
        denied = [{"topic": t.topic, "partition_result": [
            {"partition_id": p, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
            for p in t.partitions]} for t in req.topic_partitions or []]
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "replica_election_results": denied}
    cluster = ctx.broker.cluster
    if cluster.not_controller():
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER, "replica_election_results": []}
    wanted = None if req.topic_partitions is None else \
        [(t.topic, p) for t in req.topic_partitions for p in t.partitions]
    unclean = version >= 1 and req.election_type == UNCLEAN
    outcome = await cluster.elect_leaders(wanted, unclean)
    if isinstance(outcome, ErrorCode):
        return {"throttle_time_ms": 0, "error_code": outcome, "replica_election_results": []}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), error in sorted(outcome.items()):
        if wanted is None and error == ErrorCode.ELECTION_NOT_NEEDED:
            continue  # all partitions: Kafka answers only for those it elected or failed
        by_topic.setdefault(topic, []).append({"partition_id": index, "error_code": error,
                                               "error_message": MESSAGES.get(error)})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "replica_election_results": [
        {"topic": t, "partition_result": ps} for t, ps in by_topic.items()]}
