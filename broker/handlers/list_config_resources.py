"""ListConfigResources (KIP-1142; v0 was ListClientMetricsResources, KIP-1000), in the 4.x profiles: the
resources DescribeConfigs can be asked about. Needs DESCRIBE_CONFIGS on the cluster, as Kafka's does.

v0 lists client-metrics subscriptions only; minibroker has none (no KIP-714 telemetry). v1 lists the types
asked for (all when none are): topics, this broker, groups with dynamic configs (none: group configs are
not kept) and client-metrics subscriptions (none). A type Kafka does not list gets INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode

TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
LISTED_TYPES = (TOPIC, BROKER, GROUP, CLIENT_METRICS)


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "config_resources": []}
    if not cluster_authorized(ctx, AclOperation.DESCRIBE_CONFIGS):
        body["error_code"] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return body
    if ctx.header.api_version == 0:
        return body  # client-metrics subscriptions: none
    wanted = list(req.resource_types) or list(LISTED_TYPES)
    if any(t not in LISTED_TYPES for t in wanted):
        body["error_code"] = ErrorCode.INVALID_REQUEST
        return body
    resources = []
    if TOPIC in wanted:
        resources += [{"resource_name": t.name, "resource_type": TOPIC} for t in ctx.broker.topics]
    if BROKER in wanted:
        resources.append({"resource_name": str(ctx.broker.node_id), "resource_type": BROKER})
    body["config_resources"] = resources
    return body
