"""`python -m broker.healthcheck [HOST:PORT]`: exit 0 when a broker answers ApiVersions there, 1 otherwise.

A container health check in one argument without spaces: Docker runs a `["CMD", ...]` check's arguments as
they are, while podman's Docker API (up to about 5.7, podman#26519) splits them on spaces, which breaks a
`python -c "..."` check. Only the standard library: the check starts in a fraction of the broker's time.
"""

from __future__ import annotations

import socket
import struct
import sys

API_VERSIONS = 18
CORRELATION_ID = 0x6865616C  # any value: the answer must carry it back


def answers_api_versions(host: str, port: int, timeout: float = 2.0) -> str | None:
    """None when the broker at host:port answers an ApiVersions v0 request without an error, else why not."""
    client_id = b"healthcheck"
    body = struct.pack(">hhih", API_VERSIONS, 0, CORRELATION_ID, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(struct.pack(">i", len(body)) + body)
            head = _read(conn, 10)  # size, correlation id, error code
    except OSError as exc:
        return f"{host}:{port}: {exc}"
    if head is None:
        return f"{host}:{port}: the connection closed before an answer"
    _size, correlation_id, error_code = struct.unpack(">iih", head)
    if correlation_id != CORRELATION_ID:
        return f"{host}:{port}: an answer to another request (correlation id {correlation_id})"
    if error_code != 0:
        return f"{host}:{port}: ApiVersions answered error code {error_code}"
    return None


def _read(conn: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    address = args[0] if args else "127.0.0.1:9092"
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        print(f"usage: python -m broker.healthcheck [HOST:PORT], not {address!r}", file=sys.stderr)
        return 2
    problem = answers_api_versions(host.strip("[]") or "127.0.0.1", int(port))
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
