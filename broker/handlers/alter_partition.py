"""AlterPartition (to the controller, from a partition's leader): an ISR change (KIP-497), written to the
partition's state znode with a conditional update; the answer is the state now in force."""

from __future__ import annotations

from typing import Any

from broker.cluster.controller_events import AlterPartition
from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


def _partition(index: int, error: ErrorCode, state: Any = None) -> dict[str, Any]:
    if state is None:
        return {"partition_index": index, "error_code": error, "leader_id": -1, "leader_epoch": -1, "isr": [],
                "leader_recovery_state": 0, "partition_epoch": -1}
    return {"partition_index": index, "error_code": ErrorCode.NONE, "leader_id": state.leader,
            "leader_epoch": state.leader_epoch, "isr": list(state.isr),
            "leader_recovery_state": int(state.leader_recovery_state), "partition_epoch": state.zk_version}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    error = ErrorCode.NONE
    if not cluster_authorized(ctx, AclOperation.CLUSTER_ACTION):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    cluster = ctx.broker.zk_cluster
    controller = cluster.controller if cluster is not None else None
    if not error and (controller is None or not controller.active):
        error = ErrorCode.NOT_CONTROLLER
    if error or controller is None:
        return {"throttle_time_ms": 0, "error_code": error, "topics": []}
    names = {}
    changes = []
    for t in req.topics:
        name = t.topic_name if version < 2 else controller.ctx.topic_name(t.topic_id)
        names[t.topic_id if version >= 2 else t.topic_name] = name
        for p in t.partitions:
            isr = [(b.broker_id, b.broker_epoch) for b in p.new_isr_with_epochs] if version >= 3 else \
                [(b, -1) for b in p.new_isr]
            changes.append(((name, p.partition_index), p.leader_epoch, p.partition_epoch, isr))
    result = await controller.call(AlterPartition(req.broker_id, req.broker_epoch, changes))
    if isinstance(result, Exception):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER, "topics": []}
    error, outcome = result
    topics = []
    for t in req.topics:
        name = names[t.topic_id if version >= 2 else t.topic_name]
        partitions = []
        for p in t.partitions:
            found = outcome.get((name, p.partition_index), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            partitions.append(_partition(p.partition_index, found) if isinstance(found, ErrorCode)
                              else _partition(p.partition_index, ErrorCode.NONE, found))
        topics.append({"topic_name": t.topic_name, "topic_id": t.topic_id, "partitions": partitions})
    return {"throttle_time_ms": 0, "error_code": error, "topics": topics}
