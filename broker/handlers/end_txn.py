"""EndTxn: PrepareCommit/PrepareAbort is written, then the answer; the markers follow in the background."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    txns = ctx.broker.txns
    await txns.loaded.wait()
    not_here = txns.error_for(req.transactional_id)
    if not_here:
        return {"throttle_time_ms": 0, "error_code": not_here}
    outcome = txns.coordinator.end_txn(req.transactional_id, req.producer_id, req.producer_epoch,
                                       bool(req.committed), ctx.broker.now_ms())
    error = await txns.apply(outcome.transit, outcome.error)
    if error == ErrorCode.PRODUCER_FENCED and ctx.header.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"throttle_time_ms": 0, "error_code": error}
