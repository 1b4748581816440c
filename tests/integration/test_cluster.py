"""A three-broker cluster on a real ZooKeeper, driven by real clients (issue 21): partitions spread over the
brokers, leaders killed and restarted, leaders moved under running clients, the controller failing over."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.conftest import wait_until

LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
NOT_ENOUGH_REPLICAS = 19
INVALID_PRODUCER_EPOCH = 47


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


def _coordinator_of(cluster, key: str, key_type: int = 0) -> int:
    from broker.testkit.wire import WireClient

    with WireClient(cluster.bootstrap, timeout=30) as client:
        answer = client.request(10, 3, {"key": key, "key_type": key_type})
    return answer.node_id if answer.error_code == 0 else -1


def test_group_moves_when_its_coordinator_dies_and_keeps_its_offsets(minibroker_cluster, topic_name):
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=3, replication_factor=3)
    values = [(p, b"%d-%d" % (p, i)) for i in range(30) for p in range(3)]
    _produce(cluster.bootstrap, topic_name, values)
    group = "billing-" + topic_name
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    consumer.subscribe([topic_name])
    seen: list[bytes] = []
    try:
        while len(seen) < 45:
            msg = consumer.poll(1)
            if msg is not None and not msg.error():
                seen.append(msg.value())
        consumer.commit(asynchronous=False)
        committed = {tp.partition: tp.offset for tp in consumer.committed(
            [TopicPartition(topic_name, p) for p in range(3)], timeout=30)}
    finally:
        consumer.close()
    coordinator = cluster.wait_until(lambda: _coordinator_of(cluster, group) if _coordinator_of(cluster, group) >= 0
                                     else None, 30, "the group's coordinator")
    cluster.kill_broker(coordinator)
    moved = cluster.wait_until(lambda: (c := _coordinator_of(cluster, group)) not in (-1, coordinator) and c or None,
                               60, "the group's new coordinator")
    assert moved != coordinator
    # A new member of the group resumes from the committed offsets: nothing consumed twice, nothing skipped.
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    try:
        resumed = {tp.partition: tp.offset for tp in consumer.committed(
            [TopicPartition(topic_name, p) for p in range(3)], timeout=30)}
        assert resumed == committed
        consumer.subscribe([topic_name])
        rest: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(seen) + len(rest) < 90 and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is not None and not msg.error():
                rest.append(msg.value())
    finally:
        consumer.close()
    assert sorted(seen + rest) == sorted(v for _, v in values)


def test_transactions_span_partitions_led_by_three_brokers(minibroker_cluster, topic_name):
    from tests.integration.txn_helpers import READ_COMMITTED, Reader

    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=3, replication_factor=3)
    leaders = {cluster.leader(topic_name, p) for p in range(3)}
    assert leaders == {1, 2, 3}
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx-" + topic_name})
    producer.init_transactions(30)
    for round_, commit in enumerate([True, False, True]):
        producer.begin_transaction()
        for p in range(3):
            producer.produce(topic_name, b"r%d-p%d" % (round_, p), partition=p)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    reader = Reader(cluster.bootstrap, topic_name, range(3), READ_COMMITTED)
    try:
        reader.poll_until(lambda: len(reader.records) >= 6, 60, "six committed records")
        got = reader.records
    finally:
        reader.close()
    assert sorted(v for _, _, v in got) == sorted(b"r%d-p%d" % (r, p) for r in (0, 2) for p in range(3))


def test_a_transaction_completes_when_its_coordinator_dies_before_the_markers(minibroker_cluster, topic_name):
    """EndTxn is answered after PrepareCommit is in the (replicated) transaction log; the coordinator dies with
    the markers not yet written (held back on every broker): its successor finds PrepareCommit and writes them."""
    from tests.integration.txn_helpers import READ_COMMITTED, Reader

    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=3, replication_factor=3)
    txn_id = "dying-" + topic_name
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    coordinator = _coordinator_of(cluster, txn_id, key_type=1)
    for broker_id in (1, 2, 3):  # markers wait 30 s on every broker: the coordinator dies first
        cluster.broker(broker_id).inject("delay", api="WRITE_TXN_MARKERS", delay_ms=30_000, count=None)
    # The commit's EndTxn is run and its answer lost: the client's answer comes from a retry (to the dying
    # coordinator, CONCURRENT_TRANSACTIONS; to its successor, once the commit is complete, success).
    cluster.broker(coordinator).inject("drop_response", api="END_TXN")
    producer.begin_transaction()
    for p in range(3):
        producer.produce(topic_name, b"p%d" % p, partition=p)
    committing = _in_thread(lambda: producer.commit_transaction(60))
    cluster.wait_until(lambda: cluster.broker(coordinator).transactions().get(txn_id, {}).get("state")
                       == "PrepareCommit" or None, 30, "PrepareCommit")
    cluster.kill_broker(coordinator)
    for broker_id in (1, 2, 3):
        if broker_id != coordinator:
            cluster.broker(broker_id).clear_faults()
    reader = Reader(cluster.bootstrap, topic_name, range(3), READ_COMMITTED)
    try:
        reader.poll_until(lambda: len(reader.records) >= 3, 90, "the committed records")
        got = reader.records
    finally:
        reader.close()
    assert sorted(v for _, _, v in got) == [b"p0", b"p1", b"p2"]
    # The client learns it too: its EndTxn, retried at the successor, is answered CONCURRENT_TRANSACTIONS while
    # the markers are written, then success once the commit is complete (as Kafka answers a retried commit).
    committing.join(90)
    assert committing.outcome == ("done", None), committing.outcome
    producer.begin_transaction()  # and the producer goes on
    producer.produce(topic_name, b"next", partition=0)
    producer.commit_transaction(60)


class _Call(threading.Thread):
    """A blocking call in a thread of its own: `outcome` is ("done", result) or ("failed", the exception)."""

    def __init__(self, call: Any) -> None:
        super().__init__(daemon=True)
        self.call = call
        self.outcome: tuple[str, Any] = ("running", None)

    def run(self) -> None:
        try:
            self.outcome = ("done", self.call())
        except Exception as exc:  # the test asserts on it
            self.outcome = ("failed", exc)


def _in_thread(call: Any) -> _Call:
    thread = _Call(call)
    thread.start()
    return thread


def test_acks_all_needs_min_insync_replicas(minibroker_cluster, topic_name):
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    cluster.wait_isr(topic_name, 0, 3)
    leader = cluster.leader(topic_name, 0)
    followers = [b for b in (1, 2, 3) if b != leader]
    cluster.kill_broker(followers[0])
    cluster.wait_isr(topic_name, 0, 2)
    assert len(_produce(cluster.bootstrap, topic_name, [(0, b"two in sync")])) == 1
    cluster.kill_broker(followers[1])
    cluster.wait_isr(topic_name, 0, 1)
    # The broker's answer, without a client's retries: NOT_ENOUGH_REPLICAS before the append; acks=1 goes.
    from protocol.records import Record, build_batch
    from tests.kafka_wire import WireClient

    batch = build_batch([Record(0, 0, None, b"alone")], base_timestamp=int(time.time() * 1000))
    with WireClient(cluster.broker(leader).bootstrap) as client:
        assert client.produce(topic_name, 0, batch, acks=-1).error_code == NOT_ENOUGH_REPLICAS
        assert client.produce(topic_name, 0, batch, acks=1).error_code == 0


def test_controlled_shutdown_moves_leaderships_first(minibroker_cluster, topic_name):
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=6, replication_factor=2)
    victim = 2
    led = [p for p in range(6) if cluster.leader(topic_name, p) == victim]
    assert led
    for p in range(6):
        cluster.wait_isr(topic_name, p, 2)
    assert cluster.stop_broker(victim) == 0
    # The leaderships moved before the broker went: no partition was left without a leader.
    assert all(cluster.leader(topic_name, p) not in (-1, victim) for p in range(6))


def test_an_orderly_shutdown_logs_no_error(minibroker_cluster, topic_name):
    """The whole cluster stopped, the controller first (as `make cluster`'s Ctrl-C and the fixture do): the
    others lose their controller and each other while they stop, and say so without an ERROR or a traceback."""
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=6, replication_factor=3)
    for p in range(6):
        cluster.wait_isr(topic_name, p, 3)
    _produce(cluster.bootstrap, topic_name, [(p, b"before the stop") for p in range(6)])
    controller = cluster.controller_id()
    order = [controller] + [b for b in (1, 2, 3) if b != controller]
    for broker_id in order:
        assert cluster.stop_broker(broker_id) == 0
    for broker_id in order:
        lines = cluster.broker(broker_id).log_lines
        bad = [line for line in lines if " ERROR " in line or "Traceback" in line]
        assert not bad, f"broker {broker_id}:\n" + "".join(lines[-40:])


def test_admin_operations_from_any_client(minibroker_cluster, topic_name):
    """kafka-python's admin client (it finds the controller in Metadata): topic configs, partition growth and
    deletion reach every broker."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic

    cluster = minibroker_cluster
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.create_topics([NewTopic(topic_name, 2, 3, topic_configs={"retention.ms": "3600000"})])
        # As with Kafka, CreateTopics answers once the broker that took it (the controller) knows the topic; the
        # others hear of it a moment later, and kafka-python's alter_configs first describes the topic on any
        # broker (one that does not know it yet answers UNKNOWN_TOPIC_OR_PARTITION, which kafka-python reads as
        # "Unrecognized configs").
        cluster.wait_until(lambda: all(topic_name in cluster.broker(b).topics() for b in (1, 2, 3)) or None, 30,
                           "every broker knowing the topic")
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name, configs={"retention.ms": "7200000"})])
        for broker_id in (1, 2, 3):  # every broker's logs follow the change notification
            cluster.wait_until(lambda b=broker_id: _retention(cluster, b, topic_name) == "7200000" or None, 30,
                               f"broker {broker_id} applying the config")
        admin.create_partitions({topic_name: NewPartitions(4)})
        cluster.wait_until(lambda: len(cluster.metadata([topic_name]).topics[0].partitions) == 4 or None, 30,
                           "4 partitions")
        admin.delete_topics([topic_name])
        cluster.wait_until(lambda: all(topic_name not in cluster.broker(b).topics() for b in (1, 2, 3)) or None, 30,
                           "the topic gone from every broker")
    finally:
        admin.close()


def _retention(cluster, broker_id: int, topic: str) -> str | None:
    """retention.ms of the topic as one broker describes it."""
    from broker.testkit.wire import WireClient

    with WireClient(cluster.broker(broker_id).bootstrap) as client:
        answer = client.request(32, 4, {"resources": [{"resource_type": 2, "resource_name": topic,
                                                       "configuration_keys": ["retention.ms"]}],
                                        "include_synonyms": False, "include_documentation": False})
    entries = answer.results[0].configs
    return entries[0].value if entries else None


def test_transactional_batches_are_verified_by_a_coordinator_on_another_broker(minibroker_cluster, topic_name):
    """KIP-890: a transactional batch for a partition that is not in the producer's transaction is refused
    (INVALID_TXN_STATE), also when the transaction's coordinator is another broker than the partition's leader
    (asked with AddPartitionsToTxn v4); added to the transaction first, it is accepted."""
    from broker.testkit.wire import WireClient
    from protocol.records import Record, build_batch

    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=3, replication_factor=1)
    txn_id = "verify-" + topic_name
    coordinator = cluster.wait_until(lambda: _coordinator_of(cluster, txn_id, key_type=1) if
                                     _coordinator_of(cluster, txn_id, key_type=1) >= 0 else None, 30, "coordinator")
    partition = next(p for p in range(3) if cluster.leader(topic_name, p) != coordinator)
    leader = cluster.leader(topic_name, partition)
    def init_producer_id() -> Any:
        with WireClient(cluster.broker(coordinator).bootstrap) as c:
            answer = c.request(22, 4, {"transactional_id": txn_id, "transaction_timeout_ms": 60000,
                                       "producer_id": -1, "producer_epoch": -1})
        # The coordinator named by another broker may not know the new __transaction_state yet (its metadata
        # comes a moment later) or not lead its partition yet (its LeaderAndIsr too): COORDINATOR_NOT_AVAILABLE,
        # LOAD_IN_PROGRESS or NOT_COORDINATOR, retried as clients do.
        return answer if answer.error_code not in (14, 15, 16) else None

    init = cluster.wait_until(init_producer_id, 30, "InitProducerId")
    assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch
    batch = build_batch([Record(0, 0, None, b"x")], base_timestamp=int(time.time() * 1000), producer_id=pid,
                        producer_epoch=epoch, base_sequence=0, is_transactional=True)

    def produce() -> int:
        with WireClient(cluster.broker(leader).bootstrap) as c:
            answer = c.request(0, 9, {"transactional_id": txn_id, "acks": -1, "timeout_ms": 30000, "topic_data": [
                {"name": topic_name, "partition_data": [{"index": partition, "records": batch}]}]})
        return answer.responses[0].partition_responses[0].error_code

    assert produce() == 48  # INVALID_TXN_STATE: never added to the transaction
    with WireClient(cluster.broker(coordinator).bootstrap) as c:
        added = c.request(24, 3, {"v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": pid,
                                  "v3_and_below_producer_epoch": epoch,
                                  "v3_and_below_topics": [{"name": topic_name, "partitions": [partition]}]})
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    assert produce() == 0


def test_a_returning_leader_truncates_what_only_it_had(minibroker_cluster, topic_name):
    """KIP-101/279: the leader appends with acks=1 while its followers cannot fetch, then dies; a follower
    from the ISR leads (a new leader epoch) and takes new writes; the old leader comes back as a follower,
    truncates its own unreplicated tail at the end of its last epoch in the new leader's log (by leader
    epoch, not by high watermark), and ends with the new leader's log."""
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=1, replication_factor=3)
    cluster.wait_isr(topic_name, 0, 3)
    _produce(cluster.bootstrap, topic_name, [(0, b"replicated-%d" % i) for i in range(10)])
    old = cluster.leader(topic_name, 0)
    # Followers' fetches wait 20 s on the leader: what it appends now only it has.
    cluster.broker(old).inject("delay", api="FETCH", delay_ms=20_000, count=None)
    time.sleep(1)  # let the followers' fetches in flight return first
    one = Producer({"bootstrap.servers": cluster.broker(old).bootstrap, "acks": 1})
    for i in range(5):
        one.produce(topic_name, b"only-on-old-%d" % i, partition=0)
    assert one.flush(30) == 0
    assert cluster.broker(old).topics()[topic_name]["partitions"][0]["log_end_offset"] == 15
    cluster.kill_broker(old)
    new = cluster.wait_leader(topic_name, 0, not_broker=old)
    _produce(cluster.bootstrap, topic_name, [(0, b"after-%d" % i) for i in range(3)])
    cluster.start_broker(old)
    cluster.wait_isr(topic_name, 0, 3)

    def ends() -> set[int] | None:
        found = {cluster.broker(b).topics()[topic_name]["partitions"][0].get("log_end_offset") for b in (1, 2, 3)}
        return found if len(found) == 1 else None

    assert cluster.wait_until(ends, 60, "the same log end on every replica") == {13}
    got = _consume(cluster.broker(new).bootstrap, topic_name, [0], 13)
    assert [v for _, _, v in got] == [b"replicated-%d" % i for i in range(10)] + [b"after-%d" % i for i in range(3)]


@pytest.mark.minibroker_cluster(args=["--override", "replica.lag.time.max.ms=3000"])
def test_a_stalled_follower_leaves_the_isr_and_rejoins(minibroker_cluster, topic_name):
    import os
    import signal

    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=1, replication_factor=3)
    cluster.wait_isr(topic_name, 0, 3)
    leader = cluster.leader(topic_name, 0)
    follower = next(b for b in (1, 2, 3) if b != leader)
    process = cluster.broker(follower).proc
    os.kill(process.pid, signal.SIGSTOP)  # alive for ZooKeeper a while longer, but not fetching
    try:
        isr = cluster.wait_isr(topic_name, 0, 2, timeout=30)
        assert follower not in isr
    finally:
        os.kill(process.pid, signal.SIGCONT)
    assert sorted(cluster.wait_isr(topic_name, 0, 3, timeout=60)) == [1, 2, 3]


def test_aiokafka_across_the_cluster(minibroker_cluster, topic_name):
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as AioTopicPartition

    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=3, replication_factor=2)

    async def main() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
        await producer.start()
        try:
            for i in range(30):
                await producer.send_and_wait(topic_name, b"aio-%d" % i, partition=i % 3)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([AioTopicPartition(topic_name, p) for p in range(3)])
            await consumer.seek_to_beginning()
            got: list[bytes] = []
            while len(got) < 30:
                batch = await consumer.getmany(timeout_ms=1000)
                got += [m.value for msgs in batch.values() for m in msgs]
            return got
        finally:
            await consumer.stop()

    assert sorted(asyncio.run(main())) == sorted(b"aio-%d" % i for i in range(30))


def test_a_broker_id_already_registered_is_refused(minibroker_cluster, tmp_path):
    import subprocess
    import sys

    answer = subprocess.run([sys.executable, "-m", "broker", "--listen", "127.0.0.1:0", "--data-dir",
                             str(tmp_path / "twin"), "--zookeeper", minibroker_cluster.zookeeper, "--broker-id", "2"],
                            capture_output=True, text=True, timeout=60)
    assert answer.returncode == 1
    assert "broker id 2 is already registered in ZooKeeper by another broker" in answer.stderr


def test_a_broker_whose_zookeeper_session_expires_registers_again(minibroker_cluster, topic_name):
    """ZooKeeper ends the controller's session while its process runs on (as after a long pause): its
    registration and /controller go, another broker takes over; its new session registers it again (a new
    broker epoch), it rejoins every ISR, and nothing acknowledged is lost."""
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"})
    for p in range(3):
        cluster.wait_isr(topic_name, p, 3)
    acked = _produce(cluster.bootstrap, topic_name, [(p, b"before-%d" % i) for i in range(20) for p in range(3)])
    victim = cluster.controller_id()
    before = cluster.broker(victim).zookeeper_session()
    assert before["connected"] and before["controller"]
    assert cluster.expire_session(victim) == before["session_id"]

    def registered_again() -> dict | None:
        now = cluster.broker(victim).zookeeper_session()
        return now if now["session_id"] != before["session_id"] and now["broker_epoch"] > before["broker_epoch"] \
            else None

    after = cluster.wait_until(registered_again, 60, "a new session and registration")
    assert after["connected"]
    cluster.wait_brokers([1, 2, 3])
    assert cluster.wait_until(lambda: cluster.controller_id() if cluster.controller_id() >= 0 else None, 60,
                              "a controller") in (1, 2, 3)
    for p in range(3):
        assert sorted(cluster.wait_isr(topic_name, p, 3)) == [1, 2, 3]
    acked += _produce(cluster.bootstrap, topic_name, [(p, b"after-%d" % i) for i in range(20) for p in range(3)])
    got = _consume(cluster.bootstrap, topic_name, [0, 1, 2], len(acked))
    assert sorted((p, o) for p, o, _ in got) == sorted(acked)


@pytest.mark.minibroker_cluster(args=["--override", "replica.lag.time.max.ms=120000"])
def test_a_new_controller_takes_the_dead_controller_out_of_the_isrs(minibroker_cluster, topic_name):
    """The controller dies while following partitions: its successor removes it from their ISRs at failover
    (Kafka's replica state machine: OfflineReplica), not the leaders' replica.lag.time.max.ms later; until
    then an ISR naming it would hold every acks=all produce."""
    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"})
    for p in range(3):
        cluster.wait_isr(topic_name, p, 3)
    old = cluster.controller_id()
    followed = [p for p in range(3) if cluster.leader(topic_name, p) != old]
    assert followed
    cluster.kill_broker(old)
    for p in range(3):
        assert old not in cluster.wait_isr(topic_name, p, 2, timeout=30)
    started = time.monotonic()
    assert len(_produce(cluster.bootstrap, topic_name, [(p, b"after") for p in range(3)])) == 3
    assert time.monotonic() - started < 10


def test_an_acks_all_produce_waiting_on_a_leader_that_moves_away_is_answered_at_once(minibroker_cluster, topic_name):
    """A produce waiting for its followers (acks=all) when its partition's leadership moves away is answered
    NOT_LEADER_OR_FOLLOWER then (Kafka completes the delayed produces of a partition that becomes a follower;
    the client retries on the new leader), not when its timeout ends."""
    from broker.testkit.wire import WireClient
    from protocol.records import Record, build_batch

    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=1, replication_factor=3)
    cluster.wait_isr(topic_name, 0, 3)
    old = cluster.leader(topic_name, 0)
    new = next(b for b in (1, 2, 3) if b != old)
    cluster.broker(old).inject("delay", api="FETCH", delay_ms=30_000, count=None)  # the followers stall

    def produce(timeout_ms: int) -> int:
        batch = build_batch([Record(0, 0, None, b"x")], base_timestamp=int(time.time() * 1000))
        with WireClient(cluster.broker(old).bootstrap, timeout=120) as client:
            answer = client.request(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": timeout_ms,
                                           "topic_data": [{"name": topic_name, "partition_data": [
                                               {"index": 0, "records": batch}]}]})
        return answer.responses[0].partition_responses[0].error_code

    # Once the followers' fetches in flight have returned, an acks=all produce waits for them.
    cluster.wait_until(lambda: produce(1000) == REQUEST_TIMED_OUT or None, 60, "an acks=all produce waiting")
    end = cluster.broker(old).topics()[topic_name]["partitions"][0]["log_end_offset"]
    answer: list[int] = []
    waiting = threading.Thread(target=lambda: answer.append(produce(90_000)), daemon=True)
    waiting.start()
    cluster.wait_until(lambda: cluster.broker(old).topics()[topic_name]["partitions"][0]["log_end_offset"] > end
                       or None, 30, "the produce appended, waiting for the followers")
    moved = time.monotonic()
    cluster.move_leader(topic_name, 0, new)
    waiting.join(60)
    assert answer == [NOT_LEADER_OR_FOLLOWER]
    assert time.monotonic() - moved < 30


def test_a_starting_broker_answers_metadata_once_it_knows_the_cluster(minibroker_cluster, topic_name):
    """A broker's listener is open before the controller has told it what the cluster is (it registers with its
    port). A Metadata request meanwhile waits for that, rather than being answered with no brokers and no topics
    (Kafka's answer then, which librdkafka 2.x takes for a cluster without brokers: it drops every broker it
    knows and stalls until it bootstraps again, minutes later; confluentinc/librdkafka#5301)."""
    import socket

    from broker.testkit.wire import WireClient

    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=1, replication_factor=3)
    controller = cluster.controller_id()
    victim = next(b for b in (1, 2, 3) if b != controller)
    cluster.kill_broker(victim)
    cluster.wait_until(lambda: victim not in {b.node_id for b in cluster.metadata([]).brokers} or None, 60,
                       f"broker {victim} out of the cluster")
    cluster.kill_broker(controller)  # no controller, so no word to the victim, until this one's session expires
    starting = threading.Thread(target=cluster.start_broker, args=(victim,), daemon=True)
    starting.start()
    port = cluster.broker(victim).port

    def listening() -> bool | None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return None

    cluster.wait_until(listening, 60, f"broker {victim} listening")
    with WireClient(f"127.0.0.1:{port}", timeout=60) as client:
        answer = client.request(3, 12, {"topics": [{"name": topic_name, "topic_id": None}],
                                        "allow_auto_topic_creation": False,
                                        "include_topic_authorized_operations": False})
    assert {b.node_id for b in answer.brokers} >= {victim}
    assert answer.topics[0].error_code == 0 and len(answer.topics[0].partitions) == 1
    starting.join(60)


def test_a_fenced_producers_late_txn_offset_commit_is_refused(minibroker_cluster, topic_name):
    """A zombie's TxnOffsetCommit (its producer fenced by a new instance, which aborted its transaction) that reaches
    the group coordinator late is refused with INVALID_PRODUCER_EPOCH: the abort marker on __consumer_offsets carries
    the newer epoch, and the coordinator's append is checked against it as any producer's (Kafka's
    checkProducerEpoch for a coordinator append). Accepted, its offsets would wait for the producer id's next commit
    marker and then move the group back (a chaos run saw a committed offset go from 17671 to 15871). Here the
    transaction coordinator is another broker than the group's, which cannot check the epoch itself."""
    from broker.testkit.wire import WireClient

    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=2, replication_factor=3)
    group = "g-" + topic_name
    group_coordinator = cluster.wait_until(lambda: _coordinator_of(cluster, group) if
                                           _coordinator_of(cluster, group) >= 0 else None, 30, "group coordinator")

    def txn_coordinator(txn_id: str) -> int | None:
        found = _coordinator_of(cluster, txn_id, key_type=1)
        return found if found >= 0 else None

    txn_id = next(t for t in (f"t-{topic_name}-{i}" for i in range(100))
                  if cluster.wait_until(lambda t=t: txn_coordinator(t), 30, "txn coordinator") != group_coordinator)
    txn_address = cluster.broker(txn_coordinator(txn_id)).bootstrap

    def init() -> tuple[int, int]:
        def answer() -> Any:
            with WireClient(txn_address) as c:
                found = c.request(22, 4, {"transactional_id": txn_id, "transaction_timeout_ms": 60000,
                                          "producer_id": -1, "producer_epoch": -1})
            # Loading, not leading the partition yet (another broker's metadata named it first: see the KIP-890
            # test above), or an abort completing: retried as clients do.
            return found if found.error_code not in (14, 15, 16, 51) else None
        found = cluster.wait_until(answer, 60, "InitProducerId")
        assert found.error_code == 0
        return found.producer_id, found.producer_epoch

    def add_offsets(pid: int, epoch: int) -> None:
        with WireClient(txn_address) as c:
            assert c.request(25, 3, {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch,
                                     "group_id": group}).error_code == 0

    def txn_offset_commit(pid: int, epoch: int, partition: int, offset: int) -> int:
        with WireClient(cluster.broker(group_coordinator).bootstrap) as c:
            answer = c.request(28, 3, {
                "transactional_id": txn_id, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
                "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None, "topics": [{
                    "name": topic_name, "partitions": [{"partition_index": partition, "committed_offset": offset,
                                                        "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
        return answer.topics[0].partitions[0].error_code

    pid, old_epoch = init()
    add_offsets(pid, old_epoch)  # the old instance's transaction includes the group's partition
    same_pid, new_epoch = init()  # a new instance: the old transaction is aborted, its epoch fenced
    assert same_pid == pid and new_epoch > old_epoch
    assert txn_offset_commit(pid, old_epoch, 0, 100) == INVALID_PRODUCER_EPOCH  # the zombie, late
    # The new instance commits offsets of partition 1 only: partition 0 must keep having none.
    add_offsets(pid, new_epoch)
    assert txn_offset_commit(pid, new_epoch, 1, 5) == 0
    with WireClient(txn_address) as c:
        assert c.request(26, 3, {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": new_epoch,
                                 "committed": True}).error_code == 0

    def committed() -> dict[int, int] | None:
        with WireClient(cluster.broker(group_coordinator).bootstrap) as c:
            answer = c.request(9, 7, {"group_id": group, "topics": [{"name": topic_name, "partition_indexes": [0, 1]}],
                                      "require_stable": True})
        if answer.error_code or any(p.error_code for p in answer.topics[0].partitions):
            return None  # UNSTABLE_OFFSET_COMMIT until the commit marker is written
        return {p.partition_index: p.committed_offset for p in answer.topics[0].partitions}

    assert cluster.wait_until(committed, 30, "the committed offsets") == {0: -1, 1: 5}


def test_an_unclean_election_asked_by_an_admin_elects_a_replica_out_of_the_isr(minibroker_cluster, topic_name):
    """ElectLeaders UNCLEAN (KIP-460) on an offline partition whose only in-sync replica is dead: the live
    replica that fell out of the ISR leads (unclean.leader.election.enable is off, so nothing else would)."""
    from kafka.admin import KafkaAdminClient

    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=1, replication_factor=2)
    cluster.wait_isr(topic_name, 0, 2)
    leader = cluster.leader(topic_name, 0)
    [follower] = [b for b in cluster.wait_isr(topic_name, 0, 2) if b != leader]
    cluster.kill_broker(follower)
    assert cluster.wait_isr(topic_name, 0, 1) == [leader]
    cluster.kill_broker(leader)
    cluster.wait_until(lambda: cluster.leader(topic_name, 0) == -1 or None, 60, "the partition offline")
    cluster.start_broker(follower)
    assert cluster.leader(topic_name, 0) == -1  # not in the ISR: no clean election makes it the leader
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        response = admin.elect_leaders(1, {topic_name: [0]})
    finally:
        admin.close()
    [(name, [(partition, error, *_)])] = [(r[0], r[1]) for r in response.replica_election_results]
    assert (name, partition, error) == (topic_name, 0, 0)
    assert cluster.wait_leader(topic_name, 0, follower) == follower
