"""ACLs telling authenticated principals apart (Kafka's secured setup: allow.everyone.if.no.acl.found=false,
an admin super user): produce, consume, consumer groups and transactions allowed to one principal and refused
to another; the cluster-level checks of the replica and broker-to-broker APIs."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.kafka_wire import WireClient

USERS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw"}
SECURED = pytest.mark.minibroker(security="SASL_PLAINTEXT", users=USERS, super_users="User:admin",
                                 allow_everyone_if_no_acl_found=False)


def allow(rtype: ResourceType, name: str, principal: str, op: AclOperation) -> AclBinding:
    return AclBinding(rtype, name, ResourcePatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW)


def setup_acls(broker, topic: str, group: str, txn: str) -> None:  # noqa: ANN001
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, **broker.confluent("admin")})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    bindings = [allow(ResourceType.TOPIC, topic, "User:alice", AclOperation.WRITE),
                allow(ResourceType.TRANSACTIONAL_ID, txn, "User:alice", AclOperation.WRITE),
                allow(ResourceType.TOPIC, topic, "User:bob", AclOperation.READ),
                allow(ResourceType.GROUP, group, "User:bob", AclOperation.READ)]
    for future in admin.create_acls(bindings).values():
        future.result(30)


def produce(broker, user: str, topic: str, **conf) -> KafkaError | None:  # noqa: ANN001
    reports: list = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 10_000,
                         **broker.confluent(user), **conf})
    producer.produce(topic, b"from " + user.encode(), on_delivery=lambda err, msg: reports.append(err))
    producer.flush(20)
    return reports[0] if reports else KafkaError(KafkaError._MSG_TIMED_OUT)


def consume(broker, user: str, topic: str, group: str) -> bytes | KafkaError:  # noqa: ANN001
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         **broker.confluent(user)})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                return msg.error()
            return msg.value()
        raise AssertionError("neither a message nor an error")
    finally:
        consumer.close()


@SECURED
def test_produce_and_consume_tell_principals_apart(minibroker_server) -> None:
    topic, group, txn = f"orders-{uuid.uuid4().hex[:6]}", "billing", "tx-alice"
    setup_acls(minibroker_server, topic, group, txn)
    assert produce(minibroker_server, "alice", topic, **{"enable.idempotence": False}) is None
    denied = produce(minibroker_server, "bob", topic, **{"enable.idempotence": False})
    assert denied is not None and denied.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert consume(minibroker_server, "bob", topic, group) == b"from alice"
    refused = consume(minibroker_server, "alice", topic, group)
    assert isinstance(refused, KafkaError) and refused.code() in (KafkaError.GROUP_AUTHORIZATION_FAILED,
                                                                  KafkaError.TOPIC_AUTHORIZATION_FAILED)
    bob_group = consume(minibroker_server, "bob", topic, "not-bobs-group")
    assert isinstance(bob_group, KafkaError) and bob_group.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


@SECURED
def test_transactions_tell_principals_apart(minibroker_server) -> None:
    topic, txn = f"orders-{uuid.uuid4().hex[:6]}", "tx-alice"
    setup_acls(minibroker_server, topic, "billing", txn)
    producer = Producer({"bootstrap.servers": minibroker_server.bootstrap, "transactional.id": txn,
                         **minibroker_server.confluent("alice")})
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce(topic, b"in a transaction")
    producer.commit_transaction(20)
    intruder = Producer({"bootstrap.servers": minibroker_server.bootstrap, "transactional.id": txn,
                         **minibroker_server.confluent("bob")})
    with pytest.raises(KafkaException) as refused:
        intruder.init_transactions(20)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


CLUSTER_AUTHORIZATION_FAILED = 31


@SECURED
def test_cluster_checks_of_replica_and_broker_apis(minibroker_server) -> None:
    """ElectLeaders, AlterReplicaLogDirs, AlterPartitionReassignments: ALTER on the cluster; DescribeLogDirs and
    ListPartitionReassignments: DESCRIBE; WriteTxnMarkers: CLUSTER_ACTION (or ALTER). Refused to alice, allowed
    to the super user."""
    topic = f"t-{uuid.uuid4().hex[:6]}"
    setup_acls(minibroker_server, topic, "g", "tx")
    requests = [
        (43, 2, {"election_type": 0, "topic_partitions": [{"topic": topic, "partitions": [0]}], "timeout_ms": 1000},
         lambda r: [r.error_code] + [p.error_code for t in r.replica_election_results for p in t.partition_result]),
        (35, 4, {"topics": None}, lambda r: [r.error_code]),
        (34, 2, {"dirs": [{"path": "/nowhere", "topics": [{"name": topic, "partitions": [0]}]}]},
         lambda r: [p.error_code for t in r.results for p in t.partitions]),
        (45, 0, {"timeout_ms": 1000, "topics": [{"name": topic, "partitions": [{"partition_index": 0,
                                                                                "replicas": [0]}]}]},
         lambda r: [r.error_code] + [p.error_code for t in r.responses for p in t.partitions]),
        (46, 0, {"timeout_ms": 1000, "topics": None}, lambda r: [r.error_code]),
        (27, 1, {"markers": [{"producer_id": 1, "producer_epoch": 0, "transaction_result": False,
                              "topics": [{"name": topic, "partition_indexes": [0]}], "coordinator_epoch": 0}]},
         lambda r: [p.error_code for m in r.markers for t in m.topics for p in t.partitions]),
    ]
    with WireClient(minibroker_server.bootstrap) as alice, WireClient(minibroker_server.bootstrap) as admin:
        assert alice.sasl_plain("alice", "alice-pw").error_code == 0
        assert admin.sasl_plain("admin", "admin-pw").error_code == 0
        for api_key, version, body, errors in requests:
            assert set(errors(alice.request(api_key, version, body))) == {CLUSTER_AUTHORIZATION_FAILED}, api_key
            assert CLUSTER_AUTHORIZATION_FAILED not in errors(admin.request(api_key, version, body)), api_key
