"""ShareAcknowledge (KIP-932): ACCEPT, RELEASE or REJECT of records the member holds, within its share session
(the final epoch -1 also closes the session); v2 (Kafka 4.2+, KIP-1222): RENEW in a request flagged IsRenewAck
starts the records' acquisition locks again, and the answer carries the lock duration."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized
from broker.services.share_partitions import ShareSessionError
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
    responses = []
    written = {}
    for t in req.topics:
        partitions = []
        for p in t.partitions:
            topic = broker.topics.get_by_id(t.topic_id)
            if topic is not None and not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, topic.name):
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            else:
                error, state = shares.acknowledge(req.group_id, req.member_id, t.topic_id, p.partition_index,
                                                  [(b.first_offset, b.last_offset, list(b.acknowledge_types))
                                                   for b in p.acknowledgement_batches], renew=req.is_renew_ack)
                if state is not None:
                    written[id(state)] = state
            partitions.append({"partition_index": p.partition_index, "error_code": error,
                               "current_leader": {"leader_id": broker.node_id, "leader_epoch": 0}})
        responses.append({"topic_id": t.topic_id, "partitions": partitions})
    # Answered once the share-partition state is durable, as Kafka's persister write.
    for state in written.values():
        await broker.durability.wait(state, state.log.log_end_offset - 1)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "responses": responses, "node_endpoints": [],
            "acquisition_lock_timeout_ms": shares.lock_duration_ms(req.group_id)}
