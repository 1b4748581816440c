"""confluent-kafka (librdkafka) against the broker: admin, every codec, headers, seek, offsets by time."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _create(bootstrap: str, name: str, partitions: int = 1, config: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config or {})], operation_timeout=10)
    futures[name].result(30)


def _produce(bootstrap: str, messages: list[dict], **conf) -> list:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    reports: list = []

    def on_delivery(err, msg):
        reports.append((err, msg))

    for m in messages:
        producer.produce(on_delivery=on_delivery, **m)
    assert producer.flush(60) == 0
    return reports


def _consume(bootstrap: str, topic: str, partitions: int, expected: int, **conf) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         **conf})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = []
    deadline = time.monotonic() + 60
    while len(out) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise KafkaException(msg.error())
        out.append(msg)
    consumer.close()
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_roundtrip_multi_partition(minibroker, topic_name, codec):
    _create(minibroker, topic_name, 4)
    messages = [{"topic": topic_name, "partition": i % 4, "key": f"k{i}".encode(),
                 "value": (f"v{i}-" * (i % 9 + 1)).encode(), "headers": [("n", str(i).encode())]}
                for i in range(400)]
    reports = _produce(minibroker, messages, **{"compression.codec": codec, "acks": "all"})
    assert all(err is None for err, _ in reports)
    # Delivery reports carry key, partition and offset (not headers): match them to what was sent.
    by_key = {m["key"]: m for m in messages}
    sent = {(m.partition(), m.offset()): by_key[m.key()] for _, m in reports}
    assert len(sent) == len(messages)
    got = _consume(minibroker, topic_name, 4, len(sent))
    assert len(got) == len(sent)
    for m in got:
        original = sent[(m.partition(), m.offset())]
        assert (m.partition(), m.key(), m.value(), m.headers()) == \
            (original["partition"], original["key"], original["value"], original["headers"])


def test_null_key_value_and_large_message(minibroker, topic_name):
    _create(minibroker, topic_name, 1, {"max.message.bytes": str(8 * 1024 * 1024)})
    big = bytes(range(256)) * (5 * 1024 * 1024 // 256)
    reports = _produce(minibroker, [
        {"topic": topic_name, "key": None, "value": b"v"},
        {"topic": topic_name, "key": b"k", "value": None},
        {"topic": topic_name, "value": big},
    ], **{"message.max.bytes": 8 * 1024 * 1024})
    assert all(err is None for err, _ in reports)
    got = _consume(minibroker, topic_name, 1, 3, **{"fetch.max.bytes": 1024 * 1024,
                                                    "max.partition.fetch.bytes": 1024 * 1024})
    assert [(m.key(), m.value()) for m in got[:2]] == [(None, b"v"), (b"k", None)]
    assert got[2].value() == big


def test_offsets_for_times_and_watermarks(minibroker, topic_name):
    base = 1_700_000_000_000
    _produce(minibroker, [{"topic": topic_name, "value": str(i).encode(), "timestamp": base + i * 1000}
                          for i in range(10)])
    consumer = Consumer({"bootstrap.servers": minibroker, "group.id": "unused"})
    assert consumer.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=30) == (0, 10)
    found = consumer.offsets_for_times([TopicPartition(topic_name, 0, base + 2500)], timeout=30)
    assert found[0].offset == 3
    latest = consumer.offsets_for_times([TopicPartition(topic_name, 0, base + 99_000)], timeout=30)
    assert latest[0].offset == -1  # no record at or after that time
    consumer.close()


def test_a_consumer_over_1000_partitions_without_fetch_sessions(minibroker_server) -> None:
    """librdkafka keeps no fetch sessions (it fetches at session 0, the final epoch): every fetch is a full one,
    the broker keeps no session for it, and every record of 1,000 partitions and a trickle after them arrives."""
    broker = minibroker_server
    _create(broker.bootstrap, "many", partitions=1000)
    _produce(broker.bootstrap, [{"topic": "many", "partition": p, "value": f"first-{p}".encode()}
                                for p in range(1000)])
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition("many", p, 0) for p in range(1000)])
    seen: list[bytes] = []

    def poll_until(count: int) -> None:
        deadline = time.monotonic() + 60
        while len(seen) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                seen.append(msg.value())

    try:
        poll_until(1000)
        for i in range(5):
            _produce(broker.bootstrap, [{"topic": "many", "partition": i * 199, "value": f"trickle-{i}".encode()}])
            poll_until(1001 + i)
        assert broker.fetch_sessions() == []
    finally:
        consumer.close()
    assert sorted(seen) == sorted([f"first-{p}".encode() for p in range(1000)] +
                                  [f"trickle-{i}".encode() for i in range(5)])
