"""The test kit: what runs minibroker for your tests, built on the broker's instruments in
`broker.observability` (fault rules, protocol trace, introspection, metrics).

    from broker.testkit import BrokerThread, MinibrokerCluster

- `BrokerThread`: a broker in a thread of this process (the `minibroker_server` fixture's handle);
- `BrokerProcess`: `python -m broker` in a child process, for SIGKILL and restart tests;
- `MinibrokerCluster`: ZooKeeper and N brokers as child processes (the `minibroker_cluster` fixture's handle);
- `ZooKeeperServer`: a real ZooKeeper on a free port, found or fetched (broker.testkit.zookeeper);
- `SecurityKit`: a throw-away CA, a secured listener's settings, and the clients' settings for it.

The pytest fixtures are in broker.testkit.plugin. These names are loaded on first use (PEP 562), so that
importing the package loads nothing (the plugin imports the harness itself).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers and the manual's reference (mkdocstrings), which read these statically
    from broker.testkit.broker_thread import BrokerProcess, BrokerThread
    from broker.testkit.cluster import MinibrokerCluster
    from broker.testkit.security import SecurityKit
    from broker.testkit.zookeeper import ZooKeeperServer, ZooKeeperUnavailable

_WHERE = {
    "BrokerThread": "broker.testkit.broker_thread",
    "BrokerProcess": "broker.testkit.broker_thread",
    "MinibrokerCluster": "broker.testkit.cluster",
    "ZooKeeperServer": "broker.testkit.zookeeper",
    "ZooKeeperUnavailable": "broker.testkit.zookeeper",
    "SecurityKit": "broker.testkit.security",
}
__all__ = ["BrokerProcess", "BrokerThread", "MinibrokerCluster", "SecurityKit", "ZooKeeperServer",
           "ZooKeeperUnavailable"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(name)
