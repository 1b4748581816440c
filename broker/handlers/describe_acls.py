"""DescribeAcls: the ACLs matching one filter, grouped by resource pattern. Needs DESCRIBE on the cluster."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import cluster_authorized
from broker.security.acls import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
    from_code,
)
from protocol.header import ErrorCode


def acl_filter(f: Any) -> AclBindingFilter:
    """A request's filter (DescribeAcls and DeleteAcls name the fields alike)."""
    return AclBindingFilter(from_code(ResourceType, f.resource_type_filter), f.resource_name_filter,
                            from_code(PatternType, f.pattern_type_filter), f.principal_filter, f.host_filter,
                            from_code(AclOperation, f.operation), from_code(AclPermissionType, f.permission_type))


def _error(error: ErrorCode, message: str) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "resources": []}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    wanted = acl_filter(req)
    try:
        wanted.validate()
    except InvalidAclError as exc:
        return _error(ErrorCode.INVALID_REQUEST, str(exc))
    resources: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in ctx.broker.authorizer.matching(wanted):
        resources.setdefault((acl.resource_type, acl.name, acl.pattern_type), []).append(
            {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
             "permission_type": acl.permission})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "resources": [
        {"resource_type": rtype, "resource_name": name, "pattern_type": ptype, "acls": acls}
        for (rtype, name, ptype), acls in resources.items()]}
