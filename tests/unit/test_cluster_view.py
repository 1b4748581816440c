"""Both clusters a broker can be part of answer every question of the ClusterView its handlers ask: the
single broker and a ZooKeeper-mode cluster's broker (built here without connecting)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.clock import WallClock
from broker.cluster.zk_cluster import ZkCluster
from broker.config.options import BrokerConfig, Listener
from broker.services.cluster_view import ClusterView
from broker.services.single_node import SingleNode
from broker.services.topics import TopicManager
from protocol.header import ErrorCode


@pytest.fixture
def config(tmp_path: Path) -> BrokerConfig:
    return BrokerConfig(listeners=[Listener("127.0.0.1", 9092)], data_dir=tmp_path, broker_id=1)


def test_a_single_broker_is_a_cluster_view(config: BrokerConfig) -> None:
    topics = TopicManager(config, 0)
    view = SingleNode(1, topics, WallClock(), lambda: False, None)
    assert isinstance(view, ClusterView)
    assert not view.replicated and view.controller_id == 1
    assert view.auto_create_topic("t") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # auto.create.topics.enable off
    topics.close()


def test_a_zookeeper_cluster_broker_is_a_cluster_view(config: BrokerConfig) -> None:
    cluster = ZkCluster(config, session=None, zk=None)  # type: ignore[arg-type]  # never connected here
    assert isinstance(cluster, ClusterView)
    assert cluster.replicated and cluster.controller_id == -1  # no controller known before UpdateMetadata
    assert not cluster.is_alive(1) and cluster.not_controller()


def test_the_check_can_fail() -> None:
    assert not isinstance(object(), ClusterView)
