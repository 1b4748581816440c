"""Prometheus metrics at GET /metrics on the admin endpoint, after real client traffic."""

from __future__ import annotations

import re
import urllib.request

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from broker.testkit import BrokerThread
from tests.integration.conftest import wait_until
from tests.kafka_wire import WireClient


def _scrape(broker: BrokerThread) -> dict[str, float]:
    with urllib.request.urlopen(broker.admin_url + "/metrics", timeout=30) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def test_metrics_after_traffic(tmp_path, topic_name):
    with BrokerThread(tmp_path, admin_listen="127.0.0.1:0") as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 50})
        for _ in range(100):
            producer.produce(topic_name, b"x" * 10, partition=0)
        assert producer.flush(60) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "metrics", "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic_name, 0, OFFSET_BEGINNING)])
        got = 0
        while got < 100:
            got += sum(1 for m in consumer.consume(100, 1.0) if not m.error())
        consumer.close()
        broker.inject_error("METADATA", "REQUEST_TIMED_OUT")
        with WireClient(broker.bootstrap) as client:
            client.request(3, 12, {"topics": [{"name": topic_name, "topic_id": None}],
                                   "allow_auto_topic_creation": False})
        samples = _scrape(broker)
        assert samples[f'minibroker_topic_messages_in_total{{topic="{topic_name}"}}'] == 100
        assert samples[f'minibroker_topic_bytes_in_total{{topic="{topic_name}"}}'] > 1000
        assert samples[f'minibroker_topic_messages_out_total{{topic="{topic_name}"}}'] >= 100
        produce = [v for k, v in samples.items() if k.startswith('minibroker_requests_total{api="PRODUCE"')]
        assert produce and sum(produce) >= 1
        assert samples['minibroker_request_latency_seconds_count{api="PRODUCE"}'] == sum(produce)
        assert any(re.match(r'minibroker_request_errors_total\{api="METADATA",version="\d+",'
                            r'error="REQUEST_TIMED_OUT"\}', k) for k in samples)
        assert samples["minibroker_connections"] >= 0
        assert samples[f'minibroker_partition_log_bytes{{topic="{topic_name}",partition="0"}}'] > 1000
        # Groups appear once a group exists.
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-metrics",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe([topic_name])
        wait_until(lambda: consumer.poll(0.2) is not None and consumer.assignment(), timeout=60)
        samples = _scrape(broker)
        assert samples.get('minibroker_groups{state="Stable"}', 0) >= 1
        assert samples["minibroker_group_rebalances_total"] >= 1
        consumer.close()
