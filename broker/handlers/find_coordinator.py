"""FindCoordinator: the broker that coordinates a group (key type 0) or transactional id (key type 1), by
single key (v0-3) or batched keys (v4+): the leader of the key's partition of `__consumer_offsets` or
`__transaction_state` (a single broker: itself). Those topics are created on the first request, as Kafka
does."""

from __future__ import annotations

import logging
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from broker.services.internal_topics import partition_for
from broker.services.topics import TopicError
from protocol.header import ErrorCode

log = logging.getLogger(__name__)

GROUP = 0
TRANSACTION = 1


def _coordinator(ctx: RequestContext, key_type: int, key: str) -> tuple[ErrorCode, str | None, Any]:
    """The coordinator of a group or transactional id: the leader of its partition of `__consumer_offsets` /
    `__transaction_state` (created on the first request, as Kafka does)."""
    if key_type not in (GROUP, TRANSACTION):
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}", None
    try:
        topic = ctx.broker.groups.runtime.topic() if key_type == GROUP else ctx.broker.txns.runtime.topic()
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
    if key_type == GROUP:
        await ctx.broker.groups.loaded.wait()
    elif key_type == TRANSACTION:
        await ctx.broker.txns.loaded.wait()
    if version >= 4:
        return {"throttle_time_ms": 0,
                "coordinators": [{"key": key, **_entry(ctx, key_type, key)} for key in req.coordinator_keys]}
    return {"throttle_time_ms": 0, **_entry(ctx, key_type, req.key)}
