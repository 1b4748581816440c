"""A SASL listener's connection while it authenticates, and when its session must be renewed (KIP-368): the
frames it answers itself, as Kafka's SaslServerAuthenticator does before the channel is ready. The state
machine is broker.security.authenticator's; here the frames are read, the answers built (SaslHandshake,
SaslAuthenticate, or a bare token after SaslHandshake v0), and the connection told what to do next:

- None: an ordinary request (ApiVersions before authentication, the requests of an authenticated session);
- Answer: send this, go on reading;
- Fail: the answer (if any) after connection.failed.authentication.delay.ms, then close;
- Close: close now, unanswered.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from broker.observability.faults import error_response
from broker.observability.metrics import Metrics
from broker.observability.trace import Tracer
from broker.server.dispatch import Api, lookup
from broker.server.framing import SIZE, frame_response
from protocol.errors import DecodeError
from protocol.header import ApiKey, ErrorCode, RequestHeader, parse_request_header, response_header_version

if TYPE_CHECKING:  # loaded with the first SASL listener, not at startup
    from broker.security.authenticator import SaslAuthenticator

log = logging.getLogger(__name__)

HANDSHAKE_KEY = struct.pack(">h", ApiKey.SASL_HANDSHAKE)


@dataclass(frozen=True, slots=True)
class Answer:
    """Send these bytes and go on."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Fail:
    """Authentication failed: send these bytes (if any), then close."""

    data: bytes | None


@dataclass(frozen=True, slots=True)
class Close:
    """Close the connection without an answer."""


Verdict = Answer | Fail | Close | None


class SaslFraming:
    def __init__(self, authenticator: SaslAuthenticator, *, peer: str, listener: str, versions: Any,
                 metrics: Metrics, tracer: Callable[[], Tracer | None], now_ms: Callable[[], int],
                 trace_client: Callable[[RequestHeader], dict[str, Any]],
                 topic_name: Callable[[Any], str | None], on_authenticated: Callable[[str], None]) -> None:
        """`versions`: the broker's VersionProfile; `on_authenticated(principal)`: the connection's principal
        and largest frame change."""
        self.authenticator = authenticator
        self.peer = peer
        self.listener = listener
        self.versions = versions
        self.metrics = metrics
        self.tracer = tracer
        self.now_ms = now_ms
        self.trace_client = trace_client
        self.topic_name = topic_name
        self.on_authenticated = on_authenticated

    @property
    def authenticated(self) -> bool:
        return self.authenticator.authenticated

    def intercepts(self, frame: bytes | bytearray) -> bool:
        """Whether the frame is this module's to look at (before authentication, while a session may expire,
        and any SaslHandshake, which may start a re-authentication)."""
        sasl = self.authenticator
        return sasl.session_expiry_ms is not None or not sasl.authenticated or frame[:2] == HANDSHAKE_KEY

    async def frame(self, frame: bytes | bytearray) -> Verdict:
        from broker.security.authenticator import IllegalSaslState

        sasl = self.authenticator
        now = self.now_ms()
        if sasl.expects_raw_token:  # after SaslHandshake v0: a bare token, no request header
            return await self._token(bytes(frame), None, None)
        try:
            header, offset = parse_request_header(frame, self.versions.decode_limits)
        except DecodeError as exc:
            log.warning("closing %s: malformed request header during SASL authentication: %s", self.peer, exc)
            return Fail(None)
        if sasl.authenticated:
            if header.api_key == ApiKey.SASL_HANDSHAKE and sasl.begin_reauthentication(now):
                log.info("%s (%s) re-authenticates", self.peer, sasl.principal)
            elif sasl.session_expired(now):
                log.info("closing %s: the SASL session of %s expired", self.peer, sasl.principal)
                self._count("expired")
                return Close()
            else:
                return None
        authenticating = sasl.framed and sasl.state.value in ("AUTHENTICATE", "REAUTH_BAD_MECHANISM")
        try:
            sasl.check_request(header.api_key)
        except IllegalSaslState as exc:
            log.warning("closing %s: %s", self.peer, exc)
            self._count("failed")
            # As Kafka: during the exchange (after SaslHandshake v1) the request gets its error answer
            # (ILLEGAL_SASL_STATE) after the failure delay; before the handshake the connection just closes.
            error_answer = self._illegal_state_answer(header, frame, offset) if authenticating else None
            return Close() if error_answer is None else Fail(error_answer)
        if header.api_key == ApiKey.API_VERSIONS:
            sasl.api_versions()
            return None
        api = lookup(header.api_key)
        version = header.api_version
        if api is None or not self.versions.accepts(header.api_key, version):
            log.warning("closing %s: unsupported version %d of API %d during SASL authentication", self.peer,
                        version, header.api_key)
            return Fail(None)
        try:
            request = api.decode_request(version, frame, offset, self.versions.decode_limits)
        except DecodeError as exc:
            log.warning("closing %s: malformed %s v%d request: %s", self.peer, api.key.name, version, exc)
            return Fail(None)
        tracer = self.tracer()
        if tracer is not None:  # SaslAuthenticate's token is traced as its length only
            tracer.request(self.peer, self.trace_client(header), api.key.name, version, header.correlation_id,
                           request)
        if header.api_key == ApiKey.SASL_HANDSHAKE:
            answer = sasl.handshake(version, request.mechanism)
            body = {"error_code": answer.error_code, "mechanisms": answer.mechanisms}
            if answer.error_code:
                log.warning("closing %s: SASL mechanism %r is not enabled (enabled: %s)", self.peer,
                            request.mechanism, ", ".join(answer.mechanisms))
                self._count("failed")
            return self._answer(header, api, body, answer.error_code != 0)
        return await self._token(bytes(request.auth_bytes or b""), header, api)

    async def _token(self, token: bytes, header: RequestHeader | None, api: Api | None) -> Verdict:
        """One token of the mechanism's exchange: in a SaslAuthenticate request (header given) or bare."""
        sasl = self.authenticator
        now = self.now_ms()
        if sasl.blocking:  # an OAUTHBEARER token checked against a JWKS fetched over HTTP
            answer = await trio.to_thread.run_sync(sasl.authenticate, token, now)
        else:
            answer = sasl.authenticate(token, now)
        mechanism = sasl.mechanism
        if answer.error_code:
            log.warning("closing %s: SASL %s authentication failed: %s", self.peer, mechanism, sasl.failure)
            self._count("failed")
        elif sasl.authenticated and sasl.principal is not None:
            self.on_authenticated(sasl.principal)
            lifetime = f", session {answer.session_lifetime_ms} ms" if answer.session_lifetime_ms else ""
            log.info("%s authenticated as %s with %s%s", self.peer, sasl.principal, mechanism, lifetime)
            self._count("ok")
        if header is None:  # SaslHandshake v0: the bare answer, and no answer to a failure (as Kafka)
            if answer.error_code:
                return Fail(None)
            return Answer(SIZE.pack(len(answer.auth_bytes)) + answer.auth_bytes)
        body = {"error_code": answer.error_code, "error_message": answer.error_message,
                "auth_bytes": answer.auth_bytes, "session_lifetime_ms": answer.session_lifetime_ms}
        assert api is not None
        return self._answer(header, api, body, answer.error_code != 0)

    def _illegal_state_answer(self, header: RequestHeader, frame: bytes | bytearray, offset: int) -> bytes | None:
        api = lookup(header.api_key)
        version = header.api_version
        if api is None or not self.versions.accepts(header.api_key, version):
            return None
        try:
            request = api.decode_request(version, frame, offset, self.versions.decode_limits)
            body = error_response(api.key, request, ErrorCode.ILLEGAL_SASL_STATE, self.topic_name)
            return frame_response(header.correlation_id, response_header_version(api.key, version),
                                  api.encode_response(version, body))
        except Exception:  # a request the error builder does not know: the connection just closes
            return None

    def _answer(self, header: RequestHeader, api: Api, body: dict[str, Any], failed: bool) -> Verdict:
        version = header.api_version
        tracer = self.tracer()
        if tracer is not None:
            tracer.response(self.peer, self.trace_client(header), api.key.name, version, header.correlation_id,
                            body, 0.0)
        data = frame_response(header.correlation_id, response_header_version(api.key, version),
                              api.encode_response(version, body))
        return Fail(data) if failed else Answer(data)

    def _count(self, outcome: str) -> None:
        sasl = self.authenticator
        self.metrics.authentication(self.listener, sasl.mechanism, outcome,
                                    sasl.principal if outcome == "ok" else None)
