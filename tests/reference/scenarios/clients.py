"""Real clients against both brokers: what kafka-python and confluent-kafka (librdkafka) report of the same
actions (errors by name, offsets, what a consumer reads), as an application would see them."""

from __future__ import annotations

import time
from typing import Any

from tests.reference.harness import Session, scenario


def _error_name(exc: BaseException) -> str:
    return type(exc).__name__


@scenario()
def kafka_python_client(s: Session) -> None:
    """kafka-python: admin errors, an idempotent producer's errors, a consumer group reading and committing."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
    from kafka.structs import TopicPartition

    plain, compacted = s.name("plain"), s.name("compacted")
    admin = KafkaAdminClient(bootstrap_servers=s.bootstrap, request_timeout_ms=30000)
    try:
        def admin_call(step: str, fn: Any) -> Any:
            try:
                result = fn()
                s.note(step, {"ok": True})
                return result
            except Exception as exc:  # the error a user sees is the outcome
                s.note(step, {"error": _error_name(exc)})
                return None

        admin_call("create topics", lambda: admin.create_topics([
            NewTopic(plain, 2, 1), NewTopic(compacted, 1, 1, topic_configs={"cleanup.policy": "compact"})]))
        admin_call("create an existing topic", lambda: admin.create_topics([NewTopic(plain, 1, 1)]))
        admin_call("create with a bad config", lambda: admin.create_topics([
            NewTopic(s.name("bad"), 1, 1, topic_configs={"retention.ms": "soon"})]))
        admin_call("create with 0 partitions", lambda: admin.create_topics([NewTopic(s.name("zero"), 0, 1)]))
        admin_call("shrink partitions", lambda: admin.create_partitions({plain: NewPartitions(1)}))
        configs = admin_call("describe configs", lambda: admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, compacted, ["cleanup.policy"])]))
        if configs is not None:
            s.note("cleanup.policy", _config_value(configs, "cleanup.policy"))
        admin_call("delete an unknown topic", lambda: admin.delete_topics([s.name("nope")]))
    finally:
        admin.close()
    _wait_topic(s, plain)
    producer = KafkaProducer(bootstrap_servers=s.bootstrap, acks="all", retries=2, request_timeout_ms=15000)
    try:
        metas = [producer.send(plain, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0).get(30)
                 for i in range(3)]
        s.note("offsets of three sends", [m.offset for m in metas])
        try:
            producer.send(compacted, value=b"no key").get(30)
            s.note("keyless send to a compacted topic", {"ok": True})
        except Exception as exc:
            s.note("keyless send to a compacted topic", {"error": _error_name(exc)})
        try:
            producer.send(plain, value=b"x" * 2_000_000).get(30)
            s.note("a 2 MB record", {"ok": True})
        except Exception as exc:
            s.note("a 2 MB record", {"error": _error_name(exc)})
    finally:
        producer.close(5)
    consumer = KafkaConsumer(plain, bootstrap_servers=s.bootstrap, group_id=s.name("group"),
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=20000)
    try:
        seen = []
        for message in consumer:
            seen.append((message.partition, message.offset, message.key, message.value))
            if len(seen) == 3:
                break
        s.note("consumed", [[p, o, k.decode(), v.decode()] for p, o, k, v in seen])
        consumer.commit()
        s.note("committed", consumer.committed(TopicPartition(plain, 0)))
    finally:
        consumer.close()


def _config_value(configs: Any, name: str) -> Any:
    for response in configs if isinstance(configs, list) else [configs]:
        for resource in getattr(response, "resources", []):
            for entry in resource[4]:
                if entry[0] == name:
                    return entry[1]
    return None


def _wait_topic(s: Session, topic: str) -> None:
    from tests.reference.scenarios.common import wait_leaders

    wait_leaders(s, topic)


@scenario()
def confluent_client(s: Session) -> None:
    """confluent-kafka: admin errors, a too-large message, a transactional producer's aborted and committed
    transactions and a read_committed consumer."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    topic = s.name("t")
    admin = AdminClient({"bootstrap.servers": s.bootstrap})

    def outcome(futures: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for name, future in futures.items():
            try:
                future.result(30)
                out[name.replace(s.name(""), "")] = "ok"
            except KafkaException as exc:
                out[name.replace(s.name(""), "")] = exc.args[0].name()
        return out

    s.note("create", outcome(admin.create_topics([
        NewTopic(topic, 1, 1), NewTopic(s.name("rf3"), 1, 3), NewTopic(s.name("bad.config"), 1, 1,
                                                                         config={"cleanup.policy": "x"}),
        NewTopic(s.name("bad name!"), 1, 1)], operation_timeout=30)))
    s.note("create again", outcome(admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30)))
    s.note("fewer partitions", outcome(admin.create_partitions([NewPartitions(topic, 1)], operation_timeout=30)))
    _wait_topic(s, topic)
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": s.bootstrap, "transactional.id": s.name("txn"),
                         "message.max.bytes": 5_000_000, "transaction.timeout.ms": 60000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"aborted-1")
    producer.produce(topic, b"aborted-2")
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"committed-1", on_delivery=lambda e, m: errors.append(e.name()) if e else None)
    producer.commit_transaction(30)
    big = Producer({"bootstrap.servers": s.bootstrap, "message.max.bytes": 5_000_000})
    big.produce(topic, b"x" * 2_000_000, on_delivery=lambda e, m: errors.append(e.name() if e else "delivered"))
    big.flush(30)
    s.note("delivery results", errors)
    consumer = Consumer({"bootstrap.servers": s.bootstrap, "group.id": s.name("g"), "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen: list[list[Any]] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            if message.error().code() == -191:  # partition EOF
                break
            continue
        seen.append([message.offset(), message.value().decode()])
    s.note("read_committed sees", seen)
    consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    s.note("committed", [p.offset for p in consumer.committed([TopicPartition(topic, 0)], timeout=30)])
    consumer.close()
