"""AddPartitionsToTxn: v0-3 from producers (one transaction); v4+ batched, from brokers, with verify_only
(KIP-890: is the partition already in the transaction?)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import LATER, RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names, cluster_authorized
from protocol.header import ErrorCode


def _partitions(ctx: RequestContext, topics: Any) -> tuple[list[tuple[str, int]], dict[tuple[str, int], ErrorCode]]:
    """The requested partitions, and the errors of those the producer may not write (WRITE on the topic) or
    that do not exist (Kafka then attempts none)."""
    wanted, unknown = [], {}
    writable = authorized_names(ctx, AclOperation.WRITE, ResourceType.TOPIC, (t.name for t in topics))
    for t in topics:
        topic = ctx.broker.topics.get(t.name)
        for p in t.partitions:
            if t.name not in writable:
                unknown[(t.name, p)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p < len(topic.partitions):
                unknown[(t.name, p)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            wanted.append((t.name, p))
    return wanted, unknown


def _topic_results(wanted: list[tuple[str, int]], errors: dict[tuple[str, int], ErrorCode]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for name, index in wanted:
        by_topic.setdefault(name, []).append({"partition_index": index, "partition_error_code": errors[(name, index)]})
    return [{"name": name, "results_by_partition": results} for name, results in by_topic.items()]


async def _one(ctx: RequestContext, transactional_id: str | None, producer_id: int, epoch: int, topics: Any,
               verify_only: bool) -> list[dict[str, Any]]:
    txns = ctx.broker.txns
    await txns.loaded.wait()
    wanted, outcome = _plan(ctx, transactional_id, producer_id, epoch, topics, verify_only)
    if isinstance(outcome, dict):
        return _topic_results(wanted, outcome)
    return _applied(ctx, wanted, await txns.apply(outcome.transit, outcome.error))


def _plan(ctx: RequestContext, transactional_id: str | None, producer_id: int, epoch: int, topics: Any,
          verify_only: bool) -> tuple[list[tuple[str, int]], Any]:
    """The requested partitions, and either their errors (a mapping) or the coordinator's outcome to apply."""
    txns = ctx.broker.txns
    if transactional_id is None or not authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                                  transactional_id):
        wanted = [(t.name, p) for t in topics for p in t.partitions]
        return wanted, dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    wanted, unknown = _partitions(ctx, topics)
    not_here = txns.runtime.error_for(transactional_id)  # coordinated by another broker, or being loaded
    if not_here:
        return wanted, dict.fromkeys(wanted, not_here)
    if unknown:
        return wanted, {tp: unknown.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    if verify_only:
        return wanted, {tp: txns.coordinator.verify_partition(transactional_id, producer_id, epoch, tp)
                        for tp in wanted}
    return wanted, txns.coordinator.add_partitions(transactional_id, producer_id, epoch, wanted, ctx.broker.now_ms())


def _applied(ctx: RequestContext, wanted: list[tuple[str, int]], error: ErrorCode) -> list[dict[str, Any]]:
    if error == ErrorCode.PRODUCER_FENCED and ctx.header.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH  # PRODUCER_FENCED came with v2 (KIP-588)
    return _topic_results(wanted, dict.fromkeys(wanted, error))


def handle_now(ctx: RequestContext, req: Any) -> dict[str, Any] | object:
    """A producer's AddPartitionsToTxn (v0-3) without a task of its own on a single broker whose writes are
    durable at once; LATER (nothing done) otherwise."""
    txns = ctx.broker.txns
    if ctx.header.api_version > 3 or not (ctx.broker.durability.immediate and txns.loaded.is_set()):
        return LATER
    wanted, outcome = _plan(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                            req.v3_and_below_producer_epoch, req.v3_and_below_topics, False)
    results = _topic_results(wanted, outcome) if isinstance(outcome, dict) else \
        _applied(ctx, wanted, txns.apply_now(outcome.transit, outcome.error)[0])  # Ongoing: nothing follows
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if ctx.header.api_version <= 3:
        results = await _one(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                             req.v3_and_below_producer_epoch, req.v3_and_below_topics, False)
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results}
    if not cluster_authorized(ctx, AclOperation.CLUSTER_ACTION):  # v4+ comes from brokers
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "results_by_transaction": []}
    out = []
    for t in req.transactions:
        results = await _one(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, t.verify_only)
        out.append({"transactional_id": t.transactional_id, "topic_results": results})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results_by_transaction": out}
