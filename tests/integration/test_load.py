"""A lighter run of `make load` (1,000 connections, 100 producers, 20 consumers there): many connections
and clients on one broker process, with bounds on its memory (generous: speed and exact sizes are the
benchmark's business) and every client served."""

from __future__ import annotations

import pytest

from broker.testkit import BrokerProcess
from tests.load.run import connections_and_clients, idle_connections_closed, raise_fd_limit, slow_reader


@pytest.fixture
def broker(tmp_path):
    raise_fd_limit()
    broker = BrokerProcess(tmp_path / "data", "--override", "connections.max.idle.ms=1000").start()
    yield broker
    broker.stop()


def test_connections_producers_and_consumers(broker):
    figures = connections_and_clients(broker, connections=200, producers=10, consumers=4, seconds=5)
    assert figures.errors == []
    assert all(n > 0 for n in figures.produced), figures.produced
    assert all(n > 0 for n in figures.consumed), figures.consumed
    assert figures.busy_round_trips > 0 and figures.witness_ms
    assert (figures.rss_connected_kib - figures.rss_before_kib) / 200 < 200  # KiB per idle connection
    assert figures.rss_peak_load_kib < figures.rss_before_kib + 200 * 1024


def test_idle_connections_are_closed(broker):
    assert idle_connections_closed(broker, idle=20, busy=5, idle_ms=1000) == (20, 5)


def test_a_slow_reader_does_not_grow_memory(tmp_path):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        before, end, sent = slow_reader(broker, 1000)
    finally:
        broker.stop()
    assert sent > 0
    # At most 64 answers of up to 1 MiB wait for the client (and far fewer fit before it stops being read).
    assert end - before < 100 * 1024
