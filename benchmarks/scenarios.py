"""The scenarios, each driving a broker with real clients (confluent-kafka for load, kafka-python for its
own row) and returning a dict of figures. Each runs in a forked child process (see runner.py).

Parameters follow the shared reference benchmark (kbench) so that figures are comparable: 200k x 100 B
small messages, 20k x 10 KiB large ones, acks=all, linger.ms=5."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchmarks import procfs

if TYPE_CHECKING:
    from benchmarks.brokers import BrokerSpec, RunningBroker

# Set by the runner in the scenario's process: the processes whose CPU the figures count (the broker under
# test, or the brokers a scenario started for itself), and how that broker is started.
BROKER_PIDS: tuple[int, ...] = ()
BROKER_SPEC: BrokerSpec | None = None


def broker_cpu() -> float:
    """The brokers' CPU seconds so far (0 when unknown): scenarios bracket their timed part with it."""
    return sum(procfs.cpu_seconds(pid) or 0.0 for pid in BROKER_PIDS)


@contextlib.contextmanager
def counting(pids: tuple[int, ...]) -> Iterator[None]:
    """broker_cpu() counts these processes meanwhile: a scenario's own brokers."""
    global BROKER_PIDS
    saved, BROKER_PIDS = BROKER_PIDS, pids
    try:
        yield
    finally:
        BROKER_PIDS = saved


@contextlib.contextmanager
def own_broker(spec: BrokerSpec) -> Iterator[RunningBroker]:
    """A fresh broker started as the one under test is (brokers.start), stopped and removed afterwards."""
    from benchmarks import brokers

    broker = brokers.start(spec)
    try:
        with counting((broker.pid,)):
            yield broker
    finally:
        broker.stop()


def _spec() -> BrokerSpec:
    assert BROKER_SPEC is not None, "set by the runner"
    return BROKER_SPEC


@dataclass
class Params:
    n_small: int = 200_000
    size_small: int = 100
    n_large: int = 20_000
    size_large: int = 10_240
    kp_n: int = 50_000
    lat_n: int = 2_000
    txn_k: int = 200
    txn_m: int = 10
    join_trials: int = 3
    partitions: int = 1
    producers: int = 1
    many_partitions: int = 1000  # the restart and per-partition memory rows
    restart_msgs: int = 5  # per partition, before the restart
    idle_connections: int = 200
    suite_tests: int = 20  # the test-suite rows: tests per generated module
    session_partitions: int = 1000  # the fetch-session row: partitions the Java consumer fetches
    session_records: int = 200  # ...and records trickled to them, one every 20 ms
    timeout: float = 180.0

    @classmethod
    def quick(cls) -> Params:
        return cls(n_small=20_000, n_large=2_000, kp_n=5_000, lat_n=300, txn_k=30, join_trials=1, suite_tests=5,
                   session_records=30, timeout=90.0)


def payload(size: int) -> bytes:
    # Random (not compressible) bytes; no compression is configured anyway.
    base = os.urandom(min(size, 4096)) if size else b""
    return (base * (size // max(len(base), 1) + 1))[:size]


def percentile(sorted_values: list[float], q: float) -> float:
    k = (len(sorted_values) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                        operation_timeout=timeout)[topic].result(timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # until every partition has a leader in Metadata
        found = admin.list_topics(topic=topic, timeout=5).topics.get(topic)
        if found is not None and found.error is None and len(found.partitions) >= partitions and all(
                p.leader >= 0 for p in found.partitions.values()):
            return
        time.sleep(0.05)
    raise TimeoutError(f"topic {topic} has no leaders after {timeout} s")


def _confluent_produce(bootstrap: str, topic: str, n: int, size: int, partitions: int,
                       extra: dict | None = None) -> dict[str, Any]:
    from confluent_kafka import Producer

    conf = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
            "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
            "message.timeout.ms": 120_000, **(extra or {})}
    producer = Producer(conf)
    data = payload(size)
    errors: list[str] = []
    delivered = [0]

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is None:
            delivered[0] += 1
        elif len(errors) < 5:
            errors.append(str(err))

    producer.list_topics(topic=topic, timeout=10)
    # The clock starts once one message is delivered: connections are up and an idempotent producer has its
    # id. Otherwise the first InitProducerId races librdkafka's 500 ms retry timer (rdkafka_idempotence.c:
    # no broker is up when the producer starts), whichever the broker, and adds 0 or 0.5 s to the run.
    producer.produce(topic, data, partition=0)
    if producer.flush(30) != 0:
        return {"ok": False, "error": "the warm-up message was not delivered", "topic": topic}
    cpu = broker_cpu()
    started = time.perf_counter()
    for i in range(n):
        while True:
            try:
                producer.produce(topic, data, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
        if i & 1023 == 0:
            producer.poll(0)
    left = producer.flush(120)
    elapsed = time.perf_counter() - started
    return {"topic": topic, "msgs": n, "size": size, "delivered": delivered[0], "first_errors": errors,
            "broker_cpu_s": broker_cpu() - cpu,
            "elapsed_s": round(elapsed, 4), "msgs_per_s": round(delivered[0] / elapsed, 1),
            "mb_per_s": round(delivered[0] * size / elapsed / 1e6, 2), "bytes": delivered[0] * size,
            "requests": None, "ok": delivered[0] == n and left == 0}


def produce(bootstrap: str, p: Params, prefix: str, n: int, size: int, idempotent: bool,
            compression: str = "none") -> dict[str, Any]:
    """`compression`: the producer's codec; the broker decompresses and checks every compressed batch."""
    topic = f"{prefix}-p-{size}-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, p.partitions)
    extra: dict[str, Any] = {"enable.idempotence": True} if idempotent else {}
    if compression != "none":
        extra["compression.type"] = compression
    if p.producers == 1:
        return _confluent_produce(bootstrap, topic, n, size, p.partitions, extra)
    return _concurrent_produce(bootstrap, topic, n, size, p, extra)


def _concurrent_produce(bootstrap: str, topic: str, n: int, size: int, p: Params, extra: dict) -> dict[str, Any]:
    """`p.producers` client instances (each its own connection), n messages in all, from threads."""
    import threading

    results: list[dict[str, Any]] = []
    share = n // p.producers

    def one() -> None:
        results.append(_confluent_produce(bootstrap, topic, share, size, p.partitions, extra))

    threads = [threading.Thread(target=one) for _ in range(p.producers)]
    cpu = broker_cpu()
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    cpu = broker_cpu() - cpu
    delivered = sum(r["delivered"] for r in results)
    return {"topic": topic, "msgs": share * p.producers, "size": size, "delivered": delivered, "broker_cpu_s": cpu,
            "producers": p.producers, "elapsed_s": round(elapsed, 4),
            "msgs_per_s": round(delivered / elapsed, 1), "mb_per_s": round(delivered * size / elapsed / 1e6, 2),
            "bytes": delivered * size, "first_errors": [e for r in results for e in r["first_errors"]][:5],
            "ok": delivered == share * p.producers}


def produce_kafka_python(bootstrap: str, p: Params, prefix: str) -> dict[str, Any]:
    from kafka import KafkaProducer

    topic = f"{prefix}-kp-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, p.partitions)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=30000,
                             max_block_ms=60000)
    data = payload(p.size_small)
    producer.partitions_for(topic)
    cpu = broker_cpu()
    started = time.perf_counter()
    futures = [producer.send(topic, data, partition=i % p.partitions) for i in range(p.kp_n)]
    producer.flush(timeout=120)
    elapsed = time.perf_counter() - started
    cpu = broker_cpu() - cpu
    ok = sum(1 for f in futures if f.succeeded())
    producer.close(timeout=5)
    return {"client": "kafka-python", "topic": topic, "msgs": p.kp_n, "delivered": ok, "broker_cpu_s": cpu,
            "elapsed_s": round(elapsed, 4), "msgs_per_s": round(ok / elapsed, 1),
            "mb_per_s": round(ok * p.size_small / elapsed / 1e6, 2), "bytes": ok * p.size_small,
            "ok": ok == p.kp_n}


def consume(bootstrap: str, p: Params, prefix: str, n: int, size: int, extra: dict | None = None,
            admin_bootstrap: str | None = None) -> dict[str, Any]:
    """Read n messages produced just before (untimed) with an assigned consumer."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    topic = f"{prefix}-c-{size}-{uuid.uuid4().hex[:8]}"
    create_topic(admin_bootstrap or bootstrap, topic, p.partitions)
    produced = _confluent_produce(bootstrap, topic, n, size, p.partitions, extra)
    if not produced["ok"]:
        return {"ok": False, "error": f"producing the input failed: {produced}"}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}-{uuid.uuid4().hex[:8]}",
                         **(extra or {}),
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         # keep librdkafka fetching rather than pausing on its local queue
                         "queued.min.messages": 10_000_000, "fetch.queue.backoff.ms": 10})
    consumer.list_topics(topic=topic, timeout=10)
    got = nbytes = 0
    cpu = broker_cpu()
    started = time.perf_counter()
    consumer.assign([TopicPartition(topic, i, OFFSET_BEGINNING) for i in range(p.partitions)])
    deadline = started + p.timeout
    while got < n and time.perf_counter() < deadline:
        for msg in consumer.consume(num_messages=min(10_000, n - got), timeout=0.1):
            if msg.error():
                continue
            got += 1
            nbytes += len(msg.value() or b"")
    elapsed = time.perf_counter() - started
    cpu = broker_cpu() - cpu
    consumer.close()
    return {"topic": topic, "msgs": n, "size": size, "consumed": got, "broker_cpu_s": cpu,
            "elapsed_s": round(elapsed, 4),
            "msgs_per_s": round(got / elapsed, 1), "mb_per_s": round(nbytes / elapsed / 1e6, 2),
            "bytes": nbytes, "ok": got == n}


def consume_kafka_python(bootstrap: str, p: Params, prefix: str, api_version: tuple[int, ...] | None
                         ) -> dict[str, Any]:
    """kafka-python reads kp_n messages produced just before (untimed, v2 batches of 100 bytes each),
    assigned. Pinned to 0.10.1 it fetches with Fetch v3, so the broker down-converts every batch to message
    format v1: against the same client unpinned (Fetch v4+, stored bytes), the difference is the cost of
    down-conversion, in the broker's CPU per message above all."""
    from kafka import KafkaConsumer, TopicPartition

    topic = f"{prefix}-kpc-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, p.partitions)
    produced = _confluent_produce(bootstrap, topic, p.kp_n, p.size_small, p.partitions)
    if not produced["ok"]:
        return {"ok": False, "error": f"producing the input failed: {produced}"}
    extra = {"api_version": api_version} if api_version else {}
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100,
                             max_partition_fetch_bytes=1 << 20, **extra)
    partitions = [TopicPartition(topic, i) for i in range(p.partitions)]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    got = nbytes = 0
    cpu = broker_cpu()
    started = time.perf_counter()
    deadline = started + p.timeout
    while got < p.kp_n and time.perf_counter() < deadline:
        for messages in consumer.poll(timeout_ms=100, max_records=10_000).values():
            got += len(messages)
            nbytes += sum(len(m.value or b"") for m in messages)
    elapsed = time.perf_counter() - started
    cpu = broker_cpu() - cpu
    consumer.close()
    return {"client": "kafka-python", "api_version": ".".join(map(str, api_version or ())) or "negotiated",
            "topic": topic, "msgs": p.kp_n, "consumed": got, "broker_cpu_s": cpu, "elapsed_s": round(elapsed, 4),
            "msgs_per_s": round(got / elapsed, 1), "mb_per_s": round(nbytes / elapsed / 1e6, 2), "bytes": nbytes,
            "ok": got >= p.kp_n}  # the producer's warm-up message comes first


def latency(bootstrap: str, p: Params, prefix: str) -> dict[str, Any]:
    """Synchronous produce: one message, wait for its acknowledgement (acks=all), repeat."""
    from confluent_kafka import Producer

    topic = f"{prefix}-lat-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": 30000})
    producer.list_topics(topic=topic, timeout=10)
    data = payload(p.size_small)
    errors: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None and len(errors) < 5:
            errors.append(str(err))

    for _ in range(50):  # warm-up
        producer.produce(topic, data, partition=0, on_delivery=on_delivery)
        producer.flush(10)
    samples = []
    cpu = broker_cpu()
    for _ in range(p.lat_n):
        started = time.perf_counter()
        producer.produce(topic, data, partition=0, on_delivery=on_delivery)
        producer.flush(10)
        samples.append((time.perf_counter() - started) * 1000)
    cpu = broker_cpu() - cpu
    samples.sort()
    return {"sends": len(samples), "requests": len(samples), "broker_cpu_s": cpu,
            "p50_ms": round(percentile(samples, 0.5), 3),
            "p90_ms": round(percentile(samples, 0.9), 3), "p99_ms": round(percentile(samples, 0.99), 3),
            "max_ms": round(samples[-1], 3), "mean_ms": round(statistics.fmean(samples), 3),
            "first_errors": errors, "ok": not errors}


def transactions(bootstrap: str, p: Params, prefix: str) -> dict[str, Any]:
    """Transactions of txn_m messages each, committed one after the other; then one aborted, and a
    read_committed consumer must see exactly the committed messages."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    topic = f"{prefix}-txn-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "transactional.id": f"{prefix}-tx-{uuid.uuid4().hex[:8]}",
                         "transaction.timeout.ms": 60000, "message.timeout.ms": 60000})
    data = payload(p.size_small)
    producer.init_transactions(30)
    cpu = broker_cpu()
    started = time.perf_counter()
    for _ in range(p.txn_k):
        producer.begin_transaction()
        for _ in range(p.txn_m):
            producer.produce(topic, data, partition=0)
        producer.commit_transaction(30)
    elapsed = time.perf_counter() - started
    cpu = broker_cpu() - cpu
    producer.begin_transaction()
    for _ in range(p.txn_m):
        producer.produce(topic, b"ABORTED", partition=0)
    producer.abort_transaction(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}-v-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen = aborted = 0
    deadline = time.perf_counter() + 30
    eof = False
    while not eof and time.perf_counter() < deadline:
        for msg in consumer.consume(1000, 1.0):
            if msg.error():
                eof = msg.error().code() == -191 and seen >= p.txn_k * p.txn_m  # _PARTITION_EOF
                continue
            seen += 1
            aborted += msg.value() == b"ABORTED"
    consumer.close()
    verified = seen == p.txn_k * p.txn_m and aborted == 0
    return {"txns": p.txn_k, "msgs_per_txn": p.txn_m, "elapsed_s": round(elapsed, 4), "broker_cpu_s": cpu,
            "txns_per_s": round(p.txn_k / elapsed, 1), "msgs_per_s": round(p.txn_k * p.txn_m / elapsed, 1),
            # AddPartitionsToTxn, Produce and EndTxn per transaction (librdkafka's order)
            "requests": 3 * p.txn_k, "read_committed_seen": seen, "aborted_visible": aborted,
            "verified": verified, "ok": verified}


def group_join(bootstrap: str, p: Params, prefix: str) -> dict[str, Any]:
    """A consumer alone in a new group: subscribe() to its assignment (the join: FindCoordinator, JoinGroup
    twice (KIP-394's member id), SyncGroup), and to its first message. The second includes librdkafka's
    own 100 ms backoff before the offset query of a partition without a committed offset
    (rdkafka_offset.c, rd_kafka_offset_reset: `err ? 100 : 0` with __NO_OFFSET), so it is not the join."""
    from confluent_kafka import Consumer

    topic = f"{prefix}-grp-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, p.partitions)
    if not _confluent_produce(bootstrap, topic, 100 * p.partitions, 100, p.partitions)["ok"]:
        return {"ok": False, "error": "producing the input failed"}
    joins, firsts = [], []
    for _ in range(p.join_trials):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}-g-{uuid.uuid4().hex[:8]}",
                             "auto.offset.reset": "earliest", "session.timeout.ms": 10000})
        assigned: list[float] = []
        started = time.perf_counter()
        consumer.subscribe([topic], on_assign=lambda _c, _parts, out=assigned: out.append(time.perf_counter()))
        got = None
        while time.perf_counter() < started + 60:
            msg = consumer.poll(0.05)
            if msg is not None and not msg.error():
                got = time.perf_counter() - started
                break
        consumer.close()
        if got is None or not assigned:
            return {"ok": False, "error": "no assignment and message within 60 s"}
        joins.append((assigned[0] - started) * 1000)
        firsts.append(got * 1000)
    return {"trials": len(joins), "median_ms": round(statistics.median(joins), 1),
            "join_ms": [round(t, 1) for t in joins],
            "first_message_median_ms": round(statistics.median(firsts), 1),
            "first_message_ms": [round(t, 1) for t in firsts], "ok": True}


def _perf_tool(main: str, args: list[str], timeout: float) -> str:
    """Run one of Kafka's perf tools (kafka-tools, the release the benchmark runs) and return its output."""
    import subprocess

    from benchmarks.brokers import kafka_classpath

    try:
        result = subprocess.run(["java", "-Xmx512m", "-cp", kafka_classpath(), main, *args], capture_output=True,
                                text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        raise RuntimeError(f"{main} did not finish within {timeout:.0f} s: {output[-600:]}") from None
    if result.returncode != 0:
        raise RuntimeError(f"{main} exited with {result.returncode}: {(result.stdout + result.stderr)[-800:]}")
    return result.stdout


def kafka_producer_perf(bootstrap: str, p: Params, prefix: str) -> dict[str, Any]:
    """kafka-producer-perf-test (org.apache.kafka.tools.ProducerPerformance): n_small x size_small, acks=all,
    linger.ms=5, as fast as it goes; its own summary line is the measurement."""
    import re

    topic = f"{prefix}-kpp-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, p.partitions)
    cpu = broker_cpu()
    out = _perf_tool("org.apache.kafka.tools.ProducerPerformance", [
        "--topic", topic, "--num-records", str(p.n_small), "--record-size", str(p.size_small), "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5"], p.timeout * 0.8)
    cpu = broker_cpu() - cpu
    # "200000 records sent, 81234.5 records/sec (7.75 MB/sec), 12.3 ms avg latency, 300.0 ms max latency, 9 ms
    # 50th, 30 ms 95th, 40 ms 99th, 60 ms 99.9th."
    summary = [line for line in out.splitlines() if "records sent" in line][-1]
    numbers = [float(x) for x in re.findall(r"[-\d.]+(?= (?:records sent|records/sec|MB/sec|ms ))", summary)]
    sent, rate, mb, avg, worst = numbers[:5]
    percentiles = [float(x) for x in re.findall(r"([\d.]+) ms (?:50th|95th|99th|99\.9th)", summary)]
    return {"tool": "kafka-producer-perf-test", "topic": topic, "msgs": p.n_small, "delivered": int(sent),
            "broker_cpu_s": cpu, "msgs_per_s": rate, "mb_per_s": mb, "avg_latency_ms": avg, "max_latency_ms": worst,
            "p50_ms": percentiles[0] if percentiles else None,
            "p99_ms": percentiles[2] if len(percentiles) > 2 else None,
            "bytes": int(sent) * p.size_small, "summary": summary.strip(), "ok": int(sent) == p.n_small}


def kafka_consumer_perf(bootstrap: str, p: Params, prefix: str) -> dict[str, Any]:
    """kafka-consumer-perf-test (org.apache.kafka.tools.ConsumerPerformance) reading n_small records of
    size_small produced just before (untimed), in a consumer group of its own."""
    topic = f"{prefix}-kcp-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, p.partitions)
    produced = _confluent_produce(bootstrap, topic, p.n_small, p.size_small, p.partitions)
    if not produced["ok"]:
        return {"ok": False, "error": f"producing the input failed: {produced}"}
    cpu = broker_cpu()
    out = _perf_tool("org.apache.kafka.tools.ConsumerPerformance", [
        "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(p.n_small + 1),
        "--timeout", str(int(p.timeout * 1000 // 2))], p.timeout * 0.8)
    cpu = broker_cpu() - cpu
    # A header line, then: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    rows = [line.split(",") for line in out.splitlines() if line.count(",") >= 9]
    if not rows:
        return {"ok": False, "error": f"no figures from the tool: {out[-600:]}"}
    values = [v.strip() for v in rows[-1]]
    consumed = int(float(values[4]))
    if consumed < p.n_small:
        return {"ok": False, "error": f"consumed {consumed} of {p.n_small} records: {out[-400:]}"}
    return {"tool": "kafka-consumer-perf-test", "topic": topic, "msgs": p.n_small, "consumed": consumed,
            "broker_cpu_s": cpu, "msgs_per_s": float(values[5]), "mb_per_s": float(values[3]),
            "rebalance_ms": float(values[6]), "fetch_msgs_per_s": float(values[9]),
            "fetch_mb_per_s": float(values[8]), "bytes": consumed * p.size_small, "ok": consumed >= p.n_small}


def _tls(run: Callable[[str, dict, str], dict[str, Any]]) -> dict[str, Any]:
    """`run(tls_bootstrap, client_settings, plaintext_bootstrap)` against a minibroker of its own with an SSL
    listener beside its PLAINTEXT one (certificates from the test kit's throw-away CA), in the mode of the
    one under test; its CPU is what the figures count. Compare with the plaintext rows of the same scenario."""
    import tempfile

    from benchmarks import brokers
    from broker.testkit.security import main as make_certs

    certs = tempfile.mkdtemp(prefix="bench-certs-")
    make_certs([certs, "--host", "127.0.0.1", "--host", "localhost"])
    tls_port = brokers.free_port()
    spec = _spec()
    spec = brokers.BrokerSpec(spec.name, [*spec.command, "--listen", f"SSL://127.0.0.1:{tls_port}",
                                          "-o", f"ssl.keystore.location={certs}/broker.pem"],
                              minibroker_args=spec.minibroker_args)
    with own_broker(spec) as broker:
        settings = {"security.protocol": "ssl", "ssl.ca.location": f"{certs}/ca.pem"}
        return run(f"127.0.0.1:{tls_port}", settings, broker.bootstrap)


def produce_tls(p: Params, prefix: str, n: int, size: int) -> dict[str, Any]:
    def run(tls: str, settings: dict, plain: str) -> dict[str, Any]:
        topic = f"{prefix}-ptls-{size}-{uuid.uuid4().hex[:8]}"
        create_topic(plain, topic, p.partitions)
        return _confluent_produce(tls, topic, n, size, p.partitions, settings)

    return _tls(run)


def consume_tls(p: Params, prefix: str, n: int, size: int) -> dict[str, Any]:
    return _tls(lambda tls, settings, plain: consume(tls, p, prefix, n, size, settings, admin_bootstrap=plain))


def produce_replicated(p: Params, prefix: str, n: int, size: int) -> dict[str, Any]:
    """Produce (acks=all) to a topic of replication factor 3 with min.insync.replicas=2 on three brokers of the
    kind under test: three minibrokers of the mode under test (broker.testkit.cluster: ZooKeeper and three
    child processes), or Kafka's three KRaft nodes (benchmarks/kafka_cluster.py); the figures count the three
    brokers' CPU. Skipped, with the reason, when ZooKeeper or Kafka's jars are missing, and for Tansu."""
    spec = _spec()
    if spec.name == "kafka":
        return _produce_replicated_kafka(p, prefix, n, size)
    if not spec.is_minibroker:
        return {"ok": False, "skipped": f"{spec.name}: no replicated cluster set up"}
    import shutil
    import tempfile

    from broker.testkit.cluster import MinibrokerCluster
    from broker.testkit.zookeeper import available

    if not available():
        return {"ok": False, "skipped": "ZooKeeper is not installed (Debian: apt-get install zookeeper)"}
    directory = tempfile.mkdtemp(prefix="bench-cluster-")
    cluster = MinibrokerCluster(directory, 3, extra_args=spec.minibroker_args or ())
    try:
        cluster.start()
        topic = f"{prefix}-repl-{size}-{uuid.uuid4().hex[:8]}"
        cluster.create_topic(topic, p.partitions, replication_factor=3, configs={"min.insync.replicas": "2"})
        for partition in range(p.partitions):
            cluster.wait_isr(topic, partition, 3)
        with counting(tuple(b.proc.pid for b in cluster.brokers.values() if b.proc is not None)):
            result = _confluent_produce(cluster.bootstrap, topic, n, size, p.partitions)
        return {**result, "brokers": 3, "replication_factor": 3, "min_insync_replicas": 2}
    finally:
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _produce_replicated_kafka(p: Params, prefix: str, n: int, size: int) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic

    from benchmarks.kafka_cluster import kafka_cluster
    from tests.kafka_jars import Unavailable

    with contextlib.ExitStack() as stack:
        try:
            bootstrap, pids = stack.enter_context(kafka_cluster(3))
        except Unavailable as exc:
            return {"ok": False, "skipped": f"Kafka's jars cannot be had: {exc}"}
        topic = f"{prefix}-repl-{size}-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, p.partitions, 3, config={"min.insync.replicas": "2"})],
                            operation_timeout=60)[topic].result(60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # every partition with its three replicas in sync
            found = admin.list_topics(topic=topic, timeout=5).topics.get(topic)
            if found is not None and found.error is None and len(found.partitions) == p.partitions and all(
                    len(part.isrs) == 3 and part.leader >= 0 for part in found.partitions.values()):
                break
            time.sleep(0.1)
        with counting(pids):
            result = _confluent_produce(bootstrap, topic, n, size, p.partitions)
        return {**result, "brokers": 3, "replication_factor": 3, "min_insync_replicas": 2}


def latest_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """{partition: log end offset} by one ListOffsets (latest) for every partition of the topic; a partition
    answered with an error is left out."""
    from broker.testkit.wire import WireClient

    with WireClient(bootstrap, timeout=10, client_id="bench") as client:
        answer = client.request(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": i, "current_leader_epoch": -1, "timestamp": -1}
                                           for i in range(partitions)]}]})
    return {q.partition_index: q.offset for t in answer.topics for q in t.partitions if q.error_code == 0}


def restart(p: Params, prefix: str, sig: signal.Signals) -> dict[str, Any]:
    """A broker of its own (the mode under test) holding `many_partitions` partitions with `restart_msgs`
    messages each, stopped with `sig` (SIGTERM: a clean stop; SIGKILL: a crash, logs not flushed, nothing
    checkpointed) and started again: from exec to its first ApiVersions answer, and to serving every
    partition (one ListOffsets for all of them answers each with the log end offset it had)."""
    from benchmarks import brokers

    with own_broker(_spec()) as broker:
        topic = f"{prefix}-restart-{uuid.uuid4().hex[:8]}"
        create_topic(broker.bootstrap, topic, p.many_partitions, timeout=120)
        produced = _confluent_produce(broker.bootstrap, topic, p.many_partitions * p.restart_msgs, p.size_small,
                                      p.many_partitions)
        if not produced["ok"]:
            return {"ok": False, "error": f"producing the data failed: {produced}"}
        before = latest_offsets(broker.bootstrap, topic, p.many_partitions)
        stop_s = brokers.restart(broker, sig)
        deadline = time.perf_counter() + p.timeout / 2
        served = None
        while time.perf_counter() < deadline:
            try:
                if latest_offsets(broker.bootstrap, topic, p.many_partitions) == before:
                    served = time.perf_counter() - broker.started_at
                    break
            except OSError:
                pass
            time.sleep(0.005)
        if served is None:
            return {"ok": False, "error": "the partitions were not served with their offsets after the restart"}
        return {"signal": sig.name, "partitions": p.many_partitions, "messages": sum(before.values()),
                "stop_ms": round(stop_s * 1000, 1), "api_versions_ms": broker.startup_ms,
                "served_ms": round(served * 1000, 1), "ok": True}


def memory(p: Params, prefix: str) -> dict[str, Any]:
    """On a fresh broker of its own: RSS growth per idle connection (`idle_connections` connections that each
    completed an ApiVersions round trip, kept open) and then, with them still open so that no memory they
    freed is reused, per partition (a topic of `many_partitions` partitions created). One connection and a
    one-partition topic come first, so that first-use costs (handler code, caches) are not counted."""
    from benchmarks import brokers

    def settled_rss(pid: int) -> int:
        time.sleep(0.5)  # answers sent, allocations done
        return procfs.rss_kib(pid) or 0

    with own_broker(_spec()) as broker:
        held: list[socket.socket] = []
        try:
            for i in range(p.idle_connections + 1):
                if i == 1:
                    before_connections = settled_rss(broker.pid)
                conn = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
                held.append(conn)
                brokers.api_versions(conn)
            with_connections = settled_rss(broker.pid)
            create_topic(broker.bootstrap, f"{prefix}-mem1-{uuid.uuid4().hex[:8]}", 1)
            before_partitions = settled_rss(broker.pid)
            create_topic(broker.bootstrap, f"{prefix}-mem-{uuid.uuid4().hex[:8]}", p.many_partitions, timeout=120)
            with_partitions = settled_rss(broker.pid)
        finally:
            for conn in held:
                conn.close()
    return {"connections": p.idle_connections, "partitions": p.many_partitions,
            "rss_kib": [before_connections, with_connections, before_partitions, with_partitions],
            "kib_per_connection": round((with_connections - before_connections) / p.idle_connections, 2),
            "kib_per_partition": round((with_partitions - before_partitions) / p.many_partitions, 2), "ok": True}


def suite_cost(bootstrap: str, p: Params) -> dict[str, Any]:
    """The test-suite rows (benchmarks/suite_cost.py): minibroker's fixture starts a broker per test, any other
    broker is the one under test, reused."""
    from benchmarks.suite_cost import suite_cost as run

    return run(bootstrap, p.suite_tests, p.timeout, fresh_per_test=_spec().is_minibroker)


def fetch_session_row(bootstrap: str, p: Params) -> dict[str, Any]:
    """benchmarks/fetch_session_row.py with the broker under test's CPU."""
    from benchmarks.fetch_session_row import fetch_sessions

    return fetch_sessions(bootstrap, p.session_partitions, p.session_records, p.timeout, broker_cpu)


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[str, Params, str], dict[str, Any]]
    metric: str  # the headline figure, the row named as the scenario
    unit: str
    higher_is_better: bool
    minibroker_only: bool = False  # a minibroker feature the other broker is not set up for (TLS)
    also: tuple[tuple[str, str], ...] = ()  # more rows from the same runs: (row, field), same unit and direction


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("produce_small", lambda b, p, x: produce(b, p, x, p.n_small, p.size_small, False),
             "msgs_per_s", "msg/s", True),
    Scenario("produce_large", lambda b, p, x: produce(b, p, x, p.n_large, p.size_large, False),
             "mb_per_s", "MB/s", True),
    # Compressed batches, which the broker decompresses and parses record by record to validate them (as Kafka
    # does): beside the rows above, the cost of that check.
    Scenario("produce_small_lz4", lambda b, p, x: produce(b, p, x, p.n_small, p.size_small, False, "lz4"),
             "msgs_per_s", "msg/s", True),
    Scenario("produce_large_zstd", lambda b, p, x: produce(b, p, x, p.n_large, p.size_large, False, "zstd"),
             "mb_per_s", "MB/s", True),
    # The same on three minibrokers: replication factor 3, min.insync.replicas=2 (issue 22).
    Scenario("produce_large_replicated", lambda b, p, x: produce_replicated(p, x, p.n_large, p.size_large),
             "mb_per_s", "MB/s", True),
    Scenario("produce_idem_small", lambda b, p, x: produce(b, p, x, p.n_small, p.size_small, True),
             "msgs_per_s", "msg/s", True),
    Scenario("produce_idem_large", lambda b, p, x: produce(b, p, x, p.n_large, p.size_large, True),
             "mb_per_s", "MB/s", True),
    Scenario("produce_kp_small", produce_kafka_python, "msgs_per_s", "msg/s", True),
    Scenario("consume_small", lambda b, p, x: consume(b, p, x, p.n_small, p.size_small), "msgs_per_s", "msg/s", True),
    Scenario("consume_large", lambda b, p, x: consume(b, p, x, p.n_large, p.size_large), "mb_per_s", "MB/s", True),
    # The same over TLS (an SSL listener of a minibroker started for it): the cost of encryption.
    Scenario("produce_large_tls", lambda b, p, x: produce_tls(p, x, p.n_large, p.size_large), "mb_per_s", "MB/s",
             True, minibroker_only=True),
    Scenario("consume_large_tls", lambda b, p, x: consume_tls(p, x, p.n_large, p.size_large), "mb_per_s", "MB/s",
             True, minibroker_only=True),
    # Message format v1 for an old client (Fetch v3, down-converted) against the same client on Fetch v4+.
    Scenario("consume_kp_small", lambda b, p, x: consume_kafka_python(b, p, x, None), "msgs_per_s", "msg/s", True),
    Scenario("consume_kp_old_format", lambda b, p, x: consume_kafka_python(b, p, x, (0, 10, 1)),
             "msgs_per_s", "msg/s", True),
    Scenario("latency_p50", latency, "p50_ms", "ms", False, also=(("latency_p99", "p99_ms"),)),
    Scenario("txn", transactions, "txns_per_s", "txn/s", True),
    Scenario("group_join", group_join, "median_ms", "ms", False),
    # Kafka's own tools as a second, standard measurement (need Java and the kafka-tools jars).
    Scenario("kafka_producer_perf", kafka_producer_perf, "msgs_per_s", "msg/s", True),
    Scenario("kafka_consumer_perf", kafka_consumer_perf, "fetch_msgs_per_s", "msg/s", True),
    # Restart of a broker holding many partitions: to its first ApiVersions answer, and to serving them all.
    Scenario("restart_clean", lambda b, p, x: restart(p, x, signal.SIGTERM), "api_versions_ms", "ms", False,
             minibroker_only=True, also=(("restart_clean_served", "served_ms"),)),
    Scenario("restart_kill", lambda b, p, x: restart(p, x, signal.SIGKILL), "api_versions_ms", "ms", False,
             minibroker_only=True, also=(("restart_kill_served", "served_ms"),)),
    # A user's test suite: per test, with a fresh fixture broker each (minibroker) or one reused broker (the
    # others): a topic, the first message through a group, a transaction; and a test producing one message.
    Scenario("suite_test", lambda b, p, x: suite_cost(b, p), "steps_ms", "ms", False,
             also=(("suite_produce_test", "produce_ms"),)),
    # A Java consumer over 1,000 partitions in a fetch session (KIP-227), a trickle of writes: the broker's CPU
    # per fetch and the end-to-end latency.
    Scenario("fetch_session_cpu", lambda b, p, x: fetch_session_row(b, p), "broker_cpu_ms_per_fetch", "ms", False,
             also=(("fetch_session_latency_p50", "p50_ms"), ("fetch_session_latency_p99", "p99_ms"))),
    # What an idle connection and a partition cost in resident memory (each broker on a fresh one of its own).
    Scenario("rss_per_connection", lambda b, p, x: memory(p, x), "kib_per_connection", "KiB", False,
             also=(("rss_per_partition", "kib_per_partition"),)),
]}
