"""Authorization of a request: the one place handlers ask the broker's authorizer, for the request's
principal and client host (Kafka's AuthHelper)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from broker.security.acls import CLUSTER_NAME, AclOperation, Authorizer, ResourceType
from protocol.header import ErrorCode

__all__ = ["AclOperation", "ResourceType", "authorized", "authorized_by_resource_type", "authorized_names",
           "authorized_operations", "cluster_authorized", "config_resource_error"]

TOPIC_CONFIG, BROKER_CONFIG = 2, 4  # ConfigResource types


class RequestContext(Protocol):
    """What a check needs of a request (broker.handlers.context.RequestContext has it)."""

    @property
    def principal(self) -> str: ...

    @property
    def client_host(self) -> str: ...

    @property
    def authorizer(self) -> Authorizer: ...


def authorized(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
    return ctx.authorizer.authorize(ctx.principal, ctx.client_host, operation, resource_type, name)


def cluster_authorized(ctx: RequestContext, operation: AclOperation) -> bool:
    return authorized(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def authorized_names(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType,
                     names: Iterable[str]) -> set[str]:
    """The names the request may do `operation` on (AuthHelper.filterByAuthorized)."""
    return {name for name in set(names) if authorized(ctx, operation, resource_type, name)}


def authorized_by_resource_type(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType) -> bool:
    """May the request do `operation` on some resource of this type (Authorizer.authorizeByResourceType)?"""
    return ctx.authorizer.authorize_by_resource_type(ctx.principal, ctx.client_host, operation, resource_type)


def config_resource_error(ctx: RequestContext, operation: AclOperation, resource_type: int, name: str) -> ErrorCode:
    """DESCRIBE_CONFIGS / ALTER_CONFIGS on a config resource (ConfigResource type 2 topic, 4 broker): the
    authorization error of a resource the request may not touch, else NONE (other types are checked later)."""
    if resource_type == TOPIC_CONFIG and not authorized(ctx, operation, ResourceType.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type == BROKER_CONFIG and not cluster_authorized(ctx, operation):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return ErrorCode.NONE


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """The "authorized operations" bitfield of Metadata, DescribeGroups and DescribeCluster."""
    return ctx.authorizer.authorized_operations(ctx.principal, ctx.client_host, resource_type, name)
