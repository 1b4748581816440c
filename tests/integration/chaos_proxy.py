"""A TCP proxy that cuts connections at random points, for testing client retries against the broker.

    proxy = ChaosProxy(seed=7, max_cuts=10)       # bound now: proxy.port is known
    broker = start_broker(advertised_port=proxy.port)
    with proxy.start(("127.0.0.1", broker.port)):
        ...  # clients connect to proxy.address; proxy.cuts counts the connections it cut

Every accepted connection is forwarded to `upstream` by two threads (one per direction). Each
connection gets a seeded random direction and byte budget; when the budget runs out the proxy
forwards exactly the bytes that fit (so a Kafka frame is cut in the middle) and closes both sides.
New connections keep being accepted. After `max_cuts` cuts the proxy only forwards, so a client is
always able to finish. The listening socket is bound in `__init__`, so its port is known before the
broker (which has to advertise it) starts; `start(upstream)` begins accepting.

The proxy counts whole Kafka frames (4-byte size prefix) each way, so every `Cut` says how many
requests had fully reached the broker without their response reaching the client: requests the
broker may have executed and the client has to retry.
"""

from __future__ import annotations

import random
import socket
import threading
from dataclasses import dataclass, field

UPSTREAM = "client->broker"
DOWNSTREAM = "broker->client"


@dataclass(frozen=True, slots=True)
class Cut:
    connection: int
    direction: str
    forwarded: int  # bytes forwarded in that direction before the cut
    unanswered: int  # whole requests forwarded minus whole responses forwarded


class _FrameCounter:
    """Counts complete size-prefixed frames in a byte stream fed in arbitrary pieces."""

    def __init__(self) -> None:
        self.complete = 0
        self._header = b""
        self._body_left = 0

    def feed(self, data: bytes) -> None:
        pos = 0
        while pos < len(data):
            if self._body_left:
                step = min(self._body_left, len(data) - pos)
                self._body_left -= step
                pos += step
                if not self._body_left:
                    self.complete += 1
                continue
            take = min(4 - len(self._header), len(data) - pos)
            self._header += data[pos:pos + take]
            pos += take
            if len(self._header) == 4:
                self._body_left = int.from_bytes(self._header, "big", signed=True)
                self._header = b""
                if self._body_left <= 0:
                    self._body_left = 0
                    self.complete += 1


@dataclass(eq=False)
class _Pair:
    number: int
    client: socket.socket
    server: socket.socket
    cut_direction: str
    budget: int
    forwarded: dict[str, int] = field(default_factory=lambda: {UPSTREAM: 0, DOWNSTREAM: 0})
    frames: dict[str, _FrameCounter] = field(default_factory=lambda: {UPSTREAM: _FrameCounter(),
                                                                      DOWNSTREAM: _FrameCounter()})
    closed: bool = False
    pumps_left: int = 2

    def shutdown(self) -> None:
        """Wake both pump threads; the sockets are closed by the last thread to leave."""
        self.closed = True
        for sock in (self.client, self.server):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class ChaosProxy:
    """`upstream_budget` / `downstream_budget`: (min, max) bytes a connection chosen to be cut in that
    direction forwards that way before it is cut."""

    def __init__(self, *, seed: int, max_cuts: int,
                 upstream_budget: tuple[int, int] = (2_000, 40_000),
                 downstream_budget: tuple[int, int] = (100, 4_000),
                 host: str = "127.0.0.1") -> None:
        self.upstream: tuple[str, int] | None = None
        self.max_cuts = max_cuts
        self.upstream_budget = upstream_budget
        self.downstream_budget = downstream_budget
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._pairs: set[_Pair] = set()
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self.connections = 0
        self.cut_log: list[Cut] = []
        self.errors: list[str] = []  # unexpected failures inside the proxy itself
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, 0))
        self._listener.listen(64)
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._acceptor = threading.Thread(target=self._accept_loop, name="chaos-proxy-accept", daemon=True)

    @property
    def port(self) -> int:
        return self.address[1]

    @property
    def cuts(self) -> int:
        with self._lock:
            return len(self.cut_log)

    def start(self, upstream: tuple[str, int]) -> ChaosProxy:
        self.upstream = upstream
        self._acceptor.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, close every connection and join every thread."""
        with self._lock:
            self._stopping = True
            pairs = list(self._pairs)
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept() on Linux
        except OSError:
            pass
        self._listener.close()
        for pair in pairs:
            pair.shutdown()
        if self._acceptor.is_alive():
            self._acceptor.join(timeout)
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
        alive = [t.name for t in [self._acceptor, *threads] if t.is_alive()]
        if alive:
            raise RuntimeError(f"chaos proxy threads did not stop: {alive}")

    def __enter__(self) -> ChaosProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def unanswered(self) -> int:
        """Requests that reached the broker whole but whose responses were cut off, over all cuts."""
        with self._lock:
            return sum(c.unanswered for c in self.cut_log)

    def summary(self) -> str:
        with self._lock:
            cuts = list(self.cut_log)
        by_direction = {d: sum(1 for c in cuts if c.direction == d) for d in (UPSTREAM, DOWNSTREAM)}
        unanswered = sum(c.unanswered for c in cuts)
        return (f"{self.connections} connections, {len(cuts)} cuts {by_direction}, "
                f"{unanswered} requests cut off from their responses")

    # --- threads ----------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # listener shut down by stop()
            try:
                assert self.upstream is not None
                server = socket.create_connection(self.upstream, timeout=10)
                server.settimeout(None)
            except OSError as exc:
                client.close()
                with self._lock:
                    if not self._stopping:
                        self.errors.append(f"connect to {self.upstream} failed: {exc}")
                continue
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if self._stopping:
                    client.close()
                    server.close()
                    return
                self.connections += 1
                direction = self._random.choice((UPSTREAM, DOWNSTREAM))
                budget = self._random.randint(*(self.upstream_budget if direction == UPSTREAM
                                                else self.downstream_budget))
                pair = _Pair(self.connections, client, server, direction, budget)
                self._pairs.add(pair)
                for src, dst, direction in ((client, server, UPSTREAM), (server, client, DOWNSTREAM)):
                    thread = threading.Thread(target=self._pump, args=(pair, src, dst, direction),
                                              name=f"chaos-proxy-{pair.number}-{direction}", daemon=True)
                    self._threads.append(thread)
                    thread.start()

    def _pump(self, pair: _Pair, src: socket.socket, dst: socket.socket, direction: str) -> None:
        try:
            while not pair.closed:
                try:
                    data = src.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                with self._lock:
                    left = pair.budget - pair.forwarded[direction]
                    cutting = (direction == pair.cut_direction and left <= len(data)
                               and len(self.cut_log) < self.max_cuts)
                    if cutting:
                        data = data[:left]
                    pair.forwarded[direction] += len(data)
                    pair.frames[direction].feed(data)
                    if cutting:
                        unanswered = pair.frames[UPSTREAM].complete - pair.frames[DOWNSTREAM].complete
                        self.cut_log.append(Cut(pair.number, direction, pair.forwarded[direction], unanswered))
                try:
                    if data:
                        dst.sendall(data)
                except OSError:
                    return
                if cutting:
                    return
        finally:
            pair.shutdown()  # a cut, or the other side went away: either way both sides are closed
            with self._lock:
                pair.pumps_left -= 1
                last = pair.pumps_left == 0
                if last:
                    self._pairs.discard(pair)
            if last:
                pair.client.close()
                pair.server.close()
