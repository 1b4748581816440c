"""SASL mechanisms, server side: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER as small state machines.

Each `SaslServer` takes the client's tokens one at a time (`evaluate`) and answers the server's token, as
Java's javax.security.sasl.SaslServer does for Kafka; `complete` and `authorization_id` tell the outcome.
Failures raise `SaslAuthenticationError` (its message goes to the client, as Kafka's
SaslAuthenticationException) or `SaslError` (the client gets only the generic "invalid credentials" text,
so nothing about the existence of a user leaks).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
OAUTHBEARER = "OAUTHBEARER"
GSSAPI = "GSSAPI"
MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)


class SaslError(Exception):
    """Authentication failed; the client is told only that its credentials are invalid."""


class SaslAuthenticationError(SaslError):
    """Authentication failed with a message meant for the client."""


class SaslServer:
    mechanism: str = ""
    # evaluate() may block (an OAUTHBEARER token checked against a JWKS URL): run it in a worker thread.
    blocking: bool = False

    def __init__(self) -> None:
        self.complete = False
        self.authorization_id = ""
        # When the credential stops being valid (epoch ms; an OAUTHBEARER token's expiry), else None.
        self.credential_expiry_ms: int | None = None
        # Logged in with a delegation token (SCRAM's tokenauth=true): such a client may not manage tokens.
        self.token_authenticated = False

    def evaluate(self, token: bytes) -> bytes:
        raise NotImplementedError


# -- PLAIN (RFC 4616) ------------------------------------------------------------------------------------


class PlainServer(SaslServer):
    """`[authzid] NUL authcid NUL passwd` checked against a table of users and passwords."""

    mechanism = PLAIN

    def __init__(self, users: Mapping[str, str]) -> None:
        super().__init__()
        self.users = users

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationError("Unexpected token after PLAIN authentication completed")
        text = token.decode("utf-8", errors="replace")
        parts = text.split("\x00", 3)
        if len(parts) != 3:
            raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self.users.get(username)
        # Compare with something even for an unknown user: the time taken says nothing about who exists.
        ok = hmac.compare_digest((expected if expected is not None else "\x00" + password).encode(),
                                 password.encode())
        if expected is None or not ok:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an authorization id that is "
                                          "different from username")
        self.authorization_id = username
        self.complete = True
        return b""


# -- SCRAM (RFC 5802, with scramp) -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScramKeys:
    """What the server keeps of a SCRAM password (Kafka's ScramCredential)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class TokenCredential(Protocol):
    """A delegation token's SCRAM keys and whose token it is (broker.services.delegation_tokens.TokenKeys)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int
    owner: str  # "User:alice"
    expiry_ms: int


# The SCRAM extensions Kafka's server accepts (ScramSaslServer.SUPPORTED_EXTENSIONS).
TOKEN_AUTH = "tokenauth"


class ScramServer(SaslServer):
    """SCRAM-SHA-256/512 against stored keys; `lookup(user, mechanism)` gives them (None: unknown user). A client
    that sends the extension `tokenauth=true` logs in with a delegation token (`token_lookup(token id,
    mechanism)`) and becomes the token's owner."""

    MIN_ITERATIONS = 4096

    def __init__(self, mechanism: str, lookup: Callable[[str, str], ScramKeys | None],
                 token_lookup: Callable[[str, str], TokenCredential | None] | None = None) -> None:
        super().__init__()
        import scramp  # only SCRAM listeners load it

        self.mechanism = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._scramp = scramp
        self._server: Any = scramp.ScramMechanism(mechanism).make_server(self._keys)
        self._username = ""
        self._step = 0
        self._found: ScramKeys | TokenCredential | None = None

    def _keys(self, username: str) -> tuple[bytes, bytes, bytes, int] | None:
        keys = self._found
        if keys is None:
            return None
        return keys.salt, keys.stored_key, keys.server_key, keys.iterations

    def evaluate(self, token: bytes) -> bytes:
        ScramException = self._scramp.ScramException
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslError("Invalid SCRAM message encoding") from None
        if self._step == 0:
            self._step = 1
            username, authzid = _scram_client_first_names(text)
            text, extensions = _scram_extensions(text)
            if set(extensions) - {TOKEN_AUTH}:
                raise SaslError(f"Unsupported extensions will not be processed: {sorted(extensions)}")
            token = extensions.get(TOKEN_AUTH, "").lower() == "true"
            keys: ScramKeys | TokenCredential | None
            if token:
                keys = self._token_lookup(username, self.mechanism) if self._token_lookup and username else None
            else:
                keys = self._lookup(username, self.mechanism) if username else None
            if keys is None:
                raise SaslError("Authentication failed: Invalid user credentials")
            self._found = keys
            if authzid and authzid != username:
                raise SaslAuthenticationError("Authentication failed: Client requested an authorization id that "
                                              "is different from username")
            if keys.iterations < self.MIN_ITERATIONS:
                raise SaslError(f"Iterations {keys.iterations} is less than the minimum {self.MIN_ITERATIONS} "
                                f"for {self.mechanism}")
            try:
                self._server.set_client_first(text)
                if extensions:  # they are part of the message the client's proof signs
                    self._server.client_first_bare += "".join(f",{k}={v}" for k, v in extensions.items())
                first = self._server.get_server_first()
            except ScramException as exc:
                raise SaslError(f"Invalid client first message: {exc}") from None
            if token:
                owner = keys.owner  # type: ignore[union-attr]
                self._username = owner.partition(":")[2] or owner
                self.token_authenticated = True
                self.credential_expiry_ms = keys.expiry_ms  # type: ignore[union-attr]
            else:
                self._username = username
            return first.encode()
        if self._step == 1:
            self._step = 2
            try:
                self._server.set_client_final(text)
                final = self._server.get_server_final()
            except ScramException as exc:
                raise SaslError(f"Authentication failed: Invalid client final message: {exc}") from None
            self.authorization_id = self._username
            self.complete = True
            return final.encode()
        raise SaslAuthenticationError("Unexpected challenge in SCRAM server state COMPLETE")


def _scram_extensions(text: str) -> tuple[str, dict[str, str]]:
    """A client-first message without its extensions (`,key=value` after the nonce, as Kafka's client appends
    `tokenauth=true`; RFC 5802's own attributes are one letter) and the extensions."""
    head, nonce, rest = text.partition(",r=")
    if not nonce:
        return text, {}
    value, *pairs = rest.split(",")
    extensions = {}
    for pair in pairs:
        key, eq, val = pair.partition("=")
        if not eq or len(key) < 2:
            return text, {}  # not Kafka's extensions: left for the SCRAM library to judge
        extensions[key] = val
    return f"{head},r={value}", extensions


def _scram_client_first_names(text: str) -> tuple[str, str]:
    """(username, authzid) of a client-first message `n,[a=authzid],n=name,r=nonce` ('=2C' and '=3D'
    unescaped, as Kafka's ScramFormatter.username does)."""
    parts = text.split(",", 3)
    if len(parts) < 4 or parts[0] not in ("n", "y") or not parts[2].startswith("n="):
        raise SaslError("Invalid SCRAM client first message")
    authzid = parts[1][2:] if parts[1].startswith("a=") else ""

    def unescape(name: str) -> str:
        return name.replace("=2C", ",").replace("=3D", "=")

    return unescape(parts[2][2:]), unescape(authzid)


# -- OAUTHBEARER (RFC 7628, Kafka's KIP-255 and KIP-768) -------------------------------------------------


@dataclass(frozen=True, slots=True)
class BearerToken:
    principal: str
    expiry_ms: int  # the token's `exp`
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict)


class TokenRejected(Exception):
    """A token failed validation; `status` and `scope` go into the RFC 7628 error challenge."""

    def __init__(self, message: str, status: str = "invalid_token", scope: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.scope = scope


class TokenValidator:
    blocking = False

    def validate(self, token: str) -> BearerToken:
        raise NotImplementedError


class OAuthBearerServer(SaslServer):
    """The client's initial response `n,[a=authzid],^Aauth=Bearer TOKEN^A[key=value^A]*^A`. A bad token gets
    the JSON error challenge of RFC 7628; the client acknowledges it with a lone ^A, and then fails."""

    mechanism = OAUTHBEARER

    def __init__(self, validator: TokenValidator) -> None:
        super().__init__()
        self.validator = validator
        self.blocking = validator.blocking
        self._error: str | None = None
        self.token: BearerToken | None = None

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise SaslAuthenticationError(self._error)
        self._error = None
        authzid, value, _extensions = parse_oauthbearer_initial_response(token)
        try:
            parsed = self.validator.validate(value)
        except TokenRejected as exc:
            error = {"status": exc.status}
            if exc.scope is not None:
                error["scope"] = exc.scope
            self._error = json.dumps(error, separators=(",", ":"))
            self.reason = str(exc)
            return self._error.encode()
        if authzid and authzid != parsed.principal:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authzid}) that is different from "
                f"the token's principal name ({parsed.principal})")
        self.token = parsed
        self.authorization_id = parsed.principal
        self.credential_expiry_ms = parsed.expiry_ms
        self.complete = True
        return b""


def parse_oauthbearer_initial_response(token: bytes) -> tuple[str, str, dict[str, str]]:
    """(authzid, bearer token, extensions) of an OAUTHBEARER client initial response."""
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslError("Invalid OAUTHBEARER client first message: not UTF-8") from None
    gs2, sep, rest = text.partition("\x01")
    if not sep or not gs2.startswith("n,") or not gs2.endswith(",") or not rest.endswith("\x01\x01"):
        raise SaslError("Invalid OAUTHBEARER client first message")
    authz = gs2[2:-1]
    if authz and not authz.startswith("a="):
        raise SaslError("Invalid OAUTHBEARER client first message: bad authorization id")
    pairs: dict[str, str] = {}
    for item in rest[:-2].split("\x01"):
        key, eq, value = item.partition("=")
        if not eq or not key or key in pairs:
            raise SaslError("Invalid OAUTHBEARER client first message: bad key/value pair")
        pairs[key] = value
    auth = pairs.pop("auth", None)
    if auth is None:
        raise SaslError("Invalid OAUTHBEARER client first message: no auth")
    scheme, _, value = auth.partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value or any(not (c.isalnum() or c in "-_.") for c in value):
        raise SaslError("Invalid OAUTHBEARER client first message: bad auth value")
    return authz[2:], value, pairs


def _b64url_json(part: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError):
        raise TokenRejected(f"Invalid unsecured JWS {what}") from None
    if not isinstance(data, dict):
        raise TokenRejected(f"Invalid unsecured JWS {what}: not a JSON object")
    return data


def _number(claims: Mapping[str, Any], name: str, required: bool) -> float | None:
    value = claims.get(name)
    if value is None:
        if required:
            raise TokenRejected(f"Required claim missing: {name}")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenRejected(f"The {name} claim had the incorrect type: {type(value).__name__}")
    return value


def _scopes(claims: Mapping[str, Any], claim: str) -> frozenset[str]:
    value = claims.get(claim)
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(str(v) for v in value)
    return frozenset()


class UnsecuredTokenValidator(TokenValidator):
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler: an unsigned JWT (`alg: none`), for tests and
    development only. Options are the JAAS ones: unsecuredValidatorPrincipalClaimName (sub),
    unsecuredValidatorScopeClaimName (scope), unsecuredValidatorRequiredScope,
    unsecuredValidatorAllowableClockSkewMs (0)."""

    def __init__(self, options: Mapping[str, str] | None = None, now_ms: Callable[[], int] | None = None) -> None:
        options = options or {}
        self.principal_claim = (options.get("unsecuredValidatorPrincipalClaimName") or "sub").strip()
        self.scope_claim = (options.get("unsecuredValidatorScopeClaimName") or "scope").strip()
        self.required_scope = frozenset((options.get("unsecuredValidatorRequiredScope") or "").split())
        skew = (options.get("unsecuredValidatorAllowableClockSkewMs") or "0").strip()
        self.skew_ms = int(skew)
        if self.skew_ms < 0:
            raise ValueError(f"Allowable clock skew millis must not be negative: {skew}")
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))

    def validate(self, token: str) -> BearerToken:
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenRejected("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded "
                                "values")
        if parts[2]:
            raise TokenRejected("Unsecured JWS must have an empty signature")
        header = _b64url_json(parts[0], "header")
        if header.get("alg") != "none":
            raise TokenRejected("Unsecured JWS must have alg none")
        claims = _b64url_json(parts[1], "claims")
        principal = claims.get(self.principal_claim)
        if principal is None:
            raise TokenRejected(f"Required claim missing: {self.principal_claim}")
        if not isinstance(principal, str) or not principal.strip():
            raise TokenRejected(f"The {self.principal_claim} claim had the incorrect type or was empty")
        now = self.now_ms()
        iat = _number(claims, "iat", False)
        if iat is not None and iat * 1000 > now + self.skew_ms:
            raise TokenRejected(f"The Issued At value ({iat * 1000:.0f} ms) is in the future")
        exp = _number(claims, "exp", True)
        assert exp is not None
        if now >= exp * 1000 + self.skew_ms:
            raise TokenRejected(f"The indicated time ({now} ms) is on or after the Expiration Time value "
                                f"({exp * 1000:.0f} ms)")
        if iat is not None and exp <= iat:
            raise TokenRejected(f"The Expiration Time time ({exp * 1000:.0f} ms) is not after the Issued At time "
                                f"({iat * 1000:.0f} ms)")
        scopes = _scopes(claims, self.scope_claim)
        missing = self.required_scope - scopes
        if missing:
            raise TokenRejected(f"The provided scope ({sorted(scopes)}) is missing a required scope "
                                f"({sorted(missing)})", status="insufficient_scope",
                                scope=" ".join(sorted(self.required_scope)))
        return BearerToken(principal, int(exp * 1000), scopes, claims)


class JwtValidator(TokenValidator):
    """Kafka's OAuthBearerValidatorCallbackHandler (KIP-768): a signed JWT checked with the keys of a JWKS
    file or URL (`sasl.oauthbearer.jwks.endpoint.url`), its `exp`, `iat`, issuer and audience, and the
    principal from `sasl.oauthbearer.sub.claim.name`."""

    ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")

    def __init__(self, jwks_url: str, *, audience: list[str] | None = None, issuer: str | None = None,
                 sub_claim: str = "sub", scope_claim: str = "scope", clock_skew_s: int = 30,
                 refresh_ms: int = 3_600_000) -> None:
        import jwt  # only OAUTHBEARER listeners with JWT validation load it

        self._jwt = jwt
        self.audience = audience or None
        self.issuer = issuer or None
        self.sub_claim = sub_claim
        self.scope_claim = scope_claim
        self.clock_skew_s = clock_skew_s
        self._file: str | None = None
        self._file_mtime = 0.0
        self._keys: Any = None
        if jwks_url.startswith(("http://", "https://")):
            self.blocking = True  # the key set is fetched (and refreshed) over HTTP
            self._client = jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=max(1, refresh_ms // 1000))
        else:
            self._client = None
            self._file = jwks_url[len("file://"):] if jwks_url.startswith("file://") else \
                jwks_url[len("file:"):] if jwks_url.startswith("file:") else jwks_url
            self._load_file()

    def _load_file(self) -> None:
        import os

        assert self._file is not None
        mtime = os.stat(self._file).st_mtime
        if self._keys is None or mtime != self._file_mtime:  # a changed file is read again (key rotation)
            with open(self._file) as f:
                self._keys = self._jwt.PyJWKSet.from_json(f.read())
            self._file_mtime = mtime

    def _signing_key(self, token: str) -> Any:
        jwt = self._jwt
        if self._client is not None:
            return self._client.get_signing_key_from_jwt(token).key
        self._load_file()
        kid = jwt.get_unverified_header(token).get("kid")
        keys = [k for k in self._keys.keys if kid is None or k.key_id == kid]
        if not keys:
            raise TokenRejected(f"No key in the JWKS matches the token's key id {kid!r}")
        return keys[0].key

    def validate(self, token: str) -> BearerToken:
        jwt = self._jwt
        try:
            key = self._signing_key(token)
            claims = jwt.decode(token, key, algorithms=list(self.ALGORITHMS), audience=self.audience,
                                issuer=self.issuer, leeway=self.clock_skew_s,
                                options={"require": ["exp", "iat"], "verify_aud": self.audience is not None})
        except TokenRejected:
            raise
        except (jwt.PyJWTError, ValueError, OSError) as exc:
            raise TokenRejected(f"The token is not valid: {exc}") from None
        principal = claims.get(self.sub_claim)
        if not isinstance(principal, str) or not principal:
            raise TokenRejected(f"The token has no {self.sub_claim} claim")
        return BearerToken(principal, int(claims["exp"] * 1000), _scopes(claims, self.scope_claim), claims)
