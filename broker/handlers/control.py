"""What the controller's requests to a broker (LeaderAndIsr, UpdateMetadata, StopReplica) are checked for
first, as Kafka's KafkaApis does: CLUSTER_ACTION, a broker of a ZooKeeper-mode cluster, the broker epoch of
this incarnation, and a controller epoch no older than the newest seen."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode

if TYPE_CHECKING:
    from broker.cluster.replica_manager import ReplicaManager
    from broker.cluster.zk_cluster import ZkCluster

log = logging.getLogger(__name__)


def control_error(ctx: RequestContext, req: Any) -> ErrorCode:
    if not cluster_authorized(ctx, AclOperation.CLUSTER_ACTION):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    cluster = ctx.broker.zk_cluster
    if cluster is None:
        log.warning("%s from %s: this broker is not part of a ZooKeeper-mode cluster", ctx.header.api_key, ctx.peer)
        return ErrorCode.STALE_BROKER_EPOCH
    broker_epoch = getattr(req, "broker_epoch", -1)
    if broker_epoch >= 0 and broker_epoch < cluster.broker_epoch:
        return ErrorCode.STALE_BROKER_EPOCH  # meant for an earlier incarnation of this broker
    if cluster.metadata.stale_controller(req.controller_epoch):
        return ErrorCode.STALE_CONTROLLER_EPOCH
    cluster.metadata.controller_id = req.controller_id
    return ErrorCode.NONE


def zookeeper_mode(ctx: RequestContext) -> tuple[ZkCluster, ReplicaManager]:
    """The broker's cluster and replica manager, once control_error let a controller's request through."""
    cluster, replicas = ctx.broker.zk_cluster, ctx.broker.replicas
    assert cluster is not None and replicas is not None, "checked by control_error"
    return cluster, replicas
