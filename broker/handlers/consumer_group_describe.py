"""ConsumerGroupDescribe (KIP-848): state, epochs, assignor and members of consumer groups, each member
with its current and target assignment."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_operations
from protocol.header import ErrorCode

AUTHORIZED_OPERATIONS_OMITTED = -2147483648
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # MemberType: the protocol the member speaks (KIP-848 mixed membership)


def _assignment(ctx: RequestContext, assignment: Any) -> dict[str, Any]:
    topics = ctx.broker.topics
    out = []
    for topic_id, parts in assignment.items():
        topic = topics.get_by_id(topic_id)
        if topic is not None:
            out.append({"topic_id": topic_id, "topic_name": topic.name, "partitions": sorted(parts)})
    return {"topic_partitions": out}


def _described_assignment(ctx: RequestContext, member: Any) -> dict[Any, frozenset[int]]:
    """What a member owns: its assigned partitions, and from Kafka 4.3 those it still has to revoke too
    (recorded live: group_mixed_membership)."""
    if not ctx.broker.versions.since("4.3") or not member.partitions_pending_revocation:
        return member.assigned_partitions
    owned = dict(member.assigned_partitions)
    for topic_id, parts in member.partitions_pending_revocation.items():
        owned[topic_id] = owned.get(topic_id, frozenset()) | parts
    return owned


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    groups = ctx.broker.groups
    await groups.loaded.wait()
    out = []
    for group_id in req.group_ids:
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            out.append({"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "group_id": group_id,
                        "group_state": "", "assignor_name": "", "members": []})
            continue
        d = groups.consumer.describe([group_id])[0]
        if d.error != ErrorCode.NONE:
            out.append({"error_code": d.error, "error_message": d.message, "group_id": group_id,
                        "group_state": "", "assignor_name": "", "members": []})
            continue
        out.append({
            "error_code": ErrorCode.NONE, "group_id": group_id, "group_state": d.state,
            "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch, "assignor_name": d.assignor,
            "members": [{"member_id": m.member.member_id, "instance_id": m.member.instance_id,
                         "rack_id": m.member.rack_id, "member_epoch": m.member.member_epoch,
                         "client_id": m.member.client_id, "client_host": m.member.client_host,
                         "subscribed_topic_names": list(m.member.subscribed_topic_names),
                         # Kafka's member record keeps "" for no regex, and describes it so.
                         "subscribed_topic_regex": m.member.subscribed_topic_regex or "",
                         "assignment": _assignment(ctx, _described_assignment(ctx, m.member)),
                         "target_assignment": _assignment(ctx, m.target),
                         "member_type": CLASSIC_MEMBER if m.member.uses_classic_protocol else CONSUMER_MEMBER}
                        for m in d.members],
            "authorized_operations": authorized_operations(ctx, ResourceType.GROUP, group_id)
            if req.include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED})
    return {"throttle_time_ms": 0, "groups": out}
