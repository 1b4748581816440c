"""ShareFetch (KIP-932): acknowledgements of earlier deliveries first, then records acquired for the member
under a lock, from the partitions of its share session (epoch 0 opens one, -1 closes it, releasing what the
member still holds). With nothing to hand out it waits up to MaxWaitMs for new records. A partition led by
another broker answers NOT_LEADER_OR_FOLLOWER with its leader (and the leader's address in NodeEndpoints).
v2 (Kafka 4.2+): ShareAcquireMode (KIP-1206: batch-optimized, or record-limit with MaxRecords as a hard limit)
and RENEW acknowledgements (KIP-1222: a request flagged IsRenewAck renews locks and fetches nothing, so it must
ask for no bytes, records or wait)."""

from __future__ import annotations

from typing import Any

import trio

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from broker.services.share_partitions import FINAL_EPOCH, ShareSessionError
from coordinator.share_partition import ShareAcquireMode
from protocol.header import ErrorCode


def _error(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message,
            "acquisition_lock_timeout_ms": 0, "responses": [], "node_endpoints": []}


def _partition(ctx: RequestContext, topic_id: Any, index: int, *, error: ErrorCode = ErrorCode.NONE,
               ack_error: ErrorCode = ErrorCode.NONE, acquired: Any = (), records: bytes = b"") -> dict[str, Any]:
    return {"partition_index": index, "error_code": error, "acknowledge_error_code": ack_error,
            "current_leader": current_leader(ctx, topic_id, index), "records": records,
            "acquired_records": [{"first_offset": r.first_offset, "last_offset": r.last_offset,
                                  "delivery_count": r.delivery_count} for r in acquired]}


def current_leader(ctx: RequestContext, topic_id: Any, index: int) -> dict[str, int]:
    """The partition's leader and leader epoch as this broker knows them (-1 if it knows none)."""
    topic = ctx.broker.topics.get_by_id(topic_id)
    if topic is None or not 0 <= index < len(topic.partitions):
        return {"leader_id": -1, "leader_epoch": -1}
    partition = topic.partitions[index]
    return {"leader_id": partition.leader, "leader_epoch": partition.leader_epoch}


def node_endpoints(ctx: RequestContext, by_topic: dict[Any, list[dict[str, Any]]],
                   errors: tuple[str, ...] = ("error_code",)) -> list[dict[str, Any]]:
    """The addresses of the leaders named where a partition is led elsewhere (KIP-951)."""
    leaders = {p["current_leader"]["leader_id"] for ps in by_topic.values() for p in ps
               if any(p.get(e) == ErrorCode.NOT_LEADER_OR_FOLLOWER for e in errors)}
    nodes = [ctx.broker.cluster.node(n, ctx.endpoint) for n in sorted(leaders) if n >= 0 and n != ctx.broker.node_id]
    return [{"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack} for n in nodes if n is not None]


def _renew_problem(req: Any) -> str | None:
    """Kafka's check of a v2 request flagged IsRenewAck: it fetches nothing, so it asks for nothing."""
    if not req.is_renew_ack:
        return None
    asked = [name for name, value in (("MaxBytes", req.max_bytes), ("MinBytes", req.min_bytes),
                                      ("MaxRecords", req.max_records), ("MaxWaitMs", req.max_wait_ms)) if value]
    return f"{', '.join(asked)} must be 0 in a renew acknowledgement request." if asked else None


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    if not req.group_id or not req.member_id:
        return _error(ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set.")
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    problem = _renew_problem(req)
    if problem is not None:
        return _error(ErrorCode.INVALID_REQUEST, problem)
    shares = broker.share_partitions
    await shares.loaded.wait()
    requested = [(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions]
    forgotten = [(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions]
    names = {t.topic_id: (topic.name if (topic := broker.topics.get_by_id(t.topic_id)) else None) for t in req.topics}
    readable = set(authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC, [n for n in names.values() if n]))
    try:
        session = shares.session(req.group_id, req.member_id, req.share_session_epoch, requested, forgotten)
    except ShareSessionError as exc:
        return _error(exc.error, str(exc))
    try:
        mode = ShareAcquireMode(req.share_acquire_mode)
    except ValueError:  # Kafka fails the request as a whole (its ShareAcquireMode.forId throws)
        return _error(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown share acquire mode {req.share_acquire_mode}.")
    renew = bool(req.is_renew_ack)
    results: dict[tuple[Any, int], dict[str, Any]] = {}
    acknowledged: dict[tuple[Any, int], ErrorCode] = {}
    fetching = session is not None and req.share_session_epoch != FINAL_EPOCH and not renew
    max_records = req.max_records if req.max_records > 0 else 500

    async def acquire_round() -> bool:
        """One pass over the session's partitions; True once records were acquired."""
        assert session is not None
        fetched = False
        budget = req.max_bytes
        left = max_records
        for topic_id, index in sorted(session.partitions, key=lambda tp: (str(tp[0]), tp[1])):
            topic = broker.topics.get_by_id(topic_id)
            if topic is None or topic.name not in readable and topic.name not in set(
                    authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC, [topic.name])):
                results[(topic_id, index)] = _partition(ctx, topic_id, index, error=ErrorCode.UNKNOWN_TOPIC_ID
                                                        if topic is None else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                continue
            outcome = await shares.fetch(req.group_id, req.member_id, topic_id, index, left, max(budget, 1), mode)
            if outcome.error != ErrorCode.NONE or outcome.acquired:
                results[(topic_id, index)] = _partition(ctx, topic_id, index, error=outcome.error,
                                                        acquired=outcome.acquired, records=outcome.records or b"")
            if outcome.acquired:
                fetched = True
                budget -= len(outcome.records or b"")
                left -= sum(r.last_offset - r.first_offset + 1 for r in outcome.acquired)
                if left <= 0 or budget <= 0:
                    break
        return fetched

    async def acknowledge(topic_id: Any, index: int, batches: list[tuple[int, int, list[int]]]) -> None:
        acknowledged[(topic_id, index)] = await shares.acknowledge(req.group_id, req.member_id, topic_id, index,
                                                                   batches, renew=renew)

    # Records are acquired before this request's acknowledgements take effect, as Kafka's fetch runs beside
    # their state write: a record released here is handed out by a later fetch (or a later round of this one).
    fetched = await acquire_round() if fetching else False
    async with trio.open_nursery() as nursery:  # the acknowledgements are written before the answer
        for t in req.topics:
            for p in t.partitions:
                if not p.acknowledgement_batches:
                    continue
                if names.get(t.topic_id) not in readable:
                    acknowledged[(t.topic_id, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    continue
                nursery.start_soon(acknowledge, t.topic_id, p.partition_index,
                                   [(b.first_offset, b.last_offset, list(b.acknowledge_types))
                                    for b in p.acknowledgement_batches])
    if req.share_session_epoch == FINAL_EPOCH:
        shares.close_session(req.group_id, req.member_id)
    if fetching and not fetched:
        deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
        while True:
            waiter = broker.appends.event
            if await acquire_round() or trio.current_time() >= deadline:
                break
            with trio.move_on_at(deadline):
                await waiter.wait()
    for key, error in acknowledged.items():
        results.setdefault(key, _partition(ctx, key[0], key[1]))["acknowledge_error_code"] = error
    by_topic: dict[Any, list[dict[str, Any]]] = {}
    for (topic_id, _index), partition in results.items():
        by_topic.setdefault(topic_id, []).append(partition)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "acquisition_lock_timeout_ms": shares.lock_duration_ms(req.group_id),
            "responses": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()],
            "node_endpoints": node_endpoints(ctx, by_topic, ("error_code", "acknowledge_error_code"))}
