"""`python -m broker.healthcheck HOST:PORT`, the images' health check: 0 for a broker that answers ApiVersions,
1 with the reason for no broker, a peer that closes, or an answer that is not the broker's."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

from broker.healthcheck import answers_api_versions, main


def test_a_broker_is_healthy(minibroker) -> None:
    host, port = minibroker.rsplit(":", 1)
    assert answers_api_versions(host, int(port)) is None
    result = subprocess.run([sys.executable, "-m", "broker.healthcheck", minibroker], capture_output=True,
                            text=True, timeout=30)
    assert (result.returncode, result.stderr) == (0, "")


def test_no_broker_is_unhealthy(capsys) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once closed
    assert main([f"127.0.0.1:{port}"]) == 1
    assert f"unhealthy: 127.0.0.1:{port}" in capsys.readouterr().err


def test_a_peer_that_closes_or_answers_garbage_is_unhealthy() -> None:
    for reply, reason in ((b"", "closed before an answer"),
                          (b"\x00\x00\x00\x06\x00\x00\x00\x07\x00\x00", "another request"),
                          (b"\x00\x00\x00\x06\x68\x65\x61\x6c\x00\x23", "error code 35")):
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen()

            def answer(reply: bytes = reply, server: socket.socket = server) -> None:
                conn, _ = server.accept()
                with conn:
                    conn.recv(1024)
                    conn.sendall(reply)

            thread = threading.Thread(target=answer)
            thread.start()
            problem = answers_api_versions("127.0.0.1", server.getsockname()[1])
            thread.join(10)
        assert problem is not None and reason in problem, problem


def test_a_malformed_address_is_a_usage_error(capsys) -> None:
    assert main(["nowhere"]) == 2
    assert "usage" in capsys.readouterr().err
