"""FindCoordinator: this broker coordinates every group (key type 0) and transactional id (key type 1), by
single key (v0-3) or batched keys (v4+). `__consumer_offsets` and `__transaction_state` are created on the
first request, as Kafka does."""

from __future__ import annotations

import logging
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from broker.services.topics import TopicError
from protocol.header import ErrorCode

log = logging.getLogger(__name__)

GROUP = 0
TRANSACTION = 1


def _coordinator(ctx: RequestContext, key_type: int) -> tuple[ErrorCode, str | None]:
    if key_type not in (GROUP, TRANSACTION):
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}"
    try:
        if key_type == GROUP:
            ctx.broker.groups.offsets_topic()
        else:
            ctx.broker.txns.state_topic()
    except (TopicError, OSError) as exc:
        log.error("cannot create the coordinator's topic: %s", exc)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available."
    return ErrorCode.NONE, None


def _entry(ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    # DESCRIBE on the group or transactional id (KafkaApis.handleFindCoordinatorRequest).
    if key_type == GROUP and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        error, message = ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    elif key_type == TRANSACTION and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        error, message = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
    else:
        error, message = _coordinator(ctx, key_type)
    if error != ErrorCode.NONE:
        return {"error_code": error, "error_message": message, "node_id": -1, "host": "", "port": -1}
    return {"error_code": error, "error_message": None, "node_id": ctx.broker.node_id, "host": ctx.endpoint.host,
            "port": ctx.endpoint.port}


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
