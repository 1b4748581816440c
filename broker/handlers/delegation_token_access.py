"""What the four delegation token handlers share: whether a connection may manage tokens at all (Kafka's
KafkaApis.allowTokenRequests) and principals as the requests spell them."""

from __future__ import annotations

from broker.handlers.context import RequestContext

ANONYMOUS = "User:ANONYMOUS"


def token_requests_allowed(ctx: RequestContext) -> bool:
    """Tokens are for clients that authenticated otherwise: never on PLAINTEXT, nor over SSL without a client
    certificate (ANONYMOUS), nor with a delegation token itself."""
    security = ctx.endpoint.security if ctx.endpoint is not None else None
    protocol = getattr(getattr(security, "protocol", None), "value", "PLAINTEXT")
    if protocol == "PLAINTEXT" or ctx.token_authenticated:
        return False
    return not (protocol == "SSL" and ctx.principal == ANONYMOUS)


def principal(kind: str | None, name: str | None) -> str:
    return f"{kind or 'User'}:{name or ''}"


def split(value: str) -> tuple[str, str]:
    """"User:alice" -> ("User", "alice")."""
    kind, _, name = value.partition(":")
    return kind, name
