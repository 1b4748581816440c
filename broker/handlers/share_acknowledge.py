"""ShareAcknowledge (KIP-932): ACCEPT, RELEASE or REJECT of records the member holds, within its share session
(the final epoch -1 also closes the session, releasing what the member still holds), answered once written to
the share coordinator; a partition led by another broker answers NOT_LEADER_OR_FOLLOWER with its leader. v2
(Kafka 4.2+, KIP-1222): RENEW in a request flagged IsRenewAck starts the records' acquisition locks again, and
the answer carries the lock duration."""

from __future__ import annotations

from typing import Any

import trio

from broker.handlers.context import RequestContext
from broker.handlers.share_fetch import current_leader, node_endpoints
from broker.security.access import AclOperation, ResourceType, authorized
from broker.services.share_partitions import FINAL_EPOCH, ShareSessionError
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    if not req.group_id or not req.member_id:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST, "responses": []}
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "responses": []}
    shares = broker.share_partitions
    await shares.loaded.wait()
    try:
        shares.session(req.group_id, req.member_id, req.share_session_epoch, [], [])
    except ShareSessionError as exc:
        return {"throttle_time_ms": 0, "error_code": exc.error, "error_message": str(exc), "responses": []}
    errors: dict[tuple[Any, int], ErrorCode] = {}

    async def acknowledge(topic_id: Any, p: Any) -> None:
        topic = broker.topics.get_by_id(topic_id)
        if topic is not None and not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, topic.name):
            errors[(topic_id, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            return
        errors[(topic_id, p.partition_index)] = await shares.acknowledge(
            req.group_id, req.member_id, topic_id, p.partition_index,
            [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in p.acknowledgement_batches],
            renew=req.is_renew_ack)

    async with trio.open_nursery() as nursery:  # answered once the share-partition state is written
        for t in req.topics:
            for p in t.partitions:
                nursery.start_soon(acknowledge, t.topic_id, p)
    if req.share_session_epoch == FINAL_EPOCH:
        shares.close_session(req.group_id, req.member_id)
    by_topic = {t.topic_id: [{"partition_index": p.partition_index,
                              "error_code": errors[(t.topic_id, p.partition_index)],
                              "current_leader": current_leader(ctx, t.topic_id, p.partition_index)}
                             for p in t.partitions] for t in req.topics}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "responses": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()],
            "node_endpoints": node_endpoints(ctx, by_topic),
            "acquisition_lock_timeout_ms": shares.lock_duration_ms(req.group_id)}
