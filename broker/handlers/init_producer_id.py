"""InitProducerId. Idempotent producers (null transactional id): a fresh producer id from the current
block, or (v3+, KIP-360) the same id with a bumped epoch for a producer that knows its id. Transactional
producers: the transaction coordinator (bumps the epoch, fences the previous producer, aborts its open
transaction)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import (
    AclOperation,
    ResourceType,
    authorized,
    authorized_by_resource_type,
    cluster_authorized,
)
from protocol.header import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
EPOCH_EXHAUSTED = 0x7FFF - 1  # Kafka: an epoch of Short.MaxValue - 1 cannot be bumped; a new id is needed


def _answer(error: ErrorCode, producer_id: int = NO_PRODUCER_ID, epoch: int = NO_PRODUCER_EPOCH) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "producer_id": producer_id, "producer_epoch": epoch}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    producer_id, epoch = req.producer_id, req.producer_epoch
    if (producer_id == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
        return _answer(ErrorCode.INVALID_REQUEST)
    if req.transactional_id is not None:
        if not authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
            return _answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        expected = (producer_id, epoch) if producer_id != NO_PRODUCER_ID else None
        result = await ctx.broker.txns.init_producer_id(req.transactional_id, req.transaction_timeout_ms, expected)
        error = result.error
        if error == ErrorCode.PRODUCER_FENCED and ctx.header.api_version < 4:
            error = ErrorCode.INVALID_PRODUCER_EPOCH  # PRODUCER_FENCED came with v4 (KIP-588)
        if error != ErrorCode.NONE:
            return _answer(error)
        return _answer(error, result.producer_id, result.producer_epoch)
    # Idempotent producers: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679).
    if not (cluster_authorized(ctx, AclOperation.IDEMPOTENT_WRITE)
            or authorized_by_resource_type(ctx, AclOperation.WRITE, ResourceType.TOPIC)):
        return _answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if producer_id != NO_PRODUCER_ID and 0 <= epoch < EPOCH_EXHAUSTED:
        return _answer(ErrorCode.NONE, producer_id, epoch + 1)
    error, new_id = await ctx.broker.producer_ids.new_id()
    if error != ErrorCode.NONE:
        return _answer(error)
    return _answer(ErrorCode.NONE, new_id, 0)
