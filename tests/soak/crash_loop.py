"""The crash loop: SIGKILL a broker at random moments while an idempotent producer (acks=all), a
transactional producer and a consumer group member work against it, restart it on the same data
directory and port, and check after every restart that nothing acknowledged was lost or duplicated.

    python -m tests.soak.crash_loop --iterations 20        # `make soak`; prints the counts

The clients (confluent-kafka) live across the kills, as an application's would: librdkafka reconnects and
retries, idempotence deduplicates its retries, and a transaction interrupted by a kill is aborted and
retried by the application. Checked after each restart and at the end:
- every acknowledged idempotent message is in the log exactly once, at the offset it was acknowledged
  with, and no message is in the log twice (acknowledged or not);
- every transaction whose commit returned is visible to read_committed, completely, exactly once; none
  whose abort returned is; one whose outcome the producer never learned is visible completely or not at all;
- the group's committed offsets are at least the last ones the broker acknowledged;
- no producer saw OUT_OF_ORDER_SEQUENCE_NUMBER or another fatal error.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.testkit import BrokerProcess

IDEM_TOPIC, TXN_TOPIC = "crash-idem", "crash-txn"
IDEM_PARTITIONS, TXN_PARTITIONS = 3, 2
GROUP = "crash-group"
TXN_SIZE = 5


@dataclass
class Ledger:
    """What the clients were told, under one lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # value -> (partition, offset)
    committed_txns: list[int] = field(default_factory=list)
    aborted_txns: list[int] = field(default_factory=list)
    unknown_txns: list[int] = field(default_factory=list)
    group_commits: dict[int, int] = field(default_factory=dict)  # partition -> last acknowledged offset
    fatal: list[str] = field(default_factory=list)  # fatal errors and OUT_OF_ORDER_SEQUENCE_NUMBER
    consumed: int = 0
    # The transactional producer holds still between transactions while a check reads (read_committed
    # reads up to the last stable offset, which an always-open transaction would keep moving).
    txn_pause: threading.Event = field(default_factory=threading.Event)
    txn_paused: threading.Event = field(default_factory=threading.Event)


def fatal_check(ledger: Ledger, who: str) -> Any:
    def on_error(err: KafkaError) -> None:
        if err.fatal() or err.code() == KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER:
            with ledger.lock:
                ledger.fatal.append(f"{who}: {err}")
    return on_error


def idempotent_producer(bootstrap: str, ledger: Ledger, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 2, "message.timeout.ms": 600_000, "reconnect.backoff.max.ms": 200,
                         "error_cb": fatal_check(ledger, "idempotent producer")})

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            with ledger.lock:
                ledger.acked[msg.value()] = (msg.partition(), msg.offset())
        elif err.code() == KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER or err.fatal():
            with ledger.lock:
                ledger.fatal.append(f"idempotent producer delivery: {err}")

    n = 0
    while not stop.is_set():
        if len(producer) > 2000:  # keep the backlog small: a kill should cut a stream, not a flood
            producer.poll(0.01)
            continue
        producer.produce(IDEM_TOPIC, f"i-{n}".encode(), partition=n % IDEM_PARTITIONS, on_delivery=on_delivery)
        n += 1
        producer.poll(0)
        if n % 50 == 0:
            time.sleep(0.005)
    producer.flush(120)


def transactional_producer(bootstrap: str, ledger: Ledger, stop: threading.Event) -> None:
    def new_producer() -> Producer:
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "crash-loop", "acks": "all",
                             "linger.ms": 2, "transaction.timeout.ms": 10_000, "message.timeout.ms": 10_000,
                             "reconnect.backoff.max.ms": 200, "error_cb": lambda err: None})
        producer.init_transactions(120)
        return producer

    producer = new_producer()
    txn = 0
    while not stop.is_set():
        if ledger.txn_pause.is_set():
            ledger.txn_paused.set()
            while ledger.txn_pause.is_set() and not stop.is_set():
                time.sleep(0.01)
            ledger.txn_paused.clear()
            continue
        txn += 1
        commit = txn % 3 != 0
        try:
            producer.begin_transaction()
            for j in range(TXN_SIZE):
                producer.produce(TXN_TOPIC, f"t-{txn}-{j}".encode(), partition=j % TXN_PARTITIONS)
            if commit:
                producer.commit_transaction(60)
            else:
                producer.abort_transaction(60)
        except KafkaException as exc:
            error = exc.args[0]
            outcome = _recover(producer, error) if not error.fatal() else None
            with ledger.lock:
                if outcome == "aborted":
                    ledger.aborted_txns.append(txn)
                else:  # the commit may have been decided before the error reached us
                    ledger.unknown_txns.append(txn) if commit else ledger.aborted_txns.append(txn)
            if outcome is None:
                with ledger.lock:
                    if error.code() == KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER:
                        ledger.fatal.append(f"transactional producer: {error}")
                producer = _fresh(new_producer, stop)
                if producer is None:
                    return
            continue
        with ledger.lock:
            (ledger.committed_txns if commit else ledger.aborted_txns).append(txn)


def _recover(producer: Producer, error: KafkaError) -> str | None:
    """Abort after an abortable error: "aborted" when that worked, None when the producer must be replaced."""
    if not error.txn_requires_abort():
        return None
    try:
        producer.abort_transaction(60)
        return "aborted"
    except KafkaException:
        return None


def _fresh(factory: Any, stop: threading.Event) -> Producer | None:
    while not stop.is_set():
        try:
            return factory()
        except KafkaException:
            time.sleep(0.2)
    return None


def group_member(bootstrap: str, ledger: Ledger, stop: threading.Event, topic: str = IDEM_TOPIC,
                 group: str = GROUP, config: dict[str, Any] | None = None) -> None:
    """A consumer group member committing what it consumed (synchronously); the offsets the broker
    acknowledged go into `ledger.group_commits`. `config`: more consumer settings."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 10_000,
                         "reconnect.backoff.max.ms": 200, "error_cb": lambda err: None, **(config or {})})
    consumer.subscribe([topic])
    while not stop.is_set():
        messages = consumer.consume(500, 0.2)
        if not messages:
            continue
        positions = {}
        for msg in messages:
            if not msg.error():
                positions[msg.partition()] = msg.offset() + 1
        if not positions:
            continue
        try:
            done = consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in positions.items()],
                                   asynchronous=False)
        except KafkaException:
            continue  # not acknowledged: the broker may or may not have it
        with ledger.lock:
            ledger.consumed += len(messages)
            for tp in done or []:
                if tp.error is None and tp.offset >= 0:
                    ledger.group_commits[tp.partition] = max(ledger.group_commits.get(tp.partition, 0), tp.offset)
    consumer.close()


def read_topic(bootstrap: str, topic: str, partitions: int, isolation: str,
               describe: Callable[[], str] | None = None) -> list[tuple[int, int, bytes]]:
    """Every record of the topic, (partition, offset, value), up to the end a fresh consumer sees in the
    given isolation level (the high watermark, or the last stable offset for read_committed) when it starts:
    producers may go on meanwhile (a partition written without a pause never shows its end otherwise).
    `describe`: what to say about the partitions when the end is not reached."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "crash-check", "enable.auto.commit": False,
                         "enable.partition.eof": True, "isolation.level": isolation})
    deadline = time.monotonic() + 120
    ends: dict[int, int] = {}
    for p in range(partitions):  # ListOffsets in the consumer's isolation level
        while p not in ends:
            try:
                ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out = []
    done = {p for p, end in ends.items() if end <= 0}

    def reached() -> set[int]:  # past the end: the position counts skipped control and aborted records too
        return {tp.partition for tp in consumer.position([TopicPartition(topic, p) for p in range(partitions)])
                if tp.offset >= ends[tp.partition]}

    while len(done) < partitions and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            done |= reached()
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                done.add(msg.partition())
            continue
        if msg.offset() < ends[msg.partition()]:
            out.append((msg.partition(), msg.offset(), msg.value()))
        if msg.offset() + 1 >= ends[msg.partition()]:
            done.add(msg.partition())
    positions = {tp.partition: tp.offset for tp in consumer.position(
        [TopicPartition(topic, p) for p in range(partitions)])}
    consumer.close()
    if len(done) < partitions:
        raise AssertionError(f"could not read {topic} to its end ({isolation}): at the end of {sorted(done)}, "
                             f"positions {positions}, ends {ends}; {_offsets(bootstrap, topic, partitions)}"
                             + (f"\n{describe()}" if describe else ""))
    return out


def _offsets(bootstrap: str, topic: str, partitions: int) -> str:
    """Log end and last stable offsets and the open transactions of each partition, for a failure message."""
    from tests.kafka_wire import WireClient

    with WireClient(bootstrap) as client:
        out = []
        for isolation in (0, 1):
            response = client.request(2, 5, {"replica_id": -1, "isolation_level": isolation, "topics": [
                {"name": topic, "partitions": [{"partition_index": p, "timestamp": -1} for p in range(partitions)]}]})
            out.append([p.offset for p in response.topics[0].partitions])
        producers = client.request(61, 0, {"topics": [{"name": topic, "partition_indexes": list(range(partitions))}]})
        active = [[(s.producer_id, s.producer_epoch, s.current_txn_start_offset) for s in p.active_producers]
                  for p in producers.topics[0].partitions]
    return f"end offsets {out[0]}, last stable offsets {out[1]}, producers {active}"


def verify(bootstrap: str, ledger: Ledger, final: bool) -> dict[str, int]:
    """The checks of the module docstring against what the clients were told so far; returns counts.
    A transaction whose outcome is unknown may still be completing while the clients run (its markers
    land partition by partition), so all-or-nothing is checked once they have stopped (`final`)."""
    with ledger.lock:
        acked = dict(ledger.acked)
        committed, aborted, unknown = list(ledger.committed_txns), list(ledger.aborted_txns), list(ledger.unknown_txns)
        commits = dict(ledger.group_commits)
        fatal = list(ledger.fatal)
    problems: list[str] = []
    idem = read_topic(bootstrap, IDEM_TOPIC, IDEM_PARTITIONS, "read_uncommitted")
    counts = Counter(value for _, _, value in idem)
    duplicates = [v for v, c in counts.items() if c > 1]
    if duplicates:
        problems.append(f"{len(duplicates)} idempotent messages stored twice, e.g. {duplicates[:3]}")
    where = {value: (p, o) for p, o, value in idem}
    lost = [v for v, at in acked.items() if where.get(v) != at]
    if lost:
        problems.append(f"{len(lost)} acknowledged messages missing or moved, e.g. "
                        f"{[(v, acked[v], where.get(v)) for v in lost[:3]]}")
    visible = Counter(value for _, _, value in read_topic(bootstrap, TXN_TOPIC, TXN_PARTITIONS, "read_committed"))
    if any(c > 1 for c in visible.values()):
        problems.append("a transactional message visible twice")

    def shown(txn: int) -> int:
        return sum(1 for j in range(TXN_SIZE) if f"t-{txn}-{j}".encode() in visible)

    for txn in committed:
        if shown(txn) != TXN_SIZE:
            problems.append(f"committed transaction {txn}: {shown(txn)} of {TXN_SIZE} messages visible")
    for txn in aborted:
        if shown(txn):
            problems.append(f"aborted transaction {txn}: {shown(txn)} messages visible to read_committed")
    for txn in unknown if final else []:
        if shown(txn) not in (0, TXN_SIZE):
            problems.append(f"transaction {txn} (outcome unknown): partly visible ({shown(txn)} of {TXN_SIZE})")
    checker = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    stored = {tp.partition: tp.offset for tp in checker.committed(
        [TopicPartition(IDEM_TOPIC, p) for p in range(IDEM_PARTITIONS)], timeout=30)}
    checker.close()
    for partition, offset in commits.items():
        if stored.get(partition, -1) < offset:
            problems.append(f"group offset of partition {partition} is {stored.get(partition)}, "
                            f"{offset} was acknowledged")
    problems += fatal
    if problems:
        raise AssertionError("; ".join(problems[:10]))
    return {"acknowledged": len(acked), "stored": len(idem), "committed_txns": len(committed),
            "aborted_txns": len(aborted), "unknown_txns": len(unknown),
            "group_partitions_committed": len(commits)}


def _progress(ledger: Ledger) -> tuple[int, int, int]:
    with ledger.lock:
        return len(ledger.acked), len(ledger.committed_txns), ledger.consumed


def _wait_progress(ledger: Ledger, before: tuple[int, int, int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = _progress(ledger)
        if all(n > b for n, b in zip(now, before, strict=True)):
            return
        time.sleep(0.05)
    raise AssertionError(f"no progress after a restart within {timeout} s: {before} -> {_progress(ledger)}")


def run(iterations: int, seed: int, data_dir: Path, log: Any = print) -> dict[str, int]:
    rng = random.Random(seed)
    broker = BrokerProcess(data_dir).start()
    ledger = Ledger()
    stop = threading.Event()
    threads: list[threading.Thread] = []
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for topic, partitions in ((IDEM_TOPIC, IDEM_PARTITIONS), (TXN_TOPIC, TXN_PARTITIONS)):
            admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
        for target in (idempotent_producer, transactional_producer, group_member):
            thread = threading.Thread(target=target, args=(broker.bootstrap, ledger, stop), daemon=True)
            thread.start()
            threads.append(thread)
        _wait_progress(ledger, (0, 0, 0), 120)
        for i in range(iterations):
            time.sleep(rng.uniform(0.3, 2.0))  # a random moment under load
            broker.kill()
            broker.start()
            before = _progress(ledger)
            _wait_progress(ledger, before, 120)
            ledger.txn_pause.set()
            if not ledger.txn_paused.wait(180):
                raise AssertionError("the transactional producer did not finish its transaction")
            try:
                counts = verify(broker.bootstrap, ledger, final=False)
            finally:
                ledger.txn_pause.clear()
            log(f"kill {i + 1}/{iterations}: ok, " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        stop.set()
        for thread in threads:
            thread.join(180)
        counts = verify(broker.bootstrap, ledger, final=True)
        counts["kills"] = iterations
        return counts
    finally:
        stop.set()
        broker.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ns = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        counts = run(ns.iterations, ns.seed, Path(tmp) / "data")
    print(f"crash loop: {ns.iterations} SIGKILLs in {time.monotonic() - started:.0f} s; " +
          ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
