"""Moved to broker.testkit.zookeeper (the cluster fixture of the test kit starts one too)."""

from broker.testkit.zookeeper import ZooKeeperServer, available

__all__ = ["ZooKeeperServer", "available"]
