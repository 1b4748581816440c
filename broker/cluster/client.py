"""A broker's connection to another broker (Kafka's NetworkClient for one node): the controller's requests
(LeaderAndIsr, UpdateMetadata, StopReplica), a follower's Fetch and OffsetForLeaderEpoch, transaction
markers, ControlledShutdown and AlterPartition.

    client = BrokerClient("broker-2", host, port, client_id="broker-1")
    response = await client.request(ApiKey.UPDATE_METADATA, 7, body)    # a decoded Container

One request at a time, as each of Kafka's inter-broker channels keeps one in flight; a failed connection
raises BrokerUnavailable and the next request connects again. Each request has a deadline. A secured
inter-broker listener (`inter.broker.listener.name`) gets TLS and SASL on every connection, with this broker's
own credentials for that listener (broker.security.client_side).
"""

from __future__ import annotations

import logging
import select
import struct
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from protocol.errors import DecodeError
from protocol.header import (
    ApiKey,
    RequestHeader,
    encode_request_header,
    request_spec,
    response_header_version,
    skip_tagged_fields,
)
from protocol.schema import message

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")

# Opens the byte stream to a broker (plain TCP).
Connector = Callable[[str, int], Awaitable[trio.abc.Stream]]


class BrokerUnavailable(Exception):
    """The broker could not be reached, or the connection broke or timed out during a request."""


async def tcp_connector(host: str, port: int) -> trio.abc.Stream:
    stream = await trio.open_tcp_stream(host, port)
    stream.setsockopt(trio.socket.IPPROTO_TCP, trio.socket.TCP_NODELAY, 1)
    return stream


def _closed_by_peer(stream: trio.abc.Stream) -> bool:
    """Readable between requests, when nothing is expected: the peer closed the connection (or broke the
    protocol). Streams without a socket (in tests) are taken as open."""
    transport = getattr(stream, "transport_stream", stream)
    sock = getattr(transport, "socket", None)
    if sock is None:
        return False
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


def _response_spec_name(api_key: int) -> str:
    return "".join(part.capitalize() for part in ApiKey(api_key).name.split("_")) + "Response"


class BrokerClient:
    def __init__(self, name: str, host: str, port: int, *, client_id: str, timeout: float = 30.0,
                 connector: Connector = tcp_connector, security: Any = None) -> None:
        """`security`: a broker.security.client_side.ClientSecurity (TLS context, SASL credentials) when the
        inter-broker listener is secured; None for PLAINTEXT."""
        self.name = name
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        self._connector = connector
        self.security = security
        self._stream: trio.abc.Stream | None = None
        self._buffer = bytearray()
        self._correlation = 0
        self._lock = trio.Lock()

    def retarget(self, host: str, port: int) -> None:
        """The broker moved (it registered again with another address): reconnect there."""
        if (host, port) != (self.host, self.port):
            self.host, self.port = host, port
            self._drop()

    async def request(self, api_key: int, version: int, body: Mapping[str, Any], *,
                      timeout: float | None = None) -> Any:
        """Send one request and return its decoded response; BrokerUnavailable on any connection failure."""
        async with self._lock:
            try:
                with trio.fail_after(self.timeout if timeout is None else timeout):
                    stream = await self._connected()
                    return await self._exchange(stream, api_key, version, body)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError,
                    EOFError) as exc:
                self._drop()
                raise BrokerUnavailable(f"{self.name} at {self.host}:{self.port}: {exc!r}") from exc

    async def _exchange(self, stream: trio.abc.Stream, api_key: int, version: int, body: Mapping[str, Any]) -> Any:
        spec = request_spec(api_key)
        if spec is None:
            raise ValueError(f"no definition of api key {api_key}")
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        correlation = self._correlation
        payload = encode_request_header(RequestHeader(api_key, version, correlation, self.client_id)) + \
            spec.encode(version, body)
        await stream.send_all(_SIZE.pack(len(payload)) + payload)
        frame = await self._read_frame(stream)
        (got,) = _CORRELATION.unpack_from(frame)
        if got != correlation:
            self._drop()
            raise BrokerUnavailable(f"{self.name}: correlation id {got}, expected {correlation}")
        offset = 4
        if response_header_version(api_key, version) >= 1:
            offset = skip_tagged_fields(frame, offset)
        try:
            return message(_response_spec_name(api_key)).decode(version, frame, offset)
        except DecodeError as exc:
            self._drop()
            raise BrokerUnavailable(f"{self.name}: undecodable {ApiKey(api_key).name} response: {exc}") from exc

    async def _connected(self) -> trio.abc.Stream:
        if self._stream is not None and _closed_by_peer(self._stream):
            # Kafka's NetworkClient notices a connection the other broker closed (its connections.max.idle.ms)
            # while idle; sending into it would fail this request for nothing.
            log.debug("%s at %s:%d closed the idle connection: reconnecting", self.name, self.host, self.port)
            self._drop()
        if self._stream is None:
            self._buffer.clear()
            stream = await self._connector(self.host, self.port)
            security = self.security
            if security is not None and security.ssl_context is not None:
                stream = trio.SSLStream(stream, security.ssl_context, server_hostname=self.host)
                await stream.do_handshake()
            if security is not None and security.mechanism is not None:
                from broker.security.client_side import AuthenticationFailed, authenticate

                try:
                    await authenticate(security, lambda key, version, body: self._exchange(stream, key, version,
                                                                                           body))
                except AuthenticationFailed as exc:
                    await stream.aclose()
                    raise BrokerUnavailable(f"{self.name}: authentication failed: {exc}") from exc
            self._stream = stream
        return self._stream

    async def _read_frame(self, stream: trio.abc.Stream) -> bytes:
        buf = self._buffer
        while True:
            if len(buf) >= 4:
                (size,) = _SIZE.unpack_from(buf)
                if len(buf) >= 4 + size:
                    frame = bytes(buf[4:4 + size])
                    del buf[:4 + size]
                    return frame
            chunk = await stream.receive_some(256 * 1024)
            if not chunk:
                raise EOFError("connection closed")
            buf += chunk

    def _drop(self) -> None:
        stream, self._stream = self._stream, None
        self._buffer.clear()
        if stream is not None:
            # Close the socket without waiting (aclose would checkpoint inside a failed request); a TLS
            # stream's socket is its transport's.
            transport = getattr(stream, "transport_stream", stream)
            sock = getattr(transport, "socket", None)
            if sock is not None:
                sock.close()

    async def aclose(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            with trio.CancelScope(shield=True):
                await stream.aclose()
