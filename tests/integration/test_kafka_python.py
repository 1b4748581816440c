"""kafka-python 3.x against the broker: admin, produce with every codec, consume, seek, offsets by time."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def _producer(bootstrap: str, **kw) -> KafkaProducer:
    # Idempotence needs InitProducerId (a later issue); these tests exercise the plain path.
    kw.setdefault("enable_idempotence", False)
    return KafkaProducer(bootstrap_servers=bootstrap, **kw)


def _consume(bootstrap: str, topic: str, partitions: int, expected: int, **kw) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **kw)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    out: list = []
    deadline = time.monotonic() + 60
    while len(out) < expected and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            out.extend(records)
    consumer.close()
    return out


def test_api_version_inferred(minibroker):
    admin = KafkaAdminClient(bootstrap_servers=minibroker)
    try:
        # kafka-python infers the Kafka release from the ApiVersions ranges; the manual says 3.9.
        assert admin._client.check_version() == (3, 9)
    finally:
        admin.close()


def test_create_topic_and_errors(minibroker, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=minibroker)
    try:
        admin.create_topics([NewTopic(topic_name, 3, 1)])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic(topic_name, 3, 1)])
        assert topic_name in admin.list_topics()
        desc = admin.describe_topics([topic_name])[0]
        assert len(desc["partitions"]) == 3
        admin.delete_topics([topic_name])
        assert topic_name not in admin.list_topics()
    finally:
        admin.close()


@pytest.mark.parametrize("codec", CODECS)
def test_roundtrip_multi_partition(minibroker, topic_name, codec):
    admin = KafkaAdminClient(bootstrap_servers=minibroker)
    admin.create_topics([NewTopic(topic_name, 3, 1)])
    admin.close()
    producer = _producer(minibroker, compression_type=codec, linger_ms=5)
    sent = {}
    for i in range(300):
        key = f"k{i}".encode()
        value = f"value-{i}-".encode() * (i % 7 + 1)
        headers = [("h", str(i).encode()), ("empty", b"")]
        meta = producer.send(topic_name, key=key, value=value, headers=headers, partition=i % 3).get(30)
        sent[(meta.partition, meta.offset)] = (key, value, headers)
    producer.close()
    got = _consume(minibroker, topic_name, 3, len(sent))
    assert len(got) == len(sent)
    for r in got:
        key, value, headers = sent[(r.partition, r.offset)]
        assert (r.key, r.value) == (key, value)
        assert list(r.headers) == headers
    per_partition = {}
    for r in got:
        per_partition.setdefault(r.partition, []).append(r.offset)
    for offsets in per_partition.values():
        assert offsets == list(range(len(offsets)))


def test_null_key_and_value(minibroker, topic_name):
    producer = _producer(minibroker)
    producer.send(topic_name, key=None, value=b"v").get(30)
    producer.send(topic_name, key=b"k", value=None).get(30)
    producer.close()
    got = _consume(minibroker, topic_name, 1, 2)
    assert [(r.key, r.value) for r in got] == [(None, b"v"), (b"k", None)]


def test_large_message_with_raised_limits(minibroker, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=minibroker)
    admin.create_topics([NewTopic(topic_name, 1, 1, topic_configs={"max.message.bytes": str(8 * 1024 * 1024)})])
    admin.close()
    big = bytes(range(256)) * (5 * 1024 * 1024 // 256)
    producer = _producer(minibroker, max_request_size=8 * 1024 * 1024)
    producer.send(topic_name, value=big).get(60)
    producer.close()
    got = _consume(minibroker, topic_name, 1, 1, max_partition_fetch_bytes=1024 * 1024)
    assert got[0].value == big


def test_message_too_large_rejected(minibroker, topic_name):
    from kafka.errors import MessageSizeTooLargeError

    producer = _producer(minibroker, max_request_size=4 * 1024 * 1024, retries=0)
    with pytest.raises(MessageSizeTooLargeError):
        producer.send(topic_name, value=b"x" * (2 * 1024 * 1024)).get(30)
    producer.close()


def test_seek_and_offsets_for_times(minibroker, topic_name):
    producer = _producer(minibroker)
    base = 1_700_000_000_000
    for i in range(10):
        producer.send(topic_name, value=str(i).encode(), timestamp_ms=base + i * 1000).get(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=minibroker, enable_auto_commit=False)
    tp = TopicPartition(topic_name, 0)
    consumer.assign([tp])
    found = consumer.offsets_for_times({tp: base + 4500})[tp]
    assert (found.offset, found.timestamp) == (5, base + 5000)
    assert consumer.offsets_for_times({tp: base + 99_000})[tp] is None
    assert consumer.beginning_offsets([tp])[tp] == 0
    assert consumer.end_offsets([tp])[tp] == 10
    consumer.seek(tp, 7)
    values = []
    deadline = time.monotonic() + 30
    while len(values) < 3 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            values.extend(int(r.value) for r in records)
    assert values == [7, 8, 9]
    consumer.close()
