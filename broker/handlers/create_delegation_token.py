"""CreateDelegationToken (KIP-48; v3: a token for another owner, KIP-373): a token for the caller or, with
CREATE_TOKENS on that user, for someone else (broker/services/delegation_tokens.py)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.delegation_token_access import principal, split, token_requests_allowed
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode


def _answer(owner: str, requester: str, error: ErrorCode, token: Any = None, mac: bytes = b"") -> dict[str, Any]:
    owner_type, owner_name = split(owner)
    requester_type, requester_name = split(requester)
    return {"error_code": error, "principal_type": owner_type, "principal_name": owner_name,
            "token_requester_principal_type": requester_type, "token_requester_principal_name": requester_name,
            "issue_timestamp_ms": token.issue_ms if token else -1, "expiry_timestamp_ms": token.expiry_ms if token
            else -1, "max_timestamp_ms": token.max_ms if token else -1, "token_id": token.token_id if token else "",
            "hmac": mac, "throttle_time_ms": 0}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    requester = ctx.principal
    owner = requester if ctx.header.api_version < 3 or not req.owner_principal_name else \
        principal(req.owner_principal_type, req.owner_principal_name)
    renewers = [principal(r.principal_type, r.principal_name) for r in req.renewers]
    if not token_requests_allowed(ctx):
        return _answer(owner, requester, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if owner != requester and not authorized(ctx, AclOperation.CREATE_TOKENS, ResourceType.USER, owner):
        return _answer(owner, requester, ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
    if any(not r.startswith("User:") for r in renewers):
        return _answer(owner, requester, ErrorCode.INVALID_PRINCIPAL_TYPE)
    created = await ctx.broker.delegation_tokens.create(owner, requester, renewers, req.max_lifetime_ms,
                                                        ctx.broker.now_ms())
    return _answer(owner, requester, created.error, created.token, created.hmac)
