"""Fixtures shared by every test directory."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from broker.testkit.zookeeper import ZooKeeperServer, available


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper server for the whole session (`make test` installs it)."""
    if not available():
        if os.environ.get("CI"):
            pytest.fail("ZooKeeper is not installed (Debian: apt-get install zookeeper); `make test` installs it")
        pytest.skip("ZooKeeper is not installed (Debian: apt-get install zookeeper)")
    server = ZooKeeperServer().start()
    yield server
    server.cleanup()


# Apache Kafka reference brokers beside the minibroker fixture (tests/reference/plugin.py).
from tests.reference.plugin import kafka_reference, kafka_reference_pool  # noqa: E402, F401
