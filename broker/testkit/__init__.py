"""The test kit: what runs a broker for tests (the pytest plugin, BrokerThread, BrokerProcess, the cluster
and ZooKeeper fixtures), built on the broker's instruments in `broker.observability` (fault rules, protocol
trace, introspection, metrics).

`from broker.testkit import BrokerThread, BrokerProcess`. They are loaded on first use (PEP 562), so that
importing the package loads nothing (the plugin imports the harness itself).
"""

from __future__ import annotations

from typing import Any

__all__ = ["BrokerProcess", "BrokerThread"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from broker.testkit import broker_thread

        return getattr(broker_thread, name)
    raise AttributeError(name)
