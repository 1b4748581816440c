"""KIP-848's online migration with Apache Kafka's Java client (tests/java/src/minibroker/check/MigrationChecks.java):
a classic-protocol KafkaConsumer alone in a classic group, a consumer-protocol KafkaConsumer joining it (the
upgrade), both consuming, then the consumer-protocol one leaving (the downgrade); every record read once, with
eager and cooperative classic members. Against minibroker under the 4.2 and 4.4 profiles, and against a live
Kafka 4.4, where the same checks must hold."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable

import pytest

from tests.java import jvm


@pytest.mark.parametrize("profile", [
    pytest.param("4.2", marks=pytest.mark.minibroker(kafka_version="4.2")),
    pytest.param("4.4", marks=pytest.mark.minibroker(kafka_version="4.4"))])
def test_java_consumers_of_both_protocols_share_a_group(profile: str, minibroker: str) -> None:
    results = jvm.require(jvm.run_checks, "4.4", minibroker, ["migration."])
    assert [r.check for r in results] == ["migration.eager", "migration.cooperative"]
    assert all(r.ok for r in results), jvm.failures(results)


def test_the_same_checks_hold_against_kafka(kafka_reference) -> None:
    kafka = kafka_reference(release="4.4")
    results = jvm.require(jvm.run_checks, "4.4", kafka.bootstrap, ["migration."])
    assert [r.check for r in results] == ["migration.eager", "migration.cooperative"]
    assert all(r.ok for r in results), jvm.failures(results)


class JavaMember:
    """minibroker.check.GroupMember in its own JVM: a Java KafkaConsumer of the consumer protocol, its JSON lines
    (what it consumed, what it owns) read by a thread; it leaves the group when its stdin is closed."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        classes = jvm.build("4.4", jvm.sources())
        self.proc = subprocess.Popen(
            jvm.command("4.4", classes, "minibroker.check.GroupMember", bootstrap, topic, group, "consumer", "java"),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.consumed: list[str] = []
        self.owned: list[int] = []
        self.closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            self.consumed += event.get("consumed", [])
            self.owned = event.get("owned", self.owned)
            self.closed = self.closed or event.get("closed", False)

    def leave(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(60)
        finally:
            self._reader.join(10)
        assert self.closed, self.proc.stderr.read() if self.proc.stderr else ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


class ConfluentMember:
    """confluent-kafka's classic consumer: commits what it read after every poll and when partitions go."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        from confluent_kafka import Consumer

        self.consumed: list[str] = []
        self.owned: set[int] = set()
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "confluent",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "partition.assignment.strategy": "range", "session.timeout.ms": 10000,
                                  "heartbeat.interval.ms": 300})
        self.consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, consumer: object, partitions: list) -> None:
        self.owned = {p.partition for p in partitions}

    def _revoked(self, consumer: object, partitions: list) -> None:
        self._commit()
        self.owned = set()

    def _commit(self) -> None:
        from confluent_kafka import KafkaException

        try:
            self.consumer.commit(asynchronous=False)
        except KafkaException as exc:  # nothing read since the last commit
            if "NO_OFFSET" not in str(exc):
                raise

    def poll(self) -> None:
        got = [m for m in self.consumer.consume(50, 0.1) if m.error() is None]
        self.consumed += [m.value().decode() for m in got]
        if got:
            self._commit()

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonMember:
    """kafka-python's classic consumer: the same (what it read is committed before its next poll, in which a
    rebalance may take partitions away; its listener only follows what it owns)."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        self.consumed: list[str] = []
        self.owned: set[int] = set()
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id="kafka-python",
                                      auto_offset_reset="earliest", enable_auto_commit=False,
                                      session_timeout_ms=10000, heartbeat_interval_ms=300)
        member = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: list) -> None:
                member.owned -= {tp.partition for tp in revoked}

            def on_partitions_assigned(self, assigned: list) -> None:
                member.owned = {tp.partition for tp in assigned}

        self.consumer.subscribe([topic], listener=Listener())

    def poll(self) -> None:
        got = [r for records in self.consumer.poll(timeout_ms=100).values() for r in records]
        self.consumed += [r.value.decode() for r in got]
        if got:
            self.consumer.commit()

    def close(self) -> None:
        self.consumer.close()


@pytest.mark.minibroker(kafka_version="4.4")
def test_python_classic_consumers_meet_a_java_consumer_protocol_member(minibroker_server) -> None:
    """confluent-kafka's and kafka-python's classic consumers share a group; a Java consumer-protocol member joins
    it (the group becomes a consumer group, they stay in it as classic members) and leaves it (classic again):
    every record read once, by one of them."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = minibroker_server
    topic, group = "migrating-orders", "migrating-billing"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    produced: list[str] = []

    def produce(label: str) -> None:
        for i in range(40):
            produced.append(f"{label}-{i}")
            producer.produce(topic, produced[-1].encode(), partition=i % 4)
        assert producer.flush(30) == 0

    python = [ConfluentMember(broker.bootstrap, topic, group), KafkaPythonMember(broker.bootstrap, topic, group)]
    java: JavaMember | None = None

    def consumed() -> list[str]:
        return [v for m in python for v in m.consumed] + (java.consumed if java is not None else [])

    def poll_until(what: str, done: Callable[[], bool], timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {broker.groups().get(group)}"
            for member in python:
                member.poll()

    try:
        produce("a")
        poll_until("the classic group's two members to read 40 records",
                   lambda: len(consumed()) >= 40 and all(len(m.owned) == 2 for m in python))
        assert broker.groups()[group]["type"] == "classic"

        java = JavaMember(broker.bootstrap, topic, group)
        produce("b")
        poll_until("three members of two protocols to share the partitions and read 80 records",
                   lambda: len(consumed()) >= 80 and bool(java.owned) and all(m.owned for m in python)
                   and sum(len(m.owned) for m in python) + len(java.owned) == 4)
        upgraded = broker.groups()[group]
        assert upgraded["type"] == "consumer"
        assert sorted(m["protocol"] for m in upgraded["members"]) == ["classic", "classic", "consumer"]

        java.leave()
        produce("c")
        poll_until("the classic members to share every partition again and read 120 records",
                   lambda: len(consumed()) >= 120 and sum(len(m.owned) for m in python) == 4)
        downgraded = broker.groups()[group]
        assert downgraded["type"] == "classic" and len(downgraded["members"]) == 2
        assert sorted(consumed()) == sorted(produced)  # every record, none twice
    finally:
        if java is not None:
            java.kill()
        for member in python:
            member.close()
