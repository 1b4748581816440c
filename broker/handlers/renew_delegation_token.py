"""RenewDelegationToken: a token's expiry moved on by its owner or a renewer, up to its max lifetime."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.delegation_token_access import token_requests_allowed
from protocol.header import ErrorCode


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not token_requests_allowed(ctx):
        return {"error_code": ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, "expiry_timestamp_ms": -1,
                "throttle_time_ms": 0}
    error, expiry = await ctx.broker.delegation_tokens.renew(bytes(req.hmac), ctx.principal, req.renew_period_ms,
                                                             ctx.broker.now_ms())
    return {"error_code": error, "expiry_timestamp_ms": expiry, "throttle_time_ms": 0}
