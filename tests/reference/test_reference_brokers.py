"""The reference brokers themselves: started from the pinned releases, answering as Kafka, nodes stopped and
started again. A release that cannot be fetched here skips with the reason."""

from __future__ import annotations

import pytest

from tests.reference.harness import load_recording
from tests.reference.scenarios.versions import api_versions_table
from tests.reference.wire import WireConnection


def test_a_single_kraft_node_answers_as_recorded(kafka_reference) -> None:
    kafka = kafka_reference(release="4.1")
    assert kafka.describe().startswith("Kafka 4.1.") and "KRaft" in kafka.describe()
    with kafka.wire() as conn:
        live = conn.request(18, 4, {"client_software_name": "t", "client_software_version": "1"})
    recorded = load_recording("4.1", "api_versions")
    assert recorded is not None
    assert api_versions_table(live) == api_versions_table(recorded["exchanges"][1]["response"])
    kafka.create_topic("reference-smoke", partitions=3)
    partitions = kafka.topics()["reference-smoke"]["partitions"]
    assert [p["partition"] for p in partitions] == [0, 1, 2]
    assert all(p["leader"] == kafka.nodes[0] for p in partitions)
    assert kafka.offsets("reference-smoke", 1) == (0, 0)
    assert kafka.cluster.nodes[0].log_file.stat().st_size > 0  # Log4j writes to the node's own file


@pytest.mark.reference_cluster
@pytest.mark.parametrize("release", ["4.1", "4.4"])
def test_kraft_cluster_of_three_survives_a_killed_leader(kafka_reference, release: str) -> None:
    kafka = kafka_reference(release=release, brokers=3, fresh=True)
    assert kafka.nodes == [0, 1, 2]
    kafka.create_topic("replicated", partitions=1, replication_factor=3)
    old = kafka.leader("replicated")
    kafka.kill_node(old)
    new = kafka.wait_leader("replicated", not_in={old})
    assert new != old
    kafka.start_node(old)
    with WireConnection(kafka.cluster.nodes[old].address) as conn:
        brokers = conn.request(3, 12, {"topics": [], "allow_auto_topic_creation": False})["brokers"]
    assert sorted(b["node_id"] for b in brokers) == [0, 1, 2]


@pytest.mark.reference_cluster
@pytest.mark.parametrize("brokers", [1, 3])
def test_kafka_3_9_runs_on_zookeeper_in_a_chroot_of_its_own(kafka_reference, zookeeper, brokers: int) -> None:
    from kazoo.client import KazooClient

    kafka = kafka_reference(release="3.9", brokers=brokers, fresh=True)
    assert "ZooKeeper" in kafka.describe()
    zk = KazooClient(hosts=zookeeper.address)
    zk.start(timeout=30)
    try:
        assert sorted(int(i) for i in zk.get_children(f"{kafka.cluster.chroot}/brokers/ids")) == list(range(brokers))
    finally:
        zk.stop()
        zk.close()
    kafka.create_topic("on-zookeeper", partitions=2, replication_factor=brokers)
    assert len(kafka.topics()["on-zookeeper"]["partitions"][0]["replicas"]) == brokers


@pytest.mark.reference_cluster
def test_kafka_share_groups_keep_acknowledgements_across_killed_brokers(kafka_reference, tmp_path) -> None:
    """What minibroker's cluster is held to (tests/java/test_share_consumer.py, the same Java check): on three
    Kafka 4.4 nodes, two share consumers with explicit acknowledgement while the leader of a partition is
    SIGKILLed, then, once it is back, the node of a share coordinator of the group: every record acknowledged,
    none delivered again after its acknowledgement was answered."""
    import uuid

    from tests.java.test_share_consumer import find_share_coordinator, run_share_failover

    kafka = kafka_reference(release="4.4", brokers=3, fresh=True)
    killed: list[int] = []

    def kill_a_leader(topic: str) -> None:
        killed.append(kafka.leader(topic, 0))
        kafka.kill_node(killed[0])
        kafka.wait_leader(topic, 0, not_in={killed[0]})

    def restart_it_and_kill_a_share_coordinator(topic: str, group: str) -> None:
        kafka.start_node(killed[0])
        topic_id = uuid.UUID(str(kafka.topics(killed[0])[topic]["topic_id"]))
        killed.append(find_share_coordinator(kafka.cluster.nodes[killed[0]].address, group, topic_id, 0))
        kafka.kill_node(killed[1])

    run_share_failover(tmp_path, kafka.bootstrap, kill_a_leader, restart_it_and_kill_a_share_coordinator)
    assert len(killed) == 2
