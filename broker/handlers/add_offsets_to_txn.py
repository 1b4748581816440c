"""AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction, so the offsets a
TxnOffsetCommit writes there are committed or aborted with it."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from broker.services.internal_topics import partition_for
from broker.services.topics import OFFSETS_TOPIC, TopicError
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    txns = ctx.broker.txns
    await txns.loaded.wait()
    not_here = txns.runtime.error_for(req.transactional_id)
    if not_here:
        return {"throttle_time_ms": 0, "error_code": not_here}
    try:
        offsets = ctx.broker.groups.runtime.topic()
    except (TopicError, OSError):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE}
    partition = (OFFSETS_TOPIC, partition_for(req.group_id, len(offsets.partitions)))
    outcome = txns.coordinator.add_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                                              [partition], ctx.broker.now_ms())
    error = await txns.apply(outcome.transit, outcome.error)
    if error == ErrorCode.PRODUCER_FENCED and ctx.header.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"throttle_time_ms": 0, "error_code": error}
