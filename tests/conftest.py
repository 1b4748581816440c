"""Fixtures shared by every test directory."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from broker.testkit.zookeeper import ZooKeeperServer, ZooKeeperUnavailable


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper server for the whole session (`make test` installs Debian's)."""
    try:
        server = ZooKeeperServer()
    except ZooKeeperUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{exc}; `make test` installs ZooKeeper")
        pytest.skip(str(exc))
    server.start()
    yield server
    server.cleanup()


# Apache Kafka reference brokers beside the minibroker fixture (tests/reference/plugin.py).
from tests.reference.plugin import kafka_reference, kafka_reference_pool  # noqa: E402, F401
