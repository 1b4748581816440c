"""ACLs enforced on the data path: every client is User:ANONYMOUS; a DENY ACL gets Kafka's error code through
a real client, and deleting it restores access."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from protocol.header import ApiKey
from tests.kafka_wire import WireClient

from .conftest import wait_until
from .group_helpers import create_topic

ANONYMOUS = "User:ANONYMOUS"
CLUSTER = ResourceType.BROKER  # confluent-kafka's name for resource type 4 (CLUSTER in ACLs)


def _acl(rtype: ResourceType, name: str, op: AclOperation, permission: AclPermissionType = AclPermissionType.DENY,
         pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(rtype, name, pattern, ANONYMOUS, "*", op, permission)


def _create(admin: AdminClient, *acls: AclBinding) -> None:
    for future in admin.create_acls(list(acls)).values():
        future.result(10)


def _delete(admin: AdminClient, *acls: AclBinding) -> None:
    filters = [AclBindingFilter(a.restype, a.name, a.resource_pattern_type, a.principal, a.host, a.operation,
                                a.permission_type) for a in acls]
    for future in admin.delete_acls(filters).values():
        assert len(future.result(10)) == 1


def _produce(bootstrap: str, topic: str, **config: object) -> KafkaError | None:
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000, **config})
    outcome: list[KafkaError | None] = []
    producer.produce(topic, b"v", partition=0, on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(15)
    assert outcome, "no delivery report"
    return outcome[0]


def test_produce_needs_write(minibroker, topic_name):
    admin = AdminClient({"bootstrap.servers": minibroker})
    create_topic(minibroker, topic_name, 1)
    # ALLOW ALL and DENY WRITE: DENY wins for WRITE, while DESCRIBE (metadata) stays allowed.
    deny = _acl(ResourceType.TOPIC, topic_name, AclOperation.WRITE)
    _create(admin, _acl(ResourceType.TOPIC, topic_name, AclOperation.ALL, AclPermissionType.ALLOW), deny)
    err = _produce(minibroker, topic_name)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _delete(admin, deny)
    assert _produce(minibroker, topic_name) is None


def test_fetch_needs_read(minibroker, topic_name):
    admin = AdminClient({"bootstrap.servers": minibroker})
    create_topic(minibroker, topic_name, 1)
    assert _produce(minibroker, topic_name) is None
    deny = _acl(ResourceType.TOPIC, topic_name, AclOperation.READ)
    _create(admin, _acl(ResourceType.TOPIC, topic_name, AclOperation.ALL, AclPermissionType.ALLOW), deny)

    def first(consumer: Consumer) -> object:
        return consumer.poll(0.5)

    consumer = Consumer({"bootstrap.servers": minibroker, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic_name, 0, 0)])
        msg = wait_until(lambda: first(consumer), timeout=20, message="fetch error")
        assert msg.error() is not None and msg.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        consumer.close()
    _delete(admin, deny)
    consumer = Consumer({"bootstrap.servers": minibroker, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic_name, 0, 0)])
        msg = wait_until(lambda: first(consumer), timeout=20, message="record")
        assert msg.error() is None and msg.value() == b"v"
    finally:
        consumer.close()


def test_metadata_hides_topics_without_describe(minibroker, topic_name):
    admin = AdminClient({"bootstrap.servers": minibroker})
    create_topic(minibroker, topic_name, 1)
    deny = _acl(ResourceType.TOPIC, topic_name, AclOperation.DESCRIBE)
    _create(admin, deny)
    assert topic_name not in admin.list_topics(timeout=10).topics
    named = admin.list_topics(topic=topic_name, timeout=10).topics[topic_name]
    assert named.error is not None and named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Auto-creation needs CREATE: a prefix denied everything is neither described nor created.
    locked = f"locked-{uuid.uuid4().hex[:8]}"
    deny_prefix = _acl(ResourceType.TOPIC, "locked-", AclOperation.ALL, pattern=ResourcePatternType.PREFIXED)
    _create(admin, deny_prefix)
    with WireClient(minibroker) as c:
        response = c.request(ApiKey.METADATA, 12, {"topics": [{"name": locked, "topic_id": uuid.UUID(int=0)}],
                                                   "allow_auto_topic_creation": True,
                                                   "include_topic_authorized_operations": False})
        assert response.topics[0].error_code == KafkaError.TOPIC_AUTHORIZATION_FAILED
        # The authorized operations of a visible topic, and of the cluster (v10).
        allow_read = _acl(ResourceType.TOPIC, "ops-", AclOperation.READ, AclPermissionType.ALLOW,
                          ResourcePatternType.PREFIXED)
        _create(admin, allow_read)
        create_topic(minibroker, "ops-t", 1)
        response = c.request(ApiKey.METADATA, 10, {"topics": [{"name": "ops-t", "topic_id": uuid.UUID(int=0)}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_cluster_authorized_operations": True,
                                                   "include_topic_authorized_operations": True})
        assert response.topics[0].topic_authorized_operations == (1 << 3) | (1 << 8)  # READ, DESCRIBE implied
        assert response.cluster_authorized_operations == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))  # Kafka's 8096
    assert locked not in admin.list_topics(timeout=10).topics
    _delete(admin, deny, deny_prefix)
    assert topic_name in admin.list_topics(timeout=10).topics
    assert admin.list_topics(topic=locked, timeout=10).topics[locked].error is None  # auto-created now


def test_create_and_delete_topics_need_create_and_delete(minibroker, topic_name):
    admin = AdminClient({"bootstrap.servers": minibroker})
    # CREATE on the cluster allows every topic: deny it there and on the topic, keeping the ACL APIs open.
    deny_cluster = _acl(CLUSTER, "kafka-cluster", AclOperation.CREATE)
    deny_topic = _acl(ResourceType.TOPIC, topic_name, AclOperation.CREATE)
    _create(admin, _acl(CLUSTER, "kafka-cluster", AclOperation.ALL, AclPermissionType.ALLOW), deny_cluster,
            _acl(ResourceType.TOPIC, topic_name, AclOperation.ALL, AclPermissionType.ALLOW), deny_topic)
    with pytest.raises(KafkaException) as info:
        admin.create_topics([NewTopic(topic_name, 1)])[topic_name].result(10)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _delete(admin, deny_cluster, deny_topic)
    admin.create_topics([NewTopic(topic_name, 1)])[topic_name].result(10)

    deny_delete = _acl(ResourceType.TOPIC, topic_name, AclOperation.DELETE)
    _create(admin, deny_delete)
    with pytest.raises(KafkaException) as info:
        admin.delete_topics([topic_name])[topic_name].result(10)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _delete(admin, deny_delete)
    admin.delete_topics([topic_name])[topic_name].result(10)
    wait_until(lambda: topic_name not in admin.list_topics(timeout=10).topics, message="topic deleted")


def test_consumer_group_needs_read(minibroker, topic_name):
    admin = AdminClient({"bootstrap.servers": minibroker})
    create_topic(minibroker, topic_name, 1)
    assert _produce(minibroker, topic_name) is None
    group = f"g-{uuid.uuid4().hex[:8]}"
    deny = _acl(ResourceType.GROUP, group, AclOperation.READ)
    _create(admin, deny)
    consumer = Consumer({"bootstrap.servers": minibroker, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic_name])
        msg = wait_until(lambda: consumer.poll(0.5), timeout=20, message="group error")
        assert msg.error() is not None and msg.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()
    with WireClient(minibroker) as c:
        described = c.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group],
                                                          "include_authorized_operations": True})
        assert described.groups[0].error_code == KafkaError.GROUP_AUTHORIZATION_FAILED
        fetched = c.request(ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}],
                                                     "require_stable": False})
        assert fetched.groups[0].error_code == KafkaError.GROUP_AUTHORIZATION_FAILED
    _delete(admin, deny)
    consumer = Consumer({"bootstrap.servers": minibroker, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic_name])
        msg = wait_until(lambda: consumer.poll(0.5), timeout=30, message="record")
        assert msg.error() is None and msg.value() == b"v"
        consumer.commit(msg, asynchronous=False)
    finally:
        consumer.close()
    # Committed offsets of a topic the client may not describe are left out of an "all topics" fetch.
    deny_topic = _acl(ResourceType.TOPIC, topic_name, AclOperation.DESCRIBE)
    _create(admin, deny_topic)
    with WireClient(minibroker) as c:
        fetched = c.request(ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}],
                                                     "require_stable": False})
        assert fetched.groups[0].error_code == 0 and list(fetched.groups[0].topics) == []
        fetched = c.request(ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": [
            {"name": topic_name, "partition_indexes": [0]}]}], "require_stable": False})
        assert fetched.groups[0].topics[0].partitions[0].error_code == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_transactional_producer_needs_write_on_its_id(minibroker, topic_name):
    admin = AdminClient({"bootstrap.servers": minibroker})
    create_topic(minibroker, topic_name, 1)
    txn_id = f"tx-{uuid.uuid4().hex[:8]}"
    deny = _acl(ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.WRITE)
    _create(admin, _acl(ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.ALL, AclPermissionType.ALLOW),
            deny)
    producer = Producer({"bootstrap.servers": minibroker, "transactional.id": txn_id})
    with pytest.raises(KafkaException) as info:
        producer.init_transactions(15)
    assert info.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    with WireClient(minibroker) as c:
        for key, body in ((ApiKey.END_TXN, {"transactional_id": txn_id, "producer_id": 1, "producer_epoch": 0,
                                            "committed": True}),
                          (ApiKey.ADD_OFFSETS_TO_TXN, {"transactional_id": txn_id, "producer_id": 1,
                                                       "producer_epoch": 0, "group_id": "g"})):
            assert c.request(key, 3, body).error_code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    _delete(admin, deny)
    producer = Producer({"bootstrap.servers": minibroker, "transactional.id": txn_id})
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce(topic_name, b"txn", partition=0)
    producer.commit_transaction(15)


def test_describe_apis_answer_authorization_errors(minibroker, topic_name):
    admin = AdminClient({"bootstrap.servers": minibroker})
    create_topic(minibroker, topic_name, 1)
    txn_id = f"tx-{uuid.uuid4().hex[:8]}"
    _create(admin, _acl(ResourceType.TOPIC, topic_name, AclOperation.ALL),
            _acl(ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.DESCRIBE))
    with WireClient(minibroker) as c:
        offsets = c.request(ApiKey.LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic_name, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                                 "timestamp": -1}]}]})
        assert offsets.topics[0].partitions[0].error_code == KafkaError.TOPIC_AUTHORIZATION_FAILED
        epochs = c.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [
            {"topic": topic_name, "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]})
        assert epochs.topics[0].partitions[0].error_code == KafkaError.TOPIC_AUTHORIZATION_FAILED
        producers = c.request(ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic_name,
                                                                          "partition_indexes": [0]}]})
        assert producers.topics[0].partitions[0].error_code == KafkaError.TOPIC_AUTHORIZATION_FAILED
        configs = c.request(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": 2, "resource_name": topic_name, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
        assert configs.results[0].error_code == KafkaError.TOPIC_AUTHORIZATION_FAILED
        txns = c.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [txn_id]})
        assert txns.transaction_states[0].error_code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        coordinator = c.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [txn_id]})
        assert coordinator.coordinators[0].error_code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
