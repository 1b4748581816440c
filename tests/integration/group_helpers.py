"""Helpers for the consumer-group tests (test_groups.py): topic setup, keyed production, one polling
interface over the three clients' group consumers, and consumers in a thread or a child process.

Every wrapper commits what it has handed to the test before giving partitions up in a rebalance (kafka-python
and aiokafka: auto-commit, which commits before rejoining; confluent-kafka: a synchronous commit in
on_revoke), so that a correct broker lets a group consume each record exactly once across rebalances.
"""

from __future__ import annotations

import asyncio
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.admin import NewTopic

# (partition, offset, value) of a record a member handed to the test.
Rec = tuple[int, int, bytes]

# Rebalances are noticed through heartbeats: a short interval keeps each rebalance well under a second.
HEARTBEAT_MS = 500
# Only commits at rebalances and close matter here; no periodic auto-commit in between.
NO_PERIODIC_COMMIT_MS = 3_600_000
# Small batches, so that a member is more likely to be mid-topic when partitions move away from it.
BATCH = 50


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def produce_keyed(bootstrap: str, topic: str, count: int, partitions: int) -> dict[tuple[int, int], bytes]:
    """Produce `count` keyed records round-robin over the partitions; {(partition, offset): value}."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    reports: list[tuple[Any, Any]] = []
    for i in range(count):
        producer.produce(topic, key=f"k{i}".encode(), value=f"{topic}-{i}".encode(), partition=i % partitions,
                         on_delivery=lambda err, msg: reports.append((err, msg)))
    assert producer.flush(60) == 0, "records left undelivered"
    errors = [err for err, _ in reports if err is not None]
    assert not errors, errors[:3]
    return {(msg.partition(), msg.offset()): msg.value() for _, msg in reports}


def kafka_python_consumer(topic: str, **config: Any) -> KafkaConsumer:
    """A kafka-python KafkaConsumer subscribed to `topic`, with the topic's metadata fetched before its first
    poll. Works around a kafka-python 3.0.12 race: when a leader joins before it knows the topic, it rejoins
    once the metadata arrives, and if a poll() times out while that second join is in flight the finished
    join is never applied (no assignment, no heartbeats: the session expires)."""
    consumer = KafkaConsumer(topic, **config)
    deadline = time.monotonic() + 60
    while not consumer.partitions_for_topic(topic):
        assert time.monotonic() < deadline, f"no metadata for {topic}"
    return consumer


class Member(Protocol):
    name: str

    def poll(self, timeout: float) -> list[Rec]: ...

    def assignment(self) -> set[int]: ...

    def close(self) -> None: ...


class KafkaPythonMember:
    """kafka-python KafkaConsumer subscribed to one topic; auto-commit commits consumed positions before
    each rejoin (and at close)."""

    def __init__(self, bootstrap: str, topic: str, group: str, name: str, **config: Any) -> None:
        self.name = name
        settings: dict[str, Any] = {
            "bootstrap_servers": bootstrap, "group_id": group, "client_id": name,
            "auto_offset_reset": "earliest", "enable_auto_commit": True,
            "auto_commit_interval_ms": NO_PERIODIC_COMMIT_MS, "heartbeat_interval_ms": HEARTBEAT_MS,
            "max_poll_records": BATCH,
        }
        settings.update(config)
        self.consumer = kafka_python_consumer(topic, **settings)

    def poll(self, timeout: float) -> list[Rec]:
        batches = self.consumer.poll(timeout_ms=int(timeout * 1000))
        return [(r.partition, r.offset, r.value) for records in batches.values() for r in records]

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment() or ()}

    def close(self) -> None:
        self.consumer.close()


class ConfluentMember:
    """confluent-kafka Consumer subscribed to one topic. Auto-commit is off: on_revoke commits, synchronously,
    the offsets after the last record handed out of each revoked partition. Callback calls are counted."""

    def __init__(self, bootstrap: str, topic: str, group: str, name: str, strategy: str = "range",
                 **config: Any) -> None:
        self.name = name
        self.topic = topic
        settings: dict[str, Any] = {
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "partition.assignment.strategy": strategy, "heartbeat.interval.ms": HEARTBEAT_MS,
        }
        settings.update(config)
        self.consumer = Consumer(settings)
        self.next_offset: dict[int, int] = {}
        self.assign_calls: list[set[int]] = []
        self.revoke_calls: list[set[int]] = []
        self.lost_calls: list[set[int]] = []
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_lost)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.assign_calls.append({tp.partition for tp in partitions})

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = {tp.partition for tp in partitions}
        self.revoke_calls.append(revoked)
        offsets = [TopicPartition(self.topic, p, self.next_offset[p]) for p in sorted(revoked)
                   if p in self.next_offset]
        if offsets:
            consumer.commit(offsets=offsets, asynchronous=False)  # raises on error: poll() re-raises it
        for p in revoked:
            self.next_offset.pop(p, None)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        lost = {tp.partition for tp in partitions}
        self.lost_calls.append(lost)
        for p in lost:
            self.next_offset.pop(p, None)

    def poll(self, timeout: float) -> list[Rec]:
        out: list[Rec] = []
        for msg in self.consumer.consume(num_messages=BATCH, timeout=timeout):
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(msg.error())
            out.append((msg.partition(), msg.offset(), msg.value()))
            self.next_offset[msg.partition()] = msg.offset() + 1
        return out

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


class AioKafkaThreadMember:
    """aiokafka AIOKafkaConsumer driven by its own asyncio loop in a thread (auto-commit before each rejoin).
    poll() hands over what the thread received since the last call; close() re-raises the thread's error."""

    def __init__(self, bootstrap: str, topic: str, group: str, name: str, **config: Any) -> None:
        self.name = name
        self._args = (bootstrap, topic, group, config)
        self._lock = threading.Lock()
        self._records: list[Rec] = []
        self._assignment: set[int] = set()
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"aiokafka-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # surfaced by poll() and close()
            self.error = exc

    async def _main(self) -> None:
        from aiokafka import AIOKafkaConsumer

        bootstrap, topic, group, config = self._args
        settings: dict[str, Any] = {
            "bootstrap_servers": bootstrap, "group_id": group, "client_id": self.name,
            "auto_offset_reset": "earliest", "enable_auto_commit": True,
            "auto_commit_interval_ms": NO_PERIODIC_COMMIT_MS, "heartbeat_interval_ms": HEARTBEAT_MS,
        }
        settings.update(config)
        consumer = AIOKafkaConsumer(topic, **settings)
        await consumer.start()
        try:
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=100, max_records=BATCH)
                with self._lock:
                    for records in batches.values():
                        self._records.extend((r.partition, r.offset, r.value) for r in records)
                    self._assignment = {tp.partition for tp in consumer.assignment()}
        finally:
            await consumer.stop()

    def poll(self, timeout: float) -> list[Rec]:
        if self.error is not None:
            raise AssertionError(f"aiokafka consumer {self.name} failed") from self.error
        with self._lock:
            out, self._records = self._records, []
        return out

    def assignment(self) -> set[int]:
        with self._lock:
            return set(self._assignment)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(60)
        if self.error is not None:
            raise AssertionError(f"aiokafka consumer {self.name} failed") from self.error
        assert not self._thread.is_alive(), f"aiokafka consumer {self.name} did not stop"


def is_balanced(assignments: Sequence[set[int]], partitions: int) -> bool:
    """Disjoint, covering every partition, and an equal share each (what range, round-robin and sticky
    assignors all give when the partitions divide evenly among the members)."""
    share = partitions // len(assignments)
    return all(len(a) == share for a in assignments) and set().union(*assignments) == set(range(partitions))


def start_staged(make: Callable[[int], Member], count: int) -> tuple[list[Member], list[tuple[str, Rec]]]:
    """Start one member and let it receive a first batch (it owns every partition then), then start the
    others: partitions move away from a member that has consumed, so its commit before the rebalance is what
    keeps the next owner from reading records again. Returns the members and what the first one received."""
    members = [make(0)]
    first = members[0]
    deadline = time.monotonic() + 60
    received: list[tuple[str, Rec]] = []
    while not received and time.monotonic() < deadline:
        received.extend((first.name, rec) for rec in first.poll(0.1))
    try:
        assert received, f"{first.name} received nothing within 60 s"
        for i in range(1, count):
            members.append(make(i))
    except BaseException:
        for m in members:
            m.close()
        raise
    return members, received


def consume_until_balanced(members: Sequence[Member], partitions: int, expected: int,
                           received: list[tuple[str, Rec]], timeout: float = 90.0) -> dict[str, set[int]]:
    """Poll every member in turn (each client takes part in rebalances only from its poll loop), adding
    (member name, record) pairs to `received`, until the group is balanced and `received` holds `expected`
    records; returns the last assignments. Never fails itself: the caller asserts on what it got."""
    deadline = time.monotonic() + timeout
    assignments: dict[str, set[int]] = {}
    while time.monotonic() < deadline:
        for m in members:
            received.extend((m.name, rec) for rec in m.poll(0.05))
        assignments = {m.name: m.assignment() for m in members}
        if len(received) >= expected and is_balanced(list(assignments.values()), partitions):
            break
    return assignments


CHILD_CONSUMER = r"""
import sys
from confluent_kafka import Consumer

bootstrap, topic, group = sys.argv[1:4]
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "child",
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                     "partition.assignment.strategy": "range", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})

def on_assign(c, partitions):
    print("ASSIGNED " + ",".join(str(tp.partition) for tp in partitions), flush=True)

def on_revoke(c, partitions):
    print("REVOKED " + ",".join(str(tp.partition) for tp in partitions), flush=True)

consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
while True:
    consumer.poll(0.2)
"""


class ChildConsumer:
    """A confluent-kafka group consumer in a child process (session.timeout.ms 6000), which prints each
    assignment it gets; kill() sends SIGKILL, so it never leaves the group."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD_CONSUMER, bootstrap, topic, group],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        self.assignment: set[int] | None = None  # the latest one printed
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def read_output(self) -> None:
        """Take in what the child printed so far (non-blocking)."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return
            self.output.append(line)
            if line.startswith("ASSIGNED "):
                text = line.removeprefix("ASSIGNED ")
                self.assignment = {int(p) for p in text.split(",")} if text else set()
            elif line.startswith("REVOKED "):
                self.assignment = set()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
