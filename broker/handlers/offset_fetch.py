"""OffsetFetch: a group's committed offsets for the given partitions, or all of them (null topics, v2+);
several groups per request from v8; topics named by id from v10. A partition without a commit answers
offset -1."""

from __future__ import annotations

from itertools import groupby
from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.topic_ids import name_topics
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from protocol.group_records import OffsetValue
from protocol.header import ErrorCode

NO_OFFSET = -1


def _partition(index: int, value: OffsetValue | None, error: ErrorCode = ErrorCode.NONE) -> dict[str, Any]:
    if value is None:
        return {"partition_index": index, "committed_offset": NO_OFFSET, "committed_leader_epoch": -1,
                "metadata": "", "error_code": error}
    return {"partition_index": index, "committed_offset": value.offset, "committed_leader_epoch": value.leader_epoch,
            "metadata": value.metadata, "error_code": error}


def _topics(ctx: RequestContext, group_id: str, topics: Any, require_stable: bool,
            by_id: bool = False) -> list[dict[str, Any]]:
    if by_id:
        return _topics_by_id(ctx, group_id, topics, require_stable)
    coordinator = ctx.broker.groups.coordinator
    wanted = None if topics is None else [(t.name, i) for t in topics for i in t.partition_indexes]
    found = coordinator.fetch_offsets(group_id, wanted)
    # KIP-447: a consumer asking for stable offsets waits (retries) while a transaction's commit is pending.
    unstable = coordinator.unstable_partitions(group_id) if require_stable else set()
    # DESCRIBE on each topic: named topics answer TOPIC_AUTHORIZATION_FAILED, an "all topics" answer leaves
    # them out (KafkaApis.handleOffsetFetchRequest).
    describable = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (tp[0] for tp, _ in found))
    out = []
    for name, entries in groupby(found, key=lambda e: e[0][0]):
        if name not in describable:
            if topics is not None:
                out.append({"name": name, "partitions": [
                    _partition(tp[1], None, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for tp, _ in entries]})
            continue
        out.append({"name": name, "partitions": [
            _partition(tp[1], None, ErrorCode.UNSTABLE_OFFSET_COMMIT) if tp in unstable
            else _partition(tp[1], value) for tp, value in entries]})
    return out


def _topics_by_id(ctx: RequestContext, group_id: str, topics: Any, require_stable: bool) -> list[dict[str, Any]]:
    """v10: the answer by name, each topic under its id, in the order asked; an id no topic has answers
    UNKNOWN_TOPIC_ID for its partitions, and of all topics (null) those that no longer exist are left out."""
    name_topics(ctx, topics)
    known = None if topics is None else [t for t in topics if t.name is not None]
    by_name = {entry["name"]: entry for entry in _topics(ctx, group_id, known, require_stable)}
    if topics is None:
        asked = [(name, None) for name in by_name]
    else:
        asked = [(t.name, t) for t in topics]
    out = []
    for name, t in asked:
        topic = ctx.broker.topics.get(name) if name is not None else None
        if topic is None:
            if t is not None:
                out.append({"topic_id": t.topic_id, "partitions": [
                    _partition(i, None, ErrorCode.UNKNOWN_TOPIC_ID) for i in t.partition_indexes]})
            continue
        out.append({**by_name.get(name, {"name": name, "partitions": []}), "topic_id": topic.topic_id})
    return out


def _group_error(ctx: RequestContext, group_id: str, member_id: str | None = None,
                 member_epoch: int = -1) -> ErrorCode:
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    error = ctx.broker.groups.runtime.error_for(group_id)
    if error:
        return error
    # v9+: a KIP-848 or KIP-1071 member names itself and its epoch (STALE_MEMBER_EPOCH when it is behind).
    modern = ctx.broker.groups.modern_coordinator(group_id) or ctx.broker.groups.consumer
    return modern.validate_offset_fetch(group_id, member_id, member_epoch)


def _legacy(ctx: RequestContext, req: Any) -> dict[str, Any]:
    """v0 (KafkaApis.handleOffsetFetchRequestFromZookeeper): offsets of the v0 store only, no metadata; a
    partition without one, or unknown, answers UNKNOWN_TOPIC_OR_PARTITION with offset -1."""
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, req.group_id):
        denied = ErrorCode.GROUP_AUTHORIZATION_FAILED
        return {"topics": [{"name": t.name, "partitions": [_partition(i, None, denied) for i in t.partition_indexes]}
                           for t in req.topics]}
    store = ctx.broker.legacy_offsets
    describable = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in req.topics))
    out = []
    for t in req.topics:
        topic = ctx.broker.topics.get(t.name)
        partitions = []
        for i in t.partition_indexes:
            offset = store.get(req.group_id, t.name, i)
            if t.name not in describable:
                partitions.append(_partition(i, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif topic is None or not 0 <= i < len(topic.partitions) or offset is None:
                partitions.append(_partition(i, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                partitions.append({"partition_index": i, "committed_offset": offset, "committed_leader_epoch": -1,
                                   "metadata": "", "error_code": ErrorCode.NONE})
        out.append({"name": t.name, "partitions": partitions})
    return {"topics": out}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    if version == 0:
        return _legacy(ctx, req)
    stable = version >= 7 and bool(req.require_stable)
    if version >= 8:
        groups = []
        for g in req.groups:
            error = _group_error(ctx, g.group_id, g.member_id if version >= 9 else None,
                                 g.member_epoch if version >= 9 else -1)
            groups.append({"group_id": g.group_id, "error_code": error,
                           "topics": _topics(ctx, g.group_id, g.topics, stable, version >= 10)
                           if error == ErrorCode.NONE else []})
        return {"throttle_time_ms": 0, "groups": groups}
    error = _group_error(ctx, req.group_id)
    if error != ErrorCode.NONE:
        if version >= 2:
            return {"throttle_time_ms": 0, "error_code": error, "topics": []}
        # v1 has no top-level error: every partition carries it.
        return {"topics": [{"name": t.name, "partitions": [_partition(i, None, error) for i in t.partition_indexes]}
                           for t in req.topics]}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "topics": _topics(ctx, req.group_id, req.topics, stable)}
