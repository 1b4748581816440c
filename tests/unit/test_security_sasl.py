"""SASL mechanisms (server side), JAAS parsing and the per-connection authenticator, as pure logic."""

from __future__ import annotations

import base64
import json
import os

import pytest

from broker.security import sasl
from broker.security.authenticator import (
    IllegalSaslState,
    SaslAuthenticator,
    SaslMechanisms,
    SaslState,
)
from broker.security.client_side import OAuthBearerClient, PlainClient, ScramClient, unsecured_token
from broker.security.jaas import JaasError, parse_jaas_config, parse_jaas_file

NOW_MS = 1_700_000_000_000


# -- JAAS ---------------------------------------------------------------------------------------------------

def test_jaas_config_with_plain_users() -> None:
    [module] = parse_jaas_config('org.apache.kafka.common.security.plain.PlainLoginModule required '
                                 'username="admin" password="admin-secret" user_admin="admin-secret" '
                                 'user_alice="al;ice \\"quoted\\"";')
    assert module.class_name.endswith("PlainLoginModule") and module.flag == "required"
    assert module.options["username"] == "admin"
    assert module.plain_users == {"admin": "admin-secret", "alice": 'al;ice "quoted"'}


def test_jaas_file_sections_and_comments() -> None:
    sections = parse_jaas_file("""
        // the broker
        KafkaServer {
            org.apache.kafka.common.security.plain.PlainLoginModule required
            user_bob=bobpw;   /* bare word value */
            org.apache.kafka.common.security.scram.ScramLoginModule required username="b" password="c";
        };
        sasl_ssl.KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required; };
    """)
    assert [m.class_name.rsplit(".", 1)[1] for m in sections["KafkaServer"]] == ["PlainLoginModule",
                                                                                  "ScramLoginModule"]
    assert sections["KafkaServer"][0].plain_users == {"bob": "bobpw"}
    assert sections["sasl_ssl.KafkaServer"][0].options == {}


@pytest.mark.parametrize("text", ["", "Module required user_a=\"x\"", "Module user_a=\"x\";", "Module required a=;",
                                  "Module required a=\"unterminated;"])
def test_bad_jaas_config_is_refused(text: str) -> None:
    with pytest.raises(JaasError):
        parse_jaas_config(text)


# -- PLAIN --------------------------------------------------------------------------------------------------

def test_plain() -> None:
    server = sasl.PlainServer({"alice": "secret"})
    assert server.evaluate(PlainClient("alice", "secret").first()) == b""
    assert server.complete and server.authorization_id == "alice"


@pytest.mark.parametrize("token, message", [
    (b"\x00alice\x00wrong", "Authentication failed: Invalid username or password"),
    (b"\x00nobody\x00secret", "Authentication failed: Invalid username or password"),
    (b"\x00\x00secret", "Authentication failed: username not specified"),
    (b"\x00alice\x00", "Authentication failed: password not specified"),
    (b"alice\x00secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"bob\x00alice\x00secret", "Authentication failed: Client requested an authorization id that is different "
                                "from username"),
])
def test_plain_failures(token: bytes, message: str) -> None:
    server = sasl.PlainServer({"alice": "secret"})
    with pytest.raises(sasl.SaslAuthenticationError, match=message.replace("(", r"\(")):
        server.evaluate(token)
    assert not server.complete


# -- SCRAM --------------------------------------------------------------------------------------------------

def scram_keys(mechanism: str, password: str, iterations: int = 4096) -> sasl.ScramKeys:
    import scramp

    salt, stored, server, i = scramp.ScramMechanism(mechanism).make_auth_info(password, iterations, os.urandom(16))
    return sasl.ScramKeys(salt, stored, server, i)


def run_exchange(server: sasl.SaslServer, client) -> None:  # noqa: ANN001
    challenge = server.evaluate(client.first())
    while True:
        token = client.step(challenge)
        if token is None:
            return
        challenge = server.evaluate(token)


@pytest.mark.parametrize("mechanism", [sasl.SCRAM_SHA_256, sasl.SCRAM_SHA_512])
def test_scram_against_stored_keys(mechanism: str) -> None:
    keys = {("alice", mechanism): scram_keys(mechanism, "secret")}
    server = sasl.ScramServer(mechanism, lambda u, m: keys.get((u, m)))
    run_exchange(server, ScramClient(mechanism, "alice", "secret"))  # the client checks the server's proof too
    assert server.complete and server.authorization_id == "alice"


def test_scram_keys_from_the_credential_store_format() -> None:
    """The credentials AlterUserScramCredentials stores (salted password in, keys kept) authenticate."""
    import hashlib

    from broker.security.scram_credentials import ScramCredential, ScramMechanism

    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha512", b"pw", salt, 8192)
    cred = ScramCredential.from_salted_password(ScramMechanism.SCRAM_SHA_512, salt, salted, 8192)
    keys = sasl.ScramKeys(cred.salt, cred.stored_key, cred.server_key, cred.iterations)
    server = sasl.ScramServer(sasl.SCRAM_SHA_512, lambda u, m: keys if u == "bob" else None)
    run_exchange(server, ScramClient(sasl.SCRAM_SHA_512, "bob", "pw"))
    assert server.authorization_id == "bob"


def test_scram_wrong_password_and_unknown_user() -> None:
    keys = scram_keys(sasl.SCRAM_SHA_256, "secret")
    server = sasl.ScramServer(sasl.SCRAM_SHA_256, lambda u, m: keys if u == "alice" else None)
    with pytest.raises(sasl.SaslError):
        run_exchange(server, ScramClient(sasl.SCRAM_SHA_256, "alice", "wrong"))
    assert not server.complete
    server = sasl.ScramServer(sasl.SCRAM_SHA_256, lambda u, m: keys if u == "alice" else None)
    with pytest.raises(sasl.SaslError, match="Invalid user credentials"):
        run_exchange(server, ScramClient(sasl.SCRAM_SHA_256, "mallory", "secret"))


@pytest.mark.parametrize("first", [b"", b"\xff\xfe", b"n,,r=abc", b"p=tls-unique,,n=alice,r=abc", b"n,,n=alice"])
def test_scram_malformed_first_message(first: bytes) -> None:
    keys = scram_keys(sasl.SCRAM_SHA_256, "secret")
    server = sasl.ScramServer(sasl.SCRAM_SHA_256, lambda u, m: keys)
    with pytest.raises(sasl.SaslError):
        server.evaluate(first)


# -- OAUTHBEARER --------------------------------------------------------------------------------------------

def unsecured(claims: dict, header: dict | None = None) -> str:
    def enc(d: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()

    return f"{enc(header or {'alg': 'none'})}.{enc(claims)}."


def oauth(validator: sasl.TokenValidator, token: str) -> sasl.OAuthBearerServer:
    server = sasl.OAuthBearerServer(validator)
    challenge = server.evaluate(OAuthBearerClient(token).first())
    if challenge:
        server.error_challenge = challenge  # type: ignore[attr-defined]
    return server


def test_oauthbearer_unsecured_token() -> None:
    validator = sasl.UnsecuredTokenValidator({}, lambda: NOW_MS)
    token = unsecured_token({"sub": "alice", "scope": "a b"}, now=NOW_MS / 1000)
    server = oauth(validator, token)
    assert server.complete and server.authorization_id == "alice"
    assert server.credential_expiry_ms == NOW_MS + 3_600_000
    assert server.token is not None and server.token.scopes == {"a", "b"}


@pytest.mark.parametrize("claims, header, status", [
    ({"sub": "a", "exp": NOW_MS / 1000 - 1}, None, "invalid_token"),  # expired
    ({"exp": NOW_MS / 1000 + 60}, None, "invalid_token"),  # no principal
    ({"sub": "a"}, None, "invalid_token"),  # no exp
    ({"sub": "a", "exp": NOW_MS / 1000 + 60}, {"alg": "HS256"}, "invalid_token"),
    ({"sub": "a", "exp": NOW_MS / 1000 + 60, "iat": NOW_MS / 1000 + 30}, None, "invalid_token"),  # future iat
    ({"sub": "a", "exp": NOW_MS / 1000 + 60, "scope": "read"}, None, "insufficient_scope"),
])
def test_oauthbearer_bad_unsecured_tokens(claims: dict, header: dict | None, status: str) -> None:
    validator = sasl.UnsecuredTokenValidator({"unsecuredValidatorRequiredScope": "read write"}
                                             if status == "insufficient_scope" else {}, lambda: NOW_MS)
    server = sasl.OAuthBearerServer(validator)
    challenge = server.evaluate(OAuthBearerClient(unsecured(claims, header)).first())
    assert json.loads(challenge)["status"] == status
    assert not server.complete
    # The client acknowledges the error challenge with ^A; then the exchange fails, with that JSON as message.
    with pytest.raises(sasl.SaslAuthenticationError) as failure:
        server.evaluate(b"\x01")
    assert json.loads(str(failure.value))["status"] == status


@pytest.mark.parametrize("first", [b"", b"n,,auth=Bearer x\x01\x01", b"n,,\x01auth=Basic abc\x01\x01",
                                   b"n,,\x01auth=Bearer a b\x01\x01", b"y,,\x01auth=Bearer abc\x01\x01",
                                   b"n,,\x01key=v\x01\x01"])
def test_oauthbearer_malformed_initial_response(first: bytes) -> None:
    server = sasl.OAuthBearerServer(sasl.UnsecuredTokenValidator({}, lambda: NOW_MS))
    with pytest.raises(sasl.SaslError):
        server.evaluate(first)


def test_oauthbearer_initial_response_fields() -> None:
    authzid, token, extensions = sasl.parse_oauthbearer_initial_response(
        b"n,a=alice,\x01auth=Bearer abc.def.\x01traceId=123\x01\x01")
    assert (authzid, token, extensions) == ("alice", "abc.def.", {"traceId": "123"})


@pytest.fixture(scope="module")
def jwks(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    jwt = pytest.importorskip("jwt")
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="k1", use="sig", alg="RS256")
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk]}))
    return key, path


def signed(key, claims: dict, kid: str = "k1") -> str:  # noqa: ANN001
    import jwt

    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


def test_jwt_validated_against_a_jwks_file(jwks) -> None:  # noqa: ANN001
    import time

    key, path = jwks
    now = int(time.time())
    validator = sasl.JwtValidator(f"file://{path}", audience=["kafka"], issuer="https://idp")
    token = signed(key, {"sub": "svc-a", "iat": now, "exp": now + 600, "aud": "kafka", "iss": "https://idp",
                         "scope": "x y"})
    server = oauth(validator, token)
    assert server.complete and server.authorization_id == "svc-a"
    assert server.credential_expiry_ms == (now + 600) * 1000


def test_jwt_refusals(jwks) -> None:  # noqa: ANN001
    import time

    from cryptography.hazmat.primitives.asymmetric import rsa

    key, path = jwks
    now = int(time.time())
    validator = sasl.JwtValidator(str(path), audience=["kafka"], clock_skew_s=0)
    good = {"sub": "svc-a", "iat": now, "exp": now + 600, "aud": "kafka"}
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for token in [signed(other_key, good),  # signed by a key the JWKS does not hold
                  signed(key, {**good, "exp": now - 10}),  # expired
                  signed(key, {**good, "aud": "other"}),  # another audience
                  signed(key, {k: v for k, v in good.items() if k != "sub"}),  # no principal
                  signed(key, good, kid="unknown"),
                  unsecured(good)]:  # alg none is never accepted here
        server = oauth(validator, token)
        assert not server.complete, token


# -- the authenticator ------------------------------------------------------------------------------------

def mechanisms(max_reauth_ms: int = 0) -> SaslMechanisms:
    servers = {sasl.PLAIN: lambda: sasl.PlainServer({"alice": "secret", "bob": "pw"}),
               sasl.OAUTHBEARER: lambda: sasl.OAuthBearerServer(sasl.UnsecuredTokenValidator({}, lambda: NOW_MS))}
    return SaslMechanisms([sasl.PLAIN, sasl.OAUTHBEARER], lambda m: servers[m](),
                          {sasl.PLAIN: max_reauth_ms, sasl.OAUTHBEARER: max_reauth_ms})


def test_authentication_sequence() -> None:
    auth = SaslAuthenticator(mechanisms())
    auth.api_versions()
    assert auth.state is SaslState.HANDSHAKE_REQUEST
    answer = auth.handshake(1, sasl.PLAIN)
    assert answer.error_code == 0 and answer.mechanisms == [sasl.PLAIN, sasl.OAUTHBEARER]
    done = auth.authenticate(b"\x00alice\x00secret", NOW_MS)
    assert (done.error_code, done.session_lifetime_ms) == (0, 0)
    assert auth.authenticated and auth.principal == "User:alice" and auth.session_expiry_ms is None


def test_requests_before_authentication_are_illegal() -> None:
    auth = SaslAuthenticator(mechanisms())
    with pytest.raises(IllegalSaslState):
        auth.check_request(3)  # Metadata
    auth = SaslAuthenticator(mechanisms())
    auth.api_versions()
    with pytest.raises(IllegalSaslState):
        auth.api_versions()  # only once, first
    auth = SaslAuthenticator(mechanisms())
    auth.handshake(1, sasl.PLAIN)  # ApiVersions is optional
    with pytest.raises(IllegalSaslState):
        auth.check_request(0)


def test_unsupported_mechanism_and_wrong_password() -> None:
    auth = SaslAuthenticator(mechanisms())
    answer = auth.handshake(1, "GSSAPI")
    assert answer.error_code == 33 and answer.mechanisms == [sasl.PLAIN, sasl.OAUTHBEARER]
    assert auth.state is SaslState.FAILED
    auth = SaslAuthenticator(mechanisms())
    auth.handshake(1, sasl.PLAIN)
    answer = auth.authenticate(b"\x00alice\x00nope", NOW_MS)
    assert answer.error_code == 58 and answer.error_message == "Authentication failed: Invalid username or password"
    assert auth.state is SaslState.FAILED and not auth.authenticated


def test_generic_message_hides_the_reason() -> None:
    keys = scram_keys(sasl.SCRAM_SHA_256, "secret")
    auth = SaslAuthenticator(SaslMechanisms([sasl.SCRAM_SHA_256],
                                            lambda m: sasl.ScramServer(m, lambda u, _m: keys if u == "a" else None)))
    auth.handshake(1, sasl.SCRAM_SHA_256)
    answer = auth.authenticate(ScramClient(sasl.SCRAM_SHA_256, "nobody", "x").first(), NOW_MS)
    assert answer.error_message == ("Authentication failed during authentication due to invalid credentials with "
                                    "SASL mechanism SCRAM-SHA-256")
    assert "Invalid user credentials" in (auth.failure or "")


def test_handshake_v0_means_raw_tokens() -> None:
    auth = SaslAuthenticator(mechanisms())
    auth.handshake(0, sasl.PLAIN)
    assert auth.expects_raw_token
    assert auth.authenticate(b"\x00bob\x00pw", NOW_MS).error_code == 0
    assert auth.principal == "User:bob" and not auth.expects_raw_token


def test_session_lifetime_and_reauthentication() -> None:
    auth = SaslAuthenticator(mechanisms(max_reauth_ms=60_000))
    auth.handshake(1, sasl.PLAIN)
    assert auth.authenticate(b"\x00alice\x00secret", NOW_MS).session_lifetime_ms == 60_000
    assert not auth.session_expired(NOW_MS + 60_000) and auth.session_expired(NOW_MS + 60_001)
    assert auth.begin_reauthentication(NOW_MS + 50_000)
    assert auth.state is SaslState.REAUTH_PROCESS_HANDSHAKE
    auth.handshake(1, sasl.PLAIN)
    assert auth.authenticate(b"\x00alice\x00secret", NOW_MS + 50_000).session_lifetime_ms == 60_000
    assert auth.session_expiry_ms == NOW_MS + 110_000 and auth.principal == "User:alice"
    # Not again within a second.
    assert not auth.begin_reauthentication(NOW_MS + 50_500)


def test_reauthentication_may_not_change_principal_or_mechanism() -> None:
    auth = SaslAuthenticator(mechanisms(max_reauth_ms=60_000))
    auth.handshake(1, sasl.PLAIN)
    auth.authenticate(b"\x00alice\x00secret", NOW_MS)
    auth.begin_reauthentication(NOW_MS + 1)
    auth.handshake(1, sasl.PLAIN)
    answer = auth.authenticate(b"\x00bob\x00pw", NOW_MS + 1)
    assert answer.error_code == 58
    assert answer.error_message == "Cannot change principals during re-authentication from User.alice: User.bob"
    auth = SaslAuthenticator(mechanisms(max_reauth_ms=60_000))
    auth.handshake(1, sasl.PLAIN)
    auth.authenticate(b"\x00alice\x00secret", NOW_MS)
    auth.begin_reauthentication(NOW_MS + 1)
    assert auth.handshake(1, sasl.OAUTHBEARER).error_code == 0
    answer = auth.authenticate(b"whatever", NOW_MS + 1)
    assert answer.error_code == 58 and "not supported for re-authentication" in (answer.error_message or "")


def test_no_reauthentication_without_session_expiry() -> None:
    auth = SaslAuthenticator(mechanisms())
    auth.handshake(1, sasl.PLAIN)
    auth.authenticate(b"\x00alice\x00secret", NOW_MS)
    assert not auth.begin_reauthentication(NOW_MS + 10)


def test_token_expiry_bounds_the_session() -> None:
    auth = SaslAuthenticator(mechanisms(max_reauth_ms=3_600_000 * 5))
    auth.handshake(1, sasl.OAUTHBEARER)
    token = unsecured_token({"sub": "svc"}, lifetime_s=120, now=NOW_MS / 1000)
    answer = auth.authenticate(OAuthBearerClient(token).first(), NOW_MS)
    assert answer.error_code == 0 and answer.session_lifetime_ms == 120_000
    assert auth.principal == "User:svc"
