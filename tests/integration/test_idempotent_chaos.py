"""Idempotent producers of kafka-python, confluent-kafka and aiokafka through a proxy that cuts their
connections at random points: every send is acknowledged, and each partition holds every message
exactly once, in the order it was sent, at the offset its acknowledgement gave.

The broker has two listeners: one that clients reach directly (used to create the topic and to read
it back) and one that advertises the proxy's address in Metadata, so producers that bootstrap through
the proxy keep going through it. The proxy cuts a connection when a seeded random byte budget of
either direction runs out (mid-frame), which loses requests before the broker sees them as well as
responses to requests it has already appended; the retries of the latter must be deduplicated.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from broker.config.options import Listener
from broker.testkit import BrokerThread
from tests.integration.chaos_proxy import ChaosProxy
from tests.integration.conftest import wait_until

PARTITIONS = 3
PER_PARTITION = 1000
PAD = "." * 120  # makes requests big enough that byte budgets run out several times per run
MAX_CUTS = 20
MIN_CUTS = 5
MIN_UNANSWERED = 3
PRODUCE_TIMEOUT = 60.0


@dataclass
class Chaos:
    broker: BrokerThread
    proxy: ChaosProxy
    topic: str

    @property
    def direct(self) -> str:
        return self.broker.bootstrap

    @property
    def via_proxy(self) -> str:
        return f"127.0.0.1:{self.proxy.port}"


def _value(partition: int, i: int) -> bytes:
    return f"{partition}:{i}:{PAD}".encode()


def _messages() -> Iterator[tuple[int, int]]:
    """(partition, sequence number) in send order: the partitions interleaved."""
    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            yield p, i


@pytest.fixture(params=[11, 29], ids=lambda seed: f"seed{seed}")
def chaos(request: pytest.FixtureRequest, tmp_path: Path, topic_name: str) -> Iterator[Chaos]:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    proxy = ChaosProxy(seed=request.param, max_cuts=MAX_CUTS, upstream_budget=(3_000, 30_000),
                       downstream_budget=(300, 2_000))
    # Listener 0 (BrokerThread.bootstrap) is the direct one; listener 1 tells its clients to use the proxy.
    broker = BrokerThread(tmp_path / "data", listeners=[
        Listener("127.0.0.1", 0),
        Listener("127.0.0.1", 0, advertised_host="127.0.0.1", advertised_port=proxy.port),
    ])
    try:
        broker.start()
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_topics([NewTopic(topic_name, PARTITIONS, 1)])
        finally:
            admin.close()
        # The second listener's kernel-chosen port (BrokerThread only exposes the first one).
        [proxied_port] = [port for _, port in broker._server.listen_addresses if port != broker.port]
        proxy.start(("127.0.0.1", proxied_port))
        yield Chaos(broker, proxy, topic_name)
        assert not proxy.errors, proxy.errors
    finally:
        proxy.stop()
        broker.stop()


def _check_acks(chaos: Chaos, acked: dict[int, list[int | None]]) -> None:
    """Message i of a partition was acknowledged at offset i (a duplicate gets its original offset)."""
    # Not vacuous: connections were cut, and some after the broker had received a whole request
    # (so it may have appended a batch whose acknowledgement was lost and the retry was a duplicate).
    assert chaos.proxy.cuts >= MIN_CUTS, f"the proxy hardly cut anything: {chaos.proxy.summary()}"
    assert chaos.proxy.unanswered >= MIN_UNANSWERED, f"no responses were cut off: {chaos.proxy.summary()}"
    for p in range(PARTITIONS):
        wrong = [(i, off) for i, off in enumerate(acked[p]) if off != i]
        assert not wrong, f"partition {p}: acknowledged offsets differ from send order, first: {wrong[:5]} " \
                          f"({chaos.proxy.summary()})"


def _describe(got: list[bytes], expected: list[bytes]) -> str:
    counts = Counter(got)
    dups = sorted(v for v, n in counts.items() if n > 1)
    missing = [v for v in expected if v not in counts]
    first_diff = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                      min(len(got), len(expected)))
    return (f"{len(got)} records for {len(expected)} sent; {len(dups)} duplicated (e.g. {dups[:3]}), "
            f"{len(missing)} missing (e.g. {missing[:3]}); first difference at offset {first_diff}")


def _check_log(chaos: Chaos) -> None:
    """Read every partition back directly from the broker: each message once, in order."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=chaos.direct, enable_auto_commit=False)
    try:
        tps = [TopicPartition(chaos.topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}

        def caught_up() -> bool:
            for tp, records in consumer.poll(timeout_ms=200).items():
                got[tp.partition].extend(r.value for r in records)
            return all(consumer.position(tp) >= end[tp] for tp in tps)

        wait_until(caught_up, timeout=60, message="the consumer to reach the end of every partition")
        for p in range(PARTITIONS):
            expected = [_value(p, i) for i in range(PER_PARTITION)]
            assert got[p] == expected, f"partition {p}: {_describe(got[p], expected)} ({chaos.proxy.summary()})"
            assert end[TopicPartition(chaos.topic, p)] == PER_PARTITION
    finally:
        consumer.close()


def test_kafka_python_idempotent_through_cuts(chaos):
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=chaos.via_proxy, enable_idempotence=True, acks="all",
        max_in_flight_requests_per_connection=5, retries=1_000_000, retry_backoff_ms=50,
        reconnect_backoff_ms=20, reconnect_backoff_max_ms=500, request_timeout_ms=20_000,
        delivery_timeout_ms=int(PRODUCE_TIMEOUT * 1000), batch_size=2048, linger_ms=2)
    try:
        futures = [(p, producer.send(chaos.topic, key=str(p).encode(), value=_value(p, i), partition=p))
                   for p, i in _messages()]
        producer.flush(timeout=PRODUCE_TIMEOUT)
        failed = [(p, f.exception) for p, f in futures if not f.succeeded()]
        assert not failed, f"{len(failed)} sends failed, first: {failed[:3]} ({chaos.proxy.summary()})"
    finally:
        producer.close(timeout=10)
    acked: dict[int, list[int | None]] = {p: [] for p in range(PARTITIONS)}
    for p, f in futures:
        acked[p].append(f.value.offset)
    _check_acks(chaos, acked)
    _check_log(chaos)


def test_confluent_idempotent_through_cuts(chaos):
    from confluent_kafka import Producer

    errors: list = []
    producer = Producer({
        "bootstrap.servers": chaos.via_proxy, "enable.idempotence": True, "acks": "all",
        "max.in.flight.requests.per.connection": 5, "retry.backoff.ms": 50,
        "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 500,
        "message.timeout.ms": int(PRODUCE_TIMEOUT * 1000), "batch.num.messages": 15, "linger.ms": 2,
        "error_cb": errors.append,
    })
    acked: dict[int, list[int | None]] = {p: [] for p in range(PARTITIONS)}
    failed: list = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            failed.append((msg.partition(), err))
        else:
            acked[msg.partition()].append((int(msg.value().split(b":")[1]), msg.offset()))

    try:
        for p, i in _messages():
            producer.produce(chaos.topic, key=str(p).encode(), value=_value(p, i), partition=p,
                             on_delivery=on_delivery)
            producer.poll(0)
        remaining = producer.flush(PRODUCE_TIMEOUT)
    finally:
        producer.close()
    fatal = [e for e in errors if e.fatal()]
    assert remaining == 0 and not failed and not fatal, \
        f"{remaining} undelivered, {len(failed)} failed (first: {failed[:3]}), fatal errors: {fatal} " \
        f"({chaos.proxy.summary()})"
    # Delivery reports of one partition come in send order; check that too, then index offsets by message.
    for p in range(PARTITIONS):
        assert [i for i, _ in acked[p]] == list(range(PER_PARTITION)), f"partition {p}: reports out of order"
        acked[p] = [off for _, off in acked[p]]
    _check_acks(chaos, acked)
    _check_log(chaos)


async def _aiokafka_produce(chaos: Chaos) -> dict[int, list[int | None]]:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=chaos.via_proxy, enable_idempotence=True, acks="all", retry_backoff_ms=50,
        request_timeout_ms=20_000, max_batch_size=2048, linger_ms=2)
    await producer.start()
    try:
        futures = [(p, await producer.send(chaos.topic, key=str(p).encode(), value=_value(p, i), partition=p))
                   for p, i in _messages()]
        async with asyncio.timeout(PRODUCE_TIMEOUT):
            results = await asyncio.gather(*(f for _, f in futures), return_exceptions=True)
    finally:
        await producer.stop()
    failed = [(p, r) for (p, _), r in zip(futures, results, strict=True) if isinstance(r, BaseException)]
    assert not failed, f"{len(failed)} sends failed, first: {failed[:3]} ({chaos.proxy.summary()})"
    acked: dict[int, list[int | None]] = {p: [] for p in range(PARTITIONS)}
    for (p, _), metadata in zip(futures, results, strict=True):
        acked[p].append(metadata.offset)
    return acked


def test_aiokafka_idempotent_through_cuts(chaos):
    acked = asyncio.run(_aiokafka_produce(chaos))
    _check_acks(chaos, acked)
    _check_log(chaos)
