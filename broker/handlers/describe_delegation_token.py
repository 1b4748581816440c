"""DescribeDelegationToken: the tokens of some owners (or all) that the caller owns, renews, requested, or may
describe (DESCRIBE on the token, DESCRIBE_TOKENS on its owner), with their HMACs."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.delegation_token_access import principal, split, token_requests_allowed
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not token_requests_allowed(ctx):
        return {"error_code": ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, "tokens": [], "throttle_time_ms": 0}
    tokens = ctx.broker.delegation_tokens
    if not tokens.enabled:
        return {"error_code": ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, "tokens": [], "throttle_time_ms": 0}
    owners = None if req.owners is None else [principal(o.principal_type, o.principal_name) for o in req.owners]

    def may_describe(token: Any) -> bool:
        return (token.owner_or_renewer(ctx.principal)
                or authorized(ctx, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id)
                or authorized(ctx, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, token.owner))

    out = []
    for token in tokens.describe(owners, may_describe):
        owner_type, owner_name = split(token.owner)
        requester_type, requester_name = split(token.requester)
        out.append({"principal_type": owner_type, "principal_name": owner_name,
                    "token_requester_principal_type": requester_type,
                    "token_requester_principal_name": requester_name, "issue_timestamp": token.issue_ms,
                    "expiry_timestamp": token.expiry_ms, "max_timestamp": token.max_ms, "token_id": token.token_id,
                    "hmac": tokens.hmac(token.token_id),
                    "renewers": [dict(zip(("principal_type", "principal_name"), split(r), strict=True))
                                 for r in token.renewers]})
    return {"error_code": ErrorCode.NONE, "tokens": out, "throttle_time_ms": 0}
