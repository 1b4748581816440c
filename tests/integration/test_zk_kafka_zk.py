"""zk.kafka_zk against a real ZooKeeper: what a Kafka broker and controller do there (registration, ids,
controller election and epoch fencing, topics, partition states with conditional updates, markers, configs)."""

from __future__ import annotations

import json
import math
import uuid

import pytest
import trio

from zk import znodes as z
from zk.errors import (
    BrokerIdAlreadyRegisteredError,
    ControllerMovedError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from zk.kafka_zk import KafkaZkClient, RackAwareMode
from zk.replica_assignment import BrokerMetadata
from zk.session import NodeExistsError, WatchEvent, WatchKind, ZkSession
from zk.znodes import BrokerRegistration, Endpoint, PartitionState


@pytest.fixture
def zk_address(zookeeper) -> str:
    return f"{zookeeper.address}/t-{uuid.uuid4().hex[:12]}"


def _registration(broker_id: int, port: int = 9092, rack: str | None = None) -> BrokerRegistration:
    return BrokerRegistration(broker_id, (Endpoint("PLAINTEXT", "127.0.0.1", port, "PLAINTEXT"),
                                          Endpoint("INTERNAL", "127.0.0.1", port + 1, "SSL")), rack=rack)


async def _client(address: str, **kw) -> KafkaZkClient:
    return KafkaZkClient(await ZkSession.connect(address, timeout=10, **kw))


def test_broker_registration_ids_and_cluster_id(zk_address):
    async def main():
        one, two = await _client(zk_address), await _client(zk_address)
        try:
            await one.create_top_level_paths()
            assert await one.get_cluster_id() is None
            assert await one.create_or_get_cluster_id("AAAAAAAAAAAAAAAAAAAAAA") == "AAAAAAAAAAAAAAAAAAAAAA"
            assert await two.create_or_get_cluster_id("BBBBBBBBBBBBBBBBBBBBBB") == "AAAAAAAAAAAAAAAAAAAAAA"
            data, _ = await one.session.get(z.CLUSTER_ID)
            assert json.loads(data) == {"version": "1", "id": "AAAAAAAAAAAAAAAAAAAAAA"}

            assert [await one.generate_broker_id(), await two.generate_broker_id(), await one.generate_broker_id()] \
                == [1001, 1002, 1003]

            epoch = await one.register_broker(_registration(1, rack="r1"))
            assert epoch > 0
            # A retried registration by the same session is fine; another session's is refused clearly.
            assert await one.register_broker(_registration(1, rack="r1")) == epoch
            with pytest.raises(BrokerIdAlreadyRegisteredError, match="broker id 1 is already registered"):
                await two.register_broker(_registration(1, 9192))
            epoch2 = await two.register_broker(_registration(2, 9192, rack="r2"))
            assert epoch2 > epoch
            brokers = await two.get_all_brokers_and_epochs()
            assert {i: e for i, (_, e) in brokers.items()} == {1: epoch, 2: epoch2}
            assert brokers[1][0].endpoints == _registration(1).endpoints and brokers[1][0].rack == "r1"
            _, stat = await one.session.get(z.broker_path(1))
            assert stat.version == 1 and stat.ephemeralOwner == one.session.session_id  # as Kafka's: create + set
            assert await one.get_broker_metadatas() == [BrokerMetadata(1, "r1"), BrokerMetadata(2, "r2")]

            watch_send, watch = trio.open_memory_channel(math.inf)
            assert await one.get_sorted_broker_list(watch=watch_send) == [1, 2]
            await two.session.aclose()  # broker 2 goes away: its registration with it
            with trio.fail_after(30):
                assert await watch.receive() == WatchEvent(WatchKind.CHILD, z.BROKER_IDS)
            assert await one.get_sorted_broker_list() == [1]
        finally:
            await one.session.aclose()
            await two.session.aclose()

    trio.run(main)


def test_controller_election_and_epoch_fencing(zk_address):
    async def main():
        a, b = await _client(zk_address), await _client(zk_address)
        try:
            assert await a.get_controller_epoch() is None
            epoch, version = await a.register_controller_and_increment_epoch(1)
            assert (epoch, version) == (1, 1)
            assert await b.get_controller_id() == 1
            with pytest.raises(ControllerMovedError):
                await b.register_controller_and_increment_epoch(2)
            # The elected controller writes fenced by its epoch's zkVersion.
            await a.create_preferred_replica_election([("t", 0)])
            await a.delete_preferred_replica_election(version)
            assert await a.get_preferred_replica_election() == set()

            watch_send, watch = trio.open_memory_channel(math.inf)
            assert await b.get_controller_id(watch=watch_send) == 1
            await a.session.aclose()  # controller 1 dies
            with trio.fail_after(30):
                assert (await watch.receive()).kind == WatchKind.DELETED
            epoch2, version2 = await b.register_controller_and_increment_epoch(2)
            assert (epoch2, version2) == (2, 2)
            data, _ = await b.session.get(z.CONTROLLER)
            assert json.loads(data)["brokerid"] == 2 and json.loads(data)["version"] == 2
            assert (await b.session.get(z.CONTROLLER_EPOCH))[0] == b"2"

            # A write fenced with the old controller's epoch version is refused and changes nothing.
            await b.create_preferred_replica_election([("t", 1)])
            with pytest.raises(ControllerMovedError):
                await b.delete_preferred_replica_election(version)
            assert await b.get_preferred_replica_election() == {("t", 1)}
            with pytest.raises(ControllerMovedError):
                await b.create_partition_states({("t", 0): PartitionState(2, 0, (2,), 1)}, version)
            assert await b.get_partition_states([("t", 0)]) == {}
        finally:
            await a.session.aclose()
            await b.session.aclose()

    trio.run(main)


def test_topics_partition_states_and_conditional_updates(zk_address):
    async def main():
        zk = await _client(zk_address)
        try:
            await zk.create_top_level_paths()
            for i, rack in ((1, "a"), (2, "b"), (3, "a")):
                await zk.register_broker(_registration(i, 9000 + 10 * i, rack))
            epoch, epoch_version = await zk.register_controller_and_increment_epoch(1)

            topic_id = await zk.create_topic("orders", {0: [1, 2], 1: [2, 3]}, {"cleanup.policy": "compact"})
            with pytest.raises(TopicExistsError):
                await zk.create_topic("orders", {0: [1]})
            with pytest.raises(InvalidTopicError):
                await zk.create_topic("bad/name", {0: [1]})
            with pytest.raises(InvalidReplicaAssignmentError):
                await zk.create_topic("uneven", {0: [1, 2], 1: [3]})
            await zk.create_topic("a.b", {0: [1]})
            with pytest.raises(InvalidTopicError, match="collides"):
                await zk.create_topic("a_b", {0: [1]})
            assert await zk.get_all_topics() == {"orders", "a.b"}
            assignment = await zk.get_topic_assignment("orders")
            assert assignment.topic_id == topic_id and assignment.replicas() == {0: (1, 2), 1: (2, 3)}
            assert await zk.get_entity_config("topics", "orders") == {"cleanup.policy": "compact"}

            _, assigned = await zk.create_topic_auto_assigned("auto", 6, 2, start_index=0, replica_shift=0)
            assert set(assigned) == set(range(6)) and all(len(set(r)) == 2 for r in assigned.values())
            with pytest.raises(Exception, match="Not all brokers have rack"):
                await zk.register_broker(_registration(4, 9100))
                await zk.create_topic_auto_assigned("norack", 1, 1)
            assert (await zk.get_broker_metadatas(RackAwareMode.SAFE))[0].rack is None
            await zk.session.delete(z.broker_path(4))

            # Partition growth keeps the topic id and the existing replicas.
            grown = await zk.add_partitions("orders", 4)
            assert grown[0] == [1, 2] and grown[1] == [2, 3] and len(grown) == 4
            assert (await zk.get_topic_assignment("orders")).topic_id == topic_id

            created = await zk.create_partition_states({("orders", 0): PartitionState(1, 0, (1, 2), epoch),
                                                        ("orders", 1): PartitionState(2, 0, (2, 3), epoch)},
                                                       epoch_version)
            assert all(s.zk_version == 0 for s in created.values())
            again = await zk.create_partition_states({("orders", 0): PartitionState(1, 0, (1, 2), epoch)},
                                                     epoch_version)
            assert isinstance(again[("orders", 0)], NodeExistsError)
            states = await zk.get_partition_states([("orders", 0), ("orders", 1), ("orders", 9)])
            assert set(states) == {("orders", 0), ("orders", 1)}
            assert json.loads((await zk.session.get(z.partition_state_path("orders", 0)))[0]) == {
                "controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1, 2]}

            # A leader shrinking the ISR (a direct conditional write), then the controller's stale update loses.
            s0 = states[("orders", 0)]
            shrunk = await zk.update_leader_and_isr({("orders", 0): PartitionState(1, 0, (1,), epoch)}, epoch)
            assert shrunk.finished[("orders", 0)].zk_version == 1 and not shrunk.conflicts
            stale = await zk.update_leader_and_isr({("orders", 0): s0.new_leader(2)}, epoch, epoch_version)
            assert ("orders", 0) not in stale.finished
            assert stale.conflicts[("orders", 0)] == PartitionState(1, 0, (1,), epoch, zk_version=1)
            fresh = stale.conflicts[("orders", 0)].new_leader(1)
            done = await zk.update_leader_and_isr({("orders", 0): fresh}, epoch, epoch_version)
            assert done.finished[("orders", 0)] == PartitionState(1, 1, (1,), epoch, zk_version=2)

            # Deletion markers.
            await zk.delete_topic("orders")
            with pytest.raises(TopicAlreadyMarkedForDeletionError):
                await zk.delete_topic("orders")
            with pytest.raises(UnknownTopicOrPartitionError):
                await zk.delete_topic("nope")
            assert await zk.get_topic_deletions() == ["orders"]
            with pytest.raises(TopicExistsError, match="marked for deletion"):
                await zk.create_topic("orders", {0: [1]})
            await zk.delete_topic_znode("orders", epoch_version)
            await zk.delete_topic_configs(["orders"], epoch_version)
            await zk.delete_topic_deletions(["orders"], epoch_version)
            assert await zk.get_topic_assignment("orders") is None and await zk.get_topic_deletions() == []
            assert await zk.get_entity_config("topics", "orders") == {}
        finally:
            await zk.session.aclose()

    trio.run(main)


def test_reassignment_configs_and_notifications(zk_address):
    async def main():
        zk = await _client(zk_address)
        try:
            _, epoch_version = await zk.register_controller_and_increment_epoch(1)
            await zk.create_partition_reassignment({("t", 0): [2, 3], ("t", 1): [3, 1]})
            with pytest.raises(NodeExistsError):
                await zk.create_partition_reassignment({("t", 0): [1]})
            assert await zk.reassign_partitions_in_progress()
            assert await zk.get_partition_reassignment() == {("t", 0): (2, 3), ("t", 1): (3, 1)}
            await zk.set_or_create_partition_reassignment({("t", 1): [3, 1]}, epoch_version)
            assert await zk.get_partition_reassignment() == {("t", 1): (3, 1)}
            await zk.delete_partition_reassignment(epoch_version)
            assert not await zk.reassign_partitions_in_progress()

            watch_send, watch = trio.open_memory_channel(math.inf)
            assert await zk.get_config_change_notifications(watch=watch_send) == []
            await zk.change_entity_config("brokers", z.DEFAULT_ENTITY, {"log.retention.ms": "1000"})
            await zk.change_entity_config("users", z.sanitize("CN=alice smith"), {"SCRAM-SHA-256": "x"})
            with trio.fail_after(30):  # /config/changes did not exist: its creation is what fires
                assert (await watch.receive()).kind == WatchKind.CREATED
            names = await zk.get_config_change_notifications()
            assert names == ["config_change_0000000000", "config_change_0000000001"]
            assert (await zk.get_config_change_notification(names[1]))[0] == "users/CN%3Dalice%20smith"
            assert await zk.get_entity_config("brokers", "<default>") == {"log.retention.ms": "1000"}
            assert await zk.get_all_entities_with_config("users") == ["CN%3Dalice%20smith"]
            await zk.delete_config_change_notifications(names[:1])
            assert await zk.get_config_change_notifications() == names[1:]

            blocks = [await zk.claim_producer_id_block(1) for _ in range(2)]
            assert [(b.first, b.last) for b in blocks] == [(0, 999), (1000, 1999)]
        finally:
            await zk.session.aclose()

    trio.run(main)


def test_registration_comes_back_after_session_expiry(zk_address):
    """A broker re-registers with its new session (as Kafka does on a new session) and keeps its id."""
    from tests.integration.test_zk_session import _expire, _next_state
    from zk.session import SessionState

    async def main():
        zk = await _client(zk_address, session_timeout=6)
        observer = await _client(zk_address)
        try:
            await zk.create_top_level_paths()
            events = zk.session.subscribe()
            first = await zk.register_broker(_registration(5))
            await trio.to_thread.run_sync(_expire, zk.session)
            await _next_state(events, SessionState.NEW_SESSION)
            assert await observer.get_broker(5) is None
            second = await zk.register_broker(_registration(5))
            assert second > first
            assert (await observer.get_broker(5)).endpoints == _registration(5).endpoints
        finally:
            await zk.session.aclose()
            await observer.session.aclose()

    trio.run(main)


def test_producer_id_blocks_through_the_session_and_the_standalone_store(zookeeper):
    """The broker's ProducerIdManager claims blocks through the broker's session (SessionBlockStore) while a
    standalone ZooKeeperBlockStore claims on the same two-level chroot: no block is shared."""
    from zk.producer_id_manager import ProducerIdManager
    from zk.store import SessionBlockStore, ZooKeeperBlockStore

    address = f"{zookeeper.address}/t-{uuid.uuid4().hex[:12]}/two/levels"
    standalone = ZooKeeperBlockStore(address, timeout=10)

    async def main() -> tuple[list[int], list[tuple[int, int]]]:
        async with await ZkSession.connect(address, timeout=10) as session:
            manager = ProducerIdManager(SessionBlockStore(KafkaZkClient(session)), 1)
            other: list[tuple[int, int]] = []

            def claim_elsewhere() -> None:
                for _ in range(3):
                    block = standalone.claim_next_block(2)
                    other.append((block.first, block.last))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.to_thread.run_sync, claim_elsewhere)
                ids = [await manager.generate() for _ in range(2500)]
            return ids, other

    try:
        ids, other = trio.run(main)
    finally:
        standalone.close()
    assert len(ids) == len(set(ids)) == 2500
    assert not any(first <= pid <= last for pid in ids for first, last in other)
    assert len(other) == 3


def test_acls_with_conditional_writes(zk_address):
    from zk.kafka_zk import UNKNOWN_VERSION
    from zk.znodes import AclEntry

    async def main():
        zk = await _client(zk_address)
        try:
            await zk.create_acl_paths()
            assert await zk.get_acls("Topic", "t") == (set(), UNKNOWN_VERSION)
            alice = AclEntry("User:alice", "*", "Read", "Allow")
            bob = AclEntry("User:bob", "*", "Write", "Deny")
            assert await zk.set_acls("Topic", "t", {alice}, UNKNOWN_VERSION) == 0
            assert await zk.set_acls("Topic", "t", {bob}, UNKNOWN_VERSION) is None  # someone created it first
            acls, version = await zk.get_acls("Topic", "t")
            assert (acls, version) == ({alice}, 0)
            assert await zk.set_acls("Topic", "t", {alice, bob}, version) == 1
            assert await zk.set_acls("Topic", "t", set(), version) is None  # stale version
            assert await zk.get_acl_resource_names("Topic") == ["t"]
            assert await zk.set_acls("Group", "g-", {bob}, UNKNOWN_VERSION, "PREFIXED") == 0
            assert (await zk.get_acls("Group", "g-", "PREFIXED"))[0] == {bob}
            first = await zk.create_acl_change_notification("Topic", "t")
            second = await zk.create_acl_change_notification("Group", "g-", "PREFIXED")
            assert first == "/kafka-acl-changes/acl_changes_0000000000"
            assert second == "/kafka-acl-extended-changes/acl_changes_0000000000"
            assert (await zk.session.get(first))[0] == b"TOPIC:t"
            assert not await zk.delete_acls("Topic", "t", 0)
            assert await zk.delete_acls("Topic", "t", 1)
            assert await zk.get_acls("Topic", "t") == (set(), UNKNOWN_VERSION)
        finally:
            await zk.session.aclose()

    trio.run(main)
