"""One client connection: socket -> frame (4-byte size + body) -> header -> decoded request -> handler ->
encoded response.

Requests of one connection are started in arrival order; handlers that wait (acks=all durability,
Fetch long poll) run as tasks so later requests can proceed; responses leave strictly in request order,
those that are ready coalesced into one write.
"""

from __future__ import annotations

import logging
import math
import os
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import trio

from broker.app import Endpoint
from broker.handlers.context import ANONYMOUS, LATER, RequestContext
from broker.observability.faults import FaultAction, FaultInjector, error_response
from broker.observability.metrics import Metrics
from broker.observability.trace import Tracer
from broker.server.dispatch import Api, lookup
from protocol.errors import DecodeError
from protocol.header import (
    ApiKey,
    ErrorCode,
    parse_request_header,
    response_header_version,
)

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 64  # per connection; more requests wait in the socket buffer (backpressure)
RECV_SIZE = 256 * 1024
DIRECT_READ_MIN = 256 * 1024  # frames from this size on are read into their own buffer
_PRODUCE_KEY = struct.pack(">h", ApiKey.PRODUCE)
_SASL_HANDSHAKE_KEY = struct.pack(">h", ApiKey.SASL_HANDSHAKE)
_SIZE = struct.Struct(">i")
_CORRELATION_V0 = struct.Struct(">i")
_CORRELATION_V1 = struct.Struct(">ib")  # correlation id + empty tagged fields


class CloseConnection(Exception):
    """The request cannot be answered; Kafka closes the connection."""


@dataclass(slots=True, eq=False)
class _Slot:
    """One request's place in the response order."""

    data: bytes | None = None  # framed response, None for no response (acks=0)
    close: bool = False
    done: bool = False
    drop: bool = False  # fault injection: close the connection instead of sending this response
    close_after: bool = False  # fault injection: close the connection once this response is sent
    started: float = 0.0  # perf_counter at decoding, for the latency metric
    request: Any = None  # the decoded request, for the per-topic metrics


@dataclass(slots=True, eq=False)
class Instruments:
    """The test kit's instruments every connection reports to (shared, set up by the server)."""

    faults: FaultInjector
    metrics: Metrics
    tracer: Tracer | None = None  # --trace FILE


def peer_name(stream: Any) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "?"


def frame_response(correlation_id: int, header_version: int, body: bytes) -> bytes:
    header = _CORRELATION_V0.pack(correlation_id) if header_version == 0 else \
        _CORRELATION_V1.pack(correlation_id, 0)
    return _SIZE.pack(len(header) + len(body)) + header + body


class Connection:
    """One client connection.

    The socket is read and written with plain non-blocking system calls, waiting on trio only when it
    would block: a request costs one pass of the event loop instead of one per await (trio's stream
    methods checkpoint on every call). Responses leave in request order: whichever task answers the
    oldest outstanding request writes every answered response from the head of the queue at once; what
    the socket does not take goes to the writer task, and until it has drained no more requests are read.
    """

    def __init__(self, broker: Any, instruments: Instruments, stream: Any, endpoint: Endpoint, *,
                 peer: str | None = None, principal: str = ANONYMOUS) -> None:
        self.broker = broker
        self.instruments = instruments
        self.stream = stream
        self.endpoint = endpoint
        self.peer = peer or peer_name(stream)
        # Who the client is: ANONYMOUS, a client certificate's mapped name, or the SASL authorization id.
        self.principal = principal
        security = endpoint.security
        self._sasl: Any = None  # broker.security.authenticator.SaslAuthenticator on SASL listeners
        if security is not None and security.sasl is not None:
            from broker.security.authenticator import SaslAuthenticator

            self._sasl = SaslAuthenticator(security.sasl)
        # The largest frame taken: socket.request.max.bytes, and before a SASL authentication completes
        # sasl.server.max.receive.size (Kafka's bound on what an unauthenticated client can make it buffer).
        self.max_frame = broker.config.socket_request_max_bytes if self._sasl is None else \
            min(broker.config.socket_request_max_bytes, security.sasl_max_receive_size)
        self.read_scope = trio.CancelScope()
        self._fd = self._socket_fd()
        self._slots: deque[_Slot] = deque()  # unanswered or unsent requests, oldest first
        self._unsent: list[bytes] = []  # responses the socket has not taken yet, in order
        self._close_when_sent = False  # a request failed: Kafka closes the connection after earlier answers
        self._close_logged = False  # the reason to close was logged already (a failed authentication)
        self._writer_wake = trio.Event()
        self._progress: trio.Event | None = None  # set when a response is answered or sent
        self._scope: trio.CancelScope | None = None
        self._unstarted = 0  # handler tasks started that have not run yet
        self._long_polls: set[trio.CancelScope] = set()
        self._reads_done = False
        self._software: str | None = None  # "name/version" from the client's ApiVersions v3+, for the trace

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._scope = nursery.cancel_scope
                nursery.start_soon(self._write_loop)
                with self.read_scope:
                    await self._read_loop(nursery)
                # No more requests: answer the ones in flight (but no long poll), then close.
                self._reads_done = True
                for scope in self._long_polls:
                    scope.cancel()
                while self._slots or self._unsent:
                    await self._wait_progress()
                nursery.cancel_scope.cancel()
        except* (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except* Exception:
            log.exception("connection %s failed", self.peer)
        finally:
            with trio.CancelScope(shield=True):
                await self._close_stream()

    def _socket_fd(self) -> int:
        return int(self.stream.socket.fileno())

    async def _close_stream(self) -> None:
        await self.stream.aclose()

    async def _wait_progress(self) -> None:
        self._progress = event = trio.Event()
        await event.wait()

    def _made_progress(self) -> None:
        if self._progress is not None:
            self._progress.set()
            self._progress = None

    async def _read_loop(self, nursery: trio.Nursery) -> None:
        idle_s = self.broker.config.connections_max_idle_ms / 1000
        sock = self.stream.socket
        buf = bytearray()
        started = 0
        while True:
            while len(buf) >= 4:
                (size,) = _SIZE.unpack_from(buf)
                if size < 0 or size > self.max_frame:
                    log.warning("closing %s: frame of %d bytes exceeds %s %d", self.peer, size,
                                "socket.request.max.bytes" if self._sasl is None or self._sasl.authenticated
                                else "sasl.server.max.receive.size", self.max_frame)
                    return
                if len(buf) < 4 + size:
                    if size < DIRECT_READ_MIN:
                        break
                    # A large frame (a Produce of big batches) is read straight into its own buffer: the
                    # records are then copied once on their way to the log, not four times.
                    frame = bytearray(size)
                    have = len(buf) - 4
                    with memoryview(buf) as view:
                        frame[:have] = view[4:]
                    buf.clear()
                    if not await self._read_into(frame, have, idle_s):
                        return
                    if frame[:2] != _PRODUCE_KEY:
                        frame = bytes(frame)  # only the Produce decoder takes a bytearray
                else:
                    with memoryview(buf) as view:
                        frame = bytes(view[4:4 + size])
                    del buf[:4 + size]
                # Requests take effect in arrival order: a handler task started for the previous request
                # runs its first step (a Produce appends there) before this request starts. One checkpoint
                # may not be enough, as trio shuffles the tasks it runs in one batch.
                while self._unstarted:
                    await trio.lowlevel.checkpoint()
                if not await self._start_request(frame, nursery):
                    return
                started += 1
                if started % 16 == 0:
                    await trio.lowlevel.checkpoint()  # a client that pipelines a lot shares the loop
            # Backpressure: a client that does not read its responses stops being read.
            while len(self._slots) >= MAX_IN_FLIGHT or self._unsent:
                await self._wait_progress()
            try:
                data = os.read(self._fd, RECV_SIZE)
            except BlockingIOError:
                with trio.move_on_after(idle_s if idle_s > 0 else math.inf) as idle:
                    await trio.lowlevel.wait_readable(sock)
                # Idle: no bytes for connections.max.idle.ms (half a frame then silence too), and no
                # request of ours in flight (Kafka: no activity on the channel).
                if idle.cancelled_caught and not self._slots:
                    log.info("closing idle connection %s", self.peer)
                    return
                continue
            except OSError:  # reset by the peer
                return
            if not data:
                return
            buf += data

    async def _read_into(self, frame: bytearray, have: int, idle_s: float) -> bool:
        """Fill `frame` from the socket from `have` on; False when the connection ends (EOF, reset, idle)."""
        with memoryview(frame) as view:
            while have < len(frame):
                try:
                    n = os.readv(self._fd, [view[have:]])
                except BlockingIOError:
                    with trio.move_on_after(idle_s if idle_s > 0 else math.inf) as idle:
                        await trio.lowlevel.wait_readable(self.stream.socket)
                    if idle.cancelled_caught and not self._slots:
                        log.info("closing idle connection %s", self.peer)
                        return False
                    continue
                except OSError:  # reset by the peer
                    return False
                if n == 0:
                    return False
                have += n
        return True

    async def _start_request(self, frame: bytes | bytearray, nursery: trio.Nursery) -> bool:
        """Decode and start one request; False means close the connection. (Async only for an injected
        delay and a SASL check that may block: nothing else awaits here.)"""
        sasl = self._sasl
        if sasl is not None and (sasl.session_expiry_ms is not None or not sasl.authenticated or
                                 frame[:2] == _SASL_HANDSHAKE_KEY):
            verdict = await self._authentication_frame(frame, nursery)
            if verdict is not None:
                return verdict
        try:
            header, offset = parse_request_header(frame)
        except DecodeError as exc:
            log.warning("closing %s: malformed request header: %s", self.peer, exc)
            return False
        api = lookup(header.api_key)
        versions = self.broker.versions
        if api is None or header.api_key not in versions.accepted:
            log.warning("closing %s: unknown api key %d", self.peer, header.api_key)
            return False
        version = header.api_version
        if not versions.accepts(header.api_key, version):
            body = self._unsupported_version(api, version, frame, offset)
            if body is None:
                log.warning("closing %s: unsupported version %d of %s", self.peer, version, api.key.name)
                return False
            slot = _Slot()
            self._slots.append(slot)
            # ApiVersions' answer to an unknown version is always v0 with header v0 (KIP-511).
            self._answer(slot, frame_response(header.correlation_id, 0 if api.key == ApiKey.API_VERSIONS else
                                              response_header_version(api.key, version), body))
            return True
        try:
            request = api.decode_request(version, frame, offset)
        except DecodeError as exc:
            log.warning("closing %s: malformed %s v%d request: %s", self.peer, api.key.name, version, exc)
            return False
        ctx = RequestContext(header, self.broker, self.endpoint, self.peer, self.principal)
        slot = _Slot(started=time.perf_counter(), request=request)
        tracer = self.instruments.tracer
        if tracer is not None:
            if api.key == ApiKey.API_VERSIONS and version >= 3:
                self._software = f"{request.client_software_name}/{request.client_software_version}"
            tracer.request(self.peer, self._trace_client(header), api.key.name, version, header.correlation_id,
                           request)
        faults = self.instruments.faults
        if faults.active:
            rule = faults.match(api.key, header.client_id, request, self.broker.now_ms(), self._topic_name)
            if rule is not None:
                log.info("fault %d (%s) on %s v%d from %s", rule.id, rule.action.value, api.key.name, version,
                         self.peer)
                action = rule.action
                if action is FaultAction.DROP_REQUEST:
                    self._abort()
                    return False
                if action in (FaultAction.ERROR, FaultAction.LEADER_UNAVAILABLE):
                    self._slots.append(slot)
                    error = rule.error or ErrorCode.NOT_LEADER_OR_FOLLOWER
                    acks0 = api.key == ApiKey.PRODUCE and request.acks == 0
                    self._finish(slot, api, ctx, None if acks0 else
                                 error_response(api.key, request, error, self._topic_name))
                    return True
                if action is FaultAction.DELAY:
                    # Like a muted Kafka channel: this connection's later requests wait too.
                    await trio.sleep(rule.delay_ms / 1000)
                slot.drop = action is FaultAction.DROP_RESPONSE
                slot.close_after = action is FaultAction.DROP_AFTER_RESPONSE
        self._slots.append(slot)
        if api.is_async:
            now = api.handler_now
            if now is not None:
                response = self._call(api, now, ctx, request)
                if response is not LATER:
                    self._finish(slot, api, ctx, response)
                    return True
            self._unstarted += 1
            if api.key == ApiKey.PRODUCE:
                ctx = replace(ctx, release=self._releaser())
            nursery.start_soon(self._run_async, api, ctx, request, slot)
        else:
            self._finish(slot, api, ctx, self._call(api, api.handler, ctx, request))
        return True

    # -- SASL (broker.security.authenticator keeps the state; the connection reads, answers and closes) -----
    async def _authentication_frame(self, frame: bytes | bytearray, nursery: trio.Nursery) -> bool | None:
        """A frame on a SASL connection that is not authenticated (or whose session may expire, or a
        SaslHandshake that may start a re-authentication): answer it here, True/False as _start_request,
        or None to let it go on as an ordinary request (ApiVersions before authentication, requests of an
        authenticated session)."""
        from broker.security.authenticator import IllegalSaslState

        sasl = self._sasl
        now = self.broker.now_ms()
        if sasl.expects_raw_token:  # after SaslHandshake v0: a bare token, no request header
            return await self._sasl_token(bytes(frame), None, None, nursery)
        try:
            header, offset = parse_request_header(frame)
        except DecodeError as exc:
            log.warning("closing %s: malformed request header during SASL authentication: %s", self.peer, exc)
            return self._authentication_failed(None, nursery)
        if sasl.authenticated:
            if header.api_key == ApiKey.SASL_HANDSHAKE and sasl.begin_reauthentication(now):
                log.info("%s (%s) re-authenticates", self.peer, self.principal)
            elif sasl.session_expired(now):
                log.info("closing %s: the SASL session of %s expired", self.peer, self.principal)
                self._count_authentication("expired")
                return False
            else:
                return None
        authenticating = sasl.framed and sasl.state.value in ("AUTHENTICATE", "REAUTH_BAD_MECHANISM")
        try:
            sasl.check_request(header.api_key)
        except IllegalSaslState as exc:
            log.warning("closing %s: %s", self.peer, exc)
            self._count_authentication("failed")
            # As Kafka: during the exchange (after SaslHandshake v1) the request gets its error answer
            # (ILLEGAL_SASL_STATE) after the failure delay; before the handshake the connection just closes.
            answer = self._illegal_state_answer(header, frame, offset) if authenticating else None
            if answer is None:
                return False
            return self._authentication_failed(answer, nursery)
        if header.api_key == ApiKey.API_VERSIONS:
            sasl.api_versions()
            return None
        api = lookup(header.api_key)
        version = header.api_version
        if api is None or not self.broker.versions.accepts(header.api_key, version):
            log.warning("closing %s: unsupported version %d of API %d during SASL authentication", self.peer,
                        version, header.api_key)
            return self._authentication_failed(None, nursery)
        try:
            request = api.decode_request(version, frame, offset)
        except DecodeError as exc:
            log.warning("closing %s: malformed %s v%d request: %s", self.peer, api.key.name, version, exc)
            return self._authentication_failed(None, nursery)
        tracer = self.instruments.tracer
        if tracer is not None:  # SaslAuthenticate's token is traced as its length only
            tracer.request(self.peer, self._trace_client(header), api.key.name, version, header.correlation_id,
                           request)
        if header.api_key == ApiKey.SASL_HANDSHAKE:
            answer = sasl.handshake(version, request.mechanism)
            body = {"error_code": answer.error_code, "mechanisms": answer.mechanisms}
            if answer.error_code:
                log.warning("closing %s: SASL mechanism %r is not enabled (enabled: %s)", self.peer,
                            request.mechanism, ", ".join(answer.mechanisms))
                self._count_authentication("failed")
            return self._sasl_answer(header, api, body, answer.error_code != 0, nursery)
        return await self._sasl_token(bytes(request.auth_bytes or b""), header, api, nursery)

    async def _sasl_token(self, token: bytes, header: Any, api: Api | None, nursery: trio.Nursery) -> bool:
        """One token of the mechanism's exchange: in a SaslAuthenticate request (header given) or bare."""
        sasl = self._sasl
        now = self.broker.now_ms()
        if sasl.blocking:  # an OAUTHBEARER token checked against a JWKS fetched over HTTP
            answer = await trio.to_thread.run_sync(sasl.authenticate, token, now)
        else:
            answer = sasl.authenticate(token, now)
        mechanism = sasl.mechanism
        if answer.error_code:
            log.warning("closing %s: SASL %s authentication failed: %s", self.peer, mechanism, sasl.failure)
            self._count_authentication("failed")
        elif sasl.authenticated:
            self.principal = sasl.principal
            self.max_frame = self.broker.config.socket_request_max_bytes
            lifetime = f", session {answer.session_lifetime_ms} ms" if answer.session_lifetime_ms else ""
            log.info("%s authenticated as %s with %s%s", self.peer, self.principal, mechanism, lifetime)
            self._count_authentication("ok")
        if header is None:  # SaslHandshake v0: the bare answer, and no answer to a failure (as Kafka)
            if answer.error_code:
                return self._authentication_failed(None, nursery)
            slot = _Slot()
            self._slots.append(slot)
            self._answer(slot, _SIZE.pack(len(answer.auth_bytes)) + answer.auth_bytes)
            return True
        body = {"error_code": answer.error_code, "error_message": answer.error_message,
                "auth_bytes": answer.auth_bytes, "session_lifetime_ms": answer.session_lifetime_ms}
        assert api is not None
        return self._sasl_answer(header, api, body, answer.error_code != 0, nursery)

    def _illegal_state_answer(self, header: Any, frame: bytes | bytearray, offset: int) -> bytes | None:
        api = lookup(header.api_key)
        version = header.api_version
        if api is None or not self.broker.versions.accepts(header.api_key, version):
            return None
        try:
            request = api.decode_request(version, frame, offset)
            body = error_response(api.key, request, ErrorCode.ILLEGAL_SASL_STATE, self._topic_name)
            return frame_response(header.correlation_id, response_header_version(api.key, version),
                                  api.encode_response(version, body))
        except Exception:  # a request the error builder does not know: the connection just closes
            return None

    def _sasl_answer(self, header: Any, api: Api, body: dict[str, Any], failed: bool, nursery: trio.Nursery) -> bool:
        version = header.api_version
        tracer = self.instruments.tracer
        if tracer is not None:
            tracer.response(self.peer, self._trace_client(header), api.key.name, version, header.correlation_id,
                            body, 0.0)
        data = frame_response(header.correlation_id, response_header_version(api.key, version),
                              api.encode_response(version, body))
        if failed:
            return self._authentication_failed(data, nursery)
        slot = _Slot()
        self._slots.append(slot)
        self._answer(slot, data)
        return True

    def _authentication_failed(self, data: bytes | None, nursery: trio.Nursery) -> bool:
        """Kafka's delayed close: the answer (if any) leaves after connection.failed.authentication.delay.ms
        and the connection closes; nothing more is read. Other connections are not slowed (the wait is this
        connection's own task)."""
        slot = _Slot(close_after=True)
        self._slots.append(slot)
        self._close_logged = True
        delay_s = self.endpoint.security.failed_authentication_delay_ms / 1000
        nursery.start_soon(self._answer_later, slot, data, delay_s)
        return False

    async def _answer_later(self, slot: _Slot, data: bytes | None, delay_s: float) -> None:
        await trio.sleep(delay_s)
        self._answer(slot, data, close=data is None)

    def _count_authentication(self, outcome: str) -> None:
        security = self.endpoint.security
        self.instruments.metrics.authentication(security.name if security else "",
                                                self._sasl.mechanism if self._sasl else None, outcome,
                                                self.principal if outcome == "ok" else None)

    def _unsupported_version(self, api: Api, version: int, frame: bytes, offset: int) -> bytes | None:
        if api.key == ApiKey.API_VERSIONS:
            from broker.handlers.api_versions import unsupported_version_body
            return api.response.encode(0, unsupported_version_body(self.broker.versions))
        return None

    def _call(self, api: Api, handler: Callable[..., Any], ctx: RequestContext, request: Any) -> Any:
        try:
            return handler(ctx, request)
        except Exception:
            log.exception("%s v%d from %s failed", api.key.name, ctx.header.api_version, self.peer)
            return CloseConnection

    def _releaser(self) -> Callable[[], None]:
        """The `release` of one request: lets the next request start, once."""
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._unstarted -= 1

        return release

    async def _run_async(self, api: Api, ctx: RequestContext, request: Any, slot: _Slot) -> None:
        if api.key != ApiKey.PRODUCE:
            self._unstarted -= 1  # a Produce releases its connection itself (RequestContext.release)
        # A Fetch long poll (max_wait_ms is the client's choice, up to 2^31 ms) only waits: it ends with the
        # connection. Other handlers finish their work (a coordinator's write) even if the client has gone.
        with trio.CancelScope() as scope:
            if api.key == ApiKey.FETCH:
                self._long_polls.add(scope)
                if self._reads_done:  # started just before the connection stopped reading
                    scope.cancel()
            try:
                response = await api.handler(ctx, request)
            except Exception:
                log.exception("%s v%d from %s failed", api.key.name, ctx.header.api_version, self.peer)
                response = CloseConnection
            finally:
                self._long_polls.discard(scope)
                ctx.release()
        if scope.cancelled_caught:
            self._answer(slot, None)
            return
        self._finish(slot, api, ctx, response)

    def _trace_client(self, header: Any) -> dict[str, Any]:
        return {"client_id": header.client_id, "software": self._software, "principal": self.principal}

    def _topic_name(self, topic_id: Any) -> str | None:
        topic = self.broker.topics.get_by_id(topic_id)
        return None if topic is None else topic.name

    def _finish(self, slot: _Slot, api: Api, ctx: RequestContext, response: Any) -> None:
        if api.key == ApiKey.METADATA and self.instruments.faults.active and isinstance(response, dict):
            _hide_leaders(response, self.instruments.faults.unavailable_leaders(self.broker.now_ms()))
        version = ctx.header.api_version
        tracer = self.instruments.tracer
        if tracer is not None:
            note = "connection closed (request failed)" if response is CloseConnection else \
                "not sent: connection dropped (fault rule)" if slot.drop else None
            tracer.response(self.peer, self._trace_client(ctx.header), api.key.name, version,
                            ctx.header.correlation_id, None if response is CloseConnection else response,
                            time.perf_counter() - slot.started, note)
        if response is CloseConnection:
            self._answer(slot, None, close=True)
            return
        try:
            self.instruments.metrics.observe(api.key, version, slot.request, response,
                                             time.perf_counter() - slot.started, self._topic_name)
        except Exception:  # a metric is never worth a request
            log.exception("metrics of %s v%d", api.key.name, version)
        slot.request = None
        if response is None:
            self._answer(slot, None)
            return
        try:
            body = api.encode_response(version, response)
        except Exception:
            log.exception("encoding %s v%d response failed", api.key.name, version)
            self._answer(slot, None, close=True)
            return
        self._answer(slot, frame_response(ctx.header.correlation_id, response_header_version(api.key, version),
                                          body))

    def _answer(self, slot: _Slot, data: bytes | None, *, close: bool = False) -> None:
        """Record a response; send every answered one from the head of the queue, in order."""
        if slot.drop:
            data, close = None, True
        slot.data = data
        slot.close = close
        slot.done = True
        slots = self._slots
        if self._close_when_sent or not slots or not slots[0].done:
            return
        out: list[bytes] = []
        while slots and slots[0].done:
            head = slots.popleft()
            if head.close:
                self._close_when_sent = True
                slots.clear()
                self.read_scope.cancel()
                break
            if head.data is not None:
                out.append(head.data)
            if head.close_after:
                self._close_when_sent = True
                slots.clear()
                self.read_scope.cancel()
                break
        if out:
            self._send(out)
        if self._close_when_sent:
            self._writer_wake.set()
        self._made_progress()

    def _send(self, out: list[bytes]) -> None:
        if self._unsent:  # the writer is waiting for the socket: queue behind what it holds
            self._unsent.extend(out)
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        try:
            sent = os.write(self._fd, data)
        except BlockingIOError:
            sent = 0
        except OSError:  # the peer went away; the connection ends
            self._abort()
            return
        if sent < len(data):
            self._unsent.append(memoryview(data)[sent:])
            self._writer_wake.set()

    def _abort(self) -> None:
        self._slots.clear()
        self._unsent.clear()
        if self._scope is not None:
            self._scope.cancel()

    async def _write_loop(self) -> None:
        """Sends what the socket did not take at once, and closes the connection after a failed request."""
        sock = self.stream.socket
        while True:
            await self._writer_wake.wait()
            self._writer_wake = trio.Event()
            while self._unsent:
                await trio.lowlevel.wait_writable(sock)
                data = self._unsent[0] if len(self._unsent) == 1 else b"".join(self._unsent)
                try:
                    sent = os.write(self._fd, data)
                except BlockingIOError:
                    continue
                except OSError:
                    self._abort()
                    return
                self._unsent = [memoryview(data)[sent:]] if sent < len(data) else []
                self._made_progress()
            if self._close_when_sent:
                if not self._close_logged:
                    log.warning("closing %s after a failed request", self.peer)
                self._abort()
                return


class TlsConnection(Connection):
    """A connection over TLS (SSL and SASL_SSL listeners): the same framing, ordering and SASL handling,
    with reads and writes through trio's SSLStream (the plaintext path's system calls stay as they are)."""

    CLOSE_NOTIFY_TIMEOUT_S = 1.0

    def _socket_fd(self) -> int:
        return -1  # never read or written directly

    async def _close_stream(self) -> None:
        # A peer that stops reading must not keep this task: close_notify gets a second, then the socket goes.
        with trio.move_on_after(self.CLOSE_NOTIFY_TIMEOUT_S):
            await self.stream.aclose()
        await trio.aclose_forcefully(self.stream)

    async def _read_loop(self, nursery: trio.Nursery) -> None:
        idle_s = self.broker.config.connections_max_idle_ms / 1000
        buf = bytearray()
        started = 0
        while True:
            while len(buf) >= 4:
                (size,) = _SIZE.unpack_from(buf)
                if size < 0 or size > self.max_frame:
                    log.warning("closing %s: frame of %d bytes exceeds %s %d", self.peer, size,
                                "socket.request.max.bytes" if self._sasl is None or self._sasl.authenticated
                                else "sasl.server.max.receive.size", self.max_frame)
                    return
                if len(buf) < 4 + size:
                    break
                with memoryview(buf) as view:
                    frame: bytes | bytearray = bytes(view[4:4 + size]) if view[4:6] != _PRODUCE_KEY else \
                        bytearray(view[4:4 + size])
                del buf[:4 + size]
                while self._unstarted:
                    await trio.lowlevel.checkpoint()
                if not await self._start_request(frame, nursery):
                    return
                started += 1
                if started % 16 == 0:
                    await trio.lowlevel.checkpoint()
            while len(self._slots) >= MAX_IN_FLIGHT or self._unsent:
                await self._wait_progress()
            if self._slots or idle_s <= 0:
                data = await self.stream.receive_some(RECV_SIZE)
            else:
                # Idle: nothing in flight and no bytes for connections.max.idle.ms. (A cancelled receive
                # leaves an SSLStream unusable, so the wait is bounded only when nothing is in flight.)
                with trio.move_on_after(idle_s) as idle:
                    data = await self.stream.receive_some(RECV_SIZE)
                if idle.cancelled_caught:
                    log.info("closing idle connection %s", self.peer)
                    return
            if not data:
                return
            buf += data

    def _send(self, out: list[bytes]) -> None:
        self._unsent.extend(out)
        self._writer_wake.set()

    async def _write_loop(self) -> None:
        while True:
            await self._writer_wake.wait()
            self._writer_wake = trio.Event()
            while self._unsent:
                count = len(self._unsent)  # what is sent stays queued until sent: run() waits for it
                data = self._unsent[0] if count == 1 else b"".join(self._unsent)
                await self.stream.send_all(data)
                del self._unsent[:count]
                self._made_progress()
            if self._close_when_sent:
                self._abort()
                return


def _hide_leaders(response: dict[str, Any], hidden: set[tuple[str, int]]) -> None:
    """Fault injection: the partitions' leader is unavailable in Metadata, as during an election."""
    for topic in response.get("topics") or []:
        for partition in topic.get("partitions") or []:
            if (topic.get("name"), partition.get("partition_index")) in hidden:
                partition.update(error_code=ErrorCode.LEADER_NOT_AVAILABLE, leader_id=-1, leader_epoch=-1,
                                 isr_nodes=[])
