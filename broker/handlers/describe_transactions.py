"""DescribeTransactions (KIP-664): the coordinator's view of each transactional id."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    txns = ctx.broker.txns
    await txns.loaded.wait()
    states = []
    for txn_id in req.transactional_ids:
        allowed = authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id)
        not_here = txns.runtime.error_for(txn_id) if allowed else None
        txn = txns.coordinator.describe(txn_id) if allowed and not not_here else None
        if not_here:
            states.append({"error_code": not_here, "transactional_id": txn_id, "transaction_state": "",
                           "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
                           "producer_epoch": -1, "topics": []})
            continue
        if txn is None:
            # Kafka's error entry leaves every other field at its default (zero).
            states.append({"error_code": ErrorCode.TRANSACTIONAL_ID_NOT_FOUND if allowed
                           else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional_id": txn_id,
                           "transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": 0,
                           "producer_id": 0, "producer_epoch": 0, "topics": []})
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(txn.partitions):
            by_topic.setdefault(topic, []).append(index)
        states.append({"error_code": ErrorCode.NONE, "transactional_id": txn_id,
                       "transaction_state": txn.state.value, "transaction_timeout_ms": txn.timeout_ms,
                       "transaction_start_time_ms": txn.start_ms, "producer_id": txn.producer_id,
                       "producer_epoch": txn.producer_epoch,
                       "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]})
    return {"throttle_time_ms": 0, "transaction_states": states}
