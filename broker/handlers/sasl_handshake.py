"""SaslHandshake outside an authentication: on a listener without SASL, or on a connection already
authenticated that may not re-authenticate now. Kafka answers ILLEGAL_SASL_STATE (the handshakes that start
an authentication or a KIP-368 re-authentication are answered by the connection, broker.security)."""

from __future__ import annotations

from typing import Any

from protocol.header import ErrorCode


def handle(ctx: Any, req: Any) -> dict[str, Any]:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
