"""What a test pays for its fixture broker beyond its own work, counted rather than timed: the stop of a
fixture broker syncs nothing (its data dir is thrown away), a client dropped before the broker stops closes its
connection while the broker still runs, and one kept past the stop retries a dead address until it is
destroyed (docs/testing/fixtures.md: clients first, then the broker)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.testkit import BrokerThread


def _syncs_during(monkeypatch: pytest.MonkeyPatch, action: Any) -> int:
    """fsync and fdatasync calls made by anything in this process while `action()` runs."""
    calls = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda fd, _real=real: (calls.append(fd), _real(fd))[1])
    action()
    monkeypatch.undo()
    return len(calls)


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
