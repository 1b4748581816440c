"""DescribeGroups: state, protocol and members of each group; member metadata only in Stable, assignments too
(3.x) or in every state (4.x). An unknown group is reported Dead, without an error up to v5 and with
GROUP_ID_NOT_FOUND from v6 (KIP-1043)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_operations
from protocol.header import ErrorCode

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    groups = ctx.broker.groups
    include_ops = version >= 3 and req.include_authorized_operations
    out = []
    for group_id in req.groups:
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            out.append({"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "group_id": group_id,
                        "group_state": "", "protocol_type": "", "protocol_data": "", "members": [],
                        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})
            continue
        not_here = groups.runtime.error_for(group_id)
        if not_here:
            out.append({"error_code": not_here, "group_id": group_id,
                        "group_state": "", "protocol_type": "", "protocol_data": "", "members": [],
                        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})
            continue
        # KIP-848, KIP-932 and KIP-1071 groups: Consumer/Share/StreamsGroupDescribe describe those.
        consumer = group_id in groups.consumer.groups or group_id in groups.share.groups \
            or group_id in groups.streams.groups
        if consumer or (version >= 6 and group_id not in groups.coordinator.groups):
            message = f"Group {group_id} is not a classic group." if consumer else f"Group {group_id} not found."
            # Up to v5 a Dead group without an error, described with the operations like any (KafkaApis).
            ops = authorized_operations(ctx, ResourceType.GROUP, group_id) if include_ops and version < 6 \
                else AUTHORIZED_OPERATIONS_OMITTED
            out.append({"error_code": ErrorCode.GROUP_ID_NOT_FOUND if version >= 6 else ErrorCode.NONE,
                        "error_message": message if version >= 6 else None,
                        "group_id": group_id, "group_state": "Dead", "protocol_type": "", "protocol_data": "",
                        "members": [], "authorized_operations": ops})
            continue
        # Kafka 4's coordinator describes the members' assignments in every state, Kafka 3's once Stable only.
        d = groups.coordinator.describe_group(group_id, ctx.broker.versions.since("4.0"))
        out.append({"error_code": ErrorCode.NONE, "group_id": group_id, "group_state": d.state,
                    "protocol_type": d.protocol_type, "protocol_data": d.protocol,
                    "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                                 "client_id": m.client_id, "client_host": m.client_host,
                                 "member_metadata": m.metadata, "member_assignment": m.assignment}
                                for m in d.members],
                    "authorized_operations": authorized_operations(ctx, ResourceType.GROUP, group_id)
                    if include_ops else AUTHORIZED_OPERATIONS_OMITTED})
    return {"throttle_time_ms": 0, "groups": out}
