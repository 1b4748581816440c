"""One client connection: socket -> frame (4-byte size + body, broker.server.framing) -> header -> decoded
request -> handler -> encoded response.

Requests of one connection are started in arrival order; handlers that wait (acks=all durability,
Fetch long poll) run as tasks so later requests can proceed; responses leave strictly in request order,
those that are ready coalesced into one write. A SASL listener's authentication frames are answered by
broker.server.sasl_framing; TLS connections (broker.server.tls_connection) read and write through trio's
SSLStream.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import trio

from broker.app import Broker, Endpoint
from broker.handlers.context import ANONYMOUS, LATER, AnswerThen, RequestContext
from broker.observability.faults import FaultAction, error_response
from broker.observability.instruments import Instruments
from broker.server.dispatch import Api, lookup
from broker.server.framing import FrameTooLarge, frame_response, frame_size, take_frame
from protocol.errors import DecodeError
from protocol.header import ApiKey, ErrorCode, RequestHeader, parse_request_header, response_header_version

if TYPE_CHECKING:  # loaded with the first SASL listener's connection, not at startup
    from broker.server.sasl_framing import SaslFraming, Verdict

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 64  # per connection; more requests wait in the socket buffer (backpressure)
RECV_SIZE = 256 * 1024
DIRECT_READ_MIN = 256 * 1024  # frames from this size on are read into their own buffer
# Not counted against a client's request quota (Kafka exempts them: a client must be able to learn the versions
# and authenticate; the cluster's own requests are not a client's).
_QUOTA_EXEMPT = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
                           ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
                           ApiKey.CONTROLLED_SHUTDOWN, ApiKey.ALTER_PARTITION, ApiKey.WRITE_TXN_MARKERS})


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
    size: int = 0  # the request frame's bytes (a producer's client quota counts them)


def peer_name(stream: Any) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "?"


class Connection:
    """One client connection.

    The socket is read and written with plain non-blocking system calls, waiting on trio only when it
    would block: a request costs one pass of the event loop instead of one per await (trio's stream
    methods checkpoint on every call). Responses leave in request order: whichever task answers the
    oldest outstanding request writes every answered response from the head of the queue at once; what
    the socket does not take goes to the writer task, and until it has drained no more requests are read.
    """

    # Large frames are read straight into their own buffer (a TLS stream cannot: it decrypts into its own).
    DIRECT_READS = True

    def __init__(self, broker: Broker, instruments: Instruments, stream: Any, endpoint: Endpoint, *,
                 peer: str | None = None, principal: str = ANONYMOUS) -> None:
        self.broker = broker
        self.instruments = instruments
        self.stream = stream
        self.endpoint = endpoint
        self.peer = peer or peer_name(stream)
        # Who the client is: ANONYMOUS, a client certificate's mapped name, or the SASL authorization id.
        self.principal = principal
        security = endpoint.security
        self._sasl: SaslFraming | None = None  # on SASL listeners
        if security is not None and security.sasl is not None:
            from broker.security.authenticator import SaslAuthenticator
            from broker.server.sasl_framing import SaslFraming

            self._sasl = SaslFraming(SaslAuthenticator(security.sasl), peer=self.peer, listener=security.name,
                                     versions=broker.versions, metrics=instruments.metrics,
                                     tracer=lambda: self.instruments.tracer, now_ms=broker.now_ms,
                                     trace_client=self._trace_client, topic_name=self._topic_name,
                                     on_authenticated=self._authenticated)
        # The largest frame taken: socket.request.max.bytes, and before a SASL authentication completes
        # sasl.server.max.receive.size (Kafka's bound on what an unauthenticated client can make it buffer).
        self.max_frame = broker.config.socket_request_max_bytes if self._sasl is None else \
            min(broker.config.socket_request_max_bytes, security.sasl_max_receive_size)
        self.read_scope = trio.CancelScope()
        self.last_read = trio.current_time()  # when bytes last came (the server closes idle connections)
        self._fd = self._socket_fd()
        self._slots: deque[_Slot] = deque()  # unanswered or unsent requests, oldest first
        self._unsent: list[bytes] = []  # responses the socket has not taken yet, in order
        self._close_when_sent = False  # a request failed: Kafka closes the connection after earlier answers
        self._close_logged = False  # the reason to close was logged already (a failed authentication)
        self._writer_wake = trio.Event()
        self._progress: trio.Event | None = None  # set when a response is answered or sent
        self._muted_until = 0.0  # trio time until which a throttled client's next request waits
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
        buf = bytearray()
        started = 0
        while True:
            while True:
                try:
                    size = frame_size(buf, self.max_frame)
                except FrameTooLarge as exc:
                    log.warning("closing %s: frame of %d bytes exceeds %s %d", self.peer, exc.size,
                                "socket.request.max.bytes" if self._sasl is None or self._sasl.authenticated
                                else "sasl.server.max.receive.size", self.max_frame)
                    return
                if size is None:
                    break
                frame: bytes | bytearray
                if len(buf) >= 4 + size:
                    frame = take_frame(buf, size)
                elif size >= DIRECT_READ_MIN and self.DIRECT_READS:
                    large = await self._read_large(buf, size)
                    if large is None:
                        return
                    frame = large
                else:
                    break
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
            data = await self._receive()
            if data is None:
                continue
            if not data:
                return
            buf += data
            self.last_read = trio.current_time()

    async def _receive(self) -> bytes | None:
        """The next bytes from the socket; b"" when the connection ends (EOF, reset), None when it has become
        readable (the loop looks at its backpressure again first)."""
        try:
            return os.read(self._fd, RECV_SIZE)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(self.stream.socket)
            return None
        except OSError:  # reset by the peer
            return b""

    def idle(self, now: float, idle_s: float) -> bool:
        """No bytes for connections.max.idle.ms (half a frame then silence too), and no request of ours in
        flight (Kafka: no activity on the channel)."""
        return not self._slots and now - self.last_read >= idle_s and not self.read_scope.cancel_called

    def close_idle(self) -> None:
        log.info("closing idle connection %s", self.peer)
        self.read_scope.cancel()

    async def _read_large(self, buf: bytearray, size: int) -> bytes | bytearray | None:
        """A large frame (a Produce of big batches) read straight into its own buffer, the start of it taken
        from `buf`: the records are then copied once on their way to the log, not four times. None when
        the connection ends first."""
        frame = bytearray(size)
        have = len(buf) - 4
        with memoryview(buf) as view:
            frame[:have] = view[4:]
        buf.clear()
        with memoryview(frame) as view:
            while have < len(frame):
                try:
                    n = os.readv(self._fd, [view[have:]])
                except BlockingIOError:
                    await trio.lowlevel.wait_readable(self.stream.socket)
                    continue
                except OSError:  # reset by the peer
                    return None
                if n == 0:
                    return None
                have += n
                self.last_read = trio.current_time()
        api = lookup(int.from_bytes(frame[:2], "big", signed=True))
        return frame if api is not None and api.takes_bytearray else bytes(frame)

    async def _start_request(self, frame: bytes | bytearray, nursery: trio.Nursery) -> bool:
        """Decode and start one request; False means close the connection. (Async only for an injected
        delay, a SASL check that may block and a client quota's throttle: nothing else awaits here.)"""
        if self._muted_until:  # KIP-219: a throttled client's connection is not read until the time is over
            await trio.sleep_until(self._muted_until)
            self._muted_until = 0.0
        sasl = self._sasl
        if sasl is not None and sasl.intercepts(frame):
            verdict = await sasl.frame(frame)
            if verdict is not None:
                return self._sasl_verdict(verdict, nursery)
        try:
            header, offset = parse_request_header(frame, self.broker.versions.decode_limits)
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
            answer = api.unsupported_version_body
            if answer is None:
                log.warning("closing %s: unsupported version %d of %s", self.peer, version, api.key.name)
                return False
            # Answered as v0 (ApiVersions: always with header v0, KIP-511).
            body = api.response.encode(0, answer(self.broker.versions))
            self._respond(frame_response(header.correlation_id, response_header_version(api.key, 0), body))
            return True
        try:
            request = api.decode_request(version, frame, offset, self.broker.versions.decode_limits)
        except DecodeError as exc:
            log.warning("closing %s: malformed %s v%d request: %s", self.peer, api.key.name, version, exc)
            return False
        ctx = RequestContext(header, self.broker, self.endpoint, self.peer, self.principal,
                             self._sasl is not None and self._sasl.authenticator.token_authenticated)
        slot = _Slot(started=time.perf_counter(), request=request, size=len(frame))
        tracer = self.instruments.tracer
        if tracer is not None:
            software = api.client_software(version, request) if api.client_software is not None else None
            if software is not None:
                self._software = software
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
                    unanswered = api.unanswered is not None and api.unanswered(request)
                    self._finish(slot, api, ctx, None if unanswered else
                                 error_response(api.key, request, error, self._topic_name))
                    return True
                if action is FaultAction.DELAY:
                    # Like a muted Kafka channel: this connection's later requests wait too.
                    await trio.sleep(rule.delay_ms / 1000)
                if action is FaultAction.IO_ERROR:
                    ctx = replace(ctx, io_error=True)
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
            if api.releases_connection:
                ctx = replace(ctx, release=self._releaser())
            nursery.start_soon(self._run_async, api, ctx, request, slot)
        else:
            self._finish(slot, api, ctx, self._call(api, api.handler, ctx, request))
        return True

    # -- SASL (broker.server.sasl_framing answers the frames; the connection sends, waits and closes) -------
    def _sasl_verdict(self, verdict: Verdict, nursery: trio.Nursery) -> bool:
        from broker.server.sasl_framing import Answer, Close, Fail

        match verdict:
            case Answer(data):
                self._respond(data)
                return True
            case Fail(data):
                return self._authentication_failed(data, nursery)
            case Close():
                return False
        raise AssertionError(verdict)

    def _authenticated(self, principal: str) -> None:
        self.principal = principal
        self.max_frame = self.broker.config.socket_request_max_bytes

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
        if not api.releases_connection:
            self._unstarted -= 1  # else the handler releases its connection itself (RequestContext.release)
        # A Fetch long poll (max_wait_ms is the client's choice, up to 2^31 ms) only waits: it ends with the
        # connection. Other handlers finish their work (a coordinator's write) even if the client has gone.
        with trio.CancelScope() as scope:
            if api.long_poll:
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

    def _trace_client(self, header: RequestHeader) -> dict[str, Any]:
        return {"client_id": header.client_id, "software": self._software, "principal": self.principal}

    def _topic_name(self, topic_id: Any) -> str | None:
        topic = self.broker.topics.get_by_id(topic_id)
        return None if topic is None else topic.name

    def _finish(self, slot: _Slot, api: Api, ctx: RequestContext, response: Any) -> None:
        if type(response) is AnswerThen:
            response, then = response.response, response.then
            try:
                self._finish(slot, api, ctx, response)
            finally:
                try:
                    then()
                except Exception:
                    log.exception("after answering %s v%d from %s", api.key.name, ctx.header.api_version, self.peer)
            return
        if self.instruments.faults.active:
            self.instruments.faults.rewrite_response(api.key, response, self.broker.now_ms())
        version = ctx.header.api_version
        elapsed = time.perf_counter() - slot.started
        tracer = self.instruments.tracer
        if tracer is not None:
            note = "connection closed (request failed)" if response is CloseConnection else \
                "not sent: connection dropped (fault rule)" if slot.drop else None
            tracer.response(self.peer, self._trace_client(ctx.header), api.key.name, version,
                            ctx.header.correlation_id, None if response is CloseConnection else response,
                            elapsed, note)
        if response is CloseConnection:
            self._answer(slot, None, close=True)
            return
        request, slot.request = slot.request, None
        if response is None:
            self._answer(slot, None)
        else:
            try:
                body = api.encode_response(version, response)
                if api.key not in _QUOTA_EXEMPT:
                    body = self._throttle(api, ctx, slot, response, body)
            except Exception:
                log.exception("encoding %s v%d response failed", api.key.name, version)
                self._answer(slot, None, close=True)
                return
            self._answer(slot, frame_response(ctx.header.correlation_id, response_header_version(api.key, version),
                                              body))
        # Counted once the answer is on its way (the latency is the time to it).
        try:
            self.instruments.metrics.observe(api.key, version, request, response, elapsed, self._topic_name)
        except Exception:  # a metric is never worth a request
            log.exception("metrics of %s v%d", api.key.name, version)

    def _respond(self, data: bytes) -> None:
        """An answer ready as it is (no handler ran): it takes its place in the order and goes."""
        slot = _Slot()
        self._slots.append(slot)
        self._answer(slot, data)

    def _throttle(self, api: Api, ctx: RequestContext, slot: _Slot, response: Any, body: bytes) -> bytes:
        """Client quotas (broker.services.client_quotas): a client beyond its rate gets the throttle time in
        the answer, and its connection is read again only once that time has passed (KIP-219)."""
        quotas = self.broker.client_quotas
        if not quotas.active or not isinstance(response, dict) or "throttle_time_ms" not in response:
            return body
        throttle_ms = quotas.throttle(api.key, ctx.principal.partition(":")[2], ctx.header.client_id or "",
                                      slot.size, len(body), time.perf_counter() - slot.started, self.broker.now_ms())
        if throttle_ms <= response["throttle_time_ms"]:
            return body
        response["throttle_time_ms"] = throttle_ms
        self._muted_until = trio.current_time() + throttle_ms / 1000
        return api.encode_response(ctx.header.api_version, response)

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
