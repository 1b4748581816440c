"""One SASL connection's authentication, as Kafka's SaslServerAuthenticator: pure logic, time passed in.

    INITIAL_REQUEST --ApiVersions--> HANDSHAKE_REQUEST --SaslHandshake--> AUTHENTICATE --...--> COMPLETE
                   \\-----------------SaslHandshake-----------------/        (SaslAuthenticate v0-2, or raw
                                                                         tokens after SaslHandshake v0)
    COMPLETE --SaslHandshake (KIP-368, when the session expires)--> REAUTH_PROCESS_HANDSHAKE -> ... -> COMPLETE

Before COMPLETE a connection may send only ApiVersions (once, first), SaslHandshake and SaslAuthenticate;
anything else closes it. A failure (unknown mechanism, bad credentials) is answered, then the connection
is closed after `connection.failed.authentication.delay.ms` (the server does the waiting).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from broker.security.principal import user
from broker.security.sasl import SaslAuthenticationError, SaslError, SaslServer

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
# Kafka: a client may not start re-authenticating more often than once a second.
MIN_REAUTH_INTERVAL_MS = 1000


class SaslState(enum.Enum):
    """Kafka's SaslServerAuthenticator.SaslState."""

    INITIAL_REQUEST = "INITIAL_REQUEST"
    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"
    REAUTH_PROCESS_HANDSHAKE = "REAUTH_PROCESS_HANDSHAKE"
    REAUTH_BAD_MECHANISM = "REAUTH_BAD_MECHANISM"


VALID_PREVIOUS: dict[SaslState, set[SaslState]] = {
    SaslState.HANDSHAKE_REQUEST: {SaslState.INITIAL_REQUEST, SaslState.HANDSHAKE_OR_VERSIONS_REQUEST},
    SaslState.AUTHENTICATE: {SaslState.INITIAL_REQUEST, SaslState.HANDSHAKE_OR_VERSIONS_REQUEST,
                             SaslState.HANDSHAKE_REQUEST, SaslState.REAUTH_PROCESS_HANDSHAKE},
    SaslState.COMPLETE: {SaslState.AUTHENTICATE},
    SaslState.REAUTH_PROCESS_HANDSHAKE: {SaslState.COMPLETE},
    SaslState.REAUTH_BAD_MECHANISM: {SaslState.REAUTH_PROCESS_HANDSHAKE},
    SaslState.FAILED: set(SaslState),
}


class IllegalSaslState(Exception):
    """A request the state does not allow: the connection is closed without an answer."""


@dataclass(slots=True)
class SaslMechanisms:
    """What a SASL listener offers: its enabled mechanisms, a factory of servers for them, and the
    longest session per mechanism (`connections.max.reauth.ms`; 0: no limit)."""

    enabled: Sequence[str]
    create: Callable[[str], SaslServer]
    max_reauth_ms: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HandshakeAnswer:
    error_code: int  # 0 or UNSUPPORTED_SASL_MECHANISM (33)
    mechanisms: list[str]


@dataclass(frozen=True, slots=True)
class AuthenticateAnswer:
    error_code: int  # 0 or SASL_AUTHENTICATION_FAILED (58)
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int


UNSUPPORTED_SASL_MECHANISM = 33
SASL_AUTHENTICATION_FAILED = 58


class SaslAuthenticator:
    def __init__(self, mechanisms: SaslMechanisms) -> None:
        self.mechanisms = mechanisms
        self.state = SaslState.INITIAL_REQUEST
        self.mechanism: str | None = None
        self.server: SaslServer | None = None
        self.principal: str | None = None  # set when authentication completes
        self.token_authenticated = False  # with a delegation token (it may then not manage tokens)
        self.framed = True  # SaslHandshake v1+: tokens in SaslAuthenticate requests; v0: raw size-prefixed tokens
        self.session_expiry_ms: int | None = None  # when the session ends (connections.max.reauth.ms, token exp)
        self.failure: str | None = None  # why authentication failed (for the log)
        self._reauth_started_ms: int | None = None
        self._previous_principal: str | None = None
        self._bad_mechanism_message = ""

    def _transition(self, target: SaslState) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            raise IllegalSaslState(f"SASL state {self.state.value} cannot move to {target.value}")
        self.state = target

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.COMPLETE

    @property
    def reauthenticating(self) -> bool:
        return self._previous_principal is not None

    @property
    def expects_raw_token(self) -> bool:
        """After SaslHandshake v0 the client sends bare tokens, not Kafka requests."""
        return not self.framed and self.state in (SaslState.AUTHENTICATE, SaslState.REAUTH_BAD_MECHANISM)

    def check_request(self, api_key: int) -> None:
        """Raise IllegalSaslState unless this request may come now (before authentication is complete)."""
        state = self.state
        if state in (SaslState.INITIAL_REQUEST, SaslState.HANDSHAKE_OR_VERSIONS_REQUEST):
            allowed: tuple[int, ...] = (API_VERSIONS, SASL_HANDSHAKE)
        elif state in (SaslState.HANDSHAKE_REQUEST, SaslState.REAUTH_PROCESS_HANDSHAKE):
            allowed = (SASL_HANDSHAKE,)
        elif state in (SaslState.AUTHENTICATE, SaslState.REAUTH_BAD_MECHANISM) and self.framed:
            allowed = (SASL_AUTHENTICATE,)
        else:
            allowed = ()
        if api_key not in allowed:
            self.state = SaslState.FAILED
            raise IllegalSaslState(f"Unexpected Kafka request of type {api_key} during SASL "
                                   f"{'re-authentication' if self.reauthenticating else 'handshake'} "
                                   f"(state {state.value})")

    def api_versions(self) -> None:
        self.check_request(API_VERSIONS)
        self._transition(SaslState.HANDSHAKE_REQUEST)

    # -- KIP-368 -------------------------------------------------------------------------------------------
    def session_expired(self, now_ms: int) -> bool:
        return self.session_expiry_ms is not None and now_ms > self.session_expiry_ms

    def begin_reauthentication(self, now_ms: int) -> bool:
        """A SaslHandshake on an authenticated connection: re-authenticate if the session has an expiry
        (else, or within a second of the last re-authentication, the handshake is answered as a plain
        request: ILLEGAL_SASL_STATE)."""
        if self.state is not SaslState.COMPLETE or self.session_expiry_ms is None:
            return False
        if self._reauth_started_ms is not None and now_ms - self._reauth_started_ms < MIN_REAUTH_INTERVAL_MS:
            return False
        self._reauth_started_ms = now_ms
        self._previous_principal = self.principal
        self._transition(SaslState.REAUTH_PROCESS_HANDSHAKE)
        return True

    # -- the exchange --------------------------------------------------------------------------------------
    def handshake(self, version: int, mechanism: str) -> HandshakeAnswer:
        self.check_request(SASL_HANDSHAKE)
        enabled = list(self.mechanisms.enabled)
        if mechanism not in enabled:
            self.state = SaslState.FAILED
            self.failure = f"Unsupported SASL mechanism {mechanism}"
            return HandshakeAnswer(UNSUPPORTED_SASL_MECHANISM, enabled)
        self.framed = version >= 1
        if self.reauthenticating and mechanism != self.mechanism:
            self._bad_mechanism_message = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                           f"re-authentication of mechanism '{self.mechanism}'")
            self._transition(SaslState.REAUTH_BAD_MECHANISM)
            return HandshakeAnswer(0, enabled)
        self.mechanism = mechanism
        self.server = self.mechanisms.create(mechanism)
        self._transition(SaslState.AUTHENTICATE)
        return HandshakeAnswer(0, enabled)

    @property
    def blocking(self) -> bool:
        """The next token's check may block (OAUTHBEARER against a JWKS URL): evaluate it in a thread."""
        return self.server is not None and self.server.blocking

    def authenticate(self, token: bytes, now_ms: int) -> AuthenticateAnswer:
        """One SaslAuthenticate (or raw v0 token). A failed answer leaves the state FAILED: send it, wait the
        failed-authentication delay, close."""
        if self.framed:
            self.check_request(SASL_AUTHENTICATE)
        elif not self.expects_raw_token:
            raise IllegalSaslState(f"Unexpected SASL token in state {self.state.value}")
        what = "re-authentication" if self.reauthenticating else "authentication"
        if self.state is SaslState.REAUTH_BAD_MECHANISM:
            return self._fail(self._bad_mechanism_message)
        server = self.server
        assert server is not None
        try:
            response = server.evaluate(token)
            principal = user(server.authorization_id) if server.complete else None
            if principal is not None and self.reauthenticating and principal != self._previous_principal:
                prev = self._previous_principal or ""
                raise SaslAuthenticationError(
                    f"Cannot change principals during re-authentication from {prev.replace(':', '.', 1)}: "
                    f"{principal.replace(':', '.', 1)}")
        except SaslAuthenticationError as exc:
            return self._fail(str(exc))
        except SaslError as exc:
            # The client gets the generic text: the reason may tell whether a user exists.
            self.failure = str(exc)
            return self._fail(f"Authentication failed during {what} due to invalid credentials with SASL "
                              f"mechanism {self.mechanism}", log_reason=str(exc))
        if principal is None:
            return AuthenticateAnswer(0, None, response, 0)
        lifetime = self._session_lifetime(server, now_ms)
        self.principal = principal
        self.token_authenticated = server.token_authenticated
        self._previous_principal = None
        self._transition(SaslState.COMPLETE)
        return AuthenticateAnswer(0, None, response, lifetime)

    def _fail(self, message: str, log_reason: str | None = None) -> AuthenticateAnswer:
        self.state = SaslState.FAILED
        self.failure = log_reason or message
        return AuthenticateAnswer(SASL_AUTHENTICATION_FAILED, message, b"", 0)

    def _session_lifetime(self, server: SaslServer, now_ms: int) -> int:
        """Kafka's calcCompletionTimesAndReturnSessionLifetimeMs: the shorter of connections.max.reauth.ms
        and the credential's remaining life; 0 (and no expiry) when neither applies."""
        max_reauth = self.mechanisms.max_reauth_ms.get(self.mechanism or "", 0)
        expiry = server.credential_expiry_ms
        if expiry is None and max_reauth <= 0:
            self.session_expiry_ms = None
            return 0
        if expiry is None:
            lifetime = max_reauth
        elif max_reauth <= 0:
            lifetime = max(0, expiry - now_ms)
        else:
            lifetime = max(0, min(expiry - now_ms, max_reauth))
        self.session_expiry_ms = now_ms + lifetime
        return lifetime
