"""Authorization of a request: the one place handlers ask the broker's authorizer, for the request's
principal and client host (Kafka's AuthHelper)."""

from __future__ import annotations

from collections.abc import Iterable

from broker.acls import CLUSTER_NAME, AclOperation, ResourceType
from broker.dispatch import RequestContext

__all__ = ["AclOperation", "ResourceType", "authorized", "authorized_names", "authorized_operations",
           "cluster_authorized"]


def authorized(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
    return ctx.state.authorizer.authorize(ctx.principal, ctx.client_host, operation, resource_type, name)


def cluster_authorized(ctx: RequestContext, operation: AclOperation) -> bool:
    return authorized(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def authorized_names(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType,
                     names: Iterable[str]) -> set[str]:
    """The names the request may do `operation` on (AuthHelper.filterByAuthorized)."""
    return {name for name in set(names) if authorized(ctx, operation, resource_type, name)}


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """The "authorized operations" bitfield of Metadata, DescribeGroups and DescribeCluster."""
    return ctx.state.authorizer.authorized_operations(ctx.principal, ctx.client_host, resource_type, name)
