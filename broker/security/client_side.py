"""The broker as a client: how its own outgoing connections (inter-broker) secure themselves.

    security = client_security("INTERNAL", SecurityProtocol.SASL_SSL, settings_values)
    stream = await trio.open_tcp_stream(host, port)
    if security.ssl_context is not None:
        stream = trio.SSLStream(stream, security.ssl_context, server_hostname=host)
        await stream.do_handshake()
    if security.mechanism is not None:
        await authenticate(security, roundtrip)   # roundtrip(api_key, version, body) -> decoded response

Credentials are the listener's own, as in Kafka: the `username` / `password` options of the mechanism's
JAAS config on that listener (PLAIN, SCRAM), or for OAUTHBEARER the unsecured login's
`unsecuredLoginStringClaim_sub` (Kafka's OAuthBearerUnsecuredLoginCallbackHandler). TLS uses the
listener's trust store to check the other broker and its key store as the client certificate.
"""

from __future__ import annotations

import base64
import json
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from broker.security import sasl
from broker.security.listener_security import ListenerSettings, SecurityConfigError, SecurityProtocol, jaas_modules
from broker.security.tls import SslSettings, client_context

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    listener: str
    protocol: SecurityProtocol
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    oauth_claims: Mapping[str, Any] | None = None

    def sasl_client(self) -> SaslClient:
        if self.mechanism == sasl.PLAIN:
            return PlainClient(self.username or "", self.password or "")
        if self.mechanism in (sasl.SCRAM_SHA_256, sasl.SCRAM_SHA_512):
            return ScramClient(self.mechanism, self.username or "", self.password or "")
        if self.mechanism == sasl.OAUTHBEARER:
            return OAuthBearerClient(unsecured_token(dict(self.oauth_claims or {})))
        raise SecurityConfigError(f"no SASL client for mechanism {self.mechanism}")


class SaslClient:
    """Client side of a mechanism: `first()` is the initial token; `step(challenge)` the next one, None
    when the exchange is over (the last server token is checked there)."""

    def first(self) -> bytes:
        raise NotImplementedError

    def step(self, challenge: bytes) -> bytes | None:
        return None


class PlainClient(SaslClient):
    def __init__(self, username: str, password: str) -> None:
        self.username, self.password = username, password

    def first(self) -> bytes:
        return f"\x00{self.username}\x00{self.password}".encode()


class ScramClient(SaslClient):
    def __init__(self, mechanism: str, username: str, password: str) -> None:
        import scramp

        self._client = scramp.ScramClient([mechanism], username, password)
        self._done = False

    def first(self) -> bytes:
        return self._client.get_client_first().encode()

    def step(self, challenge: bytes) -> bytes | None:
        if self._done:
            self._client.set_server_final(challenge.decode())  # checks the server's signature
            return None
        self._client.set_server_first(challenge.decode())
        self._done = True
        return self._client.get_client_final().encode()


class OAuthBearerClient(SaslClient):
    def __init__(self, token: str) -> None:
        self.token = token

    def first(self) -> bytes:
        return f"n,,\x01auth=Bearer {self.token}\x01\x01".encode()

    def step(self, challenge: bytes) -> bytes | None:
        if challenge:  # an error challenge: acknowledge it, the server then fails the exchange
            return b"\x01"
        return None


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsecured_token(claims: dict[str, Any], lifetime_s: int = 3600, now: float | None = None) -> str:
    """An unsigned JWT (`alg: none`), as Kafka's unsecured OAUTHBEARER login makes: for tests."""
    now = time.time() if now is None else now
    body = {"iat": int(now), "exp": int(now) + lifetime_s, **claims}
    header = _b64url(json.dumps({"alg": "none"}).encode())
    return f"{header}.{_b64url(json.dumps(body).encode())}."


def client_security(listener: str, protocol: SecurityProtocol, values: Mapping[str, str],
                    mechanism: str | None = None) -> ClientSecurity:
    """What a connection to `listener` of another broker needs: an SSL context and SASL credentials, from
    this broker's settings for that listener. `mechanism` defaults to
    `sasl.mechanism.inter.broker.protocol` (PLAIN here; Kafka's default GSSAPI is not offered)."""
    settings = ListenerSettings(listener, values)
    context = None
    if protocol.uses_ssl:
        context = client_context(SslSettings.from_lookup(settings.get))
    if not protocol.uses_sasl:
        return ClientSecurity(listener, protocol, context)
    mechanism = mechanism or settings.get("sasl.mechanism.inter.broker.protocol") or sasl.PLAIN
    options: dict[str, str] = {}
    for module in jaas_modules(settings, mechanism):
        options.update(module.options)
    if mechanism == sasl.OAUTHBEARER:
        claims: dict[str, Any] = {k[len("unsecuredLoginStringClaim_"):]: v for k, v in options.items()
                                  if k.startswith("unsecuredLoginStringClaim_")}
        if "sub" not in claims:
            raise SecurityConfigError(f"listener {listener}: the OAUTHBEARER JAAS config needs "
                                      "unsecuredLoginStringClaim_sub for the broker's own connections")
        return ClientSecurity(listener, protocol, context, mechanism, oauth_claims=claims)
    if "username" not in options or "password" not in options:
        raise SecurityConfigError(f"listener {listener}: the {mechanism} JAAS config needs username=\"...\" "
                                  "password=\"...\" for the broker's own connections")
    return ClientSecurity(listener, protocol, context, mechanism, options["username"], options["password"])


def inter_broker_security(config: Any, mechanism: str | None = None) -> ClientSecurity:
    """What the cluster's own connections need (broker.config.options.BrokerConfig): the listener named by
    `inter.broker.listener.name` (else the first of `security.inter.broker.protocol`), its protocol, and this
    broker's client-side settings for it. Connect to the other broker's endpoint of that listener name."""
    listener = config.inter_broker_listener()
    protocol = SecurityProtocol(config.listener_protocol(listener))
    return client_security(listener.name, protocol, config.security,
                           mechanism or config.security.get("sasl.mechanism.inter.broker.protocol"))


class AuthenticationFailed(Exception):
    pass


Roundtrip = Callable[[int, int, dict[str, Any]], Awaitable[Any]]


async def authenticate(security: ClientSecurity, roundtrip: Roundtrip) -> None:
    """SaslHandshake v1 then SaslAuthenticate v2 until the mechanism is done. `roundtrip(api_key, version,
    body)` sends one request on the connection and returns the decoded response (attributes or keys)."""
    assert security.mechanism is not None

    def field(response: Any, name: str) -> Any:
        return response[name] if isinstance(response, Mapping) else getattr(response, name)

    handshake = await roundtrip(SASL_HANDSHAKE, 1, {"mechanism": security.mechanism})
    if field(handshake, "error_code") != 0:
        raise AuthenticationFailed(f"SaslHandshake {security.mechanism}: error {field(handshake, 'error_code')} "
                                   f"(enabled: {field(handshake, 'mechanisms')})")
    client = security.sasl_client()
    token: bytes | None = client.first()
    while token is not None:
        answer = await roundtrip(SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        if field(answer, "error_code") != 0:
            raise AuthenticationFailed(f"SaslAuthenticate: {field(answer, 'error_message')}")
        token = client.step(bytes(field(answer, "auth_bytes") or b""))
