"""Compacted topics: records without a key are refused with per-record errors (KIP-467); the log cleaner
keeps the latest record of each key at its offset, removes tombstones after delete.retention.ms and
compacts `__consumer_offsets` too."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as NewConfluentTopic
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from broker.testkit import BrokerThread
from protocol.records import Record, build_batch
from tests.kafka_wire import WireClient

from .conftest import wait_until


def test_null_keys_are_refused_per_record(minibroker, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=minibroker)
    try:
        admin.create_topics([NewTopic(topic_name, 1, 1, topic_configs={"cleanup.policy": "compact"})])
    finally:
        admin.close()
    # A batch with keyed and key-less records: the whole batch is refused, the response names the culprits.
    batch = build_batch([Record(0, 0, b"k0", b"v0"), Record(1, 1, None, b"v1"), Record(2, 2, b"k2", b"v2"),
                         Record(3, 3, None, b"v3")])
    with WireClient(minibroker) as c:
        response = c.produce(topic_name, 0, batch)
        assert response.error_code == 87  # INVALID_RECORD
        assert [e.batch_index for e in response.record_errors] == [1, 3]
        message = response.record_errors[0].batch_index_error_message
        assert "Compacted topic cannot accept message without key" in message
        assert c.list_latest(topic_name) == 0  # nothing stored
        assert c.produce(topic_name, 0, build_batch([Record(0, 0, b"k", b"v")])).error_code == 0
    # A real client sees the error for a key-less message and delivers keyed ones.
    producer = Producer({"bootstrap.servers": minibroker, "enable.idempotence": False})
    results = []
    producer.produce(topic_name, b"no key", on_delivery=lambda err, msg: results.append(err))
    producer.flush(10)
    producer.produce(topic_name, b"keyed", key=b"k", on_delivery=lambda err, msg: results.append(err))
    producer.flush(10)
    assert [e.name() if e else "OK" for e in results] == ["INVALID_RECORD", "OK"]


# --- the log cleaner ----------------------------------------------------------------------------------

@pytest.fixture
def cleaning_broker(tmp_path_factory) -> Iterator[BrokerThread]:
    """A broker whose cleaner looks for work every 50 ms (Kafka: 15 s)."""
    with BrokerThread(tmp_path_factory.mktemp("minibroker"), log_cleaner_backoff_ms=50,
                      offsets_topic_num_partitions=1, offsets_topic_segment_bytes=2048) as broker:
        yield broker


def create_compacted(bootstrap: str, topic: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewConfluentTopic(topic, 1, 1, config={"cleanup.policy": "compact", "segment.bytes": "1024",
                                                 "min.cleanable.dirty.ratio": "0.01", **configs})
    admin.create_topics([new])[topic].result(30)


def read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from the log start to the end, as a consumer sees them."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 30
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"read stuck at {consumer.position(tp)} of {end}"
            for records in consumer.poll(timeout_ms=500).values():
                out.extend((r.offset, r.key, r.value) for r in records)
        return out
    finally:
        consumer.close()


def cleaner_passes(broker: BrokerThread) -> int:
    return broker.call(lambda state: state.log_cleaner.passes)


def test_cleaner_keeps_the_latest_record_per_key_at_its_offset(cleaning_broker, topic_name):
    bootstrap = cleaning_broker.bootstrap
    create_compacted(bootstrap, topic_name)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for round_ in range(20):
        for k in range(8):
            key, value = b"k%d" % k, b"value %d of key %d" % (round_, k)
            latest[key] = (producer.send(topic_name, key=key, value=value).get(30).offset, value)
    latest[b"k3"] = (producer.send(topic_name, key=b"k3", value=None).get(30).offset, None)  # a tombstone
    producer.close()
    total = 20 * 8 + 1
    expected = sorted((offset, key, value) for key, (offset, value) in latest.items())

    def compacted() -> list | None:
        records = read_all(bootstrap, topic_name)
        # Everything but the active segment's records is cleaned: older versions of a key remain only there.
        return records if len(records) < total / 4 else None

    records = wait_until(compacted, message="the cleaner to compact the topic")
    assert cleaner_passes(cleaning_broker) >= 1
    by_key: dict[bytes, list] = {}
    for offset, key, value in records:
        by_key.setdefault(key, []).append((offset, value))
    # Each key's surviving records are its newest ones, at the offsets the producer was given; the newest of
    # all is there, the tombstone included (delete.retention.ms has not passed).
    for key, (offset, value) in latest.items():
        assert by_key[key][-1] == (offset, value)
    assert all(e in records for e in expected)
    # A restarted broker serves the same cleaned log.
    cleaning_broker.restart()
    assert read_all(cleaning_broker.bootstrap, topic_name)[:len(records)] == records


def test_tombstones_go_after_delete_retention(cleaning_broker, topic_name):
    bootstrap = cleaning_broker.bootstrap
    create_compacted(bootstrap, topic_name, **{"delete.retention.ms": "300"})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    errors: list = []

    def send(key: bytes, value: bytes | None) -> None:
        # One message per batch: librdkafka's batches would outgrow the 1 KiB segments of the test topic.
        producer.produce(topic_name, key=key, value=value, on_delivery=lambda err, _msg: errors.append(err))
        assert producer.flush(30) == 0

    for i in range(30):
        send(b"gone", b"v%d" % i)
        send(b"kept", b"v%d" % i)
    send(b"gone", None)
    for i in range(30):  # fills segments after the tombstone, so that it is in a cleanable one
        send(b"filler%d" % (i % 3), b"x" * 50)
    assert errors == [None] * 91

    def tombstone_gone() -> bool:
        keys = [key for _offset, key, _value in read_all(bootstrap, topic_name)]
        return b"gone" not in keys and b"kept" in keys

    wait_until(tombstone_gone, message="the tombstone and the records it deletes to be removed")


def test_consumer_offsets_topic_is_compacted(cleaning_broker, topic_name):
    bootstrap = cleaning_broker.bootstrap
    group = f"g-{topic_name}"
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    tp = TopicPartition(topic_name, 0)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic_name, 1, 1)])
    admin.close()
    consumer.assign([tp])
    for i in range(200):
        consumer.commit({tp: OffsetAndMetadata(i, "m" * 20, -1)})
    consumer.close()

    def offsets_records() -> int:
        return len(read_all(bootstrap, "__consumer_offsets"))

    wait_until(lambda: offsets_records() < 60, message="__consumer_offsets to be compacted")
    cleaning_broker.restart()
    consumer = KafkaConsumer(bootstrap_servers=cleaning_broker.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        assert consumer.committed(tp) == 199
    finally:
        consumer.close()
