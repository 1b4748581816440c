"""SASL and TLS at the wire level, as Kafka behaves: what may come before authentication, failures and their
delayed close, SaslHandshake v0's bare tokens, KIP-368 re-authentication and expired sessions, a plaintext
client or a silent one on a TLS port, many failed logins beside an authenticated client, and fuzzed SASL
frames."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time

import pytest

from tests.fuzz.sasl_fuzz import fuzz_sasl_broker
from tests.integration.conftest import wait_until
from tests.kafka_wire import WireClient, api_versions_round_trip

USERS = {"alice": "alice-pw", "bob": "bob-pw"}
SASL = pytest.mark.minibroker(security="SASL_PLAINTEXT", users=USERS,
                              security_settings={"connection.failed.authentication.delay.ms": "300"})
METADATA_V9 = {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}


def closed(client: WireClient, timeout: float = 10.0) -> bool:
    """True when the broker closes the connection without sending anything (more)."""
    client.sock.settimeout(timeout)
    try:
        return client.sock.recv(1) == b""
    except ConnectionResetError:
        return True


@SASL
def test_unsupported_mechanism_lists_the_enabled_ones_then_closes(minibroker_server) -> None:
    with WireClient(minibroker_server.bootstrap) as client:
        answer = client.request(17, 1, {"mechanism": "GSSAPI"})
        assert answer.error_code == 33  # UNSUPPORTED_SASL_MECHANISM
        assert list(answer.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
        assert closed(client)


@SASL
def test_requests_before_authentication_close_the_connection(minibroker_server) -> None:
    with WireClient(minibroker_server.bootstrap) as client:
        client.send(3, 9, METADATA_V9)
        assert closed(client)
    with WireClient(minibroker_server.bootstrap) as client:
        client.request(18, 0, {})
        client.send(18, 0, {})  # ApiVersions is allowed once, first
        assert closed(client)
    with WireClient(minibroker_server.bootstrap) as client:
        assert client.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
        assert client.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
        # Not a SaslAuthenticate during the exchange: as Kafka (4.1, compared byte for byte), the request's own
        # error answer (ILLEGAL_SASL_STATE; Metadata has no error field: an empty answer), then the close.
        answer = client.request(3, 9, METADATA_V9)
        assert (answer.brokers, answer.topics, answer.controller_id) == ([], [], -1)
        assert closed(client)


@SASL
def test_wrong_password_is_answered_then_closed_after_the_delay(minibroker_server) -> None:
    with WireClient(minibroker_server.bootstrap) as client:
        assert client.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
        started = time.monotonic()
        answer = client.request(36, 2, {"auth_bytes": b"\x00alice\x00nope"})
        waited = time.monotonic() - started
        assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED
        assert answer.error_message == "Authentication failed: Invalid username or password"
        assert waited >= 0.25  # connection.failed.authentication.delay.ms=300 (a lower bound only)
        assert closed(client)


@SASL
def test_handshake_v0_then_bare_tokens(minibroker_server) -> None:
    with WireClient(minibroker_server.bootstrap) as client:
        assert client.request(17, 0, {"mechanism": "PLAIN"}).error_code == 0
        token = b"\x00bob\x00bob-pw"
        client.sock.sendall(struct.pack(">i", len(token)) + token)
        assert client._recv(4) == b"\x00\x00\x00\x00"  # PLAIN's empty server token, bare
        assert client.request(3, 9, METADATA_V9).brokers[0].node_id == 0
    assert minibroker_server.principals_seen() == {"User:bob": 1}


@SASL
def test_sasl_requests_after_authentication_are_illegal(minibroker_server) -> None:
    """Without a session lifetime there is no re-authentication: Kafka answers ILLEGAL_SASL_STATE."""
    with WireClient(minibroker_server.bootstrap) as client:
        assert client.sasl_plain("alice", "alice-pw").session_lifetime_ms == 0
        assert client.request(17, 1, {"mechanism": "PLAIN"}).error_code == 34
        answer = client.request(36, 2, {"auth_bytes": b"\x00alice\x00alice-pw"})
        assert answer.error_code == 34
        assert answer.error_message == "SaslAuthenticate request received after successful authentication"


def test_sasl_requests_on_a_plaintext_listener_are_illegal(minibroker) -> None:
    with WireClient(minibroker) as client:
        assert client.request(17, 1, {"mechanism": "PLAIN"}).error_code == 34
        assert client.request(3, 9, METADATA_V9).brokers  # the connection goes on


@pytest.mark.minibroker(security="SASL_PLAINTEXT", users=USERS, virtual_time=True,
                        security_settings={"connections.max.reauth.ms": "60000"})
def test_reauthentication_and_expired_sessions(minibroker_server) -> None:
    """KIP-368: the session lifetime is told in SaslAuthenticate v1+; a SaslHandshake on the authenticated
    connection re-authenticates (same principal only); a session past its lifetime is closed at its next
    request."""
    broker = minibroker_server
    with WireClient(broker.bootstrap) as client:
        assert client.sasl_plain("alice", "alice-pw").session_lifetime_ms == 60_000
        broker.advance(50)
        assert client.sasl_plain("alice", "alice-pw").session_lifetime_ms == 60_000  # re-authenticated
        broker.advance(50)  # 100 s after the first login, 50 s after the second: still valid
        assert client.request(3, 9, METADATA_V9).brokers
        broker.advance(11)  # past the second session's end
        client.send(3, 9, METADATA_V9)
        assert closed(client)
    with WireClient(broker.bootstrap) as client:
        assert client.sasl_plain("alice", "alice-pw").error_code == 0
        broker.advance(2)
        answer = client.sasl_plain("bob", "bob-pw")  # another principal: refused
        assert answer.error_code == 58
        assert answer.error_message == "Cannot change principals during re-authentication from User.alice: User.bob"
        assert closed(client)
    outcomes = broker.authentications()
    assert outcomes[("SASL_PLAINTEXT", "PLAIN", "expired")] == 1
    assert outcomes[("SASL_PLAINTEXT", "PLAIN", "ok")] == 3


@pytest.mark.minibroker(security="SSL", security_settings={"ssl.handshake.timeout.ms": "500"})
def test_plaintext_and_silent_clients_on_a_tls_port_are_closed(minibroker_server, caplog) -> None:
    host, port = minibroker_server.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as plain:
        plain.sendall(struct.pack(">i", 10) + struct.pack(">hhih", 18, 0, 1, -1))  # ApiVersions in the clear
        received = b""
        while chunk := plain.recv(1024):  # a TLS alert at most, never a Kafka answer; then closed
            received += chunk
        assert len(received) < 10
    silent = socket.create_connection((host, int(port)), timeout=10)  # never starts its handshake
    try:
        silent.settimeout(10)
        assert silent.recv(1) == b""  # closed after ssl.handshake.timeout.ms
    finally:
        silent.close()
    wait_until(lambda: minibroker_server.open_connections() == 0, 10, message="no connection left")
    reasons = " ".join(r.getMessage() for r in caplog.records)
    assert "TLS handshake failed" in reasons and "TLS handshake not finished within 500 ms" in reasons
    # A proper TLS client is served meanwhile.
    context = ssl.create_default_context(cafile=str(minibroker_server.security.ca_file))
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        assert api_versions_round_trip(tls) >= 0


@pytest.mark.minibroker(security="SASL_PLAINTEXT", users=USERS,
                        security_settings={"connection.failed.authentication.delay.ms": "3000"})
def test_failed_logins_do_not_hold_up_authenticated_clients(minibroker_server) -> None:
    """100 clients with a wrong password wait out their failure delay at once; meanwhile an authenticated
    client is answered throughout (its round trips end while the failed connections are still held)."""
    host, port = minibroker_server.bootstrap.rsplit(":", 1)
    witness = WireClient(minibroker_server.bootstrap)
    assert witness.sasl_plain("alice", "alice-pw").error_code == 0
    failed: list[socket.socket] = []

    def fail_one() -> None:
        client = WireClient(minibroker_server.bootstrap)
        client.send(17, 1, {"mechanism": "PLAIN"})
        client.send(36, 2, {"auth_bytes": b"\x00alice\x00wrong"})
        failed.append(client.sock)

    threads = [threading.Thread(target=fail_one) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_until(lambda: minibroker_server.authentications().get(("SASL_PLAINTEXT", "PLAIN", "failed"), 0) == 100,
               20, message="100 failed authentications")
    for _ in range(20):
        api_versions_round_trip(witness.sock)
    assert minibroker_server.open_connections() > 50  # the failed ones are still in their delay
    for sock in failed:
        sock.settimeout(20)
        sock.recv(1 << 16)  # their answers come after the delay, then the close
    witness.close()
    for sock in failed:
        sock.close()
    wait_until(lambda: minibroker_server.open_connections() == 0, 20, message="every connection released")


def test_fuzzed_sasl_frames_leave_the_broker_serving() -> None:
    report = fuzz_sasl_broker(600, seed=23)
    assert report.sent >= 600 and report.answered_bytes > 0
    assert report.witness_answers > 5
    assert report.errors == []
    assert report.left_open == 0


def test_metadata_answers_the_listener_the_client_came_in_on(tmp_path) -> None:
    """Two listeners with their own advertised addresses: each client hears its own listener's address; the
    trace names the principal of each request."""
    from broker.config.options import Listener
    from broker.testkit import BrokerThread
    from broker.testkit.security import SecurityKit

    settings = SecurityKit("SASL_PLAINTEXT", USERS, directory=tmp_path / "kit").broker_settings()
    listeners = [Listener("127.0.0.1", 0, "plain.example", 19092, "PLAINTEXT"),
                 Listener("127.0.0.1", 0, "sasl.example", 19093, "SASL_PLAINTEXT")]
    trace = tmp_path / "trace.jsonl"
    with BrokerThread(tmp_path / "data", listeners=listeners, security_settings=settings,
                      trace_file=str(trace)) as broker:
        (_, plain_port), (_, sasl_port) = broker.addresses
        with WireClient(f"127.0.0.1:{plain_port}") as plain, WireClient(f"127.0.0.1:{sasl_port}") as sasl:
            answer = plain.request(3, 9, METADATA_V9)
            assert [(b.host, b.port) for b in answer.brokers] == [("plain.example", 19092)]
            assert sasl.sasl_plain("bob", "bob-pw").error_code == 0
            answer = sasl.request(3, 9, METADATA_V9)
            assert [(b.host, b.port) for b in answer.brokers] == [("sasl.example", 19093)]
        broker.flush_trace()
    import json

    principals = {(line["api"], line["principal"]) for line in map(json.loads, trace.read_text().splitlines())
                  if line["dir"] == "request"}
    assert ("METADATA", "User:ANONYMOUS") in principals and ("METADATA", "User:bob") in principals


@pytest.mark.minibroker(security="SSL", users={"carol": ""}, client_auth="required")
def test_expired_client_certificate_is_refused(minibroker_server, tmp_path, caplog) -> None:
    import datetime

    kit = minibroker_server.security
    expired = kit._ca.issue_cert("carol.client", common_name="carol",
                                 not_before=datetime.datetime(2020, 1, 1), not_after=datetime.datetime(2021, 1, 1))
    expired.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "expired.pem"))
    context = ssl.create_default_context(cafile=str(kit.ca_file))
    context.load_cert_chain(str(tmp_path / "expired.pem"))
    host, port = minibroker_server.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                api_versions_round_trip(tls)  # TLS 1.3: the refusal shows at the first read
    assert "certificate has expired" in " ".join(r.getMessage() for r in caplog.records)
    assert minibroker_server.principals_seen() == {}


@SASL
def test_large_frames_before_authentication_are_refused(minibroker_server) -> None:
    """sasl.server.max.receive.size (512 KiB): an unauthenticated client cannot make the broker buffer more;
    once authenticated, socket.request.max.bytes applies."""
    big = b"\x00alice\x00" + b"x" * (600 * 1024)
    with WireClient(minibroker_server.bootstrap) as client:
        assert client.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
        client.sock.sendall(struct.pack(">i", len(big) + 100) + b"\x00" * 4096)
        assert closed(client)
    with WireClient(minibroker_server.bootstrap) as client:
        assert client.sasl_plain("alice", "alice-pw").error_code == 0
        answer = client.request(36, 2, {"auth_bytes": big})  # a large (if pointless) request is read now
        assert answer.error_code == 34
