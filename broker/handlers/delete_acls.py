"""DeleteAcls: per filter, the ACLs it matched and deleted (an ACL matched by several filters is reported
under the first, as Kafka's AclControlManager does). Needs ALTER on the cluster."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.describe_acls import acl_filter
from broker.security.access import cluster_authorized
from broker.security.acls import AclBinding, AclOperation, InvalidAclError
from protocol.header import ErrorCode


def _matching(acl: AclBinding) -> dict[str, Any]:
    return {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": acl.resource_type,
            "resource_name": acl.name, "pattern_type": acl.pattern_type, "principal": acl.principal,
            "host": acl.host, "operation": acl.operation, "permission_type": acl.permission}


def _result(error: ErrorCode, message: str | None, deleted: list[AclBinding]) -> dict[str, Any]:
    return {"error_code": error, "error_message": message, "matching_acls": [_matching(a) for a in deleted]}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not cluster_authorized(ctx, AclOperation.ALTER):
        return {"throttle_time_ms": 0, "filter_results": [
            _result(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", [])
            for _ in req.filters]}
    authorizer = ctx.broker.authorizer
    remaining = dict.fromkeys(authorizer.acls)
    results = []
    for f in req.filters:
        wanted = acl_filter(f)
        try:
            wanted.validate()
        except InvalidAclError as exc:
            results.append(_result(ErrorCode.INVALID_REQUEST, str(exc), []))
            continue
        deleted = [acl for acl in remaining if wanted.matches(acl)]
        for acl in deleted:
            del remaining[acl]
        results.append(_result(ErrorCode.NONE, None, deleted))
    if len(remaining) != len(authorizer.acls):
        try:
            ctx.broker.acl_store.save(remaining)
        except OSError as exc:
            return {"throttle_time_ms": 0, "filter_results": [
                _result(ErrorCode.UNKNOWN_SERVER_ERROR, f"Cannot store ACLs: {exc}", []) for _ in req.filters]}
        authorizer.replace(remaining)
    return {"throttle_time_ms": 0, "filter_results": results}
