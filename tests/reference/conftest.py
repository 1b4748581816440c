"""The reference brokers' cluster tests (several JVMs, a minute or more) run under `make reference-test`
(MINIBROKER_REFERENCE_CLUSTERS=1); `make test` runs one single-node reference and the JVM-free replay."""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "reference_cluster: starts several Kafka JVMs (make reference-test)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("MINIBROKER_REFERENCE_CLUSTERS"):
        return
    skip = pytest.mark.skip(reason="Kafka clusters run under `make reference-test` (MINIBROKER_REFERENCE_CLUSTERS=1)")
    for item in items:
        if item.get_closest_marker("reference_cluster"):
            item.add_marker(skip)
