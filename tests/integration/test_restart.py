"""Durability: a clean restart keeps everything; SIGKILL during acks=all production loses nothing
that was acknowledged."""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from broker.log.clean_shutdown import MARKER
from broker.testkit import BrokerProcess

from .conftest import wait_until


def _read_all(bootstrap: str, topic: str, partitions: int, expected: int) -> dict:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = {}
    eof = set()
    deadline = time.monotonic() + 120
    while (len(out) < expected or len(eof) < partitions) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                eof.add(msg.partition())
                continue
            raise AssertionError(msg.error())
        eof.discard(msg.partition())
        assert (msg.partition(), msg.offset()) not in out, "duplicate offset"
        out[(msg.partition(), msg.offset())] = msg.value()
    consumer.close()
    return out


def test_clean_restart_keeps_everything(tmp_path, topic_name):
    broker = BrokerProcess(tmp_path / "data", "--num-partitions", "3").start()
    try:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
        for i in range(3000):
            producer.produce(topic_name, value=str(i).encode(), partition=i % 3)
        assert producer.flush(60) == 0
        assert broker.stop() == 0  # SIGTERM: flush and exit 0
        assert (tmp_path / "data" / MARKER).exists()  # the next start scans no log
        broker.start()
        assert not (tmp_path / "data" / MARKER).exists()  # a crash from now on is recovered
        got = _read_all(broker.bootstrap, topic_name, 3, 3000)
        assert sorted(int(v) for v in got.values()) == list(range(3000))
        # Offsets continue where they were after the restart.
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
        reports = []
        producer.produce(topic_name, value=b"after", partition=0, on_delivery=lambda e, m: reports.append((e, m)))
        producer.flush(60)
        assert reports[0][0] is None and reports[0][1].offset() == 1000
    finally:
        broker.stop()


def test_sigkill_during_acks_all_loses_nothing_acknowledged(tmp_path, topic_name):
    broker = BrokerProcess(tmp_path / "data", "--num-partitions", "2", "--fsync", "grouped").start()
    acked: dict[tuple[int, int], bytes] = {}
    stop = threading.Event()
    lock = threading.Lock()

    def produce_forever() -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 1,
                             "message.timeout.ms": 5000, "retries": 0})

        def on_delivery(err, msg):
            if err is None:
                with lock:
                    acked[(msg.partition(), msg.offset())] = msg.value()

        i = 0
        while not stop.is_set():
            try:
                producer.produce(topic_name, value=f"m{i}".encode() * 20, partition=i % 2, on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            producer.poll(0)
        producer.flush(10)

    thread = threading.Thread(target=produce_forever)
    thread.start()
    try:
        wait_until(lambda: len(acked) >= 5000, timeout=120, message="5000 acknowledged messages")
        broker.kill()
        stop.set()
        thread.join(60)
        with lock:
            snapshot = dict(acked)
        broker.start()
        got = _read_all(broker.bootstrap, topic_name, 2, len(snapshot))
        missing = [k for k, v in snapshot.items() if got.get(k) != v]
        assert not missing, f"{len(missing)} acknowledged messages lost or changed, e.g. {missing[:5]}"
    finally:
        stop.set()
        thread.join(60)
        broker.stop()
