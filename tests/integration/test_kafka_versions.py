"""--kafka-version profiles with real clients, and the API versions Kafka 4.x added (Produce v13 by topic id,
Fetch 18, DescribeGroups v6, ListTransactions v2, AlterPartitionReassignments v1, DescribeCluster v2)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

from broker.testkit import BrokerThread
from protocol.header import ErrorCode
from protocol.records import Record, build_batch
from tests.kafka_wire import WireClient

PRODUCE, FETCH, METADATA, API_VERSIONS, JOIN_GROUP, OFFSET_COMMIT = 0, 1, 3, 18, 11, 8


@pytest.fixture(params=["3.7", "4.0", "4.1"])
def versioned(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, BrokerThread]]:
    broker = BrokerThread(tmp_path, kafka_version=request.param)
    broker.start()
    try:
        yield request.param, broker
    finally:
        broker.stop()


def test_kafka_python_sees_the_release_and_works(versioned: tuple[str, BrokerThread]) -> None:
    release, broker = versioned
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert admin._client.check_version() == tuple(int(p) for p in release.split("."))
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(5):
        producer.send("kv", b"%d" % i).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer("kv", bootstrap_servers=broker.bootstrap, group_id="kv-kp",
                             auto_offset_reset="earliest", consumer_timeout_ms=20000)
    try:
        got = []
        for message in consumer:
            got.append(message.value)
            if len(got) == 5:
                break
        assert got == [b"%d" % i for i in range(5)]
    finally:
        consumer.close()


def test_librdkafka_produces_and_consumes(versioned: tuple[str, BrokerThread]) -> None:
    _release, broker = versioned
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(5):
        producer.produce("kv-rdk", b"%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "kv-rdk",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["kv-rdk"])
    try:
        got: list[bytes] = []
        for _ in range(300):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value())
            if len(got) == 5:
                break
        assert got == [b"%d" % i for i in range(5)]
    finally:
        consumer.close()


@pytest.mark.minibroker(kafka_version="3.7")
def test_apiversions_v4_on_3_7_gets_the_v0_answer(minibroker: str) -> None:
    with WireClient(minibroker) as wire:
        correlation = wire.send(API_VERSIONS, 4, {"client_software_name": "wire", "client_software_version": "1"})
        answer = wire.receive(API_VERSIONS, 0, correlation)
        assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION
        # Only ApiVersions' own range, as Kafka answers (tests/reference: recorded from Kafka 3.9 and 4.x).
        ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        assert ranges == {API_VERSIONS: (0, 3)}


@pytest.mark.minibroker(kafka_version="4.1")
def test_apiversions_v3_carries_the_release_features(minibroker: str) -> None:
    with WireClient(minibroker) as wire:
        answer = wire.request(API_VERSIONS, 3, {"client_software_name": "wire", "client_software_version": "1"})
    assert answer.error_code == 0
    # Kafka 4.1 finalizes group.version 1 and transaction.version 2 (KIP-848 and TV2 on by default); share.version
    # 1 is minibroker's deliberate addition (a real 4.1 leaves the share group preview off: tests/reference/known.py).
    assert [(f.name, f.max_version_level) for f in answer.finalized_features] == [
        ("metadata.version", 27), ("group.version", 1), ("transaction.version", 2), ("share.version", 1)]


@pytest.mark.minibroker(kafka_version="3.9")
def test_apiversions_of_a_3_x_profile_has_no_features(minibroker: str) -> None:
    # A ZooKeeper-mode broker (every 3.x profile) finalizes no features (KIP-584's features are KRaft's).
    with WireClient(minibroker) as wire:
        answer = wire.request(API_VERSIONS, 3, {"client_software_name": "wire", "client_software_version": "1"})
    assert (answer.supported_features, answer.finalized_features) == ([], [])


@pytest.mark.minibroker(kafka_version="4.0")
def test_offsetcommit_v1_on_4_0_closes_the_connection(minibroker: str) -> None:
    # KIP-896 removed OffsetCommit v0-1 in 4.0 (JoinGroup v0-1 came back in 4.0.1, the 4.0 profile's patch).
    with WireClient(minibroker) as wire:
        wire.send(OFFSET_COMMIT, 1, {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                                     "topics": []})
        with pytest.raises(ConnectionError):
            wire._recv(4)


def _topic_id(wire: WireClient, topic: str) -> uuid.UUID:
    wire.create_topic(topic)
    meta = wire.request(METADATA, 12, {"topics": [{"topic_id": uuid.UUID(int=0), "name": topic}],
                                       "allow_auto_topic_creation": False,
                                       "include_topic_authorized_operations": False})
    return meta.topics[0].topic_id


@pytest.mark.minibroker(kafka_version="4.1")
def test_produce_v13_names_topics_by_id(minibroker: str) -> None:
    with WireClient(minibroker) as wire:
        topic_id = _topic_id(wire, "by-id")
        batch = build_batch([Record(0, 0, None, b"by id")], base_timestamp=0)
        unknown = uuid.uuid4()
        resp = wire.request(PRODUCE, 13, {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"topic_id": topic_id, "partition_data": [{"index": 0, "records": batch}]},
            {"topic_id": unknown, "partition_data": [{"index": 0, "records": batch}]}]})
        known, missing = resp.responses
        assert known.topic_id == topic_id
        assert (known.partition_responses[0].error_code, known.partition_responses[0].base_offset) == (0, 0)
        assert missing.topic_id == unknown
        assert missing.partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        wanted = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
        fetched = wire.request(FETCH, 18, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0,
                                           "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
                                           "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                                           "topics": [{"topic_id": topic_id, "partitions": [wanted]}]})
        partition = fetched.responses[0].partitions[0]
        assert partition.error_code == 0 and partition.high_watermark == 1
        assert b"by id" in bytes(partition.records)


@pytest.mark.minibroker(kafka_version="4.1")
def test_describe_groups_v6_reports_an_unknown_group(minibroker: str) -> None:
    with WireClient(minibroker) as wire:
        body = {"groups": ["nobody"], "include_authorized_operations": False}
        deadline = time.monotonic() + 30
        while (old := wire.request(15, 5, body).groups[0]).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            assert time.monotonic() < deadline, "group coordinator never loaded"
            time.sleep(0.05)
        new = wire.request(15, 6, body).groups[0]
    assert (old.error_code, old.group_state) == (0, "Dead")
    assert (new.error_code, new.group_state) == (ErrorCode.GROUP_ID_NOT_FOUND, "Dead")
    assert new.error_message == "Group nobody not found."


@pytest.mark.minibroker(kafka_version="4.1")
def test_list_transactions_v2_filters_by_pattern(minibroker: str) -> None:
    with WireClient(minibroker) as wire:
        for txn_id in ("orders-1", "orders-2", "payments-1"):
            resp = wire.request(22, 4, {"transactional_id": txn_id, "transaction_timeout_ms": 60000,
                                        "producer_id": -1, "producer_epoch": -1})
            assert resp.error_code == 0
        body = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
        listed = wire.request(66, 2, dict(body, transactional_id_pattern="orders-.*"))
        assert sorted(t.transactional_id for t in listed.transaction_states) == ["orders-1", "orders-2"]
        # The whole id must match (Java's Matcher.matches), not a part of it.
        assert wire.request(66, 2, dict(body, transactional_id_pattern="orders")).transaction_states == []
        assert len(wire.request(66, 2, dict(body, transactional_id_pattern=None)).transaction_states) == 3
        bad = wire.request(66, 2, dict(body, transactional_id_pattern="orders-("))
        assert bad.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION


@pytest.mark.minibroker(kafka_version="4.1")
def test_alter_partition_reassignments_v1_can_forbid_a_replication_factor_change(minibroker: str) -> None:
    with WireClient(minibroker) as wire:
        wire.create_topic("rf")
        body = {"timeout_ms": 30000, "topics": [{"name": "rf", "partitions": [
            {"partition_index": 0, "replicas": [0, 1]}]}]}
        forbidden = wire.request(45, 1, dict(body, allow_replication_factor_change=False))
        allowed = wire.request(45, 1, dict(body, allow_replication_factor_change=True))
    assert forbidden.responses[0].partitions[0].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert allowed.responses[0].partitions[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


@pytest.mark.minibroker(kafka_version="4.1")
def test_describe_cluster_v2(minibroker: str) -> None:
    with WireClient(minibroker) as wire:
        resp = wire.request(60, 2, {"include_cluster_authorized_operations": False, "endpoint_type": 1,
                                    "include_fenced_brokers": True})
    assert resp.error_code == 0
    assert [(b.broker_id, b.is_fenced) for b in resp.brokers] == [(0, False)]


def _topic_partitions(wire: WireClient, names: list[str], limit: int, cursor: dict | None = None) -> Any:
    return wire.request(75, 0, {"topics": [{"name": n} for n in names], "response_partition_limit": limit,
                                "cursor": cursor})


@pytest.mark.minibroker(kafka_version="4.1")
def test_describe_topic_partitions_pages_through_partitions(minibroker: str) -> None:
    with WireClient(minibroker) as wire:
        wire.create_topic("dtp-a", partitions=3)
        wire.create_topic("dtp-b", partitions=2)
        first = _topic_partitions(wire, ["dtp-b", "dtp-a", "dtp-missing"], 2)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in first.topics] == [("dtp-a", [0, 1])]
        assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("dtp-a", 2)
        second = _topic_partitions(wire, ["dtp-b", "dtp-a", "dtp-missing"], 10,
                                   {"topic_name": "dtp-a", "partition_index": 2})
        assert [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in second.topics] == [
            ("dtp-a", 0, [2]), ("dtp-b", 0, [0, 1]), ("dtp-missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
        assert second.next_cursor is None
        partition = second.topics[1].partitions[0]
        assert (partition.leader_id, list(partition.replica_nodes), list(partition.isr_nodes)) == (0, [0], [0])
        # The cursor's topic must be among the topics named.
        bad = _topic_partitions(wire, ["dtp-b"], 10, {"topic_name": "dtp-a", "partition_index": 0})
        assert [t.error_code for t in bad.topics] == [ErrorCode.INVALID_REQUEST]
        # No topics named: all of them, in name order.
        every = _topic_partitions(wire, [], 100)
        assert [t.name for t in every.topics][:2] == ["dtp-a", "dtp-b"]


@pytest.mark.minibroker(kafka_version="4.1")
def test_kafka_python_admin_on_4_1(minibroker: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=minibroker)
    try:
        with WireClient(minibroker) as wire:
            wire.create_topic("admin41", partitions=4)
        described = admin.describe_topic_partitions(["admin41"])
        assert [len(t["partitions"]) for t in described["topics"]] == [4]
        resources = admin.list_config_resources()
        assert "broker" in resources
    finally:
        admin.close()


@pytest.mark.minibroker(kafka_version="4.1")
def test_list_config_resources(minibroker: str) -> None:
    with WireClient(minibroker) as wire:
        wire.create_topic("configured")
        v1 = wire.request(74, 1, {"resource_types": []})
        listed = {(r.resource_type, r.resource_name) for r in v1.config_resources}
        assert {(2, "configured"), (4, "0")} <= listed
        topics_only = wire.request(74, 1, {"resource_types": [2]})
        assert {r.resource_type for r in topics_only.config_resources} == {2}
        assert wire.request(74, 1, {"resource_types": [99]}).error_code == ErrorCode.INVALID_REQUEST
        v0 = wire.request(74, 0, {})
        assert (v0.error_code, list(v0.config_resources)) == (0, [])


@pytest.mark.parametrize(("release", "error"), [
    pytest.param("3.9", ErrorCode.INVALID_REQUEST, marks=pytest.mark.minibroker(kafka_version="3.9")),
    pytest.param("4.1", ErrorCode.NONE, marks=pytest.mark.minibroker(kafka_version="4.1")),
])
def test_group_configs_come_with_the_4_x_profiles(release: str, error: ErrorCode, minibroker: str) -> None:
    # Group configs (KIP-848/KIP-932) are KRaft's: Kafka 3.9 in ZooKeeper mode refuses the resource type, Kafka 4
    # alters and describes it (librdkafka's 0081-admin expects exactly this split).
    incremental_alter_configs, describe_configs, group = 44, 32, 32
    with WireClient(minibroker) as wire:
        altered = wire.request(incremental_alter_configs, 1, {"validate_only": False, "resources": [{
            "resource_type": group, "resource_name": "my-group", "configs": [
                {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}]}]})
        described = wire.request(describe_configs, 4, {"resources": [{
            "resource_type": group, "resource_name": "my-group", "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
    assert altered.responses[0].error_code == error
    assert described.results[0].error_code == error
    if error == ErrorCode.NONE:
        assert {c.name: c.value for c in described.results[0].configs}["consumer.session.timeout.ms"] == "50000"
