"""FindCoordinator: the broker that coordinates a group (key type 0), a transactional id (1) or a share
partition's state (2, KIP-932: key "group:topicId:partition", batched keys of v6+ only), by single key (v0-3) or
batched keys (v4+): the leader of the key's partition of `__consumer_offsets`, `__transaction_state` or
`__share_group_state` (a single broker: itself). Those topics are created on the first request, as Kafka does."""

from __future__ import annotations

import logging
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, cluster_authorized
from broker.services.internal_topics import partition_for
from broker.services.topics import TopicError
from coordinator.share_coordinator import parse_coordinator_key
from protocol.header import ErrorCode

log = logging.getLogger(__name__)

GROUP = 0
TRANSACTION = 1
SHARE = 2
SHARE_SINCE = 6  # the first FindCoordinator version that may ask for a share coordinator


def _runtime(ctx: RequestContext, key_type: int) -> Any:
    broker = ctx.broker
    return {GROUP: lambda: broker.groups, TRANSACTION: lambda: broker.txns,
            SHARE: lambda: broker.share_coordinator}[key_type]().runtime


def _share_served(ctx: RequestContext) -> bool:
    return ctx.header.api_version >= SHARE_SINCE and ctx.broker.features.level("share.version") > 0


def _coordinator(ctx: RequestContext, key_type: int, key: str) -> tuple[ErrorCode, str | None, Any]:
    """The coordinator of a group, transactional id or share partition: the leader of its partition of
    `__consumer_offsets`, `__transaction_state` or `__share_group_state` (created on the first request, as Kafka
    does)."""
    if key_type not in (GROUP, TRANSACTION, SHARE):
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}", None
    if key_type == SHARE:
        try:
            parse_coordinator_key(key)
        except ValueError as exc:
            return ErrorCode.INVALID_REQUEST, str(exc), None
    try:
        topic = _runtime(ctx, key_type).topic()
    except (TopicError, OSError) as exc:
        log.info("coordinator topic not available: %s", exc)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.", None
    partition = topic.partitions[partition_for(key, len(topic.partitions))]
    node = ctx.broker.cluster.node(partition.leader, ctx.endpoint) if partition.leader >= 0 else None
    if node is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.", None
    return ErrorCode.NONE, None, node


def _entry(ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    # DESCRIBE on the group or transactional id (KafkaApis.handleFindCoordinatorRequest).
    node = None
    if key_type == GROUP and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        error, message = ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    elif key_type == TRANSACTION and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        error, message = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
    elif key_type == SHARE and not _share_served(ctx):
        error, message = ErrorCode.INVALID_REQUEST, "Share coordinators are found with FindCoordinator v6+ where " \
            "share groups are served."
    elif key_type == SHARE and not cluster_authorized(ctx, AclOperation.CLUSTER_ACTION):  # the brokers' own
        error, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    else:
        error, message, node = _coordinator(ctx, key_type, key)
    if node is None:
        return {"error_code": error, "error_message": message, "node_id": -1, "host": "", "port": -1}
    return {"error_code": error, "error_message": None, "node_id": node.node_id, "host": node.host,
            "port": node.port}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    key_type = req.key_type if version >= 1 else GROUP
    # The coordinator starts on first use: name it once it has replayed its log, so that the client's
    # next request (OffsetFetch, InitProducerId) does not meet COORDINATOR_LOAD_IN_PROGRESS.
    if key_type in (GROUP, TRANSACTION) or key_type == SHARE and _share_served(ctx):
        await _runtime(ctx, key_type).loaded.wait()
    if version >= 4:
        return {"throttle_time_ms": 0,
                "coordinators": [{"key": key, **_entry(ctx, key_type, key)} for key in req.coordinator_keys]}
    return {"throttle_time_ms": 0, **_entry(ctx, key_type, req.key)}
