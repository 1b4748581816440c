"""aiokafka (old, non-flexible protocol versions) against the broker."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


async def _roundtrip(bootstrap: str, topic: str, codec: str | None) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=5)
    await producer.start()
    try:
        sent = {}
        for i in range(200):
            md = await producer.send_and_wait(topic, key=f"k{i}".encode(), value=f"v{i}".encode() * 5,
                                              headers=[("i", str(i).encode())], partition=i % 2)
            sent[(md.partition, md.offset)] = (f"k{i}".encode(), f"v{i}".encode() * 5)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got = {}
        async with asyncio.timeout(60):
            while len(got) < len(sent):
                batch = await consumer.getmany(timeout_ms=500)
                for records in batch.values():
                    for r in records:
                        got[(r.partition, r.offset)] = (r.key, r.value)
        assert got == sent
        tp = TopicPartition(topic, 0)
        assert (await consumer.end_offsets([tp]))[tp] == 100
    finally:
        await consumer.stop()


@pytest.mark.parametrize("codec", CODECS)
def test_roundtrip(minibroker_server, topic_name, codec):
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=minibroker_server.bootstrap)
    admin.create_topics([NewTopic(topic_name, 2, 1)])
    admin.close()
    asyncio.run(_roundtrip(minibroker_server.bootstrap, topic_name, codec))
