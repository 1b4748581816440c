"""SASL frames fuzzed over real sockets to a SASL_PLAINTEXT broker: handshakes for known, unknown and mangled
mechanisms (v0 and v1), authentication tokens valid, mutated and random (PLAIN, SCRAM, OAUTHBEARER), raw
tokens after a v0 handshake, and other requests before authentication. No handler may fail, an
authenticated witness connection must be answered throughout, and every fuzzed connection must be released."""

from __future__ import annotations

import logging
import random
import socket
import struct
import tempfile
import time

from broker.security.client_side import unsecured_token
from broker.testkit import BrokerThread
from protocol.header import RequestHeader, encode_request_header, request_spec
from tests.fuzz import corpus
from tests.fuzz.socket_fuzz import SocketReport, _drain, _ErrorLog

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
USERS = {"alice": "alice-secret"}


def _frame(api_key: int, version: int, body: dict, correlation: int = 1) -> bytes:
    spec = request_spec(api_key)
    assert spec is not None
    payload = encode_request_header(RequestHeader(api_key, version, correlation, "sasl-fuzz")) + \
        spec.encode(version, body)
    return struct.pack(">i", len(payload)) + payload


def _token(rng: random.Random, mechanism: str) -> bytes:
    """A first token of the mechanism, right or wrong."""
    if mechanism == "PLAIN":
        return rng.choice([b"\x00alice\x00alice-secret", b"\x00alice\x00wrong", b"x\x00alice\x00alice-secret",
                           b"\x00\x00", b"alice"])
    if mechanism.startswith("SCRAM"):
        return rng.choice([b"n,,n=alice,r=abcdef", b"n,,n=nobody,r=x", b"p=tls-unique,,n=alice,r=a",
                           b"n,a=bob,n=alice,r=z", b"c=biws,r=abc,p=AAAA"])
    return (f"n,,\x01auth=Bearer {unsecured_token({'sub': 'alice'})}\x01\x01").encode() if rng.random() < 0.5 \
        else rng.choice([b"n,,\x01auth=Bearer a.b.\x01\x01", b"\x01", b"n,,\x01\x01"])


def _connection_inputs(rng: random.Random) -> list[bytes]:
    out: list[bytes] = []
    if rng.random() < 0.5:
        out.append(_frame(18, rng.choice([0, 3]), {"client_software_name": "fuzz", "client_software_version": "1"}))
    mechanism = rng.choice(MECHANISMS + ["GSSAPI", "", "PLAIN\x00", "x" * 300])
    version = rng.choice([0, 1])
    handshake = _frame(17, version, {"mechanism": mechanism})
    out.append(corpus.reframe(corpus.mutate(handshake, rng)) if rng.random() < 0.2 else handshake)
    for _ in range(rng.randint(1, 3)):
        token = _token(rng, mechanism if mechanism in MECHANISMS else "PLAIN")
        if rng.random() < 0.4:
            token = corpus.mutate(token, rng)
        roll = rng.random()
        if version == 0 and roll < 0.6:  # a raw token, as after a v0 handshake
            out.append(struct.pack(">i", len(token)) + token)
        elif roll < 0.85:
            frame = _frame(36, rng.choice([0, 1, 2]), {"auth_bytes": token})
            out.append(corpus.reframe(corpus.mutate(frame, rng)) if rng.random() < 0.2 else frame)
        else:  # something else before authentication: Metadata, or random bytes
            out.append(rng.choice([_frame(3, 9, {"topics": None, "allow_auto_topic_creation": False,
                                                 "include_topic_authorized_operations": False}),
                                   struct.pack(">i", 12) + rng.randbytes(12)]))
    return out


def _authenticated_witness(host: str, port: int) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=30)
    # SaslHandshake v1 answers with response header v0 (error code at 4); SaslAuthenticate v2 is flexible
    # (header v1: the error code after the correlation id and an empty tag section).
    for frame, error_at in ((_frame(17, 1, {"mechanism": "PLAIN"}), 4),
                            (_frame(36, 2, {"auth_bytes": b"\x00alice\x00alice-secret"}), 5)):
        sock.sendall(frame)
        (size,) = struct.unpack(">i", _recv(sock, 4))
        body = _recv(sock, size)
        if struct.unpack_from(">h", body, error_at)[0] != 0:
            raise AssertionError(f"the witness could not authenticate: {body!r}")
    return sock


def _recv(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed by the broker")
        out += chunk
    return bytes(out)


def _witness_round_trip(sock: socket.socket, correlation: int) -> None:
    sock.sendall(_frame(18, 0, {}, correlation))
    (size,) = struct.unpack(">i", _recv(sock, 4))
    body = _recv(sock, size)
    assert struct.unpack_from(">i", body)[0] == correlation


def fuzz_sasl_broker(inputs: int, seed: int) -> SocketReport:
    rng = random.Random(seed)
    report = SocketReport()
    errors = _ErrorLog()
    logging.getLogger("broker").addHandler(errors)
    with tempfile.TemporaryDirectory() as data_dir, \
            BrokerThread(data_dir, security="SASL_PLAINTEXT", users=USERS,
                         security_settings={"connection.failed.authentication.delay.ms": "5"}) as broker:
        host, port_text = broker.bootstrap.rsplit(":", 1)
        port = int(port_text)
        witness = _authenticated_witness(host, port)
        try:
            while report.sent < inputs:
                with socket.create_connection((host, port), timeout=30) as sock:
                    report.connections += 1
                    batch = _connection_inputs(rng)
                    try:
                        sock.sendall(b"".join(batch))
                        sock.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass  # closed on an earlier input, as it should be
                    report.answered_bytes += _drain(sock, 2.0)
                    report.sent += len(batch)
                if report.connections % 25 == 0:
                    _witness_round_trip(witness, report.connections)
                    report.witness_answers += 1
            _witness_round_trip(witness, 1)
            report.witness_answers += 1
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                report.left_open = broker.open_connections() - 1
                if report.left_open <= 0:
                    report.left_open = 0
                    break
                time.sleep(0.05)
        finally:
            witness.close()
            logging.getLogger("broker").removeHandler(errors)
    report.errors = errors.lines
    return report
