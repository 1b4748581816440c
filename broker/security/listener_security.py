"""What one listener needs to secure its connections, built once from the broker's Kafka-named settings.

Settings are looked up as Kafka does for a listener: `listener.name.<listener>.<mechanism>.<name>` (SASL
mechanism-specific ones such as the JAAS config), then `listener.name.<listener>.<name>`, then `<name>`
(listener names in lower case in the prefix). PLAIN users come from the listener's PLAIN JAAS config
(`user_NAME="password"` options), from a JAAS file (`java.security.auth.login.config`, section
`<listener>.KafkaServer` or `KafkaServer`) and from `sasl.plain.users.file` (minibroker's own: `NAME=PASSWORD`
lines, read again when it changes). SCRAM users are the credentials AlterUserScramCredentials stored.
OAUTHBEARER checks signed JWTs against `sasl.oauthbearer.jwks.endpoint.url` when it is set, else uses
Kafka's unsecured validator (unsigned tokens: for tests only, as in Kafka).
"""

from __future__ import annotations

import enum
import logging
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from broker.security import sasl
from broker.security.authenticator import SaslMechanisms
from broker.security.jaas import LoginModule, parse_jaas_config, parse_jaas_file
from broker.security.principal import SslPrincipalMapper
from broker.security.tls import SslSettings, server_context

log = logging.getLogger(__name__)


class SecurityProtocol(enum.Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_ssl(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


DEFAULT_MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
JWT_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


class SecurityConfigError(ValueError):
    pass


class ListenerSettings:
    """Kafka's per-listener lookup of a setting over a flat {name: value} map."""

    def __init__(self, listener: str, values: Mapping[str, str]) -> None:
        self.listener = listener
        self.prefix = f"listener.name.{listener.lower()}."
        self.values = values

    def get(self, name: str, mechanism: str | None = None) -> str | None:
        if mechanism is not None:
            value = self.values.get(f"{self.prefix}{mechanism.lower()}.{name}")
            if value is not None:
                return value
        value = self.values.get(self.prefix + name)
        return value if value is not None else self.values.get(name)


class PlainUsers(Mapping[str, str]):
    """PLAIN's users and passwords: fixed ones (JAAS) plus a users file read again when it changes."""

    def __init__(self, fixed: dict[str, str], users_file: str | None) -> None:
        self.fixed = fixed
        self.path = Path(users_file) if users_file else None
        self._mtime: float | None = None
        self._from_file: dict[str, str] = {}
        if self.path is not None:
            self._reload()

    def _reload(self) -> None:
        assert self.path is not None
        try:
            mtime = self.path.stat().st_mtime
        except OSError as exc:
            if self._mtime is None:
                raise SecurityConfigError(f"sasl.plain.users.file: {exc}") from None
            return  # a file being replaced: keep the last users
        if mtime == self._mtime:
            return
        users = {}
        for number, line in enumerate(self.path.read_text().splitlines(), 1):
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            name, sep, password = line.partition("=")
            if not sep or not name.strip():
                raise SecurityConfigError(f"sasl.plain.users.file line {number}: expected NAME=PASSWORD")
            users[name.strip()] = password.strip()
        self._from_file = users
        self._mtime = mtime

    def _current(self) -> dict[str, str]:
        if self.path is not None:
            try:
                self._reload()
            except SecurityConfigError as exc:
                log.warning("keeping the previous PLAIN users: %s", exc)
        return {**self._from_file, **self.fixed}

    def __getitem__(self, name: str) -> str:
        return self._current()[name]

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return self._current().get(name, default)

    def __iter__(self):  # noqa: ANN204
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())


@dataclass(slots=True)
class ListenerSecurity:
    name: str
    protocol: SecurityProtocol
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: SslPrincipalMapper | None = None
    sasl: SaslMechanisms | None = None
    failed_authentication_delay_ms: int = 100
    handshake_timeout_ms: int = 10_000
    sasl_max_receive_size: int = 524_288  # the largest frame before authentication (Kafka's default)


def jaas_modules(settings: ListenerSettings, mechanism: str) -> list[LoginModule]:
    text = settings.get("sasl.jaas.config", mechanism)
    if text:
        try:
            return parse_jaas_config(text)
        except ValueError as exc:
            raise SecurityConfigError(f"sasl.jaas.config of {mechanism} on listener {settings.listener}: {exc}") \
                from None
    path = settings.values.get("java.security.auth.login.config")
    if not path:
        return []
    try:
        sections = parse_jaas_file(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SecurityConfigError(f"java.security.auth.login.config {path}: {exc}") from None
    return sections.get(f"{settings.listener.lower()}.KafkaServer") or sections.get("KafkaServer") or []


def _int(settings: ListenerSettings, name: str, default: int, mechanism: str | None = None) -> int:
    value = settings.get(name, mechanism)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise SecurityConfigError(f"{name} must be a number, not {value!r}") from None


def _oauth_validator(settings: ListenerSettings, now_ms: Callable[[], int]) -> sasl.TokenValidator:
    mech = sasl.OAUTHBEARER
    handler = settings.get("sasl.server.callback.handler.class", mech)
    jwks = settings.get("sasl.oauthbearer.jwks.endpoint.url", mech)
    if jwks:
        audience = settings.get("sasl.oauthbearer.expected.audience", mech)
        return sasl.JwtValidator(
            jwks, audience=[a.strip() for a in audience.split(",") if a.strip()] if audience else None,
            issuer=settings.get("sasl.oauthbearer.expected.issuer", mech),
            sub_claim=settings.get("sasl.oauthbearer.sub.claim.name", mech) or "sub",
            scope_claim=settings.get("sasl.oauthbearer.scope.claim.name", mech) or "scope",
            clock_skew_s=_int(settings, "sasl.oauthbearer.clock.skew.seconds", 30, mech),
            refresh_ms=_int(settings, "sasl.oauthbearer.jwks.endpoint.refresh.ms", 3_600_000, mech))
    if handler == JWT_VALIDATOR:
        raise SecurityConfigError(f"listener {settings.listener}: OAuthBearerValidatorCallbackHandler needs "
                                  "sasl.oauthbearer.jwks.endpoint.url")
    log.warning("listener %s accepts unsecured OAUTHBEARER tokens (no sasl.oauthbearer.jwks.endpoint.url): "
                "for tests only", settings.listener)
    options: dict[str, str] = {}
    for module in jaas_modules(settings, mech):
        options.update(module.options)
    return sasl.UnsecuredTokenValidator(options, now_ms)


def build_listener_security(name: str, protocol: SecurityProtocol, values: Mapping[str, str], *,
                            scram_lookup: Callable[[str, str], sasl.ScramKeys | None],
                            now_ms: Callable[[], int],
                            token_lookup: Callable[[str, str], sasl.TokenCredential | None] | None = None
                            ) -> ListenerSecurity:
    """Everything a listener needs, checked at startup so that a bad setting stops the broker there."""
    settings = ListenerSettings(name, values)
    out = ListenerSecurity(name, protocol,
                           failed_authentication_delay_ms=_int(settings, "connection.failed.authentication.delay.ms",
                                                               100),
                           handshake_timeout_ms=_int(settings, "ssl.handshake.timeout.ms", 10_000),
                           sasl_max_receive_size=_int(settings, "sasl.server.max.receive.size", 524_288))
    if protocol.uses_ssl:
        tls = SslSettings.from_lookup(settings.get)
        out.ssl_context = server_context(tls)
        out.principal_mapper = SslPrincipalMapper(tls.principal_mapping_rules)
    if protocol.uses_sasl:
        enabled = [m.strip() for m in (settings.get("sasl.enabled.mechanisms") or DEFAULT_MECHANISMS).split(",")
                   if m.strip()]
        if not enabled:
            raise SecurityConfigError(f"listener {name}: sasl.enabled.mechanisms names no mechanism")
        unknown = [m for m in enabled if m not in sasl.MECHANISMS]
        if unknown:
            raise SecurityConfigError(f"listener {name}: unsupported SASL mechanism(s) {', '.join(unknown)} "
                                      f"(supported: {', '.join(sasl.MECHANISMS)})")
        factories: dict[str, Callable[[], sasl.SaslServer]] = {}
        if sasl.PLAIN in enabled:
            fixed: dict[str, str] = {}
            for module in jaas_modules(settings, sasl.PLAIN):
                fixed.update(module.plain_users)
            users = PlainUsers(fixed, settings.get("sasl.plain.users.file"))
            if not users:
                log.warning("listener %s enables PLAIN without any user (user_NAME=\"password\" in its JAAS config "
                            "or sasl.plain.users.file)", name)
            factories[sasl.PLAIN] = lambda: sasl.PlainServer(users)
        for mech in (sasl.SCRAM_SHA_256, sasl.SCRAM_SHA_512):
            if mech in enabled:
                factories[mech] = lambda mech=mech: sasl.ScramServer(mech, scram_lookup, token_lookup)
        if sasl.OAUTHBEARER in enabled:
            validator = _oauth_validator(settings, now_ms)
            factories[sasl.OAUTHBEARER] = lambda: sasl.OAuthBearerServer(validator)
        max_reauth = {m: _int(settings, "connections.max.reauth.ms", 0, m) for m in enabled}
        out.sasl = SaslMechanisms(enabled, lambda mechanism: factories[mechanism](), max_reauth)
    return out


def scram_lookup_from(store: object) -> Callable[[str, str], sasl.ScramKeys | None]:
    """The SCRAM keys of a user from the broker's credential store (broker.scram_credentials), read at each
    login so that AlterUserScramCredentials takes effect at once."""

    def lookup(username: str, mechanism: str) -> sasl.ScramKeys | None:
        creds = store.users.get(username)  # type: ignore[attr-defined]
        if not creds:
            return None
        for mech, cred in creds.items():
            if mech.mechanism_name == mechanism:
                return sasl.ScramKeys(cred.salt, cred.stored_key, cred.server_key, cred.iterations)
        return None

    return lookup
