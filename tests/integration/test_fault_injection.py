"""Fault injection through the fixture's broker handle (broker/observability/faults.py), with each client family."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaProducer

from tests.integration.conftest import wait_until
from tests.kafka_wire import WireClient

LEADER_NOT_AVAILABLE = 5


def _values(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "faults-check", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[bytes] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF and len(out) >= expected:
                break
            continue
        out.append(msg.value())
    consumer.close()
    return out


def test_rules_are_listed_counted_and_removed(minibroker_server):
    first = minibroker_server.inject_error("METADATA", "REQUEST_TIMED_OUT", count=2)
    second = minibroker_server.delay("FETCH", 100, count=None)
    listed = {r["id"]: r for r in minibroker_server.faults()}
    assert listed[first]["api"] == "METADATA" and listed[first]["error"] == "REQUEST_TIMED_OUT"
    assert listed[second]["count"] is None
    with WireClient(minibroker_server.bootstrap) as client:
        request = {"topics": None, "allow_auto_topic_creation": False}
        assert client.request(3, 12, request).brokers == []  # the injected error answer
        assert [r["count"] for r in minibroker_server.faults() if r["id"] == first] == [1]
        client.request(3, 12, request)
        assert first not in {r["id"] for r in minibroker_server.faults()}  # used up
        assert client.request(3, 12, request).brokers  # served normally again
    assert minibroker_server.remove_fault(second)
    assert minibroker_server.faults() == []


def test_kafka_python_retries_an_injected_retriable_error(minibroker_server, topic_name):
    with WireClient(minibroker_server.bootstrap) as client:
        client.create_topic(topic_name)
    minibroker_server.inject_error("PRODUCE", "NOT_LEADER_OR_FOLLOWER", count=2, topic=topic_name)
    producer = KafkaProducer(bootstrap_servers=minibroker_server.bootstrap, acks="all", retries=5,
                             retry_backoff_ms=50)
    metadata = producer.send(topic_name, b"once", partition=0).get(timeout=60)
    producer.close()
    assert metadata.offset == 0
    assert minibroker_server.faults() == []  # both errors were served
    assert _values(minibroker_server.bootstrap, topic_name, 1) == [b"once"]


def test_confluent_idempotent_producer_dedups_a_dropped_response(minibroker_server, topic_name):
    with WireClient(minibroker_server.bootstrap) as client:
        client.create_topic(topic_name)
    minibroker_server.drop_produce_response(topic=topic_name)
    producer = Producer({"bootstrap.servers": minibroker_server.bootstrap, "enable.idempotence": True,
                         "acks": "all"})
    reports = []
    producer.produce(topic_name, b"exactly-once", partition=0, on_delivery=lambda e, m: reports.append((e, m)))
    assert producer.flush(60) == 0
    assert reports[0][0] is None and reports[0][1].offset() == 0
    assert minibroker_server.faults() == []
    # Appended once although the client sent it twice (the first answer never came).
    assert _values(minibroker_server.bootstrap, topic_name, 1) == [b"exactly-once"]


def test_aiokafka_sees_a_non_retriable_error(minibroker_server, topic_name):
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import TopicAuthorizationFailedError

    with WireClient(minibroker_server.bootstrap) as client:
        client.create_topic(topic_name)
    minibroker_server.inject_error("PRODUCE", "TOPIC_AUTHORIZATION_FAILED", topic=topic_name)

    async def send() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=minibroker_server.bootstrap)
        await producer.start()
        try:
            with pytest.raises(TopicAuthorizationFailedError):
                await producer.send_and_wait(topic_name, b"refused", partition=0)
            await producer.send_and_wait(topic_name, b"accepted", partition=0)  # the rule was for one request
        finally:
            await producer.stop()

    asyncio.run(send())
    assert _values(minibroker_server.bootstrap, topic_name, 1) == [b"accepted"]


def test_leader_unavailable_for_a_while(minibroker_server, topic_name):
    with WireClient(minibroker_server.bootstrap) as client:
        client.create_topic(topic_name)
        minibroker_server.leader_unavailable(topic_name, 0, seconds=1.5)
        partition = client.request(3, 12, {"topics": [{"name": topic_name, "topic_id": None}],
                                           "allow_auto_topic_creation": False}).topics[0].partitions[0]
        assert (partition.error_code, partition.leader_id) == (LEADER_NOT_AVAILABLE, -1)
        producer = Producer({"bootstrap.servers": minibroker_server.bootstrap, "acks": "all"})
        reports = []
        producer.produce(topic_name, b"after the election", partition=0,
                         on_delivery=lambda e, m: reports.append(e))
        assert producer.flush(60) == 0 and reports == [None]  # delivered once the leader is back
        wait_until(lambda: minibroker_server.faults() == [], timeout=30)
        partition = client.request(3, 12, {"topics": [{"name": topic_name, "topic_id": None}],
                                           "allow_auto_topic_creation": False}).topics[0].partitions[0]
        assert (partition.error_code, partition.leader_id) == (0, 0)


def test_delay_and_dropped_connections(minibroker_server):
    request = {"client_software_name": "t", "client_software_version": "1"}
    minibroker_server.delay("API_VERSIONS", 300)
    with WireClient(minibroker_server.bootstrap) as client:
        started = time.monotonic()
        assert client.request(18, 3, request).error_code == 0
        assert time.monotonic() - started >= 0.3  # held back by the rule (a lower bound, not a speed)
    minibroker_server.drop_connection("API_VERSIONS", when="request")
    with WireClient(minibroker_server.bootstrap) as client, pytest.raises(ConnectionError):
        client.request(18, 3, request)
    minibroker_server.drop_connection("API_VERSIONS", when="after_response")
    with WireClient(minibroker_server.bootstrap) as client:
        assert client.request(18, 3, request).error_code == 0  # answered...
        with pytest.raises(ConnectionError):
            client.request(18, 3, request)  # ...then closed
    with WireClient(minibroker_server.bootstrap) as client:
        assert client.request(18, 3, request).error_code == 0
