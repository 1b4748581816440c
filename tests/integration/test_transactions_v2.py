"""Transactions version 2 (KIP-890 part 2) with Kafka 4.1's Java producer against the 4.1 profile: the
client uses EndTxn v5 and lets its writes add their partitions, every transaction end bumps the epoch,
aborted data stays invisible to read_committed consumers, and a second instance fences the first. TV1 clients
(librdkafka) keep working against the same broker."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.testkit import BrokerThread
from tests import kafka_jars

_SOURCE = Path(__file__).parent / "java_clients" / "TransactionsV2.java"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path, kafka_version="4.1", trace_file=str(tmp_path / "trace.jsonl"))
    b.start()
    try:
        yield b
    finally:
        b.stop()


def _java_classpath() -> str:
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    try:
        return kafka_jars.classpath("4.1", ["kafka-clients"])
    except kafka_jars.Unavailable as exc:
        pytest.skip(f"Kafka's jars are not available: {exc}")


def _read_committed(bootstrap: str, topic: str, expected: int) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{topic}", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    got: list[str] = []
    deadline = time.monotonic() + 60
    while len(got) < expected and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value().decode())
    # Nothing more arrives (the aborted and fenced records stay hidden).
    end = time.monotonic() + 2
    while time.monotonic() < end:
        m = consumer.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value().decode())
    consumer.close()
    return got


def test_java_producer_uses_transactions_v2(broker: BrokerThread, tmp_path: Path) -> None:
    classpath = _java_classpath()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("tv2", 2, 1)])["tv2"].result(30)
    done = subprocess.run(["java", "-cp", classpath, str(_SOURCE), broker.bootstrap, "tv2"], capture_output=True,
                          text=True, timeout=240)
    lines = done.stdout.splitlines()
    # A real Kafka 4.1 broker answers the zombie's write the same way (InvalidProducerEpochException).
    assert lines == ["committed 5", "aborted 3", "committed 2", "second initialized",
                     "fenced InvalidProducerEpochException", "committed 4"], (done.stdout, done.stderr[-3000:])

    def used() -> set[tuple[str, int]] | None:
        lines = (tmp_path / "trace.jsonl").read_text().splitlines()  # written in the broker's thread
        found = {(e["api"], e["version"]) for e in map(json.loads, lines) if e["dir"] == "request"
                 and e.get("client_id", "").startswith("producer-")}
        return found if ("END_TXN", 5) in found else None

    # The client speaks TV2: EndTxn v5, and no AddPartitionsToTxn (its writes add their partitions).
    assert not any(api == "ADD_PARTITIONS_TO_TXN" for api, _ in broker.wait_until(used, 10, "EndTxn v5"))
    txn = broker.transactions()["tv2"]
    assert txn["state"] == "CompleteCommit", txn
    assert txn["client_transaction_version"] == 2, txn
    # Epochs: the first instance ended 3 transactions (0 -> 3), the fence bumped it (InitProducerId: 4 -> the
    # abort of the zombie's transaction: 5), the second instance ended one more.
    assert txn["producer_epoch"] >= 5
    got = _read_committed(broker.bootstrap, "tv2", 11)
    assert sorted(got) == sorted([f"a{i}" for i in range(5)] + ["c0", "c1"] + [f"d{i}" for i in range(4)])


def test_librdkafka_transactions_still_use_version_1(broker: BrokerThread) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tv1"})
    producer.init_transactions(30)
    for outcome in ("commit", "abort", "commit"):
        producer.begin_transaction()
        producer.produce("tv1-topic", value=outcome.encode())
        producer.flush(30)
        getattr(producer, f"{outcome}_transaction")(30)
    txn = broker.transactions()["tv1"]
    assert txn["client_transaction_version"] < 2 and txn["producer_epoch"] == 0
    assert sorted(_read_committed(broker.bootstrap, "tv1-topic", 2)) == ["commit", "commit"]
