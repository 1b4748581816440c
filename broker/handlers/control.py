"""What the controller's requests to a broker (LeaderAndIsr, UpdateMetadata, StopReplica) are checked for
first, as Kafka's KafkaApis does: CLUSTER_ACTION, a broker of a ZooKeeper-mode cluster, the broker epoch of
this incarnation, and a controller epoch no older than the newest seen."""

from __future__ import annotations

import logging
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode

log = logging.getLogger(__name__)


def control_error(ctx: RequestContext, req: Any) -> ErrorCode:
    if not cluster_authorized(ctx, AclOperation.CLUSTER_ACTION):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    cluster = ctx.broker.cluster
    if ctx.broker.replicas is None:
        log.warning("%s from %s: this broker is not part of a ZooKeeper-mode cluster", ctx.header.api_key, ctx.peer)
        return ErrorCode.STALE_BROKER_EPOCH
    broker_epoch = getattr(req, "broker_epoch", -1)
    if broker_epoch >= 0 and broker_epoch < cluster.broker_epoch:
        return ErrorCode.STALE_BROKER_EPOCH  # meant for an earlier incarnation of this broker
    if req.controller_epoch < cluster.controller_epoch:
        return ErrorCode.STALE_CONTROLLER_EPOCH
    cluster.controller_epoch = req.controller_epoch
    cluster.controller_id = req.controller_id
    return ErrorCode.NONE
