"""TxnOffsetCommit: offsets committed inside a producer's transaction, visible once it commits. v6 names
topics by id."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.offset_commit import check_member_epoch
from broker.handlers.topic_ids import name_topics
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from broker.services.internal_topics import partition_for
from broker.services.topics import OFFSETS_TOPIC, TopicError
from protocol.group_records import OffsetValue
from protocol.header import ErrorCode


def _answer(req: Any, errors: dict[tuple[str, int], ErrorCode] | ErrorCode) -> dict[str, Any]:
    def error(name: str, index: int) -> ErrorCode:
        return errors if isinstance(errors, ErrorCode) else errors[(name, index)]
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "topic_id": t.topic_id, "partitions": [{"partition_index": p.partition_index,
                                         "error_code": error(t.name, p.partition_index)} for p in t.partitions]}
        for t in req.topics]}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    groups, txns = ctx.broker.groups, ctx.broker.txns
    await groups.loaded.wait()
    await txns.loaded.wait()
    if version >= 6:
        name_topics(ctx, req.topics)
    if not authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        return _answer(req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return _answer(req, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not req.group_id:
        return _answer(req, ErrorCode.INVALID_GROUP_ID)
    not_here = groups.runtime.error_for(req.group_id)  # the group's coordinator takes TxnOffsetCommit
    if not_here:
        return _answer(req, not_here)
    try:
        offsets_topic = groups.runtime.topic()
    except (TopicError, OSError):
        return _answer(req, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    # The group's partition must be in the transaction (AddOffsetsToTxn first), as Kafka verifies.
    partition = (OFFSETS_TOPIC, partition_for(req.group_id, len(offsets_topic.partitions)))
    # The transaction coordinator's check, where it is this broker; in a cluster it is usually another one,
    # which a transaction version 1 producer has asked with AddOffsetsToTxn already, and which this broker asks
    # to add the partition for a version 2 producer (KIP-890: it sends no AddOffsetsToTxn).
    if txns.runtime.error_for(req.transactional_id):
        error = ErrorCode.NONE
        if version >= 5 and ctx.broker.zk_cluster is not None:
            added = await ctx.broker.zk_cluster.verify_transaction(req.transactional_id, req.producer_id,
                                                                   req.producer_epoch, [partition],
                                                                   verify_only=False)
            # An unreachable or moved transaction coordinator: retriable, as Kafka maps a coordinator's
            # NOT_ENOUGH_REPLICAS.
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE if added[partition] == ErrorCode.NOT_ENOUGH_REPLICAS \
                else added[partition]
    elif version >= 5:
        # Transaction version 2: the commit adds the group's partition itself (no AddOffsetsToTxn, KIP-890).
        outcome = txns.coordinator.add_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                                                  [partition], ctx.broker.now_ms())
        error = await txns.apply(outcome.transit, outcome.error)
    else:
        error = txns.coordinator.verify_partition(req.transactional_id, req.producer_id, req.producer_epoch,
                                                  partition)
    if error != ErrorCode.NONE:
        if error == ErrorCode.PRODUCER_FENCED and version < 3:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        return _answer(req, error)
    now = ctx.broker.now_ms()
    offsets = {(t.name, p.partition_index): OffsetValue(
                   p.committed_offset, p.committed_leader_epoch if version >= 2 else -1,
                   p.committed_metadata or "", now)
               for t in req.topics for p in t.partitions}
    readable = authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC,
                                (t.name for t in req.topics if t.name is not None))
    known = {tp: v for tp, v in offsets.items() if tp[0] in readable and ctx.broker.topics.partition(*tp) is not None}
    errors = {tp: ErrorCode.UNKNOWN_TOPIC_ID if tp[0] is None else
              ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp[0] in readable else ErrorCode.TOPIC_AUTHORIZATION_FAILED
              for tp in offsets}
    member_id = req.member_id if version >= 3 else ""
    instance_id = req.group_instance_id if version >= 3 else None
    generation = req.generation_id_or_member_epoch if version >= 3 else -1
    if known and (modern := groups.modern_coordinator(req.group_id)) is not None:
        # A KIP-848 consumer or KIP-1071 streams group checks the member epoch; the offsets are pending like
        # any group's.
        refused = check_member_epoch(modern.validate_offset_commit(req.group_id, member_id, instance_id,
                                                                   generation, True, version), known)
        errors.update(refused)
        known = {tp: v for tp, v in known.items() if tp not in refused}
        member_id, instance_id, generation = "", None, -1
    if known:
        errors.update(groups.coordinator.txn_commit_offsets(
            group_id=req.group_id, producer_id=req.producer_id, producer_epoch=req.producer_epoch,
            member_id=member_id, group_instance_id=instance_id, generation_id=generation, offsets=known,
            now_ms=now))
        stored = await groups.durable(req.group_id)
        if stored:
            errors.update((tp, stored) for tp, e in errors.items() if e == ErrorCode.NONE)
    return _answer(req, errors)
