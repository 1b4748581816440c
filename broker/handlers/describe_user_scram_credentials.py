"""DescribeUserScramCredentials: users' SCRAM mechanisms and iterations (never the keys). Needs DESCRIBE on
the cluster."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed.", "results": []}
    users = None if req.users is None else [u.name for u in req.users]
    results = []
    for user, error, infos in ctx.broker.scram_credentials.describe(users):
        results.append({"user": user, "error_code": error.error if error else ErrorCode.NONE,
                        "error_message": error.message if error else None,
                        "credential_infos": [{"mechanism": m, "iterations": i} for m, i in infos]})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "results": results}
