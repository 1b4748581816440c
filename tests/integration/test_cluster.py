"""A three-broker cluster on a real ZooKeeper, driven by real clients (issue 21): partitions spread over the
brokers, leaders killed and restarted, leaders moved under running clients, the controller failing over."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.conftest import wait_until

LEADER_NOT_AVAILABLE = 5


def _produce(bootstrap: str, topic: str, values: list[tuple[int, bytes]], **config: object) -> list[tuple[int, int]]:
    """(partition, offset) of each acknowledged message, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, **config})
    acked: list[tuple[int, int]] = []
    errors: list[object] = []

    def delivered(err: object, msg: object) -> None:
        if err is None:
            acked.append((msg.partition(), msg.offset()))
        else:
            errors.append(err)

    for partition, value in values:
        producer.produce(topic, value, partition=partition, on_delivery=delivered)
    assert producer.flush(60) == 0
    assert errors == []
    return acked


def _consume(bootstrap: str, topic: str, partitions: list[int], count: int, timeout: float = 60.0
             ) -> list[tuple[int, int, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    out: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                out.append((msg.partition(), msg.offset(), msg.value()))
    finally:
        consumer.close()
    return out


def test_partitions_spread_and_every_leader_serves(minibroker_cluster, topic_name):
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=6, replication_factor=1)
    leaders = {p: cluster.leader(topic_name, p) for p in range(6)}
    assert set(leaders.values()) == {1, 2, 3}  # Kafka's assignment spreads them round robin
    values = [(p, f"{p}-{i}".encode()) for i in range(20) for p in range(6)]
    acked = _produce(cluster.bootstrap, topic_name, values)
    assert len(acked) == 120
    got = _consume(cluster.bootstrap, topic_name, list(range(6)), 120)
    assert sorted(v for _, _, v in got) == sorted(v for _, v in values)
    # Each broker holds the logs of the partitions it leads, and only those.
    for broker_id in (1, 2, 3):
        held = {p["partition"] for p in cluster.broker(broker_id).topics()[topic_name]["partitions"]
                if "log_end_offset" in p}
        assert held == {p for p, leader in leaders.items() if leader == broker_id}


def test_killed_leader_goes_offline_and_comes_back_with_its_data(minibroker_cluster, topic_name):
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=3, replication_factor=1)
    acked = _produce(cluster.bootstrap, topic_name, [(p, b"before-%d" % i) for i in range(10) for p in range(3)])
    victim = cluster.leader(topic_name, 0)
    cluster.kill_broker(victim)

    def offline() -> bool:
        answer = cluster.metadata([topic_name])
        partition = next(p for p in answer.topics[0].partitions if p.partition_index == 0)
        return partition.error_code == LEADER_NOT_AVAILABLE and partition.leader_id == -1

    wait_until(offline, timeout=60, message="partition 0 offline")
    assert victim not in {b.node_id for b in cluster.metadata([]).brokers}
    cluster.start_broker(victim)
    assert cluster.wait_leader(topic_name, 0) == victim
    got = _consume(cluster.bootstrap, topic_name, [0, 1, 2], len(acked))
    assert sorted((p, o) for p, o, _ in got) == sorted(acked)


def test_replicated_partition_fails_over_without_losing_acknowledged_messages(minibroker_cluster, topic_name):
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    cluster.wait_isr(topic_name, 0, 3)
    acked = _produce(cluster.bootstrap, topic_name, [(0, b"m-%d" % i) for i in range(200)])
    leader = cluster.leader(topic_name, 0)
    started = time.monotonic()
    cluster.kill_broker(leader)
    new_leader = cluster.wait_leader(topic_name, 0, not_broker=leader)
    failover_s = time.monotonic() - started
    assert new_leader != leader and failover_s < 30
    acked += _produce(cluster.bootstrap, topic_name, [(0, b"after-%d" % i) for i in range(50)])
    got = _consume(cluster.bootstrap, topic_name, [0], len(acked))
    assert [o for _, o, _ in got] == list(range(250))  # every acknowledged message, in order, once
    assert [v for _, _, v in got] == [b"m-%d" % i for i in range(200)] + [b"after-%d" % i for i in range(50)]
    cluster.start_broker(leader)
    assert sorted(cluster.wait_isr(topic_name, 0, 3)) == [1, 2, 3]


def test_leader_moves_under_a_running_producer_and_consumer(minibroker_cluster, topic_name):
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=1, replication_factor=3)
    cluster.wait_isr(topic_name, 0, 3)
    stop = threading.Event()
    acked: list[int] = []
    errors: list[object] = []

    def produce() -> None:
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 2})
        n = 0
        while not stop.is_set():
            producer.produce(topic_name, b"%d" % n, partition=0,
                             on_delivery=lambda err, msg: errors.append(err) if err else acked.append(msg.offset()))
            n += 1
            producer.poll(0.005)
        assert producer.flush(60) == 0

    thread = threading.Thread(target=produce)
    thread.start()
    try:
        wait_until(lambda: len(acked) > 100, timeout=60)
        first = cluster.leader(topic_name, 0)
        for target in [b for b in (1, 2, 3) if b != first]:
            cluster.move_leader(topic_name, 0, target)
            count = len(acked)
            wait_until(lambda c=count: len(acked) > c + 50, timeout=60, message="production after the move")
    finally:
        stop.set()
        thread.join(90)
    assert errors == []
    got = _consume(cluster.bootstrap, topic_name, [0], len(acked))
    assert [o for _, o, _ in got] == list(range(len(acked)))
    assert [int(v) for _, _, v in got] == list(range(len(acked)))  # in order, no duplicate, nothing lost


def test_controller_fails_over_and_the_cluster_goes_on(minibroker_cluster, topic_name):
    cluster = minibroker_cluster
    old = cluster.controller_id()
    cluster.kill_broker(old)
    new = cluster.wait_until(lambda: (c := cluster.controller_id()) not in (-1, old) and c or None, 60,
                             "a new controller")
    assert new != old
    cluster.create_topic(topic_name, partitions=2, replication_factor=2)
    assert sorted(_produce(cluster.bootstrap, topic_name, [(0, b"a"), (1, b"b")])) == [(0, 0), (1, 0)]
    cluster.start_broker(old)
    assert cluster.controller_id() == new  # the old controller came back as a plain broker


def test_admin_client_sees_the_cluster(minibroker_cluster, topic_name):
    cluster = minibroker_cluster
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    described = admin.describe_cluster(request_timeout=30).result()
    assert sorted(n.id for n in described.nodes) == [1, 2, 3]
    assert described.controller.id == cluster.controller_id()
    futures = admin.create_topics([__import__("confluent_kafka.admin", fromlist=["NewTopic"]).NewTopic(
        topic_name, num_partitions=3, replication_factor=3)])
    futures[topic_name].result(30)
    topic = admin.list_topics(topic_name, timeout=30).topics[topic_name]
    assert {len(p.replicas) for p in topic.partitions.values()} == {3}
    with pytest.raises(KafkaException):  # more replicas than brokers, as Kafka refuses
        admin.create_topics([__import__("confluent_kafka.admin", fromlist=["NewTopic"]).NewTopic(
            topic_name + "-x", num_partitions=1, replication_factor=4)])[topic_name + "-x"].result(30)
