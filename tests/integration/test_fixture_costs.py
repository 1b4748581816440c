"""What a test pays for its fixture broker beyond its own work, counted rather than timed: a fixture broker
syncs nothing, neither what it creates (its metadata, the coordinators' 50-partition topics, a producer-id
block) nor its logs when it stops (its data dir is thrown away), a client dropped before the broker stops
closes its connection while the broker still runs, and one kept past the stop retries a dead address until it
is destroyed (docs/testing/fixtures.md: clients first, then the broker)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.testkit import BrokerThread


def _syncs_during(monkeypatch: pytest.MonkeyPatch, action: Any) -> int:
    """fsync, fdatasync and syncfs calls made by anything in this process while `action()` runs."""
    from broker.log import syncfs

    calls = []
    for module, name in ((os, "fsync"), (os, "fdatasync"), (syncfs, "syncfs")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda fd, _real=real: (calls.append(fd), _real(fd))[1])
    action()
    monkeypatch.undo()
    return len(calls)


def _first_group_and_transaction(bootstrap: str) -> None:
    """What a test's first steps make a broker create: a topic, `__consumer_offsets` (a group's first
    message), `__transaction_state` and a producer-id block (one transaction)."""
    _with_partitions(bootstrap, 1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    deadline = time.monotonic() + 30
    message = None
    while message is None and time.monotonic() < deadline:
        message = consumer.poll(0.5)
    assert message is not None and message.error() is None, message
    consumer.commit(message, asynchronous=False)
    consumer.close()
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("orders", b"order-2")
    producer.commit_transaction(30)


def test_a_fixture_broker_syncs_nothing_it_creates(minibroker_server, monkeypatch) -> None:
    assert _syncs_during(monkeypatch, lambda: _first_group_and_transaction(minibroker_server.bootstrap)) == 0


def test_a_broker_of_a_kept_data_dir_syncs_what_it_creates(tmp_path: Path, monkeypatch) -> None:
    broker = BrokerThread(tmp_path / "data").start()
    try:
        # Each topic's metadata (orders and the two internal topics) and the producer-id block: file and rename.
        assert _syncs_during(monkeypatch, lambda: _first_group_and_transaction(broker.bootstrap)) >= 8
    finally:
        broker.stop()


def _with_partitions(bootstrap: str, count: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("orders", count, 1)])["orders"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("orders", b"order-1", partition=0)
    assert producer.flush(10) == 0


def test_a_fixture_broker_stops_without_syncing_its_logs(minibroker_server, monkeypatch) -> None:
    _with_partitions(minibroker_server.bootstrap, 50)
    assert _syncs_during(monkeypatch, minibroker_server.stop) == 0


def test_a_broker_of_a_kept_data_dir_syncs_every_log_when_it_stops(tmp_path: Path, monkeypatch) -> None:
    broker = BrokerThread(tmp_path / "data").start()
    try:
        _with_partitions(broker.bootstrap, 50)
    finally:
        syncs = _syncs_during(monkeypatch, broker.stop)
    assert syncs >= 50
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _producer(bootstrap: str) -> tuple[Producer, _Lines]:
    lines = _Lines()
    logger = logging.getLogger(f"rdkafka-{id(lines)}")
    logger.propagate = False
    logger.addHandler(lines)
    producer = Producer({"bootstrap.servers": bootstrap, "logger": logger})
    producer.produce("orders", b"order-1")
    assert producer.flush(10) == 0
    return producer, lines


def test_a_producer_dropped_before_the_stop_closes_its_connection_while_the_broker_runs(minibroker_server) -> None:
    producer, lines = _producer(minibroker_server.bootstrap)
    del producer  # what the end of a test does to its local client
    minibroker_server.wait_until(lambda: True if minibroker_server.open_connections() == 0 else None, timeout=30,
                                 what="the producer's connections closed")
    minibroker_server.stop()
    assert not [line for line in lines.lines if "Connect to" in line]


def test_a_producer_kept_past_the_stop_retries_a_dead_address(minibroker_server) -> None:
    producer, lines = _producer(minibroker_server.bootstrap)
    minibroker_server.stop()
    producer.produce("orders", b"order-2")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len([line for line in lines.lines if "Connect to" in line]) < 2:
        producer.poll(0.1)
    assert len([line for line in lines.lines if "Connect to" in line]) >= 2
