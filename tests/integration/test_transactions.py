"""Transactions end to end with real clients over real sockets: the transaction coordinator (InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, markers), read_committed fetches (LSO, aborted
transactions), transactional offset commits in the group coordinator, fencing of zombies, the abort of a
transaction whose producer vanished, commits that survive a SIGKILL, and recovery of a transaction found in
PrepareCommit/PrepareAbort at startup.

Records are compared as exact (partition, offset, value) sets: offsets also check that each transaction left
exactly one marker per partition. Helpers are in txn_helpers.py.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence

import pytest
import trio
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka import KafkaAdminClient, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KpTopicPartition

from broker.app import Broker
from broker.config.options import BrokerConfig, Listener
from broker.server.dispatch import version_profile
from broker.testkit import BrokerProcess
from coordinator.txn import TxnState
from protocol.header import ErrorCode

from .conftest import wait_until
from .group_helpers import create_topic, kafka_python_consumer
from .txn_helpers import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    READERS,
    ChildTxnProducer,
    Reader,
    Rec,
    TxnAdmin,
    end_offsets,
    layout,
    produce_plain,
    read_confluent,
)

FENCED_CODES = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


def _txn_producer(bootstrap: str, txn_id: str, **config: object) -> Producer:
    settings: dict[str, object] = {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5}
    settings.update(config)
    producer = Producer(settings)
    producer.init_transactions(30)
    return producer


def _produce(producer: Producer, topic: str, records: Sequence[tuple[int, bytes]]) -> None:
    """Produce inside the open transaction and wait until every record is in the log."""
    errors: list[KafkaError] = []
    for partition, value in records:
        producer.produce(topic, value=value, partition=partition,
                         on_delivery=lambda err, msg: errors.append(err) if err is not None else None)
    assert producer.flush(30) == 0, "records left undelivered"
    assert not errors, errors[:3]


def _values(tag: str, partitions: Sequence[int], count: int) -> list[tuple[int, bytes]]:
    return [(partitions[i % len(partitions)], f"{tag}-{i}".encode()) for i in range(count)]


# -- 1. committed and aborted transactions, each client -------------------------------------------------------------

def _plan(tag: str) -> list[tuple[list[tuple[int, bytes]], bool]]:
    """Four transactions of five records over partitions 0 and 1; the third is aborted."""
    return [([(j % 2, f"{tag}-t{t}-r{j}".encode()) for j in range(5)], t != 2) for t in range(4)]


def _run_confluent(bootstrap: str, topic: str, txn_id: str, plan: list) -> None:
    producer = _txn_producer(bootstrap, txn_id)
    for records, commit in plan:
        producer.begin_transaction()
        _produce(producer, topic, records)  # flushed: an abort must find the records in the log
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def _run_kafka_python(bootstrap: str, topic: str, txn_id: str, plan: list) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, linger_ms=5)
    try:
        producer.init_transactions()
        for records, commit in plan:
            producer.begin_transaction()
            futures = [producer.send(topic, value=value, partition=partition) for partition, value in records]
            producer.flush()
            for future in futures:
                future.get(timeout=30)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close()


def _run_aiokafka(bootstrap: str, topic: str, txn_id: str, plan: list) -> None:
    from aiokafka import AIOKafkaProducer

    async def main() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, enable_idempotence=True,
                                    linger_ms=5)
        await producer.start()
        try:
            for records, commit in plan:
                await producer.begin_transaction()
                futures = [await producer.send(topic, value=value, partition=partition)
                           for partition, value in records]
                await asyncio.gather(*futures)
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(main())


PRODUCERS: dict[str, Callable[[str, str, str, list], None]] = {
    "confluent": _run_confluent, "kafka-python": _run_kafka_python, "aiokafka": _run_aiokafka,
}


@pytest.mark.parametrize("client", list(PRODUCERS))
def test_committed_and_aborted_transactions(minibroker, topic_name, client):
    create_topic(minibroker, topic_name, 2)
    txn_id = f"tx-{topic_name}"
    plan = _plan(client)
    PRODUCERS[client](minibroker, topic_name, txn_id, plan)

    committed, everything, ends = layout(plan)
    assert end_offsets(minibroker, topic_name, ends) == ends, "not one marker per partition and transaction"
    # The producing client's own consumer, and librdkafka's for the other two.
    for reader in sorted({client, "confluent"}):
        got = READERS[reader](minibroker, topic_name, ends, READ_COMMITTED)
        assert got == committed, f"{reader} read_committed: {got}"
        got = READERS[reader](minibroker, topic_name, ends, READ_UNCOMMITTED)
        assert got == everything, f"{reader} read_uncommitted: {got}"

    admin = TxnAdmin(minibroker)
    try:
        described = admin.describe(txn_id)
        assert (described.state.value, described.producer_epoch, described.topic_partitions) == (
            "CompleteCommit", 0, set())
    finally:
        admin.close()


# -- 2. consume-transform-produce, exactly once ----------------------------------------------------------------------

INPUT_RECORDS = 60
CTP_BATCH = 10
ABORTED_BATCH = 2  # the third transaction is aborted; its input is processed again from the committed offsets


def _ctp_setup(bootstrap: str, topic: str) -> tuple[str, dict[int, list[bytes]]]:
    out_topic = f"{topic}-out"
    create_topic(bootstrap, topic, 2)
    create_topic(bootstrap, out_topic, 2)
    records = produce_plain(bootstrap, topic, _values("in", [0, 1], INPUT_RECORDS))
    inputs: dict[int, list[bytes]] = {0: [], 1: []}
    for partition, _, value in records:
        inputs[partition].append(value)
    return out_topic, inputs


def _transform(value: bytes) -> bytes:
    return b"out-" + value


def _ctp_verify(bootstrap: str, group: str, topic: str, out_topic: str, inputs: dict[int, list[bytes]],
                aborted_outputs: list[tuple[int, bytes]]) -> None:
    """The output under read_committed is each input record transformed exactly once, in input order per
    partition; read_uncommitted adds exactly the aborted batch; the group committed the input end offsets."""
    assert aborted_outputs, "the aborted transaction produced nothing"
    ends = end_offsets(bootstrap, out_topic, [0, 1])
    committed = read_confluent(bootstrap, out_topic, ends, READ_COMMITTED)
    by_partition = {p: [v for q, _, v in committed if q == p] for p in (0, 1)}
    assert by_partition == {p: [_transform(v) for v in values] for p, values in inputs.items()}
    everything = read_confluent(bootstrap, out_topic, ends, READ_UNCOMMITTED)
    extra = Counter((p, v) for p, _, v in everything) - Counter((p, v) for p, _, v in committed)
    assert extra == Counter(aborted_outputs), f"read_uncommitted beyond read_committed: {extra}"
    assert set(committed) <= set(everything)

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    assert {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic} == {
        p: len(values) for p, values in inputs.items()}


def test_consume_transform_produce_exactly_once_confluent(minibroker, topic_name):
    out_topic, inputs = _ctp_setup(minibroker, topic_name)
    group = f"g-{topic_name}"
    input_ends = {p: len(v) for p, v in inputs.items()}

    def new_consumer() -> Consumer:
        consumer = Consumer({"bootstrap.servers": minibroker, "group.id": group, "isolation.level": READ_COMMITTED,
                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                             "partition.assignment.strategy": "range"})
        consumer.subscribe([topic_name])
        return consumer

    producer = _txn_producer(minibroker, f"tx-{topic_name}")
    consumer = new_consumer()
    committed: dict[int, int] = {}  # input offsets committed by our transactions
    aborted_outputs: list[tuple[int, bytes]] = []
    transactions = 0
    deadline = time.monotonic() + 60
    try:
        while committed != input_ends:
            assert time.monotonic() < deadline, f"committed {committed}, want {input_ends}"
            batch = []
            for msg in consumer.consume(num_messages=CTP_BATCH, timeout=0.2):
                if msg.error():
                    raise KafkaException(msg.error())
                batch.append(msg)
            if not batch:
                continue
            producer.begin_transaction()
            outputs = [(m.partition(), _transform(m.value())) for m in batch]
            for partition, value in outputs:
                producer.produce(out_topic, value=value, partition=partition)
            consumed = sorted({m.partition() for m in batch})
            positions = consumer.position([TopicPartition(topic_name, p) for p in consumed])
            assert [tp.offset for tp in positions] == [max(m.offset() for m in batch if m.partition() == p) + 1
                                                       for p in consumed]
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            if transactions == ABORTED_BATCH:
                assert producer.flush(30) == 0
                producer.abort_transaction(30)
                aborted_outputs = outputs
                # A new member resumes from the group's committed offsets: the aborted offsets must not count.
                consumer.close()
                consumer = new_consumer()
                seen = consumer.committed([TopicPartition(topic_name, p) for p in (0, 1)], timeout=30)
                assert {tp.partition: tp.offset for tp in seen if tp.offset >= 0} == committed
            else:
                producer.commit_transaction(30)
                committed.update({tp.partition: tp.offset for tp in positions})
            transactions += 1
    finally:
        consumer.close()
    assert transactions > ABORTED_BATCH + 1, f"only {transactions} transactions"
    _ctp_verify(minibroker, group, topic_name, out_topic, inputs, aborted_outputs)


def test_consume_transform_produce_exactly_once_kafka_python(minibroker, topic_name):
    out_topic, inputs = _ctp_setup(minibroker, topic_name)
    group = f"g-{topic_name}"
    input_ends = {p: len(v) for p, v in inputs.items()}

    def new_consumer():  # noqa: ANN202 - a KafkaConsumer
        return kafka_python_consumer(topic_name, bootstrap_servers=minibroker, group_id=group,
                                     isolation_level=READ_COMMITTED, enable_auto_commit=False,
                                     auto_offset_reset="earliest", max_poll_records=CTP_BATCH)

    producer = KafkaProducer(bootstrap_servers=minibroker, transactional_id=f"tx-{topic_name}", linger_ms=5)
    consumer = new_consumer()
    committed: dict[int, int] = {}
    aborted_outputs: list[tuple[int, bytes]] = []
    transactions = 0
    deadline = time.monotonic() + 60
    try:
        producer.init_transactions()
        while committed != input_ends:
            assert time.monotonic() < deadline, f"committed {committed}, want {input_ends}"
            batches = consumer.poll(timeout_ms=200)
            if not batches:
                continue
            producer.begin_transaction()
            outputs = [(r.partition, _transform(r.value)) for records in batches.values() for r in records]
            for partition, value in outputs:
                producer.send(out_topic, value=value, partition=partition)
            offsets = {tp: OffsetAndMetadata(consumer.position(tp), "", -1) for tp in batches}
            assert {tp: om.offset for tp, om in offsets.items()} == {
                tp: records[-1].offset + 1 for tp, records in batches.items()}
            producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
            if transactions == ABORTED_BATCH:
                producer.flush()
                producer.abort_transaction()
                aborted_outputs = outputs
                consumer.close(autocommit=False)
                consumer = new_consumer()
                seen = {p: consumer.committed(KpTopicPartition(topic_name, p)) for p in (0, 1)}
                assert {p: o for p, o in seen.items() if o is not None} == committed
            else:
                producer.commit_transaction()
                committed.update({tp.partition: om.offset for tp, om in offsets.items()})
            transactions += 1
    finally:
        consumer.close(autocommit=False)
        producer.close()
    assert transactions > ABORTED_BATCH + 1, f"only {transactions} transactions"
    _ctp_verify(minibroker, group, topic_name, out_topic, inputs, aborted_outputs)


# -- 3. zombie fencing ---------------------------------------------------------------------------------------------

def test_new_producer_fences_zombie_and_aborts_its_transaction(minibroker, topic_name):
    create_topic(minibroker, topic_name, 2)
    txn_id = f"tx-{topic_name}"
    admin = TxnAdmin(minibroker)
    try:
        zombie = _txn_producer(minibroker, txn_id)
        first = admin.describe(txn_id)
        zombie.begin_transaction()
        zombie_records = _values("zombie", [0, 1], 4)
        _produce(zombie, topic_name, zombie_records)
        assert admin.state(txn_id) == "Ongoing"

        # Same transactional id: InitProducerId aborts the zombie's transaction (epoch + 1) and, retried
        # until that is complete, gives the new producer the next epoch (+ 2).
        successor = _txn_producer(minibroker, txn_id)
        after = admin.describe(txn_id)
        assert (after.state.value, after.producer_id, after.producer_epoch) == (
            "Empty", first.producer_id, first.producer_epoch + 2)

        error = None
        try:
            zombie.commit_transaction(30)
        except KafkaException as exc:
            error = exc.args[0]
        assert error is not None and error.code() in FENCED_CODES and error.fatal(), f"zombie commit: {error!r}"
        del zombie  # destroyed now (close() re-raises the fatal error), not left reconnecting after the test

        successor.begin_transaction()
        successor_records = _values("successor", [0, 1], 4)
        _produce(successor, topic_name, successor_records)
        successor.commit_transaction(30)
        assert admin.state(txn_id) == "CompleteCommit"
        successor.close()
    finally:
        admin.close()

    committed, everything, ends = layout([(zombie_records, False), (successor_records, True)])
    assert read_confluent(minibroker, topic_name, ends, READ_COMMITTED) == committed
    assert read_confluent(minibroker, topic_name, ends, READ_UNCOMMITTED) == everything


# -- 4. a producer that vanishes mid-transaction --------------------------------------------------------------------

def test_vanished_producer_transaction_is_aborted_by_timeout(minibroker, topic_name):
    timeout_ms = 3000
    margin_s = 7.0
    create_topic(minibroker, topic_name, 1)
    txn_id = f"tx-{topic_name}"
    admin = TxnAdmin(minibroker)
    child = ChildTxnProducer(minibroker, topic_name, txn_id, timeout_ms, [0], 3)
    reader = None
    try:
        child.wait_ready()
        open_txn = admin.describe(txn_id)
        assert (open_txn.state.value, open_txn.transaction_timeout_ms, open_txn.topic_partitions) == (
            "Ongoing", timeout_ms, {KpTopicPartition(topic_name, 0)})
        assert admin.listed(["Ongoing"]).get(txn_id) == (open_txn.producer_id, "Ongoing")
        child.kill()
        killed = time.monotonic()

        later = produce_plain(minibroker, topic_name, [(0, b"later-0"), (0, b"later-1")])
        assert later == [(0, 3, b"later-0"), (0, 4, b"later-1")]
        reader = Reader(minibroker, topic_name, [0], READ_COMMITTED)
        # Blocked: the broker reports the LSO at the open transaction's first offset (0) and a high watermark
        # past the later records.
        reader.poll_until(lambda: reader.records or 0 in reader.eof, 10, "a first fetch")
        assert (reader.records, reader.eof[0]) == ([], (0, 5)), (
            f"not blocked behind the open transaction ({time.monotonic() - killed:.2f}s after the kill, "
            f"txn started at {open_txn.transaction_start_time_ms})")

        reader.poll_until(lambda: reader.records, timeout_ms / 1000 + margin_s,
                          "the later records after the broker aborts the vanished producer's transaction")
        delay = time.monotonic() - killed
        now_ms = time.time() * 1000
        assert now_ms >= open_txn.transaction_start_time_ms + timeout_ms, (
            f"read before the transaction timed out: {now_ms - open_txn.transaction_start_time_ms:.0f} ms "
            "after its start")
        assert delay <= timeout_ms / 1000 + margin_s, f"aborted {delay:.2f}s after the kill"
        # The abort marker sits at offset 5, after the later records.
        assert reader.read_to({0: 6}) == later, f"read_committed {reader.records} ({delay:.2f}s after the kill)"
        assert read_confluent(minibroker, topic_name, {0: 6}, READ_UNCOMMITTED) == sorted(
            [(0, i, value) for i, (_, value) in enumerate(child.values)] + later)

        wait_until(lambda: admin.state(txn_id) == "CompleteAbort", timeout=10, message="CompleteAbort")
        aborted = admin.describe(txn_id)
        assert (aborted.producer_id, aborted.producer_epoch, aborted.topic_partitions) == (
            open_txn.producer_id, open_txn.producer_epoch + 1, set())
        assert admin.listed(["CompleteAbort"]).get(txn_id) == (open_txn.producer_id, "CompleteAbort")
        assert txn_id not in admin.listed(["Ongoing"])
        print(f"vanished producer's transaction aborted; later records read {delay:.2f}s after the kill")
    finally:
        child.kill()
        if reader is not None:
            reader.close()
        admin.close()


# -- 5. crashes around the commit ---------------------------------------------------------------------------------

@pytest.fixture
def broker_process(tmp_path) -> Iterator[BrokerProcess]:
    broker = BrokerProcess(tmp_path / "data").start()  # --fsync grouped
    try:
        yield broker
    finally:
        broker.kill()


def test_commit_survives_sigkill_right_after_it_returns(broker_process, topic_name):
    broker = broker_process
    create_topic(broker.bootstrap, topic_name, 2)
    txn_id = f"tx-{topic_name}"
    producer = _txn_producer(broker.bootstrap, txn_id)
    first = _values("first", [0, 1], 6)
    producer.begin_transaction()
    _produce(producer, topic_name, first)
    producer.commit_transaction(30)
    broker.kill()
    broker.start()

    admin = TxnAdmin(broker.bootstrap)
    try:
        wait_until(lambda: admin.state(txn_id) == "CompleteCommit", timeout=15, message="CompleteCommit")
        # The same producer (same id and epoch) goes on after the restart.
        second = _values("second", [0, 1], 4)
        producer.begin_transaction()
        _produce(producer, topic_name, second)
        producer.commit_transaction(30)
        described = admin.describe(txn_id)
        assert (described.state.value, described.producer_epoch) == ("CompleteCommit", 0)
    finally:
        admin.close()
    committed, everything, ends = layout([(first, True), (second, True)])
    assert read_confluent(broker.bootstrap, topic_name, ends, READ_COMMITTED) == committed
    assert read_confluent(broker.bootstrap, topic_name, ends, READ_UNCOMMITTED) == everything


def _write_prepare_offline(data_dir, txn_id: str, commit: bool) -> None:
    """With the broker down, open its data dir in-process and move `txn_id` from Ongoing to PrepareCommit
    (PrepareAbort) exactly as EndTxn does: the coordinator's end_txn gives the transit and TxnService.write
    appends it to `__transaction_state` and completes it, but no marker is sent."""
    config = BrokerConfig(listeners=[Listener("127.0.0.1", 0)], data_dir=data_dir)
    state = Broker(config, version_profile(config.kafka_version))
    try:
        trio.run(state.txns.runtime.load_all)  # replay __transaction_state, as TxnService.run does at startup
        txn = state.txns.coordinator.describe(txn_id)
        assert txn is not None and txn.state is TxnState.ONGOING, txn
        outcome = state.txns.coordinator.end_txn(txn_id, txn.producer_id, txn.producer_epoch, commit,
                                                 state.now_ms())
        assert outcome.error == ErrorCode.NONE and outcome.transit is not None, outcome
        assert outcome.transit.state is (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT)
        trio.run(functools.partial(state.txns.write, outcome.transit, durable=False))
        assert txn.state is outcome.transit.state
        state.txns.runtime.partition_of(txn_id).log.flush()
    finally:
        # No producer snapshots (state.close() would save them): the next start finds what a crash leaves.
        for topic in state.topics:
            for partition in topic.partitions:
                partition.log.close()
        state.block_store.close()


@pytest.mark.parametrize("commit", [True, False], ids=["PrepareCommit", "PrepareAbort"])
def test_prepare_found_at_startup_is_completed(broker_process, topic_name, commit):
    """The broker dies after PrepareCommit (PrepareAbort) is durable in `__transaction_state` and before any
    marker is written. Built deterministically rather than by racing a kill against EndTxn:

    1. a producer in a child process begins a transaction and writes 2 records to each of partitions 0 and 1
       (durable: data in the partitions, Ongoing with both partitions in `__transaction_state`), then the
       producer and the broker are SIGKILLed;
    2. with the broker down, the data dir is opened in-process and the broker's own EndTxn first phase is
       applied (TransactionCoordinator.end_txn + TxnService.write): PrepareCommit/PrepareAbort is appended.
       No marker is written, no producer snapshot saved;
    so the disk holds what a crash leaves right after EndTxn's durable Prepare* write: data without markers,
    the open transaction in the partitions' producer state, and Prepare* as the id's last record. The
    restarted broker must find it, write the markers and then Complete*."""
    broker = broker_process
    create_topic(broker.bootstrap, topic_name, 2)
    txn_id = f"tx-{topic_name}"
    admin = TxnAdmin(broker.bootstrap)
    child = ChildTxnProducer(broker.bootstrap, topic_name, txn_id, 600_000, [0, 1], 4)
    try:
        child.wait_ready()
        open_txn = admin.describe(txn_id)
        assert (open_txn.state.value, open_txn.topic_partitions) == (
            "Ongoing", {KpTopicPartition(topic_name, 0), KpTopicPartition(topic_name, 1)})
    finally:
        child.kill()
        admin.close()
    broker.kill()
    _write_prepare_offline(broker.data_dir, txn_id, commit)

    log_start = len(broker.log_lines)
    broker.start()
    prepared = "PrepareCommit" if commit else "PrepareAbort"
    complete = "CompleteCommit" if commit else "CompleteAbort"
    admin = TxnAdmin(broker.bootstrap)
    try:
        wait_until(lambda: admin.state(txn_id) == complete, timeout=15, message=complete)
        described = admin.describe(txn_id)
        assert (described.producer_id, described.producer_epoch, described.topic_partitions) == (
            open_txn.producer_id, open_txn.producer_epoch, set())
    finally:
        admin.close()
    log = "".join(broker.log_lines[log_start:])
    assert f"transaction {txn_id}: completing {prepared} after restart" in log, log

    # Markers at offset 2 of both partitions; a plain record after them shows the LSO moved past.
    sentinels = produce_plain(broker.bootstrap, topic_name, [(0, b"after-0"), (1, b"after-1")])
    assert sentinels == [(0, 3, b"after-0"), (1, 3, b"after-1")]
    data = sorted((p, i // 2, v) for i, (p, v) in enumerate(child.values))
    ends = {0: 4, 1: 4}
    assert read_confluent(broker.bootstrap, topic_name, ends, READ_COMMITTED) == sorted(
        (data if commit else []) + sentinels)
    assert read_confluent(broker.bootstrap, topic_name, ends, READ_UNCOMMITTED) == sorted(data + sentinels)


# -- 6. interleaved transactions on shared partitions ---------------------------------------------------------------

def _offsets(log: list[tuple[str, int, bytes]]) -> tuple[dict[str, list[Rec]], dict[int, int]]:
    """Offsets follow the order of `log` in each partition: ({who: [(partition, offset, value)]}, log ends)."""
    offsets: dict[str, list[Rec]] = {}
    counters = {0: 0, 1: 0}
    for who, p, v in log:
        offsets.setdefault(who, []).append((p, counters[p], v))
        counters[p] += 1
    return offsets, counters


def test_interleaved_transactions_and_lso(minibroker, topic_name):
    """B opens first on partitions 0 and 1; A writes after it and commits; C opens. A read_committed consumer
    is held at offset 0 (B's first records) until B aborts, then gets A's records and is held at C's first
    records until C commits."""
    create_topic(minibroker, topic_name, 2)
    a = _txn_producer(minibroker, f"txa-{topic_name}")
    b = _txn_producer(minibroker, f"txb-{topic_name}")
    c = _txn_producer(minibroker, f"txc-{topic_name}")
    log: list[tuple[str, int, bytes]] = []  # (who, partition, value) in log order per partition

    def write(producer: Producer, who: str, step: int) -> None:
        records = [(p, f"{who}{step}-p{p}".encode()) for p in (0, 1)]
        _produce(producer, topic_name, records)
        log.extend((who, p, v) for p, v in records)

    def marker(who: str) -> None:
        log.extend((f"{who}-marker", p, b"") for p in (0, 1))

    b.begin_transaction()
    write(b, "b", 0)
    a.begin_transaction()
    write(a, "a", 0)
    write(b, "b", 1)
    write(a, "a", 1)
    a.commit_transaction(30)
    marker("a")
    c.begin_transaction()
    write(c, "c", 0)

    offsets, hw = _offsets(log)
    assert end_offsets(minibroker, topic_name, [0, 1]) == hw

    reader = Reader(minibroker, topic_name, [0, 1], READ_COMMITTED)
    try:
        reader.poll_until(lambda: len(reader.eof) == 2 or reader.records, 10, "first fetches")
        assert (reader.records, reader.eof) == ([], {0: (0, hw[0]), 1: (0, hw[1])}), \
            "A's committed records delivered while B's earlier transaction is open"

        b.abort_transaction(30)
        marker("b")
        # LSO now at C's first record on each partition: A's records, nothing of C's.
        c_first = {p: min(o for q, o, _ in offsets["c"] if q == p) for p in (0, 1)}
        reader.poll_until(lambda: all(reader.eof.get(p, (-1,))[0] == c_first[p] for p in (0, 1)), 10,
                          f"EOF at C's first offsets {c_first}")
        assert sorted(reader.records) == sorted(offsets["a"]), "after B's abort"

        write(c, "c", 1)
        c.commit_transaction(30)
        marker("c")
        offsets, ends = _offsets(log)
        assert end_offsets(minibroker, topic_name, [0, 1]) == ends
        assert reader.read_to(ends) == sorted(offsets["a"] + offsets["c"])
    finally:
        reader.close()
    assert read_confluent(minibroker, topic_name, ends, READ_UNCOMMITTED) == sorted(
        offsets["a"] + offsets["b"] + offsets["c"])


def test_transactional_batch_needs_its_partition_in_the_transaction(minibroker, topic_name):
    """KIP-890 verification: a transactional batch for a partition the producer never added is refused
    with INVALID_TXN_STATE and not stored; once AddPartitionsToTxn has added it, the batch is taken."""
    from protocol.records import Record, build_batch
    from tests.kafka_wire import WireClient

    with WireClient(minibroker) as c:
        c.create_topic(topic_name)
        init = c.request(22, 4, {"transactional_id": "verify-" + topic_name, "transaction_timeout_ms": 10000,
                                 "producer_id": -1, "producer_epoch": -1})
        assert init.error_code == 0
        pid, epoch = init.producer_id, init.producer_epoch
        batch = build_batch([Record(0, 0, None, b"v")], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                            is_transactional=True)

        def produce() -> int:
            resp = c.request(0, 9, {"transactional_id": "verify-" + topic_name, "acks": -1, "timeout_ms": 30000,
                                    "topic_data": [{"name": topic_name, "partition_data": [
                                        {"index": 0, "records": batch}]}]})
            return resp.responses[0].partition_responses[0].error_code

        assert produce() == ErrorCode.INVALID_TXN_STATE
        assert c.list_latest(topic_name) == 0
        added = c.request(24, 3, {"v3_and_below_transactional_id": "verify-" + topic_name,
                                  "v3_and_below_producer_id": pid, "v3_and_below_producer_epoch": epoch,
                                  "v3_and_below_topics": [{"name": topic_name, "partitions": [0]}]})
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        assert produce() == ErrorCode.NONE
        assert c.list_latest(topic_name) == 1
