"""Helpers for the transaction tests (test_transactions.py): reading a topic back in either isolation level
with each client, the expected layout of transactional records and markers, a transactional producer in a
child process, and the coordinator's view through kafka-python's admin client (DescribeTransactions,
ListTransactions).

Records are compared as (partition, offset, value): a committed or aborted transaction leaves one control
batch (one offset) per partition it wrote to, so offsets check the markers as well as the data.
"""

from __future__ import annotations

import asyncio
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

from .conftest import wait_until

# (partition, offset, value)
Rec = tuple[int, int, bytes]

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


# -- expected layout ---------------------------------------------------------------------------------------------

def layout(transactions: Sequence[tuple[Sequence[tuple[int, bytes]], bool]], start: dict[int, int] | None = None
           ) -> tuple[list[Rec], list[Rec], dict[int, int]]:
    """Offsets of transactions written one after the other (no interleaving): each is ([(partition, value)],
    committed) and ends with one marker per partition it wrote to. Returns (what read_committed shows, what
    read_uncommitted shows, the log end offset of each partition)."""
    next_offset = dict(start or {})
    committed: list[Rec] = []
    everything: list[Rec] = []
    for records, commit in transactions:
        for partition, value in records:
            offset = next_offset.get(partition, 0)
            next_offset[partition] = offset + 1
            everything.append((partition, offset, value))
            if commit:
                committed.append((partition, offset, value))
        for partition in {p for p, _ in records}:
            next_offset[partition] += 1  # the COMMIT/ABORT marker
    return sorted(committed), sorted(everything), next_offset


def check_order(records: list[Rec]) -> list[Rec]:
    """Assert each partition's records were delivered in offset order, once; return them sorted."""
    by_partition: dict[int, list[int]] = {}
    for partition, offset, _ in records:
        by_partition.setdefault(partition, []).append(offset)
    for partition, offsets in by_partition.items():
        assert offsets == sorted(set(offsets)), f"partition {partition} delivered out of order or twice: {offsets}"
    return sorted(records)


# -- confluent-kafka reader ----------------------------------------------------------------------------------------

class Reader:
    """A confluent-kafka consumer assigned every partition of a topic from offset 0 (no group), in one isolation
    level. It records what it delivers, and the end-of-partition events: librdkafka reports EOF when its fetch
    position reaches the end the broker announced (the LSO under read_committed, the high watermark otherwise),
    with the high watermark of that fetch response; EOF at offset X with a high watermark above X under
    read_committed is the broker saying "nothing past X is stable"."""

    def __init__(self, bootstrap: str, topic: str, partitions: Iterable[int], isolation: str,
                 start: int = OFFSET_BEGINNING) -> None:
        self.topic = topic
        self.partitions = sorted(partitions)
        self.records: list[Rec] = []
        self.eof: dict[int, tuple[int, int]] = {}  # partition -> (EOF offset, high watermark then)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}",
                                  "isolation.level": isolation, "enable.partition.eof": True,
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        self.consumer.assign([TopicPartition(topic, p, start) for p in self.partitions])

    def poll(self, timeout: float = 0.1) -> list[Rec]:
        got: list[Rec] = []
        for msg in self.consumer.consume(num_messages=500, timeout=timeout):
            error = msg.error()
            if error is None:
                got.append((msg.partition(), msg.offset(), msg.value()))
            elif error.code() == KafkaError._PARTITION_EOF:
                _, high = self.consumer.get_watermark_offsets(TopicPartition(self.topic, msg.partition()),
                                                              cached=True)
                self.eof[msg.partition()] = (msg.offset(), high)
            else:
                raise KafkaException(error)
        self.records.extend(got)
        return got

    def poll_until(self, condition: Callable[[], object], timeout: float, message: str) -> None:
        def step() -> object:
            self.poll(0.1)
            return condition()
        wait_until(step, timeout=timeout, interval=0, message=message)

    def at_end(self, ends: dict[int, int]) -> bool:
        """An EOF at `ends[p]` on every partition: everything before it has been delivered (or skipped)."""
        return all(self.eof.get(p, (-1, -1))[0] == end for p, end in ends.items())

    def read_to(self, ends: dict[int, int], timeout: float = 20.0) -> list[Rec]:
        self.poll_until(lambda: self.at_end(ends), timeout,
                        f"{self.topic}: EOF at {ends} (EOFs so far {self.eof}, records {len(self.records)})")
        return check_order(self.records)

    def close(self) -> None:
        self.consumer.close()


def end_offsets(bootstrap: str, topic: str, partitions: Iterable[int]) -> dict[int, int]:
    """Log end offsets (high watermarks), asked of the broker (ListOffsets read_uncommitted: librdkafka's
    default isolation level, read_committed, would give the LSO)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"watermarks-{topic}",
                         "isolation.level": READ_UNCOMMITTED})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
    finally:
        consumer.close()


def read_confluent(bootstrap: str, topic: str, ends: dict[int, int], isolation: str) -> list[Rec]:
    reader = Reader(bootstrap, topic, ends, isolation)
    try:
        return reader.read_to(ends)
    finally:
        reader.close()


# -- kafka-python and aiokafka readers -------------------------------------------------------------------------------

def read_kafka_python(bootstrap: str, topic: str, ends: dict[int, int], isolation: str, timeout: float = 20.0
                      ) -> list[Rec]:
    """kafka-python KafkaConsumer (no group) from offset 0 until its position reaches `ends` everywhere."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             group_id=None, fetch_max_wait_ms=100)
    tps = [KpTopicPartition(topic, p) for p in ends]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    records: list[Rec] = []
    try:
        deadline = time.monotonic() + timeout
        while not all(consumer.position(tp) >= ends[tp.partition] for tp in tps):
            assert time.monotonic() < deadline, (
                f"kafka-python {isolation}: positions {[consumer.position(tp) for tp in tps]} never reached "
                f"{ends}; got {records}")
            for batch in consumer.poll(timeout_ms=100).values():
                records.extend((r.partition, r.offset, r.value) for r in batch)
    finally:
        consumer.close()
    return check_order(records)


def read_aiokafka(bootstrap: str, topic: str, ends: dict[int, int], isolation: str, timeout: float = 20.0
                  ) -> list[Rec]:
    """aiokafka AIOKafkaConsumer (no group) from offset 0 until its position reaches `ends` everywhere."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as AioTopicPartition

    async def main() -> list[Rec]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                    enable_auto_commit=False, group_id=None, fetch_max_wait_ms=100,
                                    auto_offset_reset="earliest")
        await consumer.start()
        records: list[Rec] = []
        try:
            tps = [AioTopicPartition(topic, p) for p in ends]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            deadline = time.monotonic() + timeout
            while True:
                positions = [await consumer.position(tp) for tp in tps]
                if all(pos >= ends[tp.partition] for pos, tp in zip(positions, tps, strict=True)):
                    break
                assert time.monotonic() < deadline, (
                    f"aiokafka {isolation}: positions {positions} never reached {ends}; got {records}")
                for batch in (await consumer.getmany(timeout_ms=100)).values():
                    records.extend((r.partition, r.offset, r.value) for r in batch)
        finally:
            await consumer.stop()
        return records

    return check_order(asyncio.run(main()))


READERS: dict[str, Callable[[str, str, dict[int, int], str], list[Rec]]] = {
    "confluent": read_confluent, "kafka-python": read_kafka_python, "aiokafka": read_aiokafka,
}


# -- plain production ---------------------------------------------------------------------------------------------

def produce_plain(bootstrap: str, topic: str, records: Sequence[tuple[int, bytes]]) -> list[Rec]:
    """Non-transactional (idempotent) records, acks=all; returns (partition, offset, value) of each."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    reports: list[tuple[Any, Any]] = []
    for partition, value in records:
        producer.produce(topic, value=value, partition=partition,
                         on_delivery=lambda err, msg: reports.append((err, msg)))
    assert producer.flush(30) == 0, "records left undelivered"
    errors = [err for err, _ in reports if err is not None]
    assert not errors, errors[:3]
    return sorted((msg.partition(), msg.offset(), msg.value()) for _, msg in reports)


# -- the coordinator's view ----------------------------------------------------------------------------------------

class TxnAdmin:
    """DescribeTransactions / ListTransactions through kafka-python's admin client (confluent-kafka's
    AdminClient has neither)."""

    def __init__(self, bootstrap: str) -> None:
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap)

    def describe(self, transactional_id: str) -> Any:
        return self.admin.describe_transactions([transactional_id])[transactional_id]

    def state(self, transactional_id: str) -> str:
        return self.describe(transactional_id).state.value

    def listed(self, state_filters: Sequence[str] | None = None) -> dict[str, tuple[int, str]]:
        """{transactional id: (producer id, state)} over every broker."""
        result = self.admin.list_transactions(state_filters=list(state_filters) if state_filters else None)
        return {t.transactional_id: (t.producer_id, t.state.value) for listing in result.values() for t in listing}

    def close(self) -> None:
        self.admin.close()


# -- a transactional producer in a child process ------------------------------------------------------------------

CHILD_TXN_PRODUCER = r"""
import sys, time
from confluent_kafka import Producer

bootstrap, topic, txn_id, timeout_ms, partitions, count = sys.argv[1:7]
partitions = [int(p) for p in partitions.split(",")]
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                     "transaction.timeout.ms": int(timeout_ms), "linger.ms": 0})
producer.init_transactions(30)
producer.begin_transaction()
for i in range(int(count)):
    producer.produce(topic, value=f"{txn_id}-{i}".encode(), partition=partitions[i % len(partitions)])
assert producer.flush(30) == 0, "records left undelivered"
print("READY", flush=True)
while True:
    time.sleep(1)  # hold the transaction open until the test kills us
"""


class ChildTxnProducer:
    """A confluent-kafka transactional producer in a child process: it begins a transaction, produces `count`
    records `{txn_id}-{i}` round-robin over `partitions`, flushes them, prints READY and waits to be killed."""

    def __init__(self, bootstrap: str, topic: str, txn_id: str, timeout_ms: int, partitions: Sequence[int],
                 count: int) -> None:
        self.values = [(partitions[i % len(partitions)], f"{txn_id}-{i}".encode()) for i in range(count)]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD_TXN_PRODUCER, bootstrap, topic, txn_id, str(timeout_ms),
             ",".join(map(str, partitions)), str(count)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.output: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"child producer not ready after {timeout}s: {self.output}") from None
            if line is None:
                raise AssertionError(f"child producer exited ({self.proc.wait()}): {self.output}")
            self.output.append(line)
            if line == "READY":
                return

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
