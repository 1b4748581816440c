"""Admin APIs with real admin clients (kafka-python's KafkaAdminClient, confluent-kafka's AdminClient)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewPartitions
from kafka import KafkaAdminClient
from kafka.errors import InvalidPartitionsError, InvalidReplicationAssignmentError, UnknownTopicOrPartitionError

from .group_helpers import create_topic


def _partition_count(admin: AdminClient, topic: str) -> int:
    return len(admin.list_topics(topic, timeout=10).topics[topic].partitions)


def test_create_partitions_kafka_python(minibroker_server, topic_name):
    bootstrap = minibroker_server.bootstrap
    create_topic(bootstrap, topic_name, 2)
    kp = KafkaAdminClient(bootstrap_servers=bootstrap)
    ck = AdminClient({"bootstrap.servers": bootstrap})
    try:
        kp.create_partitions({topic_name: 4}, validate_only=True)
        assert _partition_count(ck, topic_name) == 2  # validate_only changes nothing
        kp.create_partitions({topic_name: 4})
        assert _partition_count(ck, topic_name) == 4
        with pytest.raises(InvalidPartitionsError):
            kp.create_partitions({topic_name: 4})  # "Topic already has 4 partition(s)."
        with pytest.raises(InvalidPartitionsError):
            kp.create_partitions({topic_name: 3})  # not an increase
        with pytest.raises(UnknownTopicOrPartitionError):
            kp.create_partitions({topic_name + "-missing": 3})
        with pytest.raises(InvalidReplicationAssignmentError):
            kp.create_partitions({topic_name: {"count": 6, "assignments": [[0]]}})  # 2 new, 1 assignment
        kp.create_partitions({topic_name: {"count": 5, "assignments": [[0]]}})
        assert _partition_count(ck, topic_name) == 5
    finally:
        kp.close()
    # The new partitions take records and survive a restart.
    producer = Producer({"bootstrap.servers": bootstrap})
    delivered = []
    producer.produce(topic_name, b"to-4", partition=4, on_delivery=lambda err, msg: delivered.append((err, msg)))
    producer.flush(10)
    assert delivered and delivered[0][0] is None and delivered[0][1].partition() == 4
    del producer
    minibroker_server.restart()
    assert _partition_count(AdminClient({"bootstrap.servers": minibroker_server.bootstrap}), topic_name) == 5


def test_create_partitions_confluent(minibroker, topic_name):
    create_topic(minibroker, topic_name, 1)
    admin = AdminClient({"bootstrap.servers": minibroker})
    admin.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(10)
    assert _partition_count(admin, topic_name) == 3
    with pytest.raises(KafkaException) as failure:
        admin.create_partitions([NewPartitions(topic_name, 2)])[topic_name].result(10)
    assert failure.value.args[0].name() == "INVALID_PARTITIONS"
    # The group coordinator maps groups to __consumer_offsets partitions by their count: it cannot grow.
    kp = KafkaAdminClient(bootstrap_servers=minibroker)
    try:
        kp.list_group_offsets("any-group")  # FindCoordinator creates __consumer_offsets
    finally:
        kp.close()
    with pytest.raises(KafkaException) as failure:
        admin.create_partitions([NewPartitions("__consumer_offsets", 60)])["__consumer_offsets"].result(10)
    assert failure.value.args[0].name() == "INVALID_REQUEST"
