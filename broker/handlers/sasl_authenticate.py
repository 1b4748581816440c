"""SaslAuthenticate outside an authentication: Kafka answers ILLEGAL_SASL_STATE (the tokens of an
authentication in progress are taken by the connection, broker.security)."""

from __future__ import annotations

from typing import Any

from protocol.header import ErrorCode


def handle(ctx: Any, req: Any) -> dict[str, Any]:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful authentication",
            "auth_bytes": b"", "session_lifetime_ms": 0}
