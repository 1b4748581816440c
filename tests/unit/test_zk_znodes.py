"""zk/znodes.py: Kafka's znode JSON, encoded and decoded (the samples are the formats documented in Kafka's
ZkData.scala; what a real Kafka 3.9 writes is read in tests/integration/test_zk_kafka39_oracle.py)."""

from __future__ import annotations

import json
import uuid

import pytest

from zk import znodes as z
from zk.znodes import (
    AclEntry,
    BrokerRegistration,
    ControllerRegistration,
    Endpoint,
    FeatureStatus,
    FeatureZNode,
    LeaderRecoveryState,
    PartitionState,
    ReplicaAssignment,
    ScramCredential,
    TopicAssignment,
)


def test_broker_registration_v5_round_trip():
    reg = BrokerRegistration(3, (Endpoint("PLAINTEXT", "10.0.0.3", 9092, "PLAINTEXT"),
                                 Endpoint("INTERNAL", "::1", 9093, "SASL_SSL")),
                             rack="eu-1a", features={"metadata.version": (1, 21)}, timestamp=1700000000000)
    obj = json.loads(z.encode_broker(reg))
    assert obj == {"version": 5, "host": "10.0.0.3", "port": 9092, "jmx_port": -1, "timestamp": "1700000000000",
                   "endpoints": ["PLAINTEXT://10.0.0.3:9092", "INTERNAL://[::1]:9093"], "rack": "eu-1a",
                   "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "INTERNAL": "SASL_SSL"},
                   "features": {"metadata.version": {"min_version": 1, "max_version": 21}}}
    assert z.decode_broker(3, z.encode_broker(reg)) == reg


def test_broker_registration_older_versions():
    v1 = b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    assert z.decode_broker(0, v1).endpoints == (Endpoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT"),)
    v3 = (b'{"version":3,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
          b'"endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"],"rack":"dc1"}')
    reg = z.decode_broker(1, v3)
    assert reg.rack == "dc1" and reg.endpoint("ssl") == Endpoint("SSL", "host1", 9093, "SSL")
    # No host: a listener on every interface; no PLAINTEXT listener: host null and port -1 at the top.
    reg = BrokerRegistration(2, (Endpoint("SSL", None, 9093, "SSL"),))
    obj = json.loads(z.encode_broker(reg))
    assert obj["endpoints"] == ["SSL://:9093"] and obj["host"] is None and obj["port"] == -1
    assert z.decode_broker(2, z.encode_broker(reg)).endpoints == reg.endpoints
    with pytest.raises(ValueError, match="no security protocol"):
        z.decode_broker(1, b'{"version":4,"jmx_port":-1,"endpoints":["CLIENT://h:1"],'
                           b'"listener_security_protocol_map":{"OTHER":"SSL"}}')
    with pytest.raises(ValueError):
        z.decode_broker(1, b"not json")


def test_topic_assignment_v3():
    topic_id = uuid.UUID("6f2fa7c5-0c4f-4c9b-9e5c-4d1b0d2e1c11")
    assignment = TopicAssignment(topic_id, {0: ReplicaAssignment((1, 2, 3)),
                                            1: ReplicaAssignment((2, 3, 4), adding=(4,), removing=(1,))})
    obj = json.loads(z.encode_topic(assignment))
    assert obj == {"version": 3, "topic_id": z.uuid_to_str(topic_id), "partitions": {"0": [1, 2, 3], "1": [2, 3, 4]},
                   "adding_replicas": {"1": [4]}, "removing_replicas": {"1": [1]}}
    assert z.decode_topic("t", z.encode_topic(assignment)) == assignment
    # Kafka 2.x wrote no topic id and no adding/removing maps.
    old = z.decode_topic("t", b'{"version":1,"partitions":{"0":[1],"1":[2]}}')
    assert old.topic_id is None and old.replicas() == {0: (1,), 1: (2,)}


def test_replica_assignment_during_reassignment():
    a = ReplicaAssignment.from_origin_and_target([1, 2, 3], [3, 4, 5])
    assert a == ReplicaAssignment((3, 4, 5, 1, 2), adding=(4, 5), removing=(1, 2))
    assert a.target_replicas == (3, 4, 5) and a.origin_replicas == (3, 1, 2) and a.is_being_reassigned


def test_kafka_uuid_text():
    assert z.uuid_to_str(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    value = z.random_uuid()
    assert len(z.uuid_to_str(value)) == 22 and z.uuid_from_str(z.uuid_to_str(value)) == value
    assert not z.uuid_to_str(value).startswith("-")
    with pytest.raises(ValueError):
        z.uuid_from_str("short")


def test_partition_state():
    state = PartitionState(1, 4, (1, 2), 7)
    assert json.loads(z.encode_partition_state(state)) == {"controller_epoch": 7, "leader": 1, "version": 1,
                                                           "leader_epoch": 4, "isr": [1, 2]}
    recovering = state.new_recovering_leader_and_isr(3, [3])
    assert json.loads(z.encode_partition_state(recovering))["leader_recovery_state"] == 1
    assert z.decode_partition_state(z.encode_partition_state(recovering), 5) == PartitionState(
        3, 5, (3,), 7, LeaderRecoveryState.RECOVERING, zk_version=5)
    with pytest.raises(ValueError):
        z.decode_partition_state(b'{"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1,'
                                 b'"leader_recovery_state":7}')
    with pytest.raises(ValueError):
        z.decode_partition_state(b'{"leader":1,"isr":[1],"controller_epoch":1}')


def test_controller_epoch_cluster_id():
    data = z.encode_controller(ControllerRegistration(2, 1700000000000))
    assert json.loads(data) == {"version": 2, "brokerid": 2, "timestamp": "1700000000000", "kraftControllerEpoch": -1}
    assert z.decode_controller(data) == ControllerRegistration(2, 1700000000000)
    assert z.decode_controller(b'{"version":1,"brokerid":0,"timestamp":"1"}').broker_id == 0
    assert z.encode_controller_epoch(12) == b"12" and z.decode_controller_epoch(b"12") == 12
    assert json.loads(z.encode_cluster_id("abc")) == {"version": "1", "id": "abc"}
    assert z.decode_cluster_id(z.encode_cluster_id("abc")) == "abc"


def test_configs_and_notifications():
    assert json.loads(z.encode_config({"retention.ms": "10"})) == {"version": 1, "config": {"retention.ms": "10"}}
    assert z.decode_config(z.encode_config({"a": "b"})) == {"a": "b"}
    assert z.decode_config(b"") == {} and z.decode_config(None) == {}
    assert json.loads(z.encode_config_change("topics/t")) == {"version": 2, "entity_path": "topics/t"}
    assert z.decode_config_change(b'{"version":1,"entity_type":"topics","entity_name":"t"}') == "topics/t"
    with pytest.raises(ValueError):
        z.decode_config_change(b'{"version":3}')


def test_admin_znodes():
    data = z.encode_reassignment({("t", 1): [3, 1], ("t", 0): [1, 2]})
    assert json.loads(data) == {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]},
                                                             {"topic": "t", "partition": 1, "replicas": [3, 1]}]}
    assert z.decode_reassignment(data) == {("t", 0): (1, 2), ("t", 1): (3, 1)}
    data = z.encode_preferred_replica_election({("t", 0)})
    assert json.loads(data) == {"version": 1, "partitions": [{"topic": "t", "partition": 0}]}
    assert z.decode_preferred_replica_election(data) == {("t", 0)}
    assert z.decode_isr_change(z.encode_isr_change([("a", 1)])) == {("a", 1)}
    assert z.decode_log_dir_event(z.encode_log_dir_event(4)) == 4


def test_feature_znode():
    v2 = FeatureZNode(FeatureStatus.ENABLED, {"metadata.version": 21})
    assert json.loads(z.encode_feature(v2)) == {"version": 2, "status": 1,
                                                "features": {"metadata.version": {"max_version_level": 21}}}
    assert z.decode_feature(z.encode_feature(v2)) == v2
    v1 = FeatureZNode(FeatureStatus.DISABLED, {"f": 2}, version=1)
    assert z.decode_feature(z.encode_feature(v1)) == v1
    for bad in (b'{"version":3,"status":1,"features":{}}', b'{"version":2,"features":{}}',
                b'{"version":2,"status":1}', b'{"version":1,"status":1,"features":{"f":{"max_version_level":1}}}'):
        with pytest.raises(ValueError):
            z.decode_feature(bad)


def test_sanitized_names_and_scram_credentials():
    assert z.sanitize("User:alice") == "User%3Aalice"
    assert z.sanitize("a b*c~é") == "a%20b%2Ac%7E%C3%A9"
    assert z.sanitize("plain-name_1.x") == "plain-name_1.x"
    for name in ("CN=alice smith,O=x", "a+b", "<default>", "ü*"):
        assert z.desanitize(z.sanitize(name)) == name
    cred = ScramCredential(b"salt", b"stored", b"server", 4096)
    text = z.encode_scram_credential(cred)
    assert text == "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"
    assert z.decode_scram_credential(text) == cred
    with pytest.raises(ValueError):
        z.decode_scram_credential("salt=x,iterations=1")


def test_acls():
    acls = {AclEntry("User:alice", "*", "Read", "Allow"), AclEntry("User:bob", "10.0.0.1", "Write", "Deny")}
    assert z.decode_acls(z.encode_acls(acls)) == acls
    assert z.acl_path("Topic", "orders") == "/kafka-acl/Topic/orders"
    assert z.acl_path("Group", "g", "PREFIXED") == "/kafka-acl-extended/prefixed/Group/g"
    assert z.encode_acl_change("Topic", "orders") == b"TOPIC:orders"
    assert z.decode_acl_change(b"Topic:orders", extended=False) == ("Topic", "orders", "LITERAL")
    assert z.decode_acl_change(z.encode_acl_change("Topic", "o", "PREFIXED"), extended=True) == \
        ("TOPIC", "o", "PREFIXED")


def test_decode_any_by_path():
    assert z.decode_any("/brokers/topics/t/partitions/0/state",
                        z.encode_partition_state(PartitionState(1, 0, (1,), 1)), 3).zk_version == 3
    assert z.decode_any("/brokers/ids", b"") is None
    assert z.decode_any("/config/changes/config_change_0000000001", z.encode_config_change("topics/t")) == "topics/t"
    assert z.decode_any("/latest_producer_id_block", b"") is None
    with pytest.raises(ValueError, match="not a znode Kafka uses"):
        z.decode_any("/unknown/thing", b"")
