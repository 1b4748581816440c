"""Compacted topics: records without a key are refused with per-record errors (KIP-467)."""

from __future__ import annotations

from confluent_kafka import Producer
from kafka.admin import KafkaAdminClient, NewTopic

from protocol.records import Record, build_batch
from tests.kafka_wire import WireClient


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
