"""KIP-848 consumer groups (`group.protocol=consumer`) with confluent-kafka (librdkafka) against a broker
with the Kafka 4.1 profile: joining and leaving, scaling from one member to three with no partition owned by
two members at once, a regex subscription picking up a new topic, a static member restarting, a member stuck
past its session timeout, offsets with member epochs, and the group surviving a broker restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.testkit import BrokerThread
from tests.kafka_wire import WireClient

GROUP_CONFIG = {"group.protocol": "consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path, kafka_version="4.1", group_consumer_session_timeout_ms=6_000,
                     group_consumer_heartbeat_interval_ms=500)
    b.start()
    try:
        yield b
    finally:
        b.stop()


def wait_for(condition: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, value=b"%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0


class Member:
    """A consumer polling in its own thread, recording what it owns through its rebalance callbacks."""

    def __init__(self, bootstrap: str, name: str, topics: list[str], owners: dict[tuple[str, int], str],
                 lock: threading.Lock, **config: object) -> None:
        self.name = name
        self.owners = owners
        self.lock = lock
        self.errors: list[str] = []
        self.received: list[tuple[str, int, int]] = []
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "scale", **GROUP_CONFIG,
                                  "client.id": name, **config})
        self.consumer.subscribe(topics, on_assign=self._assign, on_revoke=self._revoke, on_lost=self._revoke)
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self.lock:
            for p in partitions:
                other = self.owners.get((p.topic, p.partition))
                if other is not None and other != self.name:
                    self.errors.append(f"{self.name} got {p.topic}-{p.partition} still owned by {other}")
                self.owners[(p.topic, p.partition)] = self.name

    def _revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self.lock:
            for p in partitions:
                if self.owners.get((p.topic, p.partition)) == self.name:
                    del self.owners[(p.topic, p.partition)]

    def _run(self) -> None:
        while self.running:
            message = self.consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                if message.error().code() != KafkaError._PARTITION_EOF:
                    self.errors.append(str(message.error()))
                continue
            self.received.append((message.topic(), message.partition(), message.offset()))

    def owned(self) -> set[tuple[str, int]]:
        with self.lock:
            return {tp for tp, owner in self.owners.items() if owner == self.name}

    def close(self) -> None:
        self.running = False
        self.thread.join(30)
        self.consumer.close()


def test_join_consume_commit_describe_and_leave(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "joined", 3)
    produce(broker.bootstrap, "joined", 30, 3)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g1", **GROUP_CONFIG})
    consumer.subscribe(["joined"])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < 30 and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    assert sorted(got, key=int) == [b"%d" % i for i in range(30)]
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition("joined", p) for p in range(3)], timeout=30)
    assert sorted(tp.offset for tp in committed) == [10, 10, 10]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(30)
    assert [(g.group_id, str(g.type)) for g in listed.valid] == [("g1", "ConsumerGroupType.CONSUMER")]
    described = admin.describe_consumer_groups(["g1"])["g1"].result(30)
    assert str(described.state) == "ConsumerGroupState.STABLE"
    assert len(described.members) == 1
    assert {tp.partition for tp in described.members[0].assignment.topic_partitions} == {0, 1, 2}
    groups = broker.groups()
    assert groups["g1"]["state"] == "Stable" and groups["g1"]["type"] == "consumer"
    consumer.close()  # leaves with epoch -1
    wait_for(lambda: broker.groups()["g1"]["state"] == "Empty", what="the group to be empty")
    assert broker.groups()["g1"]["offsets"] == {"joined-0": 10, "joined-1": 10, "joined-2": 10}


def test_scaling_from_one_to_three_members_never_shares_a_partition(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "scaled", 6)
    produce(broker.bootstrap, "scaled", 60, 6)
    owners: dict[tuple[str, int], str] = {}
    lock = threading.Lock()
    members = [Member(broker.bootstrap, "m1", ["scaled"], owners, lock)]
    try:
        wait_for(lambda: len(members[0].owned()) == 6, what="m1 to own every partition")
        for name in ("m2", "m3"):
            members.append(Member(broker.bootstrap, name, ["scaled"], owners, lock))
            wait_for(lambda: all(len(m.owned()) == 6 // len(members) for m in members), what=f"{name}'s share")
        assert broker.groups()["scale"]["state"] == "Stable"
        for m in members:
            assert m.errors == []
        assert {tp for m in members for tp in m.owned()} == {("scaled", p) for p in range(6)}
    finally:
        for m in members:
            m.close()


def test_regex_subscription_picks_up_a_new_topic(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "orders-eu", 1)
    produce(broker.bootstrap, "orders-eu", 3, 1)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "regex", **GROUP_CONFIG,
                         "topic.metadata.refresh.interval.ms": 1000})
    consumer.subscribe(["^orders-.*"])
    try:
        got: set[tuple[str, bytes]] = set()

        def drain() -> None:
            m = consumer.poll(0.2)
            if m is not None and not m.error():
                got.add((m.topic(), m.value()))

        wait_for(lambda: drain() or len(got) == 3, what="the first topic's records")
        create_topic(broker.bootstrap, "orders-us", 2)
        create_topic(broker.bootstrap, "returns", 1)
        produce(broker.bootstrap, "orders-us", 4, 2)
        produce(broker.bootstrap, "returns", 1, 1)
        # Kafka refreshes a group's regexes at most every 10 s: the new topic comes within about that.
        wait_for(lambda: drain() or len(got) == 7, timeout=60, what="the new topic's records")
        assert {t for t, _ in got} == {"orders-eu", "orders-us"}
    finally:
        consumer.close()


def test_static_member_restart_keeps_its_partitions(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "static", 4)
    owners: dict[tuple[str, int], str] = {}
    lock = threading.Lock()
    a = Member(broker.bootstrap, "a", ["static"], owners, lock, **{"group.instance.id": "instance-a"})
    b = Member(broker.bootstrap, "b", ["static"], owners, lock)
    try:
        wait_for(lambda: len(a.owned()) == 2 and len(b.owned()) == 2, what="a balanced group")
        before = a.owned()
        epoch = broker.groups()["scale"]["group_epoch"]
        a.close()  # a static member's close leaves with epoch -2: its place is kept for a session timeout
        assert broker.groups()["scale"]["group_epoch"] == epoch
        a = Member(broker.bootstrap, "a", ["static"], owners, lock, **{"group.instance.id": "instance-a"})
        wait_for(lambda: a.owned() == before, what="the restarted static member's partitions")
        assert broker.groups()["scale"]["group_epoch"] == epoch  # no rebalance
        assert a.errors == b.errors == []
    finally:
        a.close()
        b.close()


_STUCK = """
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "stuck", "group.protocol": "consumer",
              "auto.offset.reset": "earliest", "client.id": "stuck"})
c.subscribe(["stuck"])
while True:
    c.poll(0.2)
"""


def test_member_stuck_past_its_session_timeout_is_fenced(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "stuck", 2)
    proc = subprocess.Popen([sys.executable, "-c", _STUCK, broker.bootstrap], env=os.environ.copy())
    owners: dict[tuple[str, int], str] = {}
    lock = threading.Lock()
    other = None
    try:
        wait_for(lambda: len(broker.groups().get("stuck", {}).get("members", [])) == 1, what="the stuck member")
        other = Member(broker.bootstrap, "live", ["stuck"], owners, lock, **{"group.id": "stuck"})
        wait_for(lambda: len(other.owned()) == 1, what="a shared group")
        proc.send_signal(signal.SIGSTOP)  # no more heartbeats, the connection stays open
        stopped = time.monotonic()
        wait_for(lambda: len(other.owned()) == 2, timeout=60, what="the live member to get everything")
        assert time.monotonic() - stopped >= 5  # not before the 6 s session timeout (less a heartbeat)
        events = [e["event"] for e in broker.groups()["stuck"]["timeline"]]
        assert any("session expired" in e for e in events), events
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.wait(30)
        if other is not None:
            other.close()


def test_group_and_offsets_survive_a_restart(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "durable", 2)
    produce(broker.bootstrap, "durable", 10, 2)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "durable", **GROUP_CONFIG,
                         "group.instance.id": "keep"})
    consumer.subscribe(["durable"])
    count = 0
    deadline = time.monotonic() + 60
    while count < 10 and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            count += 1
    consumer.commit(asynchronous=False)
    before = broker.groups()["durable"]
    broker.restart()
    after = broker.wait_until(lambda: broker.groups().get("durable"), 30, "the group to be loaded")
    assert (after["group_epoch"], after["assignment_epoch"]) == (before["group_epoch"], before["assignment_epoch"])
    assert [m["member_id"] for m in after["members"]] == [m["member_id"] for m in before["members"]]
    assert after["offsets"] == {"durable-0": 5, "durable-1": 5}
    consumer.close()


def _consume(consumer: Consumer, count: int) -> list[int]:
    got: list[int] = []
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got.append(int(m.value()))
    return got


def test_empty_groups_convert_between_classic_and_consumer(broker: BrokerThread) -> None:
    """Kafka's rule: an empty classic group becomes a consumer group when a consumer-protocol member joins,
    and an empty consumer group becomes classic for a classic member; the committed offsets stay."""
    create_topic(broker.bootstrap, "conv", 1)
    produce(broker.bootstrap, "conv", 30, 1)
    classic = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "conv", "group.protocol": "classic",
                        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    classic.subscribe(["conv"])
    assert _consume(classic, 10) == list(range(10))
    classic.commit(asynchronous=False)
    classic.close()
    wait_for(lambda: broker.groups()["conv"]["state"] == "Empty", what="the classic group to empty")
    assert broker.groups()["conv"]["type"] == "classic"
    modern = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "conv", **GROUP_CONFIG})
    modern.subscribe(["conv"])
    assert _consume(modern, 10) == list(range(10, 20))  # from the classic group's committed offset
    assert broker.groups()["conv"]["type"] == "consumer"
    modern.commit(asynchronous=False)
    modern.close()
    wait_for(lambda: broker.groups()["conv"]["state"] == "Empty", what="the consumer group to empty")
    classic = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "conv", "group.protocol": "classic",
                        "auto.offset.reset": "earliest"})
    classic.subscribe(["conv"])
    assert _consume(classic, 10) == list(range(20, 30))
    assert broker.groups()["conv"]["type"] == "classic"
    classic.close()


def test_virtual_time_fences_a_silent_member(tmp_path: Path) -> None:
    """The test kit's virtual clock drives consumer group sessions: 45 s pass in no time (raw protocol)."""
    b = BrokerThread(tmp_path, kafka_version="4.1", virtual_time=True)
    b.start()
    try:
        create_topic(b.bootstrap, "vt", 2)
        with WireClient(b.bootstrap) as wire:
            def beat(member: str, epoch: int, owned: list | None = None) -> object:
                return wire.request(68, 1, {"group_id": "vt", "member_id": member, "member_epoch": epoch,
                                            "rebalance_timeout_ms": 30_000 if epoch == 0 else -1,
                                            "subscribed_topic_names": ["vt"] if epoch == 0 else None,
                                            "topic_partitions": [] if epoch == 0 else owned})
            a, c = beat("a", 0), beat("c", 0)
            assert (a.error_code, c.error_code) == (0, 0)
            b.advance(30)
            assert beat("a", a.member_epoch, None).error_code == 0  # a keeps its session, c does not
            b.advance(16)
            group = b.groups()["vt"]
            assert [m["member_id"] for m in group["members"]] == ["a"]
            assert any("session expired" in e["event"] for e in group["timeline"])
            described = wire.request(69, 1, {"group_ids": ["vt"], "include_authorized_operations": False})
            assert described.groups[0].group_state in ("Assigning", "Reconciling", "Stable")
    finally:
        b.stop()


def test_group_survives_sigkill(tmp_path: Path) -> None:
    from broker.testkit import BrokerProcess

    proc = BrokerProcess(tmp_path, "--kafka-version", "4.1").start()
    try:
        create_topic(proc.bootstrap, "killed", 2)
        produce(proc.bootstrap, "killed", 20, 2)
        consumer = Consumer({"bootstrap.servers": proc.bootstrap, "group.id": "killed", **GROUP_CONFIG})
        consumer.subscribe(["killed"])
        assert len(_consume(consumer, 20)) == 20
        consumer.commit(asynchronous=False)
        with WireClient(proc.bootstrap) as wire:
            before = wire.request(69, 1, {"group_ids": ["killed"], "include_authorized_operations": False}).groups[0]
        proc.kill()
        proc.start()
        with WireClient(proc.bootstrap) as wire:
            after = wire.request(69, 1, {"group_ids": ["killed"], "include_authorized_operations": False}).groups[0]
            assert (after.error_code, after.group_epoch, after.assignment_epoch) == \
                (0, before.group_epoch, before.assignment_epoch)
            assert [m.member_id for m in after.members] == [m.member_id for m in before.members]
        # The member goes on with its epoch; its committed offsets are there.
        committed = consumer.committed([TopicPartition("killed", p) for p in range(2)], timeout=30)
        assert sorted(tp.offset for tp in committed) == [10, 10]
        consumer.close()
    finally:
        proc.kill()


def test_range_assignor_chosen_by_the_client_and_group_deletion(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "ranged", 4)
    owners: dict[tuple[str, int], str] = {}
    lock = threading.Lock()
    config = {"group.id": "ranged", "group.remote.assignor": "range"}
    members = [Member(broker.bootstrap, name, ["ranged"], owners, lock, **config) for name in ("r1", "r2")]
    try:
        wait_for(lambda: all(len(m.owned()) == 2 for m in members), what="a balanced group")
        group = broker.groups()["ranged"]
        assert group["assignor"] == "range"
        # Range: contiguous partitions per member.
        assert sorted(tuple(sorted(m["assigned"])) for m in group["members"]) == \
            [("ranged-0", "ranged-1"), ("ranged-2", "ranged-3")]
    finally:
        for m in members:
            m.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    wait_for(lambda: broker.groups()["ranged"]["state"] == "Empty", what="the group to empty")
    admin.delete_consumer_groups(["ranged"])["ranged"].result(30)
    assert "ranged" not in broker.groups()
