"""KIP-932 share groups on a cluster of three brokers (the 4.4 profile) with confluent-kafka's ShareConsumer: the
share partitions live on their partition leaders, their state at the share coordinators (the leaders of the
`__share_group_state` partitions, elsewhere as often as not), the group at its group coordinator. Two consumers
with explicit acknowledgement get every record; when the leader of a partition is SIGKILLed, its new leader
reads the share-partition state from the share coordinator: nothing whose acknowledgement was answered is
delivered again, and the records produced after the kill are delivered too."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

pytestmark = pytest.mark.minibroker_cluster(args=("--kafka-version", "4.4"))

PHASE = 150


class Consumers:
    """Share consumers of one group: what they were delivered, and which acknowledgements were answered."""

    def __init__(self, bootstrap: str, group: str, topic: str, count: int) -> None:
        self.consumers = [ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"c{i}",
                                         "share.acknowledgement.mode": "explicit"}) for i in range(count)]
        for consumer in self.consumers:
            consumer.subscribe([topic])
        self.confirmed: set[int] = set()
        self.deliveries: dict[int, list[int]] = {}
        self.redelivered_after_ack: list[int] = []

    def consume(self, until: int, timeout: float = 120.0) -> None:
        """Poll, accept and commit until `until` acknowledgements were answered."""
        deadline = time.monotonic() + timeout
        while len(self.confirmed) < until:
            assert time.monotonic() < deadline, f"{len(self.confirmed)} of {until} acknowledged"
            for consumer in self.consumers:
                polled: dict[int, list[int]] = {}
                for m in consumer.poll(0.3) or []:
                    if m.error() is not None:
                        continue
                    value = int(m.value())
                    self.deliveries.setdefault(value, []).append(m.delivery_count())
                    if value in self.confirmed:
                        self.redelivered_after_ack.append(value)
                    consumer.acknowledge(m)
                    polled.setdefault(m.partition(), []).append(value)
                if polled:
                    for tp, error in consumer.commit_sync(30).items():
                        if error is None:
                            self.confirmed.update(polled.get(tp.partition, []))

    def close(self) -> None:
        for consumer in self.consumers:
            consumer.close()


@pytest.fixture
def queue(minibroker_cluster) -> Iterator[tuple[str, str]]:
    """A topic of three partitions replicated three times, and a share group reading it from the start."""
    topic, group = "jobs", "workers"
    admin = AdminClient({"bootstrap.servers": minibroker_cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    yield topic, group


def produce(bootstrap: str, topic: str, values: range) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for v in values:
        producer.produce(topic, value=b"%d" % v, partition=v % 3)
    assert producer.flush(60) == 0


def test_share_consumers_across_a_partition_leader_kill(minibroker_cluster, queue) -> None:
    cluster = minibroker_cluster
    topic, group = queue
    produce(cluster.bootstrap, topic, range(PHASE))
    consumers = Consumers(cluster.bootstrap, group, topic, 2)
    try:
        consumers.consume(PHASE)
        leader = cluster.leader(topic, 0)
        cluster.kill_broker(leader)
        cluster.wait_leader(topic, 0, not_broker=leader)
        produce(cluster.bootstrap, topic, range(PHASE, 2 * PHASE))
        consumers.consume(2 * PHASE)
    finally:
        consumers.close()
    assert consumers.redelivered_after_ack == []
    assert consumers.confirmed == set(range(2 * PHASE)) == set(consumers.deliveries)
