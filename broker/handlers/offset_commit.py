"""OffsetCommit: committed offsets (with leader epoch and metadata) of a group's partitions, checked
against the group's generation and members; answered once durable. v10 names topics by id."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import trio

from broker.handlers.context import RequestContext
from broker.handlers.topic_ids import name_topics
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from protocol.group_records import OffsetValue
from protocol.header import ErrorCode

DEFAULT_RETENTION = -1
INT64_MAX = (1 << 63) - 1


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    broker = ctx.broker
    groups = broker.groups
    await groups.loaded.wait()
    if version >= 10:
        name_topics(ctx, req.topics)
    not_here = groups.runtime.error_for(req.group_id) if version > 0 else None
    now = broker.now_ms()
    # v2-4 may ask for a retention of their own; later versions use offsets.retention.minutes.
    retention = req.retention_time_ms if 2 <= version <= 4 else DEFAULT_RETENTION
    # Kafka adds the two as Java longs; a retention near 2^63 (found by fuzzing) means "never" here rather
    # than a wrapped-around timestamp.
    expire = max(min(now + retention, INT64_MAX), -INT64_MAX - 1) if retention != DEFAULT_RETENTION else None
    errors: dict[tuple[str, int], ErrorCode] = {}
    offsets: dict[tuple[str, int], OffsetValue] = {}
    # READ on the group, then on each topic (KafkaApis.handleOffsetCommitRequest).
    group_ok = authorized(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id)
    readable = authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC,
                                (t.name for t in req.topics if t.name is not None))
    for t in req.topics:
        topic = broker.topics.get(t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if not group_ok:
                errors[tp] = ErrorCode.GROUP_AUTHORIZATION_FAILED
                continue
            if t.name is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_ID
                continue
            if not_here:
                errors[tp] = not_here
                continue
            if t.name not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            # v1 may give the commit time (offsets then expire from it); -1 or later versions: now.
            committed_at = p.commit_timestamp if version == 1 and p.commit_timestamp != -1 else now
            offsets[tp] = OffsetValue(p.committed_offset, p.committed_leader_epoch if version >= 6 else -1,
                                      p.committed_metadata or "", committed_at, expire)
    if offsets and version == 0:
        # v0: ZooKeeper's store in a ZooKeeper-mode Kafka, apart from the coordinator's (offset only).
        too_large = {tp for tp, v in offsets.items() if len(v.metadata) > broker.config.offset_metadata_max_bytes}
        errors.update((tp, ErrorCode.OFFSET_METADATA_TOO_LARGE) for tp in too_large)
        kept = {tp: v.offset for tp, v in offsets.items() if tp not in too_large}
        await trio.to_thread.run_sync(broker.legacy_offsets.commit, req.group_id, kept)
        errors.update((tp, ErrorCode.NONE) for tp in kept)
    elif offsets and (modern := groups.modern_coordinator(req.group_id)) is not None:
        # A KIP-848 consumer group or a KIP-1071 streams group: the member epoch is checked (STALE_MEMBER_EPOCH;
        # a streams member behind by an epoch, per partition); the offsets are kept like any group's.
        refused = check_member_epoch(modern.validate_offset_commit(
            req.group_id, req.member_id, req.group_instance_id if version >= 7 else None,
            req.generation_id_or_member_epoch, False, version), offsets)
        errors.update(refused)
        offsets = {tp: v for tp, v in offsets.items() if tp not in refused}
        if offsets:
            errors.update(groups.coordinator.commit_offsets(
                group_id=req.group_id, generation_id=-1, member_id="", group_instance_id=None, offsets=offsets,
                api_version=version, now_ms=now))
            groups.changed()
            await groups.durable(req.group_id)
    elif offsets:
        errors.update(groups.coordinator.commit_offsets(
            group_id=req.group_id, generation_id=req.generation_id_or_member_epoch, member_id=req.member_id,
            group_instance_id=req.group_instance_id if version >= 7 else None, offsets=offsets,
            api_version=version, now_ms=now))
        groups.changed()
        stored = await groups.durable(req.group_id)
        if stored:
            errors.update((tp, stored) for tp, e in errors.items() if e == ErrorCode.NONE and tp in offsets)
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "topic_id": t.topic_id, "partitions": [{"partition_index": p.partition_index,
                                         "error_code": errors[(t.name, p.partition_index)]}
                                        for p in t.partitions]}
        for t in req.topics]}


def check_member_epoch(check: ErrorCode | Callable[[str, int], ErrorCode], partitions: Iterable[tuple[str, int]]
                       ) -> dict[tuple[str, int], ErrorCode]:
    """The partitions a modern group's member epoch check refuses, with its error: all of them for one error,
    or those a streams group's per-partition check refuses."""
    if callable(check):
        return {tp: e for tp in partitions if (e := check(*tp)) != ErrorCode.NONE}
    return {} if check == ErrorCode.NONE else dict.fromkeys(partitions, check)
