"""DeleteGroups: empty groups go with their offsets (tombstones); others get NON_EMPTY_GROUP."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized_names
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    groups = ctx.broker.groups
    await groups.loaded.wait()
    names = [g for g in req.groups_names if g is not None]  # a null id is INVALID_GROUP_ID, not a resource
    deletable = authorized_names(ctx, AclOperation.DELETE, ResourceType.GROUP, names)
    now = ctx.broker.now_ms()
    elsewhere = {g: e for g in deletable if (e := groups.runtime.error_for(g))}  # coordinated by another broker
    wanted = [g for g in req.groups_names if g is None or (g in deletable and g not in elsewhere)]
    # KIP-848 consumer groups: their records go (Empty only), then their offsets like any group's.
    consumer = {g: groups.consumer.delete_group(g, now) for g in wanted if g in groups.consumer.groups}
    # KIP-1071 streams groups likewise (Empty only).
    consumer.update({g: groups.streams.delete_group(g, now) for g in wanted if g in groups.streams.groups})
    # KIP-932 share groups (Empty only): the state of their share partitions at the share coordinator, then
    # their records.
    for g in [g for g in wanted if g in groups.share.groups]:
        share_group = groups.share.groups[g]
        if share_group.members:
            consumer[g] = ErrorCode.NON_EMPTY_GROUP
            continue
        error = await groups.delete_share_state(g, list(groups.share.state_partitions(g)))
        consumer[g] = error or groups.share.delete_group(g, ctx.broker.now_ms())
    errors = groups.coordinator.delete_groups([g for g in wanted if g not in consumer or
                                               (consumer[g] == ErrorCode.NONE and g in groups.coordinator.groups)],
                                              now)
    errors.update({g: e for g, e in consumer.items() if e != ErrorCode.NONE or g not in errors})
    errors.update(elsewhere)
    groups.changed()
    for group_id in errors:
        if group_id not in elsewhere:
            await groups.durable(group_id)
    errors.update({g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in names if g not in deletable})
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": errors[g]} for g in req.groups_names]}
