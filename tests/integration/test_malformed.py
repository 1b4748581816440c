"""Bad input over raw sockets: each gets Kafka's error or a closed connection, and the broker keeps
serving every other connection."""

from __future__ import annotations

import os
import random
import socket
import struct

import pytest

API_VERSIONS = 18
METADATA = 3
PRODUCE = 0


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


def _request(api_key: int, version: int, correlation_id: int, body: bytes = b"",
             client_id: bytes = b"t") -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _response(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", _recv_exact(sock, 4))
    return _recv_exact(sock, size)


def _is_closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def _api_versions_ok(sock: socket.socket, correlation_id: int = 7) -> None:
    sock.sendall(_request(API_VERSIONS, 0, correlation_id))
    resp = _response(sock)
    corr, error = struct.unpack_from(">ih", resp)
    assert (corr, error) == (correlation_id, 0)


@pytest.fixture
def witness(minibroker):
    """A connection opened before the bad input: it must keep being served."""
    sock = _connect(minibroker)
    _api_versions_ok(sock, 1)
    yield sock
    _api_versions_ok(sock, 2)
    sock.close()
    fresh = _connect(minibroker)
    _api_versions_ok(fresh, 3)
    fresh.close()


def test_random_bytes(minibroker, witness):
    rng = random.Random(1234)
    for _ in range(20):
        sock = _connect(minibroker)
        sock.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))))
        sock.shutdown(socket.SHUT_WR)
        # Either closed straight away or after whatever it could answer; never a hang or crash.
        sock.settimeout(30)
        while sock.recv(65536):
            pass
        sock.close()


def test_absurd_frame_size_closes(minibroker, witness):
    for size in (2**31 - 1, 100 * 1024 * 1024 + 1, -5):
        sock = _connect(minibroker)
        sock.sendall(struct.pack(">i", size) + b"\x00" * 16)
        assert _is_closed(sock)
        sock.close()


def test_truncated_frame_then_disconnect(minibroker, witness):
    full = _request(API_VERSIONS, 0, 9)
    for cut in range(1, len(full)):
        sock = _connect(minibroker)
        sock.sendall(full[:cut])
        sock.close()


def test_unknown_api_key_closes(minibroker, witness):
    sock = _connect(minibroker)
    sock.sendall(_request(9999, 0, 5))
    assert _is_closed(sock)


def test_unsupported_version_closes(minibroker, witness):
    sock = _connect(minibroker)
    sock.sendall(_request(METADATA, 99, 5))
    assert _is_closed(sock)


def test_api_versions_unknown_version_gets_v0_error(minibroker, witness):
    sock = _connect(minibroker)
    # A client that speaks ApiVersions v99 uses request header v2 (tagged fields after client_id).
    sock.sendall(_request(API_VERSIONS, 99, 42, b"\x00"))
    resp = _response(sock)
    corr, error, count = struct.unpack_from(">ihi", resp)
    assert (corr, error) == (42, 35)  # UNSUPPORTED_VERSION, answered with v0 and header v0
    keys = {struct.unpack_from(">hhh", resp, 10 + 6 * i)[0]: struct.unpack_from(">hhh", resp, 10 + 6 * i)[1:]
            for i in range(count)}
    assert keys == {API_VERSIONS: (0, 4)}  # only ApiVersions' own range, as Kafka answers
    _api_versions_ok(sock)  # the connection stays usable


def _produce_v2_garbage(minibroker: str) -> int:
    """A Produce v2 whose message set is 30 zero bytes: the partition's error code. (The topic exists: Produce
    creates none, as in Kafka.)"""
    from tests.kafka_wire import WireClient

    with WireClient(minibroker) as client:
        client.create_topic("t")
    records = b"\x00" * 30
    body = struct.pack(">hi", 1, 1000) + struct.pack(">i", 1) + struct.pack(">h", 1) + b"t" + \
        struct.pack(">i", 1) + struct.pack(">ii", 0, len(records)) + records
    sock = _connect(minibroker)
    sock.sendall(_request(PRODUCE, 2, 11, body))
    resp = _response(sock)
    corr, topics, name_len = struct.unpack_from(">iih", resp)
    assert (corr, topics, name_len) == (11, 1, 1)
    partitions, index, error = struct.unpack_from(">iih", resp, 4 + 4 + 2 + 1)
    assert (partitions, index) == (1, 0)
    return error


def test_produce_v2_garbage_is_a_corrupt_message(minibroker, witness):
    # Kafka 3.9 serves Produce v2: a message of size 0 is corrupt (smaller than the v0 message overhead).
    assert _produce_v2_garbage(minibroker) == 2


@pytest.mark.minibroker(kafka_version="4.0")
def test_produce_v2_closes_the_connection_under_kafka_4(minibroker, witness):
    # Kafka 4 still advertises Produce v0 (KAFKA-18659) but parses nothing below v3: the connection is closed
    # (recorded from 4.1 and 4.4: tests/reference/recorded/*/legacy_refused.json).
    with pytest.raises(ConnectionError):
        _produce_v2_garbage(minibroker)


def test_garbage_body_closes(minibroker, witness):
    sock = _connect(minibroker)
    # Metadata v1 with a topic count of 1000 and nothing behind it.
    sock.sendall(_request(METADATA, 1, 5, struct.pack(">i", 1000)))
    assert _is_closed(sock)


def test_fuzzed_bodies_of_valid_headers(minibroker, witness):
    rng = random.Random(99)
    for api_key, version in [(0, 9), (1, 12), (2, 7), (3, 12), (18, 3), (19, 7), (20, 6)]:
        for _ in range(10):
            sock = _connect(minibroker)
            sock.sendall(_request(api_key, version, 1, os.urandom(rng.randint(0, 200))))
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(30)
            while sock.recv(65536):
                pass
            sock.close()


def test_peer_reset_with_responses_pending_is_not_an_error(minibroker, witness, caplog):
    """A client that vanishes with responses still queued is ordinary: no ERROR in the broker's log."""
    import logging
    caplog.set_level(logging.WARNING)
    for _ in range(5):
        sock = _connect(minibroker)
        sock.sendall(b"".join(_request(API_VERSIONS, 0, i) for i in range(500)))
        # SO_LINGER 0: close with RST so the broker's pending writes fail rather than drain
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    _api_versions_ok(witness, 9)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
