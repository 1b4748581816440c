"""Admin APIs with real admin clients (kafka-python's KafkaAdminClient, confluent-kafka's AdminClient)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
)
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, NewTopic
from kafka.errors import (
    ElectionNotNeededError,
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    UnknownTopicOrPartitionError,
)
from kafka.structs import TopicPartitionReplica

from tests.kafka_wire import WireClient

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


def test_delete_records(minibroker, topic_name):
    create_topic(minibroker, topic_name, 1)
    producer = Producer({"bootstrap.servers": minibroker})
    for i in range(10):
        producer.produce(topic_name, f"r{i}".encode(), partition=0)
    producer.flush(10)
    tp = TopicPartition(topic_name, 0)
    kp = KafkaAdminClient(bootstrap_servers=minibroker)
    consumer = KafkaConsumer(bootstrap_servers=minibroker, group_id=None)
    try:
        assert kp.delete_records({tp: 4})[tp]["low_watermark"] == 4
        assert consumer.beginning_offsets([tp])[tp] == 4
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = []
        while len(got) < 6:
            for records in consumer.poll(timeout_ms=1000).values():
                got += [r.value for r in records]
        assert got == [f"r{i}".encode() for i in range(4, 10)]
        assert kp.delete_records({tp: 2})[tp]["low_watermark"] == 4  # never moves back
        with pytest.raises(OffsetOutOfRangeError):
            kp.delete_records({tp: 11})  # beyond the high watermark
        assert kp.delete_records({tp: -1})[tp]["low_watermark"] == 10  # -1: up to the high watermark
    finally:
        consumer.close()
    compacted = topic_name + "-compacted"
    kp.create_topics([NewTopic(compacted, 1, 1, topic_configs={"cleanup.policy": "compact"})])
    try:
        with pytest.raises(PolicyViolationError):
            kp.delete_records({TopicPartition(compacted, 0): 0})
    finally:
        kp.close()


def test_describe_configs(minibroker, topic_name):
    admin = AdminClient({"bootstrap.servers": minibroker})
    kp_new = NewTopic(topic_name, 1, 1, topic_configs={"retention.ms": "12345", "cleanup.policy": "compact"})
    kp = KafkaAdminClient(bootstrap_servers=minibroker)
    try:
        kp.create_topics([kp_new])
    finally:
        kp.close()
    topic = ConfigResource("topic", topic_name)
    configs = admin.describe_configs([topic])[topic].result(10)
    assert configs["retention.ms"].value == "12345"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "compact"
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert not configs["segment.bytes"].is_read_only
    synonyms = {s.name: s.value for s in configs["retention.ms"].synonyms.values()}
    # log.retention.ms has no default in Kafka (log.retention.hours decides): no default synonym
    # (recorded from Kafka: tests/reference/recorded/*/describe_topic_configs.json).
    assert synonyms == {"retention.ms": "12345"}

    broker = ConfigResource("broker", "0")
    broker_configs = admin.describe_configs([broker])[broker].result(10)
    assert broker_configs["num.partitions"].value == "1" and broker_configs["num.partitions"].is_read_only
    missing = ConfigResource("topic", topic_name + "-missing")
    with pytest.raises(KafkaException) as failure:
        admin.describe_configs([missing])[missing].result(10)
    assert failure.value.args[0].name() == "UNKNOWN_TOPIC_OR_PART"


def test_describe_configs_kafka_python(minibroker, topic_name):
    create_topic(minibroker, topic_name, 1)
    kp = KafkaAdminClient(bootstrap_servers=minibroker)
    try:
        described = kp.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, topic_name, ["retention.ms"])],
                                        config_filter="All")
        assert list(described) == ["topic"], described
        entry = described["topic"][topic_name]["retention.ms"]
        assert "604800000" in repr(entry), described
    finally:
        kp.close()


def test_alter_configs_take_effect_and_persist(minibroker_server, topic_name):
    bootstrap = minibroker_server.bootstrap
    create_topic(bootstrap, topic_name, 1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = ConfigResource("topic", topic_name)

    # IncrementalAlterConfigs: SET, APPEND to a list, DELETE back to the default.
    change = ConfigResource("topic", topic_name, incremental_configs=[
        ConfigEntry("max.message.bytes", "2000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([change])[change].result(10)
    configs = admin.describe_configs([topic])[topic].result(10)
    assert configs["max.message.bytes"].value == "2000"
    assert configs["cleanup.policy"].value == "delete,compact"
    # The new limit applies to the next produce at once.
    producer = Producer({"bootstrap.servers": bootstrap})
    errors = []
    producer.produce(topic_name, b"x" * 5000, partition=0, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert errors and errors[0] is not None and errors[0].name() == "MSG_SIZE_TOO_LARGE", errors
    del producer

    delete = ConfigResource("topic", topic_name, incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([delete])[delete].result(10)
    bad = ConfigResource("topic", topic_name, incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.APPEND)])
    with pytest.raises(KafkaException) as failure:
        admin.incremental_alter_configs([bad])[bad].result(10)
    assert failure.value.args[0].name() == "INVALID_CONFIG"
    invalid = ConfigResource("topic", topic_name, incremental_configs=[
        ConfigEntry("segment.bytes", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as failure:
        admin.incremental_alter_configs([invalid])[invalid].result(10)
    assert failure.value.args[0].name() == "INVALID_CONFIG"

    minibroker_server.restart()
    admin = AdminClient({"bootstrap.servers": minibroker_server.bootstrap})
    configs = admin.describe_configs([topic])[topic].result(10)
    assert configs["max.message.bytes"].value == "2000"
    assert configs["retention.ms"].value == "604800000"  # deleted override: the broker default again
    assert configs["cleanup.policy"].value == "delete,compact"


def test_alter_configs_kafka_python_and_legacy_replacement(minibroker, topic_name):
    create_topic(minibroker, topic_name, 1)
    kp = KafkaAdminClient(bootstrap_servers=minibroker)
    admin = AdminClient({"bootstrap.servers": minibroker})
    topic = ConfigResource("topic", topic_name)
    try:
        kp.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, topic_name, {"retention.ms": "777"})])
        assert admin.describe_configs([topic])[topic].result(10)["retention.ms"].value == "777"
    finally:
        kp.close()
    # Legacy AlterConfigs replaces the whole set of overrides: retention.ms goes back to its default.
    with WireClient(minibroker) as c:
        resp = c.request(33, 1, {"resources": [{"resource_type": 2, "resource_name": topic_name,
                                                "configs": [{"name": "segment.ms", "value": "60000"}]}],
                                 "validate_only": False})
        assert resp.responses[0].error_code == 0
    configs = admin.describe_configs([topic])[topic].result(10)
    assert (configs["retention.ms"].value, configs["segment.ms"].value) == ("604800000", "60000")


def test_single_broker_replica_apis(minibroker_server, topic_name):
    """ElectLeaders, DescribeLogDirs, AlterReplicaLogDirs and partition reassignments as one broker can
    truthfully answer them."""
    bootstrap = minibroker_server.bootstrap
    create_topic(bootstrap, topic_name, 2)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic_name, b"x" * 100, partition=1)
    producer.flush(10)
    kp = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        response = kp.elect_leaders(0, {topic_name: [0, 1]})
        [(name, results)] = [(r[0], r[1]) for r in response.replica_election_results]
        assert name == topic_name
        assert sorted((p[0], p[1]) for p in results) == [(0, ElectionNotNeededError.errno),
                                                         (1, ElectionNotNeededError.errno)]

        [broker] = kp.describe_log_dirs()
        [log_dir] = broker["log_dirs"]
        assert log_dir["error_code"] == 0
        assert log_dir["log_dir"] == str(minibroker_server.data_dir.resolve())
        sizes = {(t["name"], p["partition_index"]): p["partition_size"]
                 for t in log_dir["topics"] for p in t["partitions"]}
        assert sizes[(topic_name, 0)] == 0 and sizes[(topic_name, 1)] > 100

        tpr = TopicPartitionReplica(topic_name, 0, broker["broker"])
        assert kp.alter_replica_log_dirs({tpr: log_dir["log_dir"]})[tpr].errno == 0
        assert kp.alter_replica_log_dirs({tpr: "/nonexistent"})[tpr].errno == 57  # LOG_DIR_NOT_FOUND

        tp = TopicPartition(topic_name, 0)
        assert kp.alter_partition_reassignments({tp: [broker["broker"]]}) == {tp: None}
        assert kp.list_partition_reassignments() == {}
    finally:
        kp.close()


def test_describe_cluster_and_offset_for_leader_epoch(minibroker, topic_name):
    create_topic(minibroker, topic_name, 1)
    admin = AdminClient({"bootstrap.servers": minibroker})
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert cluster.cluster_id and cluster.controller.id == 0
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(0, "127.0.0.1", int(minibroker.split(":")[1]))]
    assert cluster.authorized_operations  # no authorizer: everything
    producer = Producer({"bootstrap.servers": minibroker})
    for _ in range(3):
        producer.produce(topic_name, b"x", partition=0)
    producer.flush(10)
    with WireClient(minibroker) as c:
        c_topics = [{"topic": topic_name, "partitions": [
            {"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0},
            {"partition": 9, "current_leader_epoch": -1, "leader_epoch": 0}]}]
        resp = c.request(23, 4, {"replica_id": -1, "topics": c_topics})
        [ours, missing] = resp.topics[0].partitions
        assert (ours.error_code, ours.leader_epoch, ours.end_offset) == (0, 0, 3)
        assert missing.error_code == 3


def test_dynamic_broker_configs_take_effect_and_persist(minibroker_server, topic_name):
    bootstrap = minibroker_server.bootstrap
    create_topic(bootstrap, topic_name, 1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    broker = ConfigResource("broker", "0")
    topic = ConfigResource("topic", topic_name)
    configs = admin.describe_configs([broker])[broker].result(10)
    assert not configs["log.retention.ms"].is_read_only and configs["num.partitions"].is_read_only
    advertised = configs["advertised.listeners"]
    assert (advertised.value, advertised.is_read_only, advertised.source) == (None, False,
                                                                              ConfigSource.DEFAULT_CONFIG.value)

    # A cluster-wide default (resource name "", which both admin clients refuse to send: raw requests), then
    # a per-broker value over it: topics without an override follow.
    def alter_default(name: str, value: str) -> Any:
        with WireClient(bootstrap) as c:
            return c.request(44, 1, {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
                {"name": name, "config_operation": 0, "value": value}]}], "validate_only": False}).responses[0]

    assert alter_default("log.retention.ms", "7000").error_code == 0
    assert alter_default("advertised.listeners", "PLAINTEXT://h:1").error_code == 42  # INVALID_REQUEST
    with WireClient(bootstrap) as c:
        described = c.request(32, 4, {"resources": [{"resource_type": 4, "resource_name": "",
                                                     "configuration_keys": None}],
                                      "include_synonyms": False, "include_documentation": False})
    assert [(e.name, e.value) for e in described.results[0].configs] == [("log.retention.ms", "7000")]
    change = ConfigResource("broker", "0", incremental_configs=[
        ConfigEntry("log.retention.ms", "8000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([change])[change].result(10)
    entry = admin.describe_configs([topic])[topic].result(10)["retention.ms"]
    assert entry.value == "8000" and entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    with WireClient(bootstrap) as c:  # confluent-kafka keys synonyms by name: they share one here
        described = c.request(32, 4, {"resources": [{"resource_type": 2, "resource_name": topic_name,
                                                     "configuration_keys": ["retention.ms"]}],
                                      "include_synonyms": True, "include_documentation": False})
    # As Kafka: once log.retention.ms is set somewhere, the chain ends with log.retention.hours' default.
    assert [(s.name, s.value, s.source) for s in described.results[0].configs[0].synonyms] == [
        ("log.retention.ms", "8000", 2), ("log.retention.ms", "7000", 3), ("log.retention.hours", "168", 5)]
    assert minibroker_server.call(
        lambda state: state.topics.get(topic_name).partitions[0].log.config.retention_ms) == 8000

    # advertised.listeners: Metadata tells clients the new address at once.
    port = minibroker_server.port
    change = ConfigResource("broker", "0", incremental_configs=[ConfigEntry(
        "advertised.listeners", f"PLAINTEXT://localhost:{port}", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([change])[change].result(10)
    kp = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert [(b["host"], b["port"]) for b in kp.describe_cluster()["brokers"]] == [("localhost", port)]
    finally:
        kp.close()

    # Refusals: a static-only setting, a bad value.
    for entries in ([("num.partitions", "3")], [("log.retention.ms", "x")]):
        bad = ConfigResource("broker", "0", incremental_configs=[
            ConfigEntry(n, v, incremental_operation=AlterConfigOpType.SET) for n, v in entries])
        with pytest.raises(KafkaException) as failure:
            admin.incremental_alter_configs([bad])[bad].result(10)
        assert failure.value.args[0].name() == "INVALID_REQUEST", entries

    minibroker_server.restart()
    admin = AdminClient({"bootstrap.servers": minibroker_server.bootstrap})
    assert admin.describe_configs([topic])[topic].result(10)["retention.ms"].value == "8000"
    configs = admin.describe_configs([broker])[broker].result(10)
    assert configs["advertised.listeners"].value == f"PLAINTEXT://localhost:{port}"
    assert configs["advertised.listeners"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value


def test_min_insync_replicas_is_a_dynamic_broker_config(minibroker, topic_name):
    # As on Kafka: min.insync.replicas can change at run time (describe and alter), and a topic of one replica
    # takes acks=all writes whatever it is set to (Kafka's effective minimum is at most the replication factor:
    # a Kafka 3.9 broker answered such a write, measured).
    create_topic(minibroker, topic_name, 1)
    admin = AdminClient({"bootstrap.servers": minibroker})
    broker = ConfigResource("broker", "0")
    assert not admin.describe_configs([broker])[broker].result(10)["min.insync.replicas"].is_read_only
    change = ConfigResource("broker", "0", incremental_configs=[
        ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([change])[change].result(10)
    entry = admin.describe_configs([broker])[broker].result(10)["min.insync.replicas"]
    assert (entry.value, entry.source) == ("2", ConfigSource.DYNAMIC_BROKER_CONFIG.value)

    errors: list[str | None] = []
    producer = Producer({"bootstrap.servers": minibroker, "acks": "all", "message.timeout.ms": 10000})
    producer.produce(topic_name, b"x", on_delivery=lambda err, _m: errors.append(err and err.name()))
    producer.flush(30)
    assert errors == [None]
