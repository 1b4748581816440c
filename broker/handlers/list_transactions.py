"""ListTransactions (KIP-664): transactional ids, filtered by state, producer id, (v1) running time and
(v2, KIP-1152) a regular expression the whole transactional id matches."""

from __future__ import annotations

import re
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode

# Kafka's TransactionState names (coordinator/txn.py's TxnState values).
_STATE_NAMES = frozenset({"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                          "Dead", "PrepareEpochFence"})


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    txns = ctx.broker.txns
    pattern = None
    if ctx.header.api_version >= 2 and req.transactional_id_pattern:
        try:
            pattern = re.compile(req.transactional_id_pattern)
        except re.error:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REGULAR_EXPRESSION,
                    "unknown_state_filters": [], "transaction_states": []}
    await txns.loaded.wait()
    states = list(req.state_filters or [])
    unknown = [s for s in states if s not in _STATE_NAMES]
    known = [s for s in states if s in _STATE_NAMES]
    if states and not known:
        listed = []  # only unknown states asked for: nothing matches
    else:
        listed = txns.coordinator.list(known, req.producer_id_filters or [])
    duration = req.duration_filter if ctx.header.api_version >= 1 else -1
    if duration is not None and duration >= 0:
        # KIP-994: transactions running for longer than the filter (only open ones have a start time).
        now = ctx.broker.now_ms()
        listed = [t for t in listed if t.state.value == "Ongoing" and now - t.start_ms > duration]
    if pattern is not None:
        listed = [t for t in listed if pattern.fullmatch(t.transactional_id)]  # Java's Matcher.matches()
    listed = [t for t in listed if authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                              t.transactional_id)]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "unknown_state_filters": unknown,
            "transaction_states": [{"transactional_id": t.transactional_id, "producer_id": t.producer_id,
                                    "transaction_state": t.state.value} for t in listed]}
