"""Raw requests to any Kafka-speaking broker, encoded and decoded with minibroker's own `protocol/` (Kafka's
JSON message definitions), answered as plain JSON-ready data: the fields the version has, by their
snake_case names; UUIDs as strings, bytes as hex.

    with WireConnection("127.0.0.1:9092") as conn:
        answer = conn.request(3, 12, {"topics": [{"name": "t"}], "allow_auto_topic_creation": False})
        answer["topics"][0]["error_code"]

The same bytes go to Apache Kafka and to minibroker, so the comparison sees the brokers, not two clients.
"""

from __future__ import annotations

import socket
import struct
import uuid
from collections.abc import Mapping
from typing import Any

from protocol import primitives as p
from protocol.errors import DecodeError
from protocol.header import RequestHeader, encode_request_header, request_spec, response_header_version
from protocol.schema import MessageSpec, message

CLIENT_ID = "reference-harness"


class ConnectionClosed(ConnectionError):
    """The broker closed the connection instead of answering (as Kafka does to some bad requests)."""


def response_spec(api_key: int) -> MessageSpec:
    spec = request_spec(api_key)
    if spec is None:
        raise ValueError(f"no message definition for api key {api_key}")
    return message(spec.name.removesuffix("Request") + "Response")


def plain(value: Any, con: Any = None) -> Any:
    """A decoded message as JSON-ready data, keeping only the fields its version has (the decoder also
    fills the other versions' fields with defaults, which would compare as noise)."""
    if isinstance(con, p.KafkaStruct) and isinstance(value, Mapping):
        out = {}
        for f in [*con.fields, *(con.tagged or ())]:
            out[f.name] = plain(value.get(f.name), f.con)
        return out
    if isinstance(con, p.KafkaArray):
        return None if value is None else [plain(v, con.element) for v in value]
    inner = getattr(con, "struct", None)  # a nullable struct
    if isinstance(inner, p.KafkaStruct):
        return None if value is None else plain(value, inner)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


class WireConnection:
    """One TCP connection; requests are answered in order, so `send` several and `receive` in that order."""

    def __init__(self, address: str, timeout: float = 30.0, client_id: str | None = CLIENT_ID) -> None:
        host, port = address.split(",")[0].rsplit(":", 1)
        self.address = address
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.client_id = client_id
        self.correlation = 0
        self.pending: list[tuple[int, int, int]] = []  # (correlation id, api key, version) in send order

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, api_key: int, version: int, body: Mapping[str, Any]) -> int:
        spec = request_spec(api_key)
        if spec is None:
            raise ValueError(f"no message definition for api key {api_key}")
        return self.send_raw(api_key, version, spec.encode(version, body))

    def send_raw(self, api_key: int, version: int, encoded_body: bytes, header_tags: bytes | None = None) -> int:
        """A body encoded by the caller (a deliberately malformed one, say); `header_tags`: the request header's
        tagged-field section as the caller wrote it (header v2 only), instead of an empty one."""
        self.correlation += 1
        header = encode_request_header(RequestHeader(api_key, version, self.correlation, self.client_id))
        if header_tags is not None:
            header = header[:-1] + header_tags
        payload = header + encoded_body
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        self.pending.append((self.correlation, api_key, version))
        return self.correlation

    def receive(self) -> dict[str, Any]:
        """The answer to the oldest request sent and not yet received."""
        correlation, api_key, version = self.pending.pop(0)
        (size,) = struct.unpack(">i", self._recv(4))
        frame = self._recv(size)
        (got,) = struct.unpack_from(">i", frame)
        if got != correlation:
            raise AssertionError(f"answer to correlation id {got}, expected {correlation}")
        offset = 4 if response_header_version(api_key, version) == 0 else 5
        spec = response_spec(api_key)
        valid = spec.valid_versions
        if api_key == 18 and valid is not None and not valid[0] <= version <= valid[1]:
            version = 0  # KIP-511: an ApiVersions version the broker does not know is answered in v0
        try:
            return plain(spec.decode(version, frame, offset), spec.struct(version))
        except DecodeError:
            if api_key != 18 or version == 0:
                raise
            return plain(spec.decode(0, frame, offset), spec.struct(0))  # the same, for a version it lacks

    def request(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        self.send(api_key, version, body)
        return self.receive()

    def _recv(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            try:
                chunk = self.sock.recv(n - len(out))
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise ConnectionClosed("the broker closed the connection")
            out += chunk
        return bytes(out)
