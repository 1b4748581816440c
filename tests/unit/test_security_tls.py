"""TLS contexts from Kafka's ssl.* settings, and the per-listener security built from the broker's settings;
handshakes run over trio's in-memory streams."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trio
import trio.testing

from broker.security import sasl
from broker.security.client_side import authenticate, client_security
from broker.security.listener_security import (
    SecurityConfigError,
    SecurityProtocol,
    build_listener_security,
)
from broker.security.principal import ssl_principal
from broker.security.tls import SslSettings, TlsConfigError, client_context, server_context

trustme = pytest.importorskip("trustme")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    ca = trustme.CA()
    other_ca = trustme.CA()
    d = tmp_path_factory.mktemp("pki")
    server = ca.issue_cert("localhost", "127.0.0.1")
    client = ca.issue_cert("client", common_name="alice", organization_unit_name="eng", organization_name="Example")
    stranger = other_ca.issue_cert("client", common_name="mallory")
    server.private_key_and_cert_chain_pem.write_to_path(str(d / "server.pem"))
    client.private_key_and_cert_chain_pem.write_to_path(str(d / "client.pem"))
    stranger.private_key_and_cert_chain_pem.write_to_path(str(d / "stranger.pem"))
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    return {name: d / f"{name}.pem" for name in ("server", "client", "stranger", "ca")}


async def handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> tuple[str | None, bytes | None]:
    """(negotiated protocol, client certificate as the server saw it) after a handshake in memory."""
    left, right = trio.testing.memory_stream_pair()
    server = trio.SSLStream(left, server_ctx, server_side=True)
    client = trio.SSLStream(right, client_ctx, server_hostname="localhost")
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.do_handshake)
            await server.do_handshake()
    except BaseExceptionGroup as group:  # either side's failure (the other is cancelled)
        if group.subgroup((trio.BrokenResourceError, ssl.SSLError)) is not None:
            raise trio.BrokenResourceError("handshake failed") from group
        raise
    return server.version(), server.getpeercert(binary_form=True)


def run(fn, *args):  # noqa: ANN001, ANN201
    return trio.run(fn, *args)


def client_settings(pki: dict[str, Path], cert: str | None = None, **kw: str) -> SslSettings:
    return SslSettings(truststore_location=str(pki["ca"]), keystore_location=str(pki[cert]) if cert else None, **kw)


def test_server_and_client_contexts_handshake(pki: dict[str, Path]) -> None:
    srv = server_context(SslSettings(keystore_location=str(pki["server"])))
    version, peer = run(handshake, srv, client_context(client_settings(pki)))
    assert version == "TLSv1.3" and peer is None


def test_client_certificate_gives_the_principal(pki: dict[str, Path]) -> None:
    from broker.security.principal import SslPrincipalMapper

    srv = server_context(SslSettings(keystore_location=str(pki["server"]), truststore_location=str(pki["ca"]),
                                     client_auth="required"))
    _, peer = run(handshake, srv, client_context(client_settings(pki, "client")))
    assert ssl_principal(peer, SslPrincipalMapper()) == "User:CN=alice,OU=eng,O=Example"
    assert ssl_principal(peer, SslPrincipalMapper("RULE:^CN=([^,]*),.*$/$1/L")) == "User:alice"


def test_required_client_certificate(pki: dict[str, Path]) -> None:
    srv = server_context(SslSettings(keystore_location=str(pki["server"]), truststore_location=str(pki["ca"]),
                                     client_auth="required"))
    for cert in (None, "stranger"):  # none, or one from a CA the broker does not trust
        with pytest.raises(trio.BrokenResourceError):
            run(handshake, srv, client_context(client_settings(pki, cert, enabled_protocols="TLSv1.2")))


def test_requested_client_certificate_is_optional(pki: dict[str, Path]) -> None:
    srv = server_context(SslSettings(keystore_location=str(pki["server"]), truststore_location=str(pki["ca"]),
                                     client_auth="requested"))
    assert run(handshake, srv, client_context(client_settings(pki)))[1] is None
    assert run(handshake, srv, client_context(client_settings(pki, "client")))[1] is not None


def test_untrusted_server_is_refused_by_the_client(pki: dict[str, Path]) -> None:
    srv = server_context(SslSettings(keystore_location=str(pki["stranger"])))
    with pytest.raises(trio.BrokenResourceError):
        run(handshake, srv, client_context(client_settings(pki)))


def test_protocols_and_cipher_suites(pki: dict[str, Path]) -> None:
    server = str(pki["server"])
    srv = server_context(SslSettings(keystore_location=server, enabled_protocols="TLSv1.2"))
    assert run(handshake, srv, client_context(client_settings(pki)))[0] == "TLSv1.2"
    # Only TLS 1.2 suites named: TLS 1.3 cannot be negotiated (as in Java).
    srv = server_context(SslSettings(keystore_location=server,
                                     cipher_suites="TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"))
    assert run(handshake, srv, client_context(client_settings(pki)))[0] == "TLSv1.2"
    # A TLS 1.3 server and a TLS 1.2 client do not meet.
    srv = server_context(SslSettings(keystore_location=server, enabled_protocols="TLSv1.3"))
    with pytest.raises(trio.BrokenResourceError):
        run(handshake, srv, client_context(client_settings(pki, enabled_protocols="TLSv1.2")))


@pytest.mark.parametrize("settings, message", [
    (dict(enabled_protocols="SSLv3"), "unknown protocol"),
    (dict(cipher_suites="TLS_NOT_A_SUITE"), "unknown or unsupported suite"),
    (dict(client_auth="maybe"), "ssl.client.auth"),
    (dict(keystore_type="JKS"), "keytool"),
    (dict(keystore_location="/nonexistent.pem"), "cannot load the key store"),
    (dict(keystore_location=None), "needs ssl.keystore.location"),
    (dict(enabled_protocols="TLSv1.2", cipher_suites="TLS_AES_128_GCM_SHA256"), "names no suite"),
])
def test_bad_settings_are_refused_at_startup(pki: dict[str, Path], settings: dict, message: str) -> None:
    base = dict(keystore_location=str(pki["server"]))
    with pytest.raises(TlsConfigError, match=message):
        server_context(SslSettings(**{**base, **settings}))


def test_inline_pem_and_pkcs12_keystores(pki: dict[str, Path], tmp_path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import load_pem_private_key, pkcs12

    text = pki["server"].read_text()
    import re

    key_pem = text[:re.search(r"-----END [A-Z ]*PRIVATE KEY-----", text).end()]  # type: ignore[union-attr]
    chain_pem = text[len(key_pem):]
    srv = server_context(SslSettings(keystore_key=key_pem, keystore_certificate_chain=chain_pem))
    assert run(handshake, srv, client_context(SslSettings(truststore_certificates=pki["ca"].read_text())))[0]
    key = load_pem_private_key(key_pem.encode(), None)
    certs = x509.load_pem_x509_certificates(chain_pem.encode())
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption

    p12 = tmp_path / "server.p12"
    p12.write_bytes(pkcs12.serialize_key_and_certificates(b"server", key, certs[0], certs[1:],
                                                          BestAvailableEncryption(b"storepw")))
    trust = tmp_path / "trust.p12"
    ca = x509.load_pem_x509_certificate(pki["ca"].read_bytes())
    trust.write_bytes(pkcs12.serialize_key_and_certificates(None, None, None, [ca],
                                                            BestAvailableEncryption(b"trustpw")))
    srv = server_context(SslSettings(keystore_type="PKCS12", keystore_location=str(p12), keystore_password="storepw"))
    cli = client_context(SslSettings(truststore_type="PKCS12", truststore_location=str(trust),
                                     truststore_password="trustpw"))
    assert run(handshake, srv, cli)[0] == "TLSv1.3"


# -- listener security from settings ------------------------------------------------------------------------

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";')


def no_scram(user: str, mechanism: str) -> None:
    return None


def test_listener_settings_prefixes(pki: dict[str, Path], tmp_path: Path) -> None:
    users = tmp_path / "users.properties"
    users.write_text("# PLAIN users\ncarol = carol-pw\n")
    values = {
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.ssl.keystore.location": str(pki["server"]),
        "sasl.plain.users.file": str(users),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms": "30000",
        "connection.failed.authentication.delay.ms": "250",
    }
    sec = build_listener_security("SASL_SSL", SecurityProtocol.SASL_SSL, values, scram_lookup=no_scram,
                                  now_ms=lambda: 0)
    assert sec.ssl_context is not None and sec.failed_authentication_delay_ms == 250
    assert sec.sasl is not None and list(sec.sasl.enabled) == ["PLAIN", "SCRAM-SHA-512"]
    assert sec.sasl.max_reauth_ms == {"PLAIN": 0, "SCRAM-SHA-512": 30000}
    plain = sec.sasl.create("PLAIN")
    assert isinstance(plain, sasl.PlainServer) and dict(plain.users) == {"admin": "admin-pw", "alice": "alice-pw",
                                                                         "carol": "carol-pw"}
    users.write_text("dave=dave-pw\n")  # the users file is read again when it changes
    import os
    os.utime(users, (1, 1))
    assert plain.users.get("dave") == "dave-pw" and plain.users.get("carol") is None


def test_jaas_file_section_per_listener(tmp_path: Path) -> None:
    jaas = tmp_path / "kafka_server_jaas.conf"
    jaas.write_text("KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required user_x=\"1\"; };\n"
                    "external.KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required "
                    "user_y=\"2\"; };")
    values = {"java.security.auth.login.config": str(jaas), "sasl.enabled.mechanisms": "PLAIN"}
    for listener, expected in (("EXTERNAL", {"y": "2"}), ("INTERNAL", {"x": "1"})):
        sec = build_listener_security(listener, SecurityProtocol.SASL_PLAINTEXT, values, scram_lookup=no_scram,
                                      now_ms=lambda: 0)
        assert dict(sec.sasl.create("PLAIN").users) == expected  # type: ignore[union-attr]


@pytest.mark.parametrize("values, message", [
    ({"sasl.enabled.mechanisms": "GSSAPI"}, "unsupported SASL mechanism"),
    ({"sasl.enabled.mechanisms": " , "}, "names no mechanism"),
    ({"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": "broken"}, "sasl.jaas.config"),
    ({"sasl.enabled.mechanisms": "OAUTHBEARER", "listener.name.x.oauthbearer.sasl.server.callback.handler.class":
      "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"}, "jwks"),
])
def test_bad_sasl_settings(values: dict, message: str) -> None:
    with pytest.raises(SecurityConfigError, match=message):
        build_listener_security("X", SecurityProtocol.SASL_PLAINTEXT, values, scram_lookup=no_scram, now_ms=lambda: 0)


def test_client_side_credentials_authenticate_against_a_listener(pki: dict[str, Path]) -> None:
    """The broker's own client settings (inter-broker) from the same settings, run against the server side."""
    from broker.security.authenticator import SaslAuthenticator

    values = {"listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS,
              "listener.name.internal.ssl.keystore.location": str(pki["server"]),
              "listener.name.internal.ssl.truststore.location": str(pki["ca"]),
              "sasl.mechanism.inter.broker.protocol": "PLAIN", "sasl.enabled.mechanisms": "PLAIN"}
    server_side = build_listener_security("INTERNAL", SecurityProtocol.SASL_SSL, values, scram_lookup=no_scram,
                                          now_ms=lambda: 0)
    client = client_security("INTERNAL", SecurityProtocol.SASL_SSL, values)
    assert client.ssl_context is not None and (client.mechanism, client.username) == ("PLAIN", "admin")
    assert run(handshake, server_side.ssl_context, client.ssl_context)[0] == "TLSv1.3"
    assert server_side.sasl is not None
    auth = SaslAuthenticator(server_side.sasl)

    async def roundtrip(api_key: int, version: int, body: dict) -> dict:
        if api_key == 17:
            answer = auth.handshake(version, body["mechanism"])
            return {"error_code": answer.error_code, "mechanisms": answer.mechanisms}
        result = auth.authenticate(body["auth_bytes"], 0)
        return {"error_code": result.error_code, "error_message": result.error_message,
                "auth_bytes": result.auth_bytes}

    run(authenticate, client, roundtrip)
    assert auth.principal == "User:admin"
