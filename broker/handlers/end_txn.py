"""EndTxn: PrepareCommit/PrepareAbort is written, then the answer; the markers follow in the background.
v5 is transaction version 2 (KIP-890 part 2): the epoch is bumped and the answer tells the producer its id and
epoch for the next transaction."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import LATER, AnswerThen, RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        return _answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    txns = ctx.broker.txns
    await txns.loaded.wait()
    not_here = txns.runtime.error_for(req.transactional_id)
    if not_here:
        return _answer(not_here)
    tv2 = ctx.header.api_version >= TV2_FROM
    new_pid = None
    if txns.coordinator.end_txn_needs_producer_id(req.transactional_id, tv2):
        error, new_pid = await txns.producer_ids.new_id()
        if error != ErrorCode.NONE:
            return _answer(error)
    outcome = _end(ctx, req, new_pid)
    return _outcome(ctx, outcome, await txns.apply(outcome.transit, outcome.error))


def handle_now(ctx: RequestContext, req: Any) -> dict[str, Any] | AnswerThen | object:
    """EndTxn without a task of its own on a single broker whose writes are durable at once: Prepare* is
    appended before the answer, the markers and Complete* right after it (before any other request is served).
    LATER (nothing done) otherwise."""
    txns = ctx.broker.txns
    if not (ctx.broker.durability.immediate and txns.loaded.is_set()) or \
            txns.coordinator.end_txn_needs_producer_id(req.transactional_id, ctx.header.api_version >= TV2_FROM):
        return LATER
    if not authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        return _answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    not_here = txns.runtime.error_for(req.transactional_id)
    if not_here:
        return _answer(not_here)
    outcome = _end(ctx, req, None)
    error, then = txns.apply_now(outcome.transit, outcome.error)
    answer = _outcome(ctx, outcome, error)
    return answer if then is None else AnswerThen(answer, then)


def _end(ctx: RequestContext, req: Any, new_pid: int | None) -> Any:
    return ctx.broker.txns.coordinator.end_txn(req.transactional_id, req.producer_id, req.producer_epoch,
                                               bool(req.committed), ctx.broker.now_ms(),
                                               tv2=ctx.header.api_version >= TV2_FROM, new_producer_id=new_pid)


def _outcome(ctx: RequestContext, outcome: Any, error: ErrorCode) -> dict[str, Any]:
    if error == ErrorCode.PRODUCER_FENCED and ctx.header.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    if error != ErrorCode.NONE:
        return _answer(error)
    return _answer(error, outcome.producer_id, outcome.producer_epoch)


TV2_FROM = 5


def _answer(error: ErrorCode, producer_id: int = -1, producer_epoch: int = -1) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "producer_id": producer_id, "producer_epoch": producer_epoch}
