"""Deprecated: the test kit moved to `broker.testkit` (`from broker.testkit import BrokerThread`; the pytest
plugin is `broker.testkit.plugin`). This re-export stays for one release."""

from broker.testkit.broker_thread import BrokerProcess, BrokerThread

__all__ = ["BrokerProcess", "BrokerThread"]
