"""AlterUserScramCredentials: deletions and upsertions of users' SCRAM credentials, all or nothing per user.
Needs ALTER on the cluster."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    items = [*req.deletions, *req.upsertions]
    if not cluster_authorized(ctx, AclOperation.ALTER):
        return {"throttle_time_ms": 0, "results": [
            {"user": name, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
            for name in dict.fromkeys(i.name for i in items)]}
    try:
        outcome = ctx.broker.scram_credentials.alter(list(req.deletions), list(req.upsertions))
    except OSError as exc:
        return {"throttle_time_ms": 0, "results": [
            {"user": name, "error_code": ErrorCode.KAFKA_STORAGE_ERROR, "error_message": str(exc)}
            for name in dict.fromkeys(i.name for i in items)]}
    return {"throttle_time_ms": 0, "results": [
        {"user": user, "error_code": error.error if error else ErrorCode.NONE,
         "error_message": error.message if error else None} for user, error in outcome.items()]}
