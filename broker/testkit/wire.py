"""A minimal blocking Kafka client over a raw socket: exact requests built with protocol.schema, for tests
and for the test kit's cluster handle (Metadata, admin requests to the controller)."""

from __future__ import annotations

import socket
import struct
from typing import Any

from protocol.header import (
    RequestHeader,
    encode_request_header,
    request_spec,
    response_header_version,
    skip_tagged_fields,
)
from protocol.schema import message


class WireClient:
    def __init__(self, bootstrap: str, timeout: float = 30.0, client_id: str = "wire-test") -> None:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation = 0
        self.client_id = client_id

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _recv(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            out += chunk
        return bytes(out)

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> int:
        self.correlation += 1
        spec = request_spec(api_key)
        assert spec is not None
        payload = encode_request_header(RequestHeader(api_key, version, self.correlation, self.client_id)) + \
            spec.encode(version, body)
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        return self.correlation

    def receive(self, api_key: int, version: int, correlation: int) -> Any:
        (size,) = struct.unpack(">i", self._recv(4))
        frame = self._recv(size)
        (got,) = struct.unpack_from(">i", frame)
        assert got == correlation, (got, correlation)
        offset = 4 if response_header_version(api_key, version) == 0 else skip_tagged_fields(frame, 4)
        spec = request_spec(api_key)
        assert spec is not None
        return message(spec.name.removesuffix("Request") + "Response").decode(version, frame, offset)

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        return self.receive(api_key, version, self.send(api_key, version, body))
