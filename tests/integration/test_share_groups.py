"""KIP-932 share groups with confluent-kafka's ShareConsumer (librdkafka) against the 4.1 and 4.4 profiles: several
consumers sharing one partition get every record once, rejected records are not delivered again, released
records are redelivered up to the delivery count limit, an expired acquisition lock hands the records to
another consumer, share.auto.offset.reset comes from the group config, and acknowledged records stay
acknowledged across a broker restart."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from broker.testkit import BrokerThread
from protocol.header import ErrorCode
from tests.kafka_wire import WireClient

LOCK_MS = 3_000
LIMIT = 3


@pytest.fixture(params=["4.1", "4.4"])
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker under the 4.1 profile (ShareFetch v1) and the 4.4 one (v2, share.version 2)."""
    b = BrokerThread(tmp_path, kafka_version=request.param, group_share_record_lock_duration_ms=LOCK_MS,
                     group_share_delivery_count_limit=LIMIT, group_share_heartbeat_interval_ms=500)
    b.start()
    try:
        yield b
    finally:
        b.stop()


def setup(bootstrap: str, topic: str, group: str, count: int, partitions: int = 1) -> None:
    """The topic with `count` records, and the group set to start from the earliest offset."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, value=b"%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0


def share_consumer(bootstrap: str, group: str, topic: str) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    return consumer


def drain(consumers: list[ShareConsumer], until: Callable[[], bool], on_message: Callable, timeout: float = 60.0
          ) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "timed out"
        for consumer in consumers:
            messages = consumer.poll(0.2) or []
            for m in messages:
                if m.error() is None:
                    on_message(consumer, m)
            if messages:
                consumer.commit_sync()


def test_consumers_sharing_one_partition_get_every_record_once(broker: BrokerThread) -> None:
    setup(broker.bootstrap, "queue", "workers", 60)
    consumers = [share_consumer(broker.bootstrap, "workers", "queue") for _ in range(3)]
    got: dict[int, list[int]] = {}

    def take(consumer: ShareConsumer, m) -> None:
        got.setdefault(m.offset(), []).append(consumers.index(consumer))
        consumer.acknowledge(m)

    try:
        drain(consumers, lambda: len(got) == 60, take)
        assert sorted(got) == list(range(60)) and all(len(who) == 1 for who in got.values())
        described = AdminClient({"bootstrap.servers": broker.bootstrap})
        # One consumer may have taken every batch before the others joined (a loaded machine): wait for them
        # and their assignments (which come with a later heartbeat than the join).
        def joined_and_assigned() -> bool:
            members = broker.groups()["workers"]["members"]
            return len(members) == 3 and all(m["assigned"] for m in members)

        deadline = time.monotonic() + 30
        while not joined_and_assigned() and time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.1)
        groups = broker.groups()
        assert groups["workers"]["type"] == "share" and len(groups["workers"]["members"]) == 3
        assert len({m["assigned"][0] for m in groups["workers"]["members"]}) == 1  # the same partition
        assert described is not None
        assert broker.share_partitions()["workers"]["queue-0"]["start_offset"] == 60
    finally:
        for c in consumers:
            c.close()


def test_rejected_records_stay_rejected_and_released_ones_come_back_up_to_the_limit(broker: BrokerThread) -> None:
    setup(broker.bootstrap, "retries", "retrying", 4)
    consumer = share_consumer(broker.bootstrap, "retrying", "retries")
    deliveries: dict[int, list[int]] = {}

    def take(c: ShareConsumer, m) -> None:
        deliveries.setdefault(m.offset(), []).append(m.delivery_count())
        kind = {0: AcknowledgeType.ACCEPT, 1: AcknowledgeType.REJECT}.get(m.offset(), AcknowledgeType.RELEASE)
        c.acknowledge(m, kind)

    try:
        drain([consumer], lambda: broker.share_partitions().get("retrying", {}).get("retries-0", {})
              .get("start_offset") == 4, take)
        assert deliveries[0] == [1] and deliveries[1] == [1]
        # Released every time: delivered LIMIT times, then archived.
        assert deliveries[2] == deliveries[3] == list(range(1, LIMIT + 1))
    finally:
        consumer.close()


_HOLDER = """
import sys, time
from confluent_kafka import ShareConsumer
c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": "lockers", "share.acknowledgement.mode": "explicit"})
c.subscribe(["locks"])
while True:
    got = [m.offset() for m in c.poll(0.5) or [] if m.error() is None]
    if got:
        print(" ".join(map(str, got)), flush=True)
        time.sleep(3600)
"""


def test_an_expired_lock_hands_the_records_to_another_consumer(broker: BrokerThread) -> None:
    setup(broker.bootstrap, "locks", "lockers", 5)
    # The holder takes records and then freezes (SIGSTOP: no acknowledgement, no more fetches).
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, broker.bootstrap], stdout=subprocess.PIPE, text=True)
    try:
        held = [int(o) for o in holder.stdout.readline().split()]
        holder.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        assert held
        other = share_consumer(broker.bootstrap, "lockers", "locks")
        redelivered: dict[int, int] = {}

        def take(c: ShareConsumer, m) -> None:
            redelivered[m.offset()] = m.delivery_count()
            c.acknowledge(m)

        try:
            drain([other], lambda: set(held) <= set(redelivered), take)
            assert time.monotonic() - stopped >= LOCK_MS / 1000 - 1.0
            assert all(redelivered[o] == 2 for o in held), redelivered
        finally:
            other.close()
    finally:
        holder.send_signal(signal.SIGCONT)
        holder.kill()
        holder.wait(30)


def test_acknowledged_records_survive_a_restart(broker: BrokerThread) -> None:
    setup(broker.bootstrap, "durable-q", "durable", 20)
    consumer = share_consumer(broker.bootstrap, "durable", "durable-q")
    seen: list[int] = []

    def take(c: ShareConsumer, m) -> None:
        seen.append(m.offset())
        c.acknowledge(m)

    try:
        drain([consumer], lambda: len(seen) >= 10, take)
    finally:
        consumer.close()
    first = set(seen)
    broker.restart()
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20, 25):
        producer.produce("durable-q", value=b"%d" % i)
    producer.flush(30)
    consumer = share_consumer(broker.bootstrap, "durable", "durable-q")
    later: list[int] = []
    try:
        drain([consumer], lambda: len(first) + len(later) >= 25, lambda c, m: (later.append(m.offset()),
                                                                               c.acknowledge(m)))
    finally:
        consumer.close()
    assert not first & set(later)  # nothing acknowledged before the restart came again
    assert sorted(first | set(later)) == list(range(25))


def test_share_group_admin_apis(broker: BrokerThread) -> None:
    """DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets, ShareGroupDescribe,
    ListGroups and DeleteGroups, over the raw protocol (confluent-kafka's AdminClient has no share group
    calls)."""
    setup(broker.bootstrap, "admin-q", "admins", 10)
    # Kafka 4.1 answers AlterShareGroupOffsets with no error and no partition, and changes nothing (recorded:
    # share_group_epochs); 4.2+ refuse it for a group with members and alter an empty group's start offset.
    alters = broker.config().kafka_version != "4.1"
    consumer = share_consumer(broker.bootstrap, "admins", "admin-q")
    seen: list[int] = []
    try:
        drain([consumer], lambda: len(seen) >= 10,
              lambda c, m: (seen.append(m.offset()), c.acknowledge(m, AcknowledgeType.ACCEPT if m.offset() < 6
                                                                  else AcknowledgeType.RELEASE)))
        with WireClient(broker.bootstrap) as wire:
            described = wire.request(77, 1, {"group_ids": ["admins"], "include_authorized_operations": False})
            group = described.groups[0]
            assert (group.error_code, group.group_state, group.assignor_name, len(group.members)) == \
                (0, "Stable", "simple", 1)
            assert wire.request(91, 0, {"group_id": "admins", "topics": [
                {"topic_name": "admin-q", "partitions": [{"partition_index": 0, "start_offset": 8}]}]}
            ).error_code == (ErrorCode.NON_EMPTY_GROUP if alters else ErrorCode.NONE)
    finally:
        consumer.close()
    with WireClient(broker.bootstrap) as wire:
        def start_offset() -> int:
            answer = wire.request(90, 0, {"groups": [{"group_id": "admins", "topics": None}]})
            return answer.groups[0].topics[0].partitions[0].start_offset

        # The start offset of the share-group state (Kafka's: one write behind the acknowledgements, pinned by
        # the reference scenario share_group_offsets_and_lag): at most where the released records are.
        broker.wait_until(lambda: 0 <= start_offset() <= 6 or None, 10, "the share-group state")
        before = start_offset()
        altered = wire.request(91, 0, {"group_id": "admins", "topics": [
            {"topic_name": "admin-q", "partitions": [{"partition_index": 0, "start_offset": 8}]}]})
        if alters:
            assert altered.error_code == 0 and altered.responses[0].partitions[0].error_code == 0
            assert start_offset() == 8
        else:
            assert (altered.error_code, altered.responses) == (0, [])
            assert start_offset() == before
        listed = wire.request(16, 5, {"states_filter": [], "types_filter": ["share"]})
        assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == [("admins", "share", "Empty")]
        deleted = wire.request(92, 0, {"group_id": "admins", "topics": [{"topic_name": "admin-q"}]})
        assert deleted.responses[0].error_code == 0
        answer = wire.request(90, 0, {"groups": [{"group_id": "admins", "topics": [
            {"topic_name": "admin-q", "partitions": [0]}]}]})
        assert answer.groups[0].topics[0].partitions[0].start_offset == -1
        assert wire.request(42, 2, {"groups_names": ["admins"]}).results[0].error_code == 0
        gone = wire.request(77, 1, {"group_ids": ["admins"], "include_authorized_operations": False})
        assert gone.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_acknowledgements_survive_sigkill(tmp_path: Path) -> None:
    from broker.testkit import BrokerProcess

    proc = BrokerProcess(tmp_path, "--kafka-version", "4.1").start()
    try:
        setup(proc.bootstrap, "killed-q", "killed", 12)
        consumer = share_consumer(proc.bootstrap, "killed", "killed-q")
        seen: list[int] = []
        try:
            drain([consumer], lambda: len(seen) >= 6, lambda c, m: (seen.append(m.offset()), c.acknowledge(m)))
        finally:
            consumer.close()
        proc.kill()
        proc.start()
        consumer = share_consumer(proc.bootstrap, "killed", "killed-q")
        later: list[int] = []
        try:
            drain([consumer], lambda: len(set(seen) | set(later)) >= 12,
                  lambda c, m: (later.append(m.offset()), c.acknowledge(m)))
        finally:
            consumer.close()
        assert not set(seen) & set(later) and sorted(set(seen) | set(later)) == list(range(12))
    finally:
        proc.kill()


def test_a_consumer_carries_on_across_a_broker_restart(broker: BrokerThread) -> None:
    """The broker restarts while the consumer runs: the consumer rejoins by itself and gets the rest, and no
    record it had acknowledged comes again."""
    setup(broker.bootstrap, "midway", "midway-g", 20)
    consumer = share_consumer(broker.bootstrap, "midway-g", "midway")
    acked: list[int] = []
    try:
        drain([consumer], lambda: len(acked) >= 10, lambda c, m: (acked.append(m.offset()), c.acknowledge(m)))
        consumer.commit_sync()
        broker.restart()
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(20, 25):
            producer.produce("midway", value=b"%d" % i)
        producer.flush(30)
        before = set(acked)
        drain([consumer], lambda: set(range(25)) <= set(acked),
              lambda c, m: (acked.append(m.offset()), c.acknowledge(m)), timeout=90)
        assert not before & set(acked[len(before):])
    finally:
        consumer.close()


def test_read_committed_share_group_skips_aborted_transactions(broker: BrokerThread) -> None:
    """share.isolation.level=read_committed: records of an aborted transaction are never delivered (they are
    archived), those of a committed one are, and nothing past an open transaction; read_uncommitted gets all."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("txn-queue", 1, 1)])["txn-queue"].result(30)
    for group, level in (("committed-only", "read_committed"), ("everything", "read_uncommitted")):
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("share.isolation.level", level, incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "share-txn"})
    producer.init_transactions(30)
    for outcome in ("aborted", "committed"):
        producer.begin_transaction()
        for i in range(3):
            producer.produce("txn-queue", value=f"{outcome}-{i}".encode())
        producer.flush(30)
        if outcome == "aborted":
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
    producer.begin_transaction()  # left open: beyond the last stable offset
    producer.produce("txn-queue", value=b"open-0")
    producer.flush(30)
    values: dict[str, set[str]] = {"committed-only": set(), "everything": set()}
    consumers = {group: share_consumer(broker.bootstrap, group, "txn-queue") for group in values}
    try:
        for group, consumer in consumers.items():
            wanted = {f"committed-{i}" for i in range(3)} | (
                set() if group == "committed-only" else {f"aborted-{i}" for i in range(3)} | {"open-0"})
            drain([consumer], lambda g=group, w=wanted: values[g] >= w,
                  lambda c, m, g=group: (values[g].add(m.value().decode()), c.acknowledge(m)))
        assert values["committed-only"] == {f"committed-{i}" for i in range(3)}
        # The aborted batch and both markers are done: the start offset is at the open transaction.
        start = broker.share_partitions()["committed-only"]["txn-queue-0"]["start_offset"]
        assert start == 8, start
    finally:
        for consumer in consumers.values():
            consumer.close()
        producer.abort_transaction(30)
