"""Consumer groups with real clients over real sockets: kafka-python, confluent-kafka (librdkafka) and aiokafka
join groups, split topics, rebalance, commit and fetch offsets; the coordinator's state survives a clean
restart and a SIGKILL; the admin APIs (ListGroups, DescribeGroups, OffsetFetch, DeleteGroups) see live groups.

Several consumers in one thread are polled in turn: each client takes part in a rebalance only from its poll
loop. Helpers (client wrappers, child-process consumer) are in group_helpers.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, KafkaException
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaConsumer, OffsetAndMetadata, TopicPartition

from broker.testkit import BrokerProcess

from .conftest import wait_until
from .group_helpers import (
    BATCH,
    HEARTBEAT_MS,
    NO_PERIODIC_COMMIT_MS,
    AioKafkaThreadMember,
    ChildConsumer,
    ConfluentMember,
    KafkaPythonMember,
    Member,
    Rec,
    consume_until_balanced,
    create_topic,
    is_balanced,
    kafka_python_consumer,
    produce_keyed,
    start_staged,
)

PARTITIONS = 6
RECORDS = 600


def _close_all(members: list[Member]) -> None:
    """Close every member even if one fails; re-raise the first failure."""
    first: BaseException | None = None
    for m in members:
        try:
            m.close()
        except BaseException as exc:  # re-raised below, after the others are closed
            first = first or exc
    if first is not None:
        raise first


def _assert_exactly_once(received: list[tuple[str, Rec]], expected: dict[tuple[int, int], bytes]) -> None:
    """Every produced record was handed to exactly one member, once, with its value."""
    owners: dict[tuple[int, int], list[str]] = {}
    for name, (partition, offset, value) in received:
        owners.setdefault((partition, offset), []).append(name)
        assert expected.get((partition, offset)) == value, f"wrong record at {partition}/{offset}: {value!r}"
    duplicates = {k: v for k, v in owners.items() if len(v) > 1}
    assert not duplicates, (f"{len(duplicates)} records delivered more than once, e.g. "
                            f"{sorted(duplicates.items())[:5]}")
    missing = sorted(expected.keys() - owners.keys())
    assert not missing, f"{len(missing)} records never delivered, e.g. {missing[:5]}"


def _assert_split(assignments: dict[str, set[int]], partitions: int) -> None:
    values = list(assignments.values())
    union = set().union(*values)
    assert sum(map(len, values)) == len(union), f"assignments overlap: {assignments}"
    assert union == set(range(partitions)), f"assignments do not cover the topic: {assignments}"
    assert is_balanced(values, partitions), f"assignments are not an even split: {assignments}"


# -- 1. three consumers of one client split a topic ---------------------------------------------------------------

SYNC_CLIENTS = {
    "kafka-python": lambda b, t, g, n: KafkaPythonMember(b, t, g, n),
    "confluent-range": lambda b, t, g, n: ConfluentMember(b, t, g, n, "range"),
    "confluent-cooperative-sticky": lambda b, t, g, n: ConfluentMember(b, t, g, n, "cooperative-sticky"),
}


@pytest.mark.parametrize("client", list(SYNC_CLIENTS))
def test_three_consumers_split_topic_exactly_once(minibroker, topic_name, client):
    create_topic(minibroker, topic_name, PARTITIONS)
    expected = produce_keyed(minibroker, topic_name, RECORDS, PARTITIONS)
    group = f"g-{topic_name}"
    # The first member consumes alone before the others join: exactly-once then also checks the commits
    # made while the group rebalances.
    members, received = start_staged(lambda i: SYNC_CLIENTS[client](minibroker, topic_name, group, f"{client}-{i}"), 3)
    try:
        assignments = consume_until_balanced(members, PARTITIONS, RECORDS, received)
        _assert_split(assignments, PARTITIONS)
        _assert_exactly_once(received, expected)
    finally:
        _close_all(members)


async def _aiokafka_three_consumers(bootstrap: str, topic: str, group: str
                                    ) -> tuple[list[tuple[str, Rec]], dict[str, set[int]]]:
    from aiokafka import AIOKafkaConsumer

    consumers = {f"aiokafka-{i}": AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, client_id=f"aiokafka-{i}",
        auto_offset_reset="earliest", enable_auto_commit=True, auto_commit_interval_ms=NO_PERIODIC_COMMIT_MS,
        heartbeat_interval_ms=HEARTBEAT_MS) for i in range(3)}
    received: list[tuple[str, Rec]] = []
    assignments: dict[str, set[int]] = {}
    started: list[AIOKafkaConsumer] = []

    async def poll(name: str, consumer: AIOKafkaConsumer) -> None:
        batches = await consumer.getmany(timeout_ms=50, max_records=BATCH)
        received.extend((name, (r.partition, r.offset, r.value)) for records in batches.values() for r in records)

    try:
        # As with the other clients: the first consumes alone before the others join.
        first_name, first = next(iter(consumers.items()))
        await first.start()
        started.append(first)
        deadline = time.monotonic() + 60
        while not received and time.monotonic() < deadline:
            await poll(first_name, first)
        assert received, "the first consumer received nothing within 60 s"
        for consumer in list(consumers.values())[1:]:
            await consumer.start()
            started.append(consumer)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            for name, consumer in consumers.items():
                await poll(name, consumer)
            assignments = {name: {tp.partition for tp in c.assignment()} for name, c in consumers.items()}
            if len(received) >= RECORDS and is_balanced(list(assignments.values()), PARTITIONS):
                break
    finally:
        for consumer in started:
            await consumer.stop()
    return received, assignments


def test_three_aiokafka_consumers_split_topic_exactly_once(minibroker, topic_name):
    create_topic(minibroker, topic_name, PARTITIONS)
    expected = produce_keyed(minibroker, topic_name, RECORDS, PARTITIONS)
    received, assignments = asyncio.run(_aiokafka_three_consumers(minibroker, topic_name, f"g-{topic_name}"))
    _assert_split(assignments, PARTITIONS)
    _assert_exactly_once(received, expected)


# -- 2. one group, three different clients ------------------------------------------------------------------------

def test_mixed_client_group_with_range_assignor(minibroker, topic_name):
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AioRange
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    create_topic(minibroker, topic_name, PARTITIONS)
    expected = produce_keyed(minibroker, topic_name, RECORDS, PARTITIONS)
    group = f"g-{topic_name}"
    # The leader (whichever client it is) must decode the others' subscriptions and assign for them.
    factories: list[Callable[[], Member]] = [
        lambda: KafkaPythonMember(minibroker, topic_name, group, "kafka-python",
                                  partition_assignment_strategy=[RangePartitionAssignor]),
        lambda: ConfluentMember(minibroker, topic_name, group, "confluent", "range"),
        # aiokafka needs a running asyncio loop of its own: it lives in a thread.
        lambda: AioKafkaThreadMember(minibroker, topic_name, group, "aiokafka",
                                     partition_assignment_strategy=(AioRange,)),
    ]
    members, received = start_staged(lambda i: factories[i](), len(factories))
    try:
        assignments = consume_until_balanced(members, PARTITIONS, RECORDS, received)
        _assert_split(assignments, PARTITIONS)
        _assert_exactly_once(received, expected)
    finally:
        _close_all(members)


# -- 3. a member that dies without leaving --------------------------------------------------------------------------

def test_killed_member_partitions_move_to_survivor(minibroker, topic_name):
    partitions = 4
    everything = set(range(partitions))
    create_topic(minibroker, topic_name, partitions)
    group = f"g-{topic_name}"
    child = ChildConsumer(minibroker, topic_name, group)
    survivor: ConfluentMember | None = None
    try:
        def child_output() -> None:
            child.read_output()
            assert child.proc.poll() is None, f"child consumer exited: {child.output}"

        wait_until(lambda: (child_output(), child.assignment == everything)[1], timeout=60,
                   message="the child consumer to own every partition")
        survivor = ConfluentMember(minibroker, topic_name, group, "survivor", "range", **{"session.timeout.ms": 6000})

        def split_between_two() -> bool:
            assert survivor is not None
            survivor.poll(0.1)
            child_output()
            mine, theirs = survivor.assignment(), child.assignment or set()
            return bool(mine) and bool(theirs) and not mine & theirs and mine | theirs == everything

        wait_until(split_between_two, timeout=60, message="a stable group of two splitting the topic")
        # SIGKILL: no LeaveGroup; only the expiry of the child's 6 s session can free its partitions.
        child.kill()
        killed_at = time.monotonic()
        wait_until(lambda: survivor.poll(0.1) is not None and survivor.assignment() == everything,
                   timeout=60, message="the survivor to get every partition")
        elapsed = time.monotonic() - killed_at
        assert elapsed < 30, f"the dead member's partitions took {elapsed:.1f}s to move (session timeout: 6 s)"
    finally:
        child.kill()
        if survivor is not None:
            survivor.close()


# -- 4. committed offsets across a broker restart ------------------------------------------------------------------

def _group_consumer(bootstrap: str, group: str, topic: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "heartbeat.interval.ms": HEARTBEAT_MS})
    consumer.subscribe([topic])
    return consumer


def _consume_committing(consumer: Consumer, into: list[Rec], until: int) -> None:
    """Poll one record at a time, appending it to `into` and committing it at once, until `into` holds
    `until` records (or 60 s pass)."""
    deadline = time.monotonic() + 60
    while len(into) < until and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        into.append((msg.partition(), msg.offset(), msg.value()))
        consumer.commit(message=msg, asynchronous=False)  # commits offset + 1


def test_resume_after_restart_from_committed_offsets(minibroker_server, topic_name):
    partitions, total = 3, 300
    bootstrap = minibroker_server.bootstrap
    create_topic(bootstrap, topic_name, partitions)
    expected = produce_keyed(bootstrap, topic_name, total, partitions)
    group = f"g-{topic_name}"
    consumed: list[Rec] = []
    first = _group_consumer(bootstrap, group, topic_name)
    try:
        # Records fetched beyond the 150th are neither handed out nor committed: the next consumer must
        # start right after the last commit, not after what was fetched.
        _consume_committing(first, consumed, total // 2)
    finally:
        first.close()
    assert len(consumed) == total // 2
    minibroker_server.restart()  # same port, same data dir
    second = _group_consumer(bootstrap, group, topic_name)
    try:
        _consume_committing(second, consumed, total)
    finally:
        second.close()
    # Per partition, the two consumers together saw each record once, in order.
    for p in range(partitions):
        got = [value for partition, _, value in consumed if partition == p]
        want = [expected[(p, o)] for o in range(total // partitions)]
        assert got == want, (f"partition {p}: got {len(got)} records, first difference at index "
                             f"{next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)}")


# -- 5. static membership (KIP-345) --------------------------------------------------------------------------------

def _describe(admin: AdminClient, group: str):
    return admin.describe_consumer_groups([group])[group].result(30)


def test_static_member_restart_does_not_rebalance(minibroker, topic_name):
    partitions = 4
    session_ms = 12_000
    create_topic(minibroker, topic_name, partitions)
    group = f"g-{topic_name}"

    def static(name: str, instance: str) -> ConfluentMember:
        return ConfluentMember(minibroker, topic_name, group, name, "range",
                               **{"group.instance.id": instance, "session.timeout.ms": session_ms})

    admin = AdminClient({"bootstrap.servers": minibroker})
    a = static("static-a", "instance-a")
    b = static("static-b", "instance-b")
    a2: ConfluentMember | None = None
    try:
        def stable() -> bool:
            a.poll(0.05)
            b.poll(0.05)
            return is_balanced([a.assignment(), b.assignment()], partitions)

        wait_until(stable, timeout=60, message="two static members splitting the topic")
        before = _describe(admin, group)
        assert before.state == ConsumerGroupState.STABLE
        members_before = {m.group_instance_id: m for m in before.members}
        assert set(members_before) == {"instance-a", "instance-b"}
        a_partitions, b_partitions = a.assignment(), b.assignment()
        b_callbacks = (len(b.assign_calls), len(b.revoke_calls), len(b.lost_calls))

        # A static member's close() sends no LeaveGroup: the group keeps instance-a until its session expires.
        a.close()
        closed_at = time.monotonic()
        a2 = static("static-a2", "instance-a")

        def a2_assigned() -> bool:
            assert a2 is not None
            a2.poll(0.05)
            b.poll(0.05)
            return bool(a2.assignment())

        wait_until(a2_assigned, timeout=60, message="the restarted instance to get partitions")
        rejoined_after = time.monotonic() - closed_at
        assert rejoined_after < session_ms / 1000, "the new instance joined after the old session expired"
        # Keep both polling until the old member's session would have expired (plus slack): a broker still
        # timing the replaced member id would start a rebalance by then.
        quiet_until = closed_at + session_ms / 1000 + 2
        while time.monotonic() < quiet_until:
            a2.poll(0.05)
            b.poll(0.05)

        assert (len(b.assign_calls), len(b.revoke_calls), len(b.lost_calls)) == b_callbacks, (
            f"the other member saw a rebalance: assigned {b.assign_calls}, revoked {b.revoke_calls}, "
            f"lost {b.lost_calls}")
        assert b.assignment() == b_partitions
        assert a2.assignment() == a_partitions
        assert a2.assign_calls == [a_partitions], f"the new instance's assignments: {a2.assign_calls}"

        after = _describe(admin, group)
        assert after.state == ConsumerGroupState.STABLE
        members_after = {m.group_instance_id: m for m in after.members}
        assert set(members_after) == {"instance-a", "instance-b"}
        assert members_after["instance-b"].member_id == members_before["instance-b"].member_id
        # KIP-345: the rejoining instance gets a new member id (the old one is fenced) and the old assignment.
        assert members_after["instance-a"].member_id != members_before["instance-a"].member_id
        for instance, partitions_owned in (("instance-a", a_partitions), ("instance-b", b_partitions)):
            described = {tp.partition for tp in members_after[instance].assignment.topic_partitions}
            assert described == partitions_owned, f"{instance}: described {described}, owns {partitions_owned}"
    finally:
        _close_all([m for m in (a, b, a2) if m is not None])


# -- 6. offsets and groups survive a broker SIGKILL ------------------------------------------------------------------

def test_offsets_and_group_survive_sigkill(tmp_path, topic_name):
    partitions = 3
    broker = BrokerProcess(tmp_path / "data")  # --fsync grouped: acknowledged commits are on disk
    broker.start()
    try:
        create_topic(broker.bootstrap, topic_name, partitions)
        produce_keyed(broker.bootstrap, topic_name, 30, partitions)
        group = f"g-{topic_name}"
        tps = [TopicPartition(topic_name, p) for p in range(partitions)]
        consumer = kafka_python_consumer(topic_name, bootstrap_servers=broker.bootstrap, group_id=group,
                                         enable_auto_commit=False, heartbeat_interval_ms=HEARTBEAT_MS)
        try:
            wait_until(lambda: consumer.poll(timeout_ms=500) is not None and consumer.assignment() == set(tps),
                       timeout=60, message="the consumer to own every partition")
            committed = {tp: OffsetAndMetadata(3 + tp.partition, f"meta-{tp.partition}", 0) for tp in tps}
            consumer.commit(committed)
        finally:
            consumer.close()  # leaves: the group stays, Empty, with its offsets
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            assert admin.list_group_offsets(group)[group] == committed  # what the kill must not lose
        finally:
            admin.close()

        broker.kill()
        broker.start()  # same data dir, same port
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            assert admin.list_group_offsets(group)[group] == committed, "".join(broker.log_lines[-30:])
            listed = {g["group_id"]: g for g in admin.list_groups()}
            assert group in listed, f"group not listed after the restart: {listed}"
            assert listed[group]["protocol_type"] == "consumer"
            assert listed[group]["group_state"] == "Empty"
        finally:
            admin.close()
        # A new member of the group starts at the committed offsets.
        resumed = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
        try:
            assert {tp: resumed.committed(tp, metadata=True) for tp in tps} == committed
        finally:
            resumed.close()
    finally:
        broker.stop()


# -- 7. admin APIs against a live group ------------------------------------------------------------------------------

def test_admin_apis_on_live_and_empty_group(minibroker, topic_name):
    partitions = 3
    create_topic(minibroker, topic_name, partitions)
    produce_keyed(minibroker, topic_name, 30, partitions)
    group = f"g-{topic_name}"
    tps = [TopicPartition(topic_name, p) for p in range(partitions)]
    consumer = kafka_python_consumer(topic_name, bootstrap_servers=minibroker, group_id=group,
                                     client_id="admin-member", enable_auto_commit=False,
                                     heartbeat_interval_ms=HEARTBEAT_MS)
    admin = KafkaAdminClient(bootstrap_servers=minibroker)
    try:
        wait_until(lambda: consumer.poll(timeout_ms=500) is not None and consumer.assignment() == set(tps),
                   timeout=60, message="the consumer to own every partition")
        committed = {tp: OffsetAndMetadata(2 + 3 * tp.partition, f"m{tp.partition}", -1) for tp in tps}
        consumer.commit(committed)

        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert group in listed, listed
        assert listed[group]["protocol_type"] == "consumer"
        assert listed[group]["group_state"] == "Stable"

        described = admin.describe_groups([group])[group]
        assert described["error"] is None
        assert described["group_state"] == "Stable"
        assert described["protocol_type"] == "consumer"
        assert described["protocol_data"] == "range"  # kafka-python's first choice, its default assignors
        [member] = described["members"]
        assert member["client_id"] == "admin-member"
        assert member["client_host"] == "/127.0.0.1"
        assert member["member_assignment"]["assigned_partitions"] == [{"topic": topic_name, "partitions": [0, 1, 2]}]
        assert member["member_metadata"]["topics"] == [topic_name]

        assert admin.list_group_offsets(group)[group] == committed

        # A group with members cannot be deleted.
        assert admin.delete_groups([group]) == {group: "NonEmptyGroupError"}
        assert admin.list_group_offsets(group)[group] == committed

        consumer.close()  # LeaveGroup: the group becomes Empty
        wait_until(lambda: admin.describe_groups([group])[group]["group_state"] == "Empty", timeout=30,
                   message="the group to be Empty after the member left")
        assert admin.delete_groups([group]) == {group: "OK"}

        # Deleted with its offsets: OffsetFetch knows none, for all partitions or the ones asked about.
        assert admin.list_group_offsets(group)[group] == {}
        explicit = admin.list_group_offsets({group: tps})[group]
        assert {tp: o.offset for tp, o in explicit.items()} == {tp: -1 for tp in tps}
        assert group not in {g["group_id"] for g in admin.list_groups()}
        assert admin.describe_groups([group])[group]["group_state"] == "Dead"
    finally:
        consumer.close()
        admin.close()


def test_offsets_of_deleted_group_do_not_come_back(minibroker_server, topic_name):
    """DeleteGroups writes tombstones: after a restart the deleted group's offsets stay gone."""
    bootstrap = minibroker_server.bootstrap
    create_topic(bootstrap, topic_name, 1)
    group = f"g-{topic_name}"
    tp = TopicPartition(topic_name, 0)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        # A commit without joining (generation -1): the group only stores offsets.
        committer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
        try:
            committer.assign([tp])
            committer.commit({tp: OffsetAndMetadata(5, "", -1)})
        finally:
            committer.close()
        assert admin.list_group_offsets(group)[group][tp].offset == 5
        assert admin.delete_groups([group]) == {group: "OK"}
    finally:
        admin.close()
    minibroker_server.restart()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert admin.list_group_offsets(group)[group] == {}
        assert group not in {g["group_id"] for g in admin.list_groups()}
    finally:
        admin.close()


def test_deleting_a_topic_drops_its_committed_offsets(minibroker, topic_name):
    create_topic(minibroker, topic_name, 1)
    group = f"g-{topic_name}"
    tp = TopicPartition(topic_name, 0)
    admin = KafkaAdminClient(bootstrap_servers=minibroker)
    consumer = KafkaConsumer(bootstrap_servers=minibroker, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({tp: OffsetAndMetadata(5, "", -1)})  # a standalone commit: no subscription needed
        assert admin.list_group_offsets(group)[group][tp].offset == 5

        admin.delete_topics([topic_name])
        create_topic(minibroker, topic_name, 1)
        # The new topic of the same name starts without the old topic's position.
        assert tp not in admin.list_group_offsets(group)[group]

        [internal] = admin.delete_topics(["__consumer_offsets"], raise_errors=False)["topics"]
        assert internal["error_code"] == 42, internal  # INVALID_REQUEST: the coordinator owns that log
    finally:
        consumer.close()
        admin.close()
