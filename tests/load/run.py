"""`make load`: many connections and clients on one broker (a child process, so that its memory can be
read), with the figures printed:

- 1,000 concurrent connections, most idle, some busy (ApiVersions and Metadata in a loop), while 100
  producers and 20 group consumers (confluent-kafka) run: broker RSS before, during and after, memory per
  connection, and fair service (every producer and consumer progresses; a witness's round trips stay short);
- connections.max.idle.ms: idle connections are closed, busy ones are not;
- a slow reader (Fetch requests sent, responses never read) does not grow the broker's memory without bound.

    python -m tests.load.run                          # the full figures
    python -m tests.load.run --connections 200 --producers 10 --consumers 4    # lighter
"""

from __future__ import annotations

import argparse
import resource
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from broker.testkit import BrokerProcess
from tests.kafka_wire import WireClient, api_versions_round_trip


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


@dataclass
class LoadFigures:
    connections: int = 0
    rss_before_kib: int = 0
    rss_connected_kib: int = 0
    rss_peak_load_kib: int = 0
    rss_after_kib: int = 0
    produced: list[int] = field(default_factory=list)  # per producer
    consumed: list[int] = field(default_factory=list)  # per consumer
    witness_ms: list[float] = field(default_factory=list)
    busy_round_trips: int = 0
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        per_conn = (self.rss_connected_kib - self.rss_before_kib) / max(self.connections, 1)
        w = sorted(self.witness_ms) or [float("nan")]
        return (f"{self.connections} connections: broker RSS {self.rss_before_kib / 1024:.0f} MB before, "
                f"{self.rss_connected_kib / 1024:.0f} MB connected ({per_conn:.1f} KiB per connection), "
                f"{self.rss_peak_load_kib / 1024:.0f} MB at most under load, {self.rss_after_kib / 1024:.0f} MB "
                f"after; {len(self.produced)} producers sent {sum(self.produced):,} messages (each between "
                f"{min(self.produced, default=0):,} and {max(self.produced, default=0):,}); "
                f"{len(self.consumed)} consumers read {sum(self.consumed):,} (each between "
                f"{min(self.consumed, default=0):,} and {max(self.consumed, default=0):,}); "
                f"{self.busy_round_trips:,} busy round trips; witness round trip p50 "
                f"{statistics.median(w):.1f} ms, max {w[-1]:.1f} ms")


def connections_and_clients(broker: BrokerProcess, connections: int, producers: int, consumers: int,
                            seconds: float) -> LoadFigures:
    from confluent_kafka import Consumer, Producer

    assert broker.proc is not None
    pid = broker.proc.pid
    figures = LoadFigures(connections=connections, rss_before_kib=rss_kib(pid))
    host, port = broker.bootstrap.rsplit(":", 1)
    topic = f"load-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as client:
        client.create_topic(topic, partitions=max(consumers, 1))
    socks = []
    for _ in range(connections):
        sock = socket.create_connection((host, int(port)), timeout=60)
        api_versions_round_trip(sock)  # each connection is served once: really open, not just queued in the backlog
        socks.append(sock)
    figures.rss_connected_kib = rss_kib(pid)
    stop = threading.Event()
    lock = threading.Lock()
    busy = socks[: max(connections // 20, 1)]  # 5% of the connections stay busy

    def busy_loop(sock: socket.socket) -> None:
        while not stop.is_set():
            try:
                api_versions_round_trip(sock)
            except OSError as exc:
                with lock:
                    figures.errors.append(f"busy connection: {exc}")
                return
            with lock:
                figures.busy_round_trips += 1
            time.sleep(0.01)

    produced = [0] * producers
    consumed = [0] * consumers

    def produce(i: int) -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})

        def delivered(err, _msg, i=i) -> None:
            if err is None:
                produced[i] += 1
            else:
                with lock:
                    figures.errors.append(f"producer {i}: {err}")

        while not stop.is_set():
            try:
                producer.produce(topic, b"x" * 100, on_delivery=delivered)
            except BufferError:
                pass
            producer.poll(0.001)
        producer.flush(60)

    def consume(i: int) -> None:
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"{topic}-g",
                             "auto.offset.reset": "earliest", "session.timeout.ms": 30000})
        consumer.subscribe([topic])
        while not stop.is_set():
            consumed[i] += sum(1 for m in consumer.consume(500, 0.2) if not m.error())
        consumer.close()

    threads = [threading.Thread(target=busy_loop, args=(s,)) for s in busy]
    threads += [threading.Thread(target=produce, args=(i,)) for i in range(producers)]
    threads += [threading.Thread(target=consume, args=(i,)) for i in range(consumers)]
    for thread in threads:
        thread.start()
    witness = socket.create_connection((host, int(port)), timeout=60)
    deadline = time.monotonic() + seconds
    peak = 0
    while time.monotonic() < deadline:
        figures.witness_ms.append(api_versions_round_trip(witness) * 1000)
        peak = max(peak, rss_kib(pid))
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join(120)
    figures.rss_peak_load_kib = peak
    figures.produced, figures.consumed = produced, consumed
    for sock in [*socks, witness]:
        sock.close()
    figures.rss_after_kib = rss_kib(pid)
    return figures


def idle_connections_closed(broker: BrokerProcess, idle: int, busy: int, idle_ms: int) -> tuple[int, int]:
    """(idle connections the broker closed, busy connections still open) after 3 x connections.max.idle.ms."""
    host, port = broker.bootstrap.rsplit(":", 1)
    idle_socks = [socket.create_connection((host, int(port)), timeout=60) for _ in range(idle)]
    busy_socks = [socket.create_connection((host, int(port)), timeout=60) for _ in range(busy)]
    deadline = time.monotonic() + 3 * idle_ms / 1000
    while time.monotonic() < deadline:
        for sock in busy_socks:
            api_versions_round_trip(sock)
        time.sleep(idle_ms / 5000)
    closed = 0
    for sock in idle_socks:
        sock.settimeout(30)
        try:
            closed += sock.recv(1) == b""
        except OSError:
            closed += 1
        sock.close()
    still_open = 0
    for sock in busy_socks:
        try:
            api_versions_round_trip(sock)
            still_open += 1
        except OSError:
            pass
        sock.close()
    return closed, still_open


def slow_reader(broker: BrokerProcess, requests: int, fetch_bytes: int = 1 << 20) -> tuple[int, int, int]:
    """A client that sends Fetch requests for a topic holding 8 MB and never reads an answer: (broker RSS
    before, at the end, and KiB of responses it asked for); another connection is served throughout."""
    assert broker.proc is not None
    pid = broker.proc.pid
    topic = f"slow-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as client:
        client.create_topic(topic)
        from protocol.records import Record, build_batch

        for _ in range(16):
            batch = build_batch([Record(i, 0, None, b"y" * 8192) for i in range(64)],
                                base_timestamp=int(time.time() * 1000))
            assert client.produce(topic, 0, batch).error_code == 0
    before = rss_kib(pid)
    host, port = broker.bootstrap.rsplit(":", 1)
    slow = socket.create_connection((host, int(port)), timeout=60)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    from protocol.header import RequestHeader, encode_request_header, request_spec

    spec = request_spec(1)
    assert spec is not None
    slow.setblocking(False)
    sent = 0
    pending = b""
    deadline = time.monotonic() + 60
    with WireClient(broker.bootstrap) as other:
        while sent < requests and time.monotonic() < deadline:
            if not pending:
                body = spec.encode(4, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": fetch_bytes,
                                       "isolation_level": 0, "topics": [{"topic": topic, "partitions": [
                                           {"partition": 0, "fetch_offset": 0, "partition_max_bytes": fetch_bytes}]}]})
                payload = encode_request_header(RequestHeader(1, 4, sent, "slow")) + body
                pending = struct.pack(">i", len(payload)) + payload
            try:
                pending = pending[slow.send(pending):]
                if not pending:
                    sent += 1
            except BlockingIOError:
                # The broker stopped reading us (backpressure): others must still be served.
                other.list_latest(topic)
                time.sleep(0.01)
        time.sleep(1)
        end = rss_kib(pid)
        other.list_latest(topic)
    slow.close()
    return before, end, sent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--producers", type=int, default=100)
    ap.add_argument("--consumers", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=20)
    ns = ap.parse_args(argv)
    raise_fd_limit()
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data", "--override", "connections.max.idle.ms=2000").start()
        try:
            figures = connections_and_clients(broker, ns.connections, ns.producers, ns.consumers, ns.seconds)
            print(figures.summary())
            if figures.errors:
                print(f"  errors: {figures.errors[:5]}")
            closed, still_open = idle_connections_closed(broker, 100, 10, 2000)
            print(f"connections.max.idle.ms=2000: {closed}/100 idle connections closed, {still_open}/10 busy ones open")
            before, end, sent = slow_reader(broker, 2000)
            print(f"slow reader: {sent:,} Fetch requests of 1 MiB answers sent, none read; broker RSS "
                  f"{before / 1024:.0f} MB before, {end / 1024:.0f} MB after")
        finally:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
