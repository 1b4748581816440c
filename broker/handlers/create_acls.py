"""CreateAcls: validated as Kafka does (per creation, INVALID_REQUEST), added once, persisted before the
answer. Needs ALTER on the cluster."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import cluster_authorized
from broker.security.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
    from_code,
    validate_new_acl,
)
from protocol.header import ErrorCode


def binding(creation: Any) -> AclBinding:
    return AclBinding(from_code(ResourceType, creation.resource_type), creation.resource_name,
                      from_code(PatternType, creation.resource_pattern_type), creation.principal, creation.host,
                      from_code(AclOperation, creation.operation),
                      from_code(AclPermissionType, creation.permission_type))


def _answer(results: list[tuple[ErrorCode, str | None]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0,
            "results": [{"error_code": error, "error_message": message} for error, message in results]}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not cluster_authorized(ctx, AclOperation.ALTER):
        return _answer([(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")]
                       * len(req.creations))
    results: list[tuple[ErrorCode, str | None]] = []
    valid: list[AclBinding] = []
    for creation in req.creations:
        acl = binding(creation)
        try:
            validate_new_acl(acl)
        except InvalidAclError as exc:
            results.append((ErrorCode.INVALID_REQUEST, str(exc)))
            continue
        valid.append(acl)
        results.append((ErrorCode.NONE, None))
    if valid:
        broker = ctx.broker
        acls = broker.authorizer.with_created(valid)
        try:
            broker.acl_store.save(acls)
        except OSError as exc:
            return _answer([(ErrorCode.UNKNOWN_SERVER_ERROR, f"Cannot store ACLs: {exc}")
                            if error == ErrorCode.NONE else (error, message) for error, message in results])
        broker.authorizer.replace(acls)
    return _answer(results)
