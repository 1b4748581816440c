"""The partition side of transactions against a running broker: transactional batches produced over a
raw socket (producer id from a real InitProducerId), markers appended in the broker's thread with
`MarkerWriter.append_marker` (no transaction coordinator involved: the broker runs with Kafka's
transaction.partition.verification.enable=false, which accepts such batches), then Fetch/ListOffsets/
DescribeProducers over the wire and real consumers (kafka-python, confluent-kafka) in both isolation
levels; the state survives a restart from its snapshot, from an older snapshot plus replay, and from the
log alone."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

from broker.log.producer_snapshot import SNAPSHOT_NAME
from broker.testkit import BrokerThread
from protocol.records import Record, build_batch, decode_records, iter_batches
from protocol.schema import message
from tests.integration.conftest import wait_until
from tests.kafka_wire import WireClient

NONE = 0
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
TRANSACTION_COORDINATOR_FENCED = 52
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
UNKNOWN_TOPIC_OR_PARTITION = 3
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
TXN_ID = "txn-read-committed"
# Data timestamps after the markers' (wall clock): timestamp lookups then land on data, not on markers. Set
# when each test starts (set at import, it fell behind the clock when a long run reached this module late).
T0 = 0


@pytest.fixture
def minibroker_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    global T0
    T0 = int(time.time() * 1000) + 600_000
    with BrokerThread(tmp_path_factory.mktemp("minibroker"), transaction_partition_verification_enable=False) as b:
        yield b


# --- wire helpers ---------------------------------------------------------------------------------------

def _batch(pid: int, epoch: int, seq: int, values: list[bytes], ts: int, transactional: bool = True) -> bytes:
    return build_batch([Record(i, 0, None, v) for i, v in enumerate(values)], base_timestamp=ts,
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=transactional)


def _produce(c: WireClient, topic: str, batch: bytes, transactional_id: str | None = TXN_ID) -> Any:
    resp = c.request(0, 9, {"transactional_id": transactional_id, "acks": -1, "timeout_ms": 30000,
                            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
    return resp.responses[0].partition_responses[0]


def _fetch_body(topic: str, offset: int, isolation: int, max_wait_ms: int = 0, min_bytes: int = 0) -> dict:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": 1 << 20,
            "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def _fetch(c: WireClient, topic: str, offset: int, isolation: int) -> Any:
    return c.request(1, 12, _fetch_body(topic, offset, isolation)).responses[0].partitions[0]


def _list_offset(c: WireClient, topic: str, timestamp: int, isolation: int) -> tuple[int, int]:
    resp = c.request(2, 7, {"replica_id": -1, "isolation_level": isolation, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}]}]})
    p = resp.topics[0].partitions[0]
    assert p.error_code == NONE
    return p.timestamp, p.offset


def _describe_producers(c: WireClient, topic: str, partitions: list[int]) -> Any:
    correlation = c.send(61, 0, {"topics": [{"name": topic, "partition_indexes": partitions}]})
    (size,) = struct.unpack(">i", c._recv(4))
    frame = c._recv(size)
    assert struct.unpack_from(">i", frame)[0] == correlation
    return message("DescribeProducersResponse").decode(0, frame, 5)  # response header v1 (flexible)


def _stored(records: bytes) -> list[tuple[int, bool, list[bytes | None]]]:
    """(base offset, is control, values) of each returned batch."""
    out = []
    for header, start, end in iter_batches(records):
        out.append((header.base_offset, header.is_control,
                    [r.value for r in decode_records(records[start:end])] if not header.is_control else []))
    return out


def _marker(broker: Any, topic: str, pid: int, epoch: int, commit: bool, coordinator_epoch: int = 0
            ) -> tuple[int, int]:
    def run(state: Any) -> tuple[int, int]:
        return state.markers.append_marker(state.topics.partition(topic, 0), pid, epoch, coordinator_epoch, commit,
                                           state.now_ms())
    return broker.call(run)


def _setup(broker: Any, c: WireClient, topic: str) -> tuple[int, int]:
    """Offsets: 0-2 a (p1, committed at 3), 4-5 b (p2, aborted at 6), 7 c (plain), 8 d (p1, open)."""
    c.create_topic(topic)
    p1 = c.init_producer_id().producer_id
    p2 = c.init_producer_id().producer_id
    assert _produce(c, topic, _batch(p1, 0, 0, [b"a1", b"a2", b"a3"], T0 + 1)).base_offset == 0
    assert _marker(broker, topic, p1, 0, True) == (NONE, 3)
    assert _produce(c, topic, _batch(p2, 0, 0, [b"b1", b"b2"], T0 + 2)).base_offset == 4
    assert _marker(broker, topic, p2, 0, False) == (NONE, 6)
    assert _produce(c, topic, build_batch([Record(0, 0, None, b"c1")], base_timestamp=T0 + 3)).base_offset == 7
    assert _produce(c, topic, _batch(p1, 0, 3, [b"d1"], T0 + 9)).base_offset == 8
    return p1, p2


# --- tests ----------------------------------------------------------------------------------------------

def test_fetch_list_offsets_and_describe_producers(minibroker_server, topic_name):
    with WireClient(minibroker_server.bootstrap) as c:
        p1, p2 = _setup(minibroker_server, c, topic_name)

        committed = _fetch(c, topic_name, 0, READ_COMMITTED)
        assert (committed.error_code, committed.high_watermark, committed.last_stable_offset) == (NONE, 9, 8)
        assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [(p2, 4)]
        assert _stored(committed.records) == [(0, False, [b"a1", b"a2", b"a3"]), (3, True, []),
                                              (4, False, [b"b1", b"b2"]), (6, True, []), (7, False, [b"c1"])]
        # From 7 on, no aborted transaction overlaps what is returned; at the LSO nothing is returned.
        later = _fetch(c, topic_name, 7, READ_COMMITTED)
        assert (later.aborted_transactions, [b[0] for b in _stored(later.records)]) == ([], [7])
        at_lso = _fetch(c, topic_name, 8, READ_COMMITTED)
        assert (at_lso.error_code, at_lso.aborted_transactions) == (NONE, [])
        assert not at_lso.records

        uncommitted = _fetch(c, topic_name, 0, READ_UNCOMMITTED)
        assert (uncommitted.high_watermark, uncommitted.last_stable_offset) == (9, 8)
        assert uncommitted.aborted_transactions is None
        assert [b[0] for b in _stored(uncommitted.records)] == [0, 3, 4, 6, 7, 8]

        assert _list_offset(c, topic_name, -1, READ_COMMITTED) == (-1, 8)
        assert _list_offset(c, topic_name, -1, READ_UNCOMMITTED) == (-1, 9)
        assert _list_offset(c, topic_name, -2, READ_COMMITTED) == (-1, 0)
        # Lookups landing at or past the last fetchable offset find nothing (Kafka's ReplicaManager).
        assert _list_offset(c, topic_name, T0 + 9, READ_COMMITTED) == (-1, -1)
        assert _list_offset(c, topic_name, T0 + 9, READ_UNCOMMITTED) == (T0 + 9, 8)
        assert _list_offset(c, topic_name, -3, READ_COMMITTED) == (-1, -1)
        assert _list_offset(c, topic_name, -3, READ_UNCOMMITTED) == (T0 + 9, 8)
        assert _list_offset(c, topic_name, T0 + 3, READ_COMMITTED) == (T0 + 3, 7)

        described = _describe_producers(c, topic_name, [0, 5])
        ok, unknown = described.topics[0].partitions
        assert (ok.partition_index, ok.error_code, unknown.partition_index, unknown.error_code) == (
            0, NONE, 5, UNKNOWN_TOPIC_OR_PARTITION)
        producers = {p.producer_id: p for p in ok.active_producers}
        assert (producers[p1].producer_epoch, producers[p1].last_sequence, producers[p1].coordinator_epoch,
                producers[p1].current_txn_start_offset, producers[p1].last_timestamp) == (0, 3, 0, 8, T0 + 9)
        assert (producers[p2].last_sequence, producers[p2].current_txn_start_offset) == (1, -1)
        assert _describe_producers(c, "no-such-topic", [0]).topics[0].partitions[0].error_code == \
            UNKNOWN_TOPIC_OR_PARTITION

        # The commit marker moves the LSO to the high watermark.
        assert _marker(minibroker_server, topic_name, p1, 0, True) == (NONE, 9)
        done = _fetch(c, topic_name, 8, READ_COMMITTED)
        assert (done.last_stable_offset, done.high_watermark, [b[0] for b in _stored(done.records)]) == (10, 10, [8, 9])
        assert _list_offset(c, topic_name, -1, READ_COMMITTED) == (-1, 10)


def test_produce_and_marker_validation(minibroker_server, topic_name):
    broker = minibroker_server
    with WireClient(broker.bootstrap) as c:
        c.create_topic(topic_name)
        pid = c.init_producer_id().producer_id
        no_txn_id = _produce(c, topic_name, _batch(pid, 0, 0, [b"x"], T0), transactional_id=None)
        assert no_txn_id.error_code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert _produce(c, topic_name, _batch(pid, 0, 0, [b"x"], T0)).error_code == NONE
        # A plain idempotent batch while the producer's transaction is open: INVALID_TXN_STATE, not stored.
        plain = _produce(c, topic_name, _batch(pid, 0, 1, [b"y"], T0, transactional=False), transactional_id=None)
        assert plain.error_code == INVALID_TXN_STATE
        assert _produce(c, topic_name, _batch(pid, 0, 1, [b"y"], T0)).base_offset == 1
        assert _produce(c, topic_name, _batch(pid, 0, 1, [b"y"], T0)).base_offset == 1  # duplicate
        assert c.list_latest(topic_name) == 2
        # Markers: the coordinator bumps the epoch when it aborts; an older epoch or coordinator is fenced.
        assert _marker(broker, topic_name, pid, 1, False, coordinator_epoch=3) == (NONE, 2)
        assert _marker(broker, topic_name, pid, 0, True, coordinator_epoch=3) == (INVALID_PRODUCER_EPOCH, -1)
        assert _marker(broker, topic_name, pid, 1, True, coordinator_epoch=2) == (TRANSACTION_COORDINATOR_FENCED, -1)
        assert _marker(broker, topic_name, pid, 1, True, coordinator_epoch=3) == (NONE, 3)  # no open txn: fine
        assert _produce(c, topic_name, _batch(pid, 0, 2, [b"z"], T0)).error_code == INVALID_PRODUCER_EPOCH
        fetched = _fetch(c, topic_name, 0, READ_COMMITTED)
        assert (fetched.last_stable_offset, fetched.high_watermark) == (4, 4)
        assert [(a.producer_id, a.first_offset) for a in fetched.aborted_transactions] == [(pid, 0)]
        # Markers go to internal topics too (transactional offset commits in __consumer_offsets).

        def on_offsets(state: Any) -> tuple[int, int]:
            partition = state.groups.runtime.topic().partitions[0]
            return state.markers.append_marker(partition, pid, 1, 3, False, state.now_ms())
        assert broker.call(on_offsets) == (NONE, 0)


def test_read_committed_fetch_waits_for_the_marker(minibroker_server, topic_name):
    broker = minibroker_server
    with WireClient(broker.bootstrap) as c, WireClient(broker.bootstrap) as poller:
        p1, _ = _setup(broker, c, topic_name)
        # Nothing below the LSO from 8: a read_committed long poll returns empty after its wait...
        short = poller.request(1, 12, _fetch_body(topic_name, 8, READ_COMMITTED, max_wait_ms=200, min_bytes=1))
        assert not short.responses[0].partitions[0].records
        # ...while read_uncommitted gets the open transaction's batch at once.
        now = poller.request(1, 12, _fetch_body(topic_name, 8, READ_UNCOMMITTED, max_wait_ms=30000, min_bytes=1))
        assert [b[0] for b in _stored(now.responses[0].partitions[0].records)] == [8]

        correlation = poller.send(1, 12, _fetch_body(topic_name, 8, READ_COMMITTED, max_wait_ms=60000, min_bytes=1))
        wait_until(lambda: broker.call(lambda s: s.appends.event.statistics().tasks_waiting) >= 1,
                   message="the fetch to park")
        started = time.monotonic()
        assert _marker(broker, topic_name, p1, 0, True) == (NONE, 9)
        woken = poller.receive(1, 12, correlation).responses[0].partitions[0]
        assert time.monotonic() - started < 30
        assert (woken.last_stable_offset, [b[0] for b in _stored(woken.records)]) == (10, [8, 9])


def _kafka_python_values(bootstrap: str, topic: str, isolation: str, last: bytes) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             auto_offset_reset="earliest", group_id=None)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        values: list[bytes] = []

        def poll() -> bool:
            for records in consumer.poll(timeout_ms=200).values():
                values.extend(r.value for r in records)
            return last in values
        wait_until(poll, message=f"{last!r} with {isolation}")
        return values
    finally:
        consumer.close()


def _confluent_values(bootstrap: str, topic: str, isolation: str, last: bytes) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "rc-test", "isolation.level": isolation,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []

        def poll() -> bool:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
            return last in values
        wait_until(poll, message=f"{last!r} with {isolation}")
        return values
    finally:
        consumer.close()


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_real_consumers(minibroker_server, topic_name, client):
    consume = _kafka_python_values if client == "kafka-python" else _confluent_values
    broker = minibroker_server
    with WireClient(broker.bootstrap) as c:
        p1, _ = _setup(broker, c, topic_name)
        # Everything before c1 is delivered before it: at c1 each consumer has seen all it will see.
        assert consume(broker.bootstrap, topic_name, "read_committed", b"c1") == [b"a1", b"a2", b"a3", b"c1"]
        assert consume(broker.bootstrap, topic_name, "read_uncommitted", b"d1") == [
            b"a1", b"a2", b"a3", b"b1", b"b2", b"c1", b"d1"]
        assert _marker(broker, topic_name, p1, 0, True) == (NONE, 9)
        assert consume(broker.bootstrap, topic_name, "read_committed", b"d1") == [b"a1", b"a2", b"a3", b"c1", b"d1"]


@pytest.mark.parametrize("recovery", ["snapshot", "older-snapshot", "no-snapshot"])
def test_state_survives_a_restart(minibroker_server, topic_name, recovery):
    broker = minibroker_server
    with WireClient(broker.bootstrap) as c:
        c.create_topic(topic_name)
        p1 = c.init_producer_id().producer_id
        p2 = c.init_producer_id().producer_id
        assert _produce(c, topic_name, _batch(p1, 0, 0, [b"a1"], T0)).base_offset == 0
        assert _marker(broker, topic_name, p1, 0, False, coordinator_epoch=2) == (NONE, 1)
        assert _produce(c, topic_name, _batch(p2, 0, 0, [b"b1"], T0)).base_offset == 2
        # The state as of offset 3: an aborted transaction and an open one.
        older = broker.call(lambda s: s.topics.partition(topic_name, 0).producers.snapshot(3))
        assert _produce(c, topic_name, _batch(p1, 0, 1, [b"a2"], T0)).base_offset == 3
        assert _produce(c, topic_name, build_batch([Record(0, 0, None, b"c1")], base_timestamp=T0)).base_offset == 4
        assert _marker(broker, topic_name, p1, 0, False, coordinator_epoch=2) == (NONE, 5)
        assert _produce(c, topic_name, _batch(p1, 0, 2, [b"a3"], T0)).base_offset == 6
        before = _fetch(c, topic_name, 0, READ_COMMITTED)
        state_before = broker.call(lambda s: s.topics.partition(topic_name, 0).producers.snapshot(7))

    broker.stop()
    snapshot = broker.data_dir / f"{topic_name}-0" / SNAPSHOT_NAME
    assert snapshot.exists()  # written on close
    if recovery == "older-snapshot":
        snapshot.write_bytes(older)
    elif recovery == "no-snapshot":
        snapshot.unlink()
    broker.start()

    assert broker.call(lambda s: s.topics.partition(topic_name, 0).producers.snapshot(7)) == state_before
    with WireClient(broker.bootstrap) as c:
        after = _fetch(c, topic_name, 0, READ_COMMITTED)
        assert (after.last_stable_offset, after.high_watermark) == (before.last_stable_offset, 7) == (2, 7)
        assert after.aborted_transactions == before.aborted_transactions
        assert [(a.producer_id, a.first_offset) for a in after.aborted_transactions] == [(p1, 0)]
        assert _marker(broker, topic_name, p1, 0, True, coordinator_epoch=1) == (TRANSACTION_COORDINATOR_FENCED, -1)
        assert _marker(broker, topic_name, p2, 0, True) == (NONE, 7)
        assert _marker(broker, topic_name, p1, 0, True, coordinator_epoch=2) == (NONE, 8)
        assert consume_all(broker.bootstrap, topic_name) == [b"b1", b"c1", b"a3"]
        full = _fetch(c, topic_name, 0, READ_COMMITTED)
        assert [(a.producer_id, a.first_offset) for a in full.aborted_transactions] == [(p1, 0), (p1, 3)]


def consume_all(bootstrap: str, topic: str) -> list[bytes]:
    return _kafka_python_values(bootstrap, topic, "read_committed", b"a3")
