"""The test kit: what runs a broker for tests (the pytest plugin, BrokerThread, BrokerProcess) and the
broker's instruments for them (fault rules, protocol trace, introspection, admin HTTP, metrics).

`from broker.testkit import BrokerThread, BrokerProcess`. They are loaded on first use (PEP 562), so
that the broker's server, which imports the instruments, does not load the harness.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BrokerProcess", "BrokerThread"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from broker.testkit import broker_thread

        return getattr(broker_thread, name)
    raise AttributeError(name)
