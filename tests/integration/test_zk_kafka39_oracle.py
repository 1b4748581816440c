"""Kafka 3.9 in ZooKeeper mode as the oracle of zk/: one real Kafka broker (from its jars) on the test
ZooKeeper, in a chroot of its own, for the whole module.

(a) Our decoders read every znode Kafka wrote (a walk of the whole chroot after Kafka created topics, configs,
    SCRAM credentials, ACLs, producer ids and a deletion).
(b) What we write, Kafka accepts: the cluster id, broker ids and controller epoch it finds at startup; a topic
    created by our code (config + assignment znodes) is led by Kafka and usable from a client, with our topic
    id; partitions we add; a broker config change notification; a broker registration (Kafka's Metadata shows
    it); a reassignment and a preferred leader election through the /admin znodes, executed by Kafka's
    controller; a deletion marker.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import trio

from tests import kafka_jars, zk_oracle
from tests.zk_oracle.kafka39 import Kafka39Broker, free_port
from zk import znodes as z
from zk.kafka_zk import KafkaZkClient
from zk.session import NoNodeError, ZkSession

confluent_admin = pytest.importorskip("confluent_kafka.admin")
from confluent_kafka import Consumer, Producer, TopicCollection  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

OUR_CLUSTER_ID = "MiniBrokerZkOracle0001A"[:22]


@dataclass
class Cluster:
    broker: Kafka39Broker
    address: str          # ZooKeeper host:port/chroot
    broker_id: int
    admin: AdminClient

    def zk(self, fn: Callable[[KafkaZkClient], Awaitable[Any]]) -> Any:
        """Run `fn` with a client of our own on Kafka's chroot."""
        async def main() -> Any:
            async with await ZkSession.connect(self.address, timeout=20) as session:
                return await fn(KafkaZkClient(session))
        return trio.run(main)


def _result(futures: dict) -> dict:
    return {k: f.result(120) for k, f in futures.items()}


def _wait(condition: Callable[[], Any], what: str, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


async def _await(condition: Callable[[], Awaitable[Any]], what: str, timeout: float = 60.0) -> Any:
    with trio.move_on_after(timeout):
        while True:
            value = await condition()
            if value:
                return value
            await trio.sleep(0.1)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def _controller_id(admin: AdminClient) -> int | None:
    try:
        return admin.list_topics(timeout=10).controller_id
    except Exception:  # noqa: BLE001 - not reachable yet: asked again
        return None


def _partitions(admin: AdminClient, topic: str) -> dict[int, Any] | None:
    metadata = admin.list_topics(topic, timeout=10).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return None
    return metadata.partitions


@pytest.fixture(scope="module")
def kafka39(zookeeper, tmp_path_factory):
    try:
        zk_oracle.classpath()
    except kafka_jars.Unavailable as exc:
        pytest.skip(f"Kafka 3.9's jars are not available: {exc}")
    address = f"{zookeeper.address}/k39-{uuid.uuid4().hex[:10]}"

    async def before_kafka() -> tuple[list[int], int]:
        # What Kafka must adopt when it starts: the cluster id, the broker id sequence, the controller epoch.
        async with await ZkSession.connect(address, timeout=20) as session:
            zk = KafkaZkClient(session)
            await zk.create_top_level_paths()
            ids = [await zk.generate_broker_id(), await zk.generate_broker_id()]
            assert await zk.create_or_get_cluster_id(OUR_CLUSTER_ID) == OUR_CLUSTER_ID
            _, epoch_version = await zk.register_controller_and_increment_epoch(999)
            await zk.delete_controller(epoch_version)
            return ids, epoch_version

    ids, _ = trio.run(before_kafka)
    assert ids == [1001, 1002]
    broker = Kafka39Broker(address, tmp_path_factory.mktemp("kafka39")).start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        # "started" is logged before the controller has sent the broker its first metadata; until then the
        # Metadata response names no controller (slow on a loaded machine).
        try:
            _wait(lambda: _controller_id(admin) == 1003, "Kafka 3.9 to name its controller", timeout=240)
        except pytest.fail.Exception:
            print(broker.log())  # shown with the failure
            raise
        yield Cluster(broker, address, 1003, admin)
    finally:
        broker.stop()


def test_kafka_adopts_the_ids_and_epoch_we_wrote(kafka39):
    cluster = kafka39.admin.describe_cluster().result(120)
    assert cluster.cluster_id == OUR_CLUSTER_ID
    assert [n.id for n in cluster.nodes] == [kafka39.broker_id]  # 1000 + the third number of /brokers/seqid
    assert cluster.controller.id == kafka39.broker_id

    async def read(zk: KafkaZkClient) -> tuple:
        return await zk.get_controller_epoch(), await zk.get_controller(), await zk.get_broker(kafka39.broker_id)

    (epoch, _), controller, registration = kafka39.zk(read)
    assert epoch == 2  # ours was 1
    assert controller.broker_id == kafka39.broker_id and controller.kraft_controller_epoch == -1
    assert registration.endpoints == (z.Endpoint("PLAINTEXT", "127.0.0.1", kafka39.broker.port, "PLAINTEXT"),)
    assert registration.rack == "rack0" and registration.version == 5 and registration.jmx_port == -1
    assert abs(registration.timestamp / 1000 - time.time()) < 600


def test_our_decoders_read_every_znode_kafka_wrote(kafka39):
    admin = kafka39.admin
    _result(admin.create_topics([NewTopic("k-written", 3, 1, config={"retention.ms": "123456"}),
                                 NewTopic("k-doomed", 1, 1)]))
    _wait(lambda: _partitions(admin, "k-written"), "Kafka's topic")
    _result(admin.incremental_alter_configs([
        ConfigResource(ResourceType.TOPIC, "k-written", incremental_configs=[
            ConfigEntry("segment.ms", "600000", incremental_operation=AlterConfigOpType.SET)]),
        ConfigResource(ResourceType.BROKER, str(kafka39.broker_id), incremental_configs=[
            ConfigEntry("log.cleaner.threads", "2", incremental_operation=AlterConfigOpType.SET)])]))
    _result(admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"pw"),
        UserScramCredentialUpsertion("CN=bob smith", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"x")]))
    _result(admin.create_acls([
        AclBinding(ResourceType.TOPIC, "k-written", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "grp-", ResourcePatternType.PREFIXED, "User:bob", "10.1.2.3",
                   AclOperation.ALL, AclPermissionType.DENY)]))
    producer = Producer({"bootstrap.servers": kafka39.broker.bootstrap, "enable.idempotence": True})
    producer.produce("k-written", b"v", key=b"k")
    assert producer.flush(30) == 0
    _result(admin.delete_topics(["k-doomed"]))

    async def walk(zk: KafkaZkClient) -> dict[str, Any]:
        decoded = {}

        async def visit(path: str) -> None:
            try:
                data, stat = await zk.session.get(path)
                children = await zk.session.get_children(path)
            except NoNodeError:
                return  # went away meanwhile (the deletion)
            decoded[path] = z.decode_any(path, data, stat.version)  # raises on anything unreadable
            for child in sorted(children):
                await visit(f"{path.rstrip('/')}/{child}")

        await visit("/")
        return decoded

    decoded = kafka39.zk(walk)
    by_type: dict[type, int] = {}
    for value in decoded.values():
        by_type[type(value)] = by_type.get(type(value), 0) + 1

    bid = kafka39.broker_id
    assert decoded[f"/brokers/ids/{bid}"].broker_id == bid
    topic = decoded["/brokers/topics/k-written"]
    assert topic.replicas() == {0: (bid,), 1: (bid,), 2: (bid,)} and topic.topic_id is not None
    described = admin.describe_topics(TopicCollection(["k-written"]))["k-written"].result(120)
    kafka_id = described.topic_id
    assert topic.topic_id.int == ((kafka_id.get_most_significant_bits() % 2**64) << 64) \
        | (kafka_id.get_least_significant_bits() % 2**64)
    for p in range(3):
        state = decoded[f"/brokers/topics/k-written/partitions/{p}/state"]
        assert (state.leader, state.isr, state.controller_epoch, state.leader_epoch) == (bid, (bid,), 2, 0)
    assert decoded["/config/topics/k-written"] == {"retention.ms": "123456", "segment.ms": "600000"}
    assert decoded[f"/config/brokers/{bid}"] == {"log.cleaner.threads": "2"}
    alice = z.decode_scram_credential(decoded["/config/users/alice"]["SCRAM-SHA-256"])
    assert alice.iterations == 4096 and len(alice.stored_key) == 32
    bob = z.decode_scram_credential(decoded[f"/config/users/{z.sanitize('CN=bob smith')}"]["SCRAM-SHA-512"])
    assert bob.iterations == 8192 and len(bob.server_key) == 64
    assert z.sanitize("CN=bob smith") == "CN%3Dbob%20smith"
    changes = {v for k, v in decoded.items() if k.startswith("/config/changes/")}
    assert {"topics/k-written", f"brokers/{bid}", "users/alice", "users/CN%3Dbob%20smith"} <= changes
    assert decoded["/kafka-acl/Topic/k-written"] == {z.AclEntry("User:alice", "*", "Read", "Allow")}
    assert decoded["/kafka-acl-extended/prefixed/Group/grp-"] == {z.AclEntry("User:bob", "10.1.2.3", "All", "Deny")}
    assert ("TOPIC", "k-written", "LITERAL") in decoded.values()
    assert ("GROUP", "grp-", "PREFIXED") in decoded.values()
    block = decoded["/latest_producer_id_block"]
    assert (block.broker_id, block.first, block.last) == (bid, 0, 999)
    assert decoded["/feature"] == z.FeatureZNode(z.FeatureStatus.ENABLED, {})
    assert decoded["/controller"].broker_id == bid and decoded["/controller_epoch"] == 2
    assert decoded["/cluster/id"] == OUR_CLUSTER_ID
    assert by_type[z.PartitionState] >= 3
    assert {z.BrokerRegistration, z.TopicAssignment, z.ControllerRegistration, z.FeatureZNode} <= set(by_type)


def test_kafka_serves_a_topic_we_created(kafka39):
    bid = kafka39.broker_id

    async def create(zk: KafkaZkClient) -> uuid.UUID:
        return await zk.create_topic("ours", {0: [bid], 1: [bid]}, {"cleanup.policy": "compact",
                                                                    "max.message.bytes": "12345"})

    topic_id = kafka39.zk(create)
    partitions = _wait(lambda: (p := _partitions(kafka39.admin, "ours")) and len(p) == 2
                       and all(x.leader == bid for x in p.values()) and p, "Kafka to lead our topic's partitions")
    assert sorted(partitions) == [0, 1]
    described = kafka39.admin.describe_topics(TopicCollection(["ours"]))["ours"].result(120)
    kafka_id = described.topic_id
    assert topic_id.int == ((kafka_id.get_most_significant_bits() % 2**64) << 64) \
        | (kafka_id.get_least_significant_bits() % 2**64)
    configs = _result(kafka39.admin.describe_configs([ConfigResource(ResourceType.TOPIC, "ours")]))
    config = next(iter(configs.values()))
    assert config["cleanup.policy"].value == "compact" and config["max.message.bytes"].value == "12345"

    producer = Producer({"bootstrap.servers": kafka39.broker.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce("ours", f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka39.broker.bootstrap, "group.id": "g-ours",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["ours"])
    got = set()
    deadline = time.monotonic() + 60
    while len(got) < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.add(message.value())
    consumer.close()
    assert got == {f"v{i}".encode() for i in range(10)}

    async def states(zk: KafkaZkClient) -> dict:
        return await zk.get_partition_states([("ours", 0), ("ours", 1)])

    # Kafka's controller wrote the partition states, in the format we read.
    assert {tp: (s.leader, s.isr, s.leader_epoch) for tp, s in kafka39.zk(states).items()} == {
        ("ours", 0): (bid, (bid,), 0), ("ours", 1): (bid, (bid,), 0)}

    # Partitions added by our code are created by Kafka's controller too.
    async def grow(zk: KafkaZkClient) -> dict:
        return await zk.add_partitions("ours", 4)

    assert kafka39.zk(grow) == {p: [bid] for p in range(4)}
    _wait(lambda: (p := _partitions(kafka39.admin, "ours")) and len(p) == 4
          and all(x.leader == bid for x in p.values()), "Kafka to lead the added partitions")


def test_kafka_applies_our_config_change_notification(kafka39):
    async def change(zk: KafkaZkClient) -> None:
        await zk.change_entity_config(z.ConfigType.BROKER, z.DEFAULT_ENTITY, {"message.max.bytes": "2000000"})

    kafka39.zk(change)
    resource = ConfigResource(ResourceType.BROKER, str(kafka39.broker_id))

    def applied():
        entry = next(iter(_result(kafka39.admin.describe_configs([resource])).values()))["message.max.bytes"]
        return entry.value == "2000000" and entry

    entry = _wait(applied, "Kafka to apply the broker default we changed")
    assert entry.source == confluent_admin.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value


def test_kafka_executes_our_reassignment_and_preferred_election(kafka39):
    """A second broker registered by our code (nothing listens at its address: Kafka's controller only fails to
    reach it) makes a two-replica topic; the reassignment and preferred-election znodes we write move it."""
    bid = kafka39.broker_id
    other = 7
    admin = kafka39.admin

    async def main() -> None:
        async with await ZkSession.connect(kafka39.address, timeout=20) as fake_session, \
                await ZkSession.connect(kafka39.address, timeout=20) as session:
            zk = KafkaZkClient(session)
            nowhere = z.Endpoint("PLAINTEXT", "127.0.0.1", free_port(), "PLAINTEXT")
            registration = z.BrokerRegistration(other, (nowhere,), rack="rack7", jmx_port=9999)
            await KafkaZkClient(fake_session).register_broker(registration)

            def shows_our_broker():
                nodes = {n.id: n for n in admin.describe_cluster().result(120).nodes}
                return other in nodes and nodes[other]

            node = await trio.to_thread.run_sync(lambda: _wait(shows_our_broker, "our broker in Kafka's Metadata"))
            assert (node.host, node.port, node.rack) == ("127.0.0.1", registration.endpoints[0].port, "rack7")

            await zk.create_topic("moving", {0: [bid, other]})
            state = await _await(lambda: zk.get_partition_state("moving", 0), "Kafka's partition state")
            assert (state.leader, set(state.isr)) == (bid, {bid, other})

            # Reassign: same replicas, the other one first. Kafka's controller rewrites the assignment, bumps
            # the leader epoch and deletes the znode.
            await zk.create_partition_reassignment({("moving", 0): [other, bid]})

            async def reassigned():
                assignment = await zk.get_topic_assignment("moving")
                return not await zk.reassign_partitions_in_progress() and assignment.replicas() == {0: (other, bid)}

            await _await(reassigned, "Kafka's controller to execute our reassignment")
            after = await zk.get_partition_state("moving", 0)
            assert after.leader == bid and after.leader_epoch == state.leader_epoch + 1

            # Preferred election: the preferred replica (now `other`) is live and in sync, so it leads.
            await zk.create_preferred_replica_election([("moving", 0)])

            async def elected():
                s = await zk.get_partition_state("moving", 0)
                gone = not await session.exists(z.PREFERRED_REPLICA_ELECTION)
                return gone and s.leader == other and s

            final = await _await(elected, "Kafka's controller to execute our preferred election")
            assert final.leader_epoch == after.leader_epoch + 1 and final.zk_version > after.zk_version

            # Our broker goes away: Kafka's controller moves leadership back and drops it from the ISR.
            await fake_session.aclose()

            async def failed_over():
                s = await zk.get_partition_state("moving", 0)
                return s.leader == bid and s.isr == (bid,) and s

            await _await(failed_over, "Kafka's controller to fail the partition over")

    trio.run(main)


def test_kafka_deletes_a_topic_we_marked(kafka39):
    _result(kafka39.admin.create_topics([NewTopic("k-marked", 2, 1)]))
    _wait(lambda: _partitions(kafka39.admin, "k-marked"), "Kafka's topic")

    async def mark(zk: KafkaZkClient) -> None:
        await zk.delete_topic("k-marked")

    kafka39.zk(mark)

    async def gone(zk: KafkaZkClient) -> bool:
        return (not await zk.topic_exists("k-marked") and "k-marked" not in await zk.get_topic_deletions()
                and await zk.get_entity_config("topics", "k-marked") == {})

    _wait(lambda: kafka39.zk(gone), "Kafka's controller to delete the topic we marked")
    assert "k-marked" not in kafka39.admin.list_topics(timeout=10).topics


def test_kafkas_authorizer_loads_the_acls_we_wrote(kafka39):
    carol = z.AclEntry("User:carol", "*", "Write", "Allow")
    dave = z.AclEntry("User:dave", "10.0.0.9", "Read", "Deny")

    async def write(zk: KafkaZkClient) -> None:
        for resource_type, name, pattern, entry in (("Topic", "acl-ours", "LITERAL", carol),
                                                    ("Group", "team-", "PREFIXED", dave)):
            _, version = await zk.get_acls(resource_type, name, pattern)
            assert await zk.set_acls(resource_type, name, {entry}, version, pattern) == 0
            await zk.create_acl_change_notification(resource_type, name, pattern)

    kafka39.zk(write)
    from confluent_kafka.admin import AclBindingFilter

    def described():
        found = kafka39.admin.describe_acls(AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
            AclPermissionType.ANY)).result(120)
        return {(b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type)
                for b in found}

    expected = {
        (ResourceType.TOPIC, "acl-ours", ResourcePatternType.LITERAL, "User:carol", "*", AclOperation.WRITE,
         AclPermissionType.ALLOW),
        (ResourceType.GROUP, "team-", ResourcePatternType.PREFIXED, "User:dave", "10.0.0.9", AclOperation.READ,
         AclPermissionType.DENY)}
    _wait(lambda: expected <= described(), "Kafka's authorizer to load our ACLs")
