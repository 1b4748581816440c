"""Old clients under the 3.x profiles: kafka-python pinned to the protocols of Kafka 0.9, 0.10.0, 0.10.1 and
0.11 (message formats v0 and v1, Produce v0-2, Fetch v0-3, ListOffsets v0, old group and admin versions),
old and current clients on the same topic both ways, and the 4.x profiles refusing what Kafka 4 refuses.

The broker's protocol trace shows which versions each client really used, so a client that silently moved
to newer versions would fail these tests.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from broker.testkit import BrokerThread
from protocol import legacy_records as legacy
from protocol.header import ErrorCode
from protocol.records import Record, build_batch
from tests.kafka_wire import WireClient

PRODUCE, FETCH, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH, CREATE_TOPICS = 0, 1, 2, 8, 9, 19
CODECS = [None, "gzip", "snappy", "lz4"]
# What kafka-python uses when pinned to each release (its table of those brokers' ranges): the highest
# Produce and Fetch versions and the message format they carry.
PINNED = {
    (0, 9): {"Produce": 1, "Fetch": 1, "magic": 0},
    (0, 10, 0): {"Produce": 2, "Fetch": 2, "magic": 1},
    (0, 10, 1): {"Produce": 2, "Fetch": 3, "magic": 1},
    (0, 11): {"Produce": 3, "Fetch": 5, "magic": 2},
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    data = tmp_path_factory.mktemp("old-clients")
    thread = BrokerThread(data / "data", trace_file=str(data / "trace.jsonl"))
    thread.start()
    try:
        yield thread
    finally:
        thread.stop()


def _versions_used(broker: BrokerThread, client_id: str) -> dict[str, set[int]]:
    broker.flush_trace()
    used: dict[str, set[int]] = {}
    for line in Path(broker.trace_file or "").read_text().splitlines():
        event = json.loads(line)
        if event["dir"] == "request" and event.get("client_id") == client_id:
            used.setdefault(event["api"], set()).add(event["version"])
    return used


def _consume(consumer: KafkaConsumer, n: int, timeout: float = 30.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        for messages in consumer.poll(timeout_ms=200).values():
            got.extend(messages)
    return got


@pytest.mark.parametrize("api_version", list(PINNED), ids=lambda v: ".".join(map(str, v)))
def test_pinned_kafka_python_produces_consumes_in_a_group_and_commits(broker: BrokerThread,
                                                                       api_version: tuple[int, ...]) -> None:
    tag = "-".join(map(str, api_version))
    topic = f"old-{tag}-{uuid.uuid4().hex[:6]}"
    expected = []
    for codec in CODECS:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=api_version, compression_type=codec,
                                 client_id=f"p-{tag}", linger_ms=5)
        futures = [producer.send(topic, key=b"k%d" % i, value=f"{codec}-{i}".encode()) for i in range(4)]
        producer.flush()
        offsets = [f.get(timeout=30).offset for f in futures]
        assert offsets == list(range(offsets[0], offsets[0] + 4))
        producer.close()
        expected += [f"{codec}-{i}".encode() for i in range(4)]
    group = f"g-{tag}"
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, api_version=api_version, group_id=group,
                             client_id=f"c-{tag}", auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        got = _consume(consumer, len(expected))
        assert [m.value for m in got] == expected
        assert [m.offset for m in got] == list(range(len(expected)))
        assert [m.key for m in got[:4]] == [b"k0", b"k1", b"k2", b"k3"]
        if PINNED[api_version]["magic"] == 0:
            assert {m.timestamp for m in got} == {None}  # message format v0 has no timestamps
        else:
            assert all(m.timestamp > 1_600_000_000_000 for m in got)
        consumer.commit()
        assert consumer.committed(TopicPartition(topic, 0)) == len(expected)
    finally:
        consumer.close()
    # A new member of the group starts at the committed offset.
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=api_version, client_id=f"p-{tag}")
    producer.send(topic, b"after the commit").get(timeout=30)
    producer.close()
    again = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, api_version=api_version, group_id=group,
                          client_id=f"c-{tag}", auto_offset_reset="earliest")
    try:
        assert [m.value for m in _consume(again, 1)] == [b"after the commit"]
    finally:
        again.close()
    produced = _versions_used(broker, f"p-{tag}")
    fetched = _versions_used(broker, f"c-{tag}")
    assert produced["PRODUCE"] == {PINNED[api_version]["Produce"]}
    assert fetched["FETCH"] == {PINNED[api_version]["Fetch"]}
    if api_version < (0, 10, 1):
        assert fetched["LIST_OFFSETS"] == {0}
    assert max(fetched["OFFSET_COMMIT"]) <= 3 and max(fetched["JOIN_GROUP"]) <= 2


def test_pinned_admin_client_creates_topics(broker: BrokerThread) -> None:
    name = f"admin-old-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, api_version=(0, 10, 1), client_id="admin-0.10.1")
    try:
        admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)])
        assert name in admin.list_topics()
    finally:
        admin.close()
    assert _versions_used(broker, "admin-0.10.1")["CREATE_TOPICS"] <= {0, 1}
    with WireClient(broker.bootstrap) as wire:
        answer = wire.request(CREATE_TOPICS, 0, {"topics": [{"name": name, "num_partitions": 1,
                                                              "replication_factor": 1}], "timeout_ms": 5000})
        assert answer.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS


def test_old_producer_current_consumers(broker: BrokerThread) -> None:
    topic = f"old-to-new-{uuid.uuid4().hex[:6]}"
    for api_version, codec in (((0, 9), "gzip"), ((0, 10, 1), "lz4")):
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=api_version, compression_type=codec)
        for i in range(3):
            producer.send(topic, key=b"k", value=b"%s-%d" % (codec.encode(), i)).get(timeout=30)
        producer.close()
    expected = [b"gzip-0", b"gzip-1", b"gzip-2", b"lz4-0", b"lz4-1", b"lz4-2"]
    current = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id="current-kp",
                            auto_offset_reset="earliest")
    try:
        got = _consume(current, 6)
        assert [m.value for m in got] == expected
        assert [m.timestamp for m in got[:3]] == [-1] * 3  # up-converted magic 0: no timestamp, as in Kafka
        assert all(m.timestamp > 0 for m in got[3:])
    finally:
        current.close()
    rdk = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "current-rdk", "auto.offset.reset": "earliest"})
    rdk.subscribe([topic])
    try:
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < 6 and time.monotonic() < deadline:
            message = rdk.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        assert values == expected
    finally:
        rdk.close()


def test_current_producers_old_consumers(broker: BrokerThread) -> None:
    topic = f"new-to-old-{uuid.uuid4().hex[:6]}"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type="zstd")  # idempotent, v2
    sent = [producer.send(topic, value=b"kp-%d" % i, headers=[("h", b"v")], timestamp_ms=1_700_000_000_000 + i)
            for i in range(3)]
    producer.flush()
    producer.close()
    assert [f.get().offset for f in sent] == [0, 1, 2]
    rdk = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "compression.type": "lz4"})
    for i in range(3):
        rdk.produce(topic, value=b"rdk-%d" % i, timestamp=1_700_000_001_000 + i)
    assert rdk.flush(30) == 0
    expected = [b"rdk-0", b"rdk-1", b"rdk-2"]
    # zstd cannot be down-converted: the old consumers start after those batches.
    for api_version in ((0, 9), (0, 10, 1)):
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, api_version=api_version)
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 3)
            got = _consume(consumer, 3)
            assert [m.value for m in got] == expected
            assert [m.offset for m in got] == [3, 4, 5]
            if api_version >= (0, 10):
                assert [m.timestamp for m in got] == [1_700_000_001_000 + i for i in range(3)]
        finally:
            consumer.close()


def _fetch(wire: WireClient, topic: str, version: int, offset: int = 0) -> Any:
    return wire.request(FETCH, version, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
        "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                   "partition_max_bytes": 1 << 20}]}]}).responses[0].partitions[0]


def _messages(records: bytes) -> list[tuple[int, int, bytes | None]]:
    out = []
    for _o, start, end in legacy.iter_entries(records):
        message = legacy.parse_entry(records, start, end)
        for m in legacy.inner_messages(message) if message.compression else [message]:
            out.append((m.offset, m.magic, m.value))
    return out


def test_transactions_seen_by_old_fetches(broker: BrokerThread) -> None:
    """Control batches are left out; aborted records are not (a v0-3 fetch reads uncommitted, as in Kafka)."""
    topic = f"txn-old-{uuid.uuid4().hex[:6]}"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"tx-{topic}")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"committed")
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send(topic, b"aborted")
    producer.flush()
    producer.abort_transaction()
    producer.close()
    with WireClient(broker.bootstrap) as wire:
        for version, magic in ((0, 0), (1, 0), (2, 1), (3, 1)):
            partition = _fetch(wire, topic, version)
            assert partition.error_code == 0 and partition.high_watermark == 4
            assert _messages(bytes(partition.records)) == [(0, magic, b"committed"), (2, magic, b"aborted")]


def test_produce_v0_2_and_log_append_time(broker: BrokerThread) -> None:
    topic = f"lat-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as wire:
        config = [{"name": "message.timestamp.type", "value": "LogAppendTime"}]
        created = wire.request(CREATE_TOPICS, 1, {"topics": [{"name": topic, "num_partitions": 1,
                                                              "replication_factor": 1, "configs": config}],
                                                  "timeout_ms": 5000, "validate_only": False})
        assert created.topics[0].error_code == 0
        before = int(time.time() * 1000)
        message_set = legacy.build_message_set([(0, 1000, None, b"a"), (1, 2000, None, b"b")], 1, compression=2)
        answer = wire.produce(topic, 0, message_set, version=2)
        assert (answer.error_code, answer.base_offset) == (0, 0) and answer.log_append_time_ms >= before
        assert wire.produce(topic, 0, legacy.build_message_set([(0, -1, None, b"c")], 0), version=0).base_offset == 2
        # A producer may not claim LogAppendTime for itself.
        claimed = legacy.build_message_set([(0, -1, None, b"x")], 1, timestamp_type=legacy.LOG_APPEND_TIME)
        assert wire.produce(topic, 0, claimed, version=2).error_code == ErrorCode.INVALID_TIMESTAMP
        corrupt = bytearray(legacy.build_message_set([(0, 5, None, b"x")], 1))
        corrupt[-1] ^= 1
        assert wire.produce(topic, 0, bytes(corrupt), version=1).error_code == ErrorCode.CORRUPT_MESSAGE
        records = bytes(_fetch(wire, topic, 3).records)
        entries = [legacy.parse_entry(records, s, e) for _o, s, e in legacy.iter_entries(records)]
        assert entries[0].timestamp_type == legacy.LOG_APPEND_TIME and entries[0].timestamp >= before
        assert [m[2] for m in _messages(records)] == [b"a", b"b", b"c"]


def test_downconversion_disabled_and_zstd_topics(broker: BrokerThread) -> None:
    topic, zstd = f"nodown-{uuid.uuid4().hex[:6]}", f"zstd-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as wire:
        for name, config in ((topic, ("message.downconversion.enable", "false")), (zstd, ("compression.type", "zstd"))):
            wire.request(CREATE_TOPICS, 5, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1,
                                                        "configs": [{"name": config[0], "value": config[1]}]}],
                                            "timeout_ms": 5000})
            wire.produce(name, 0, build_batch([Record(0, 0, None, b"v2")], base_timestamp=1))
        assert _fetch(wire, topic, 3).error_code == ErrorCode.UNSUPPORTED_VERSION
        assert _fetch(wire, topic, 4).error_code == 0  # v4+ reads v2 batches: nothing to convert
        assert _fetch(wire, zstd, 1).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_list_offsets_v0_and_offset_commit_v1(broker: BrokerThread) -> None:
    topic = f"lo-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as wire:
        wire.create_topic(topic)
        for _ in range(3):
            wire.produce(topic, 0, build_batch([Record(0, 0, None, b"x")], base_timestamp=1))

        def offsets(timestamp: int, max_num: int = 10) -> list[int]:
            answer = wire.request(LIST_OFFSETS, 0, {"replica_id": -1, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "timestamp": timestamp, "max_num_offsets": max_num}]}]})
            return answer.topics[0].partitions[0].old_style_offsets

        assert offsets(-1) == [3, 0]  # the log end, then the (only) segment's base offset
        assert offsets(-1, 1) == [3]
        assert offsets(-2) == [0]
        commit = wire.request(OFFSET_COMMIT, 1, {"group_id": f"g-{topic}", "generation_id_or_member_epoch": -1,
                                                 "member_id": "", "topics": [{"name": topic, "partitions": [
                                                     {"partition_index": 0, "committed_offset": 2,
                                                      "commit_timestamp": 1234, "committed_metadata": "m"}]}]})
        assert commit.topics[0].partitions[0].error_code == 0
        fetched = wire.request(OFFSET_FETCH, 1, {"group_id": f"g-{topic}", "topics": [
            {"name": topic, "partition_indexes": [0]}]})
        assert (fetched.topics[0].partitions[0].committed_offset, fetched.topics[0].partitions[0].metadata) == (2, "m")
        # v0 (Kafka 0.8.1's): kept apart from the coordinator's, offset only, as ZooKeeper-mode Kafka keeps them
        # in ZooKeeper (answers compared with a Kafka 3.9 broker's).
        group0 = f"z-{topic}"
        commit0 = wire.request(OFFSET_COMMIT, 0, {"group_id": group0, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_metadata": "dropped"}]}]})
        assert commit0.topics[0].partitions[0].error_code == 0
        fetched0 = wire.request(OFFSET_FETCH, 0, {"group_id": group0, "topics": [
            {"name": topic, "partition_indexes": [0, 1]}]}).topics[0].partitions
        assert [(p.committed_offset, p.metadata, p.error_code) for p in fetched0] == [
            (1, "", 0), (-1, "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        fetched1 = wire.request(OFFSET_FETCH, 1, {"group_id": group0, "topics": [
            {"name": topic, "partition_indexes": [0]}]}).topics[0].partitions[0]
        assert fetched1.committed_offset == -1  # not the coordinator's
        unseen = wire.request(OFFSET_FETCH, 0, {"group_id": f"g-{topic}", "topics": [
            {"name": topic, "partition_indexes": [0]}]}).topics[0].partitions[0]
        assert unseen.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # v1's commit is not v0's


@pytest.fixture(params=["4.0", "4.1"])
def kafka4(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerThread]:
    thread = BrokerThread(tmp_path, kafka_version=request.param)
    thread.start()
    try:
        yield thread
    finally:
        thread.stop()


# One request below Kafka 4's floor for each API whose floor KIP-896 raised.
_REMOVED = [(FETCH, 3, {"topics": []}), (LIST_OFFSETS, 0, {"topics": []}), (OFFSET_COMMIT, 1, {"group_id": "g"}),
            (OFFSET_FETCH, 0, {"group_id": "g", "topics": []}), (CREATE_TOPICS, 1, {"topics": []}),
            (20, 0, {"topic_names": []}), (32, 0, {"resources": []}), (29, 0, {}), (23, 1, {"topics": []})]


def test_4x_profiles_refuse_what_kafka_4_refuses(kafka4: BrokerThread) -> None:
    for api_key, version, body in _REMOVED:
        with WireClient(kafka4.bootstrap) as wire:
            wire.send(api_key, version, body)
            with pytest.raises(ConnectionError):
                wire._recv(4)
    # Produce v0-2: still advertised (KAFKA-18659), but Kafka 4 cannot parse them and closes the connection
    # (tests/reference: legacy_refused).
    message_set = legacy.build_message_set([(0, -1, None, b"x")], 0)
    for version in (0, 1, 2):
        with WireClient(kafka4.bootstrap) as wire, pytest.raises(ConnectionError):
            wire.produce("p", 0, message_set, version=version)
    # kafka-python pinned to 0.10.1 cannot fetch: its Fetch v3 closes the connection, as on Kafka 4.
    consumer = KafkaConsumer(bootstrap_servers=kafka4.bootstrap, api_version=(0, 10, 1), request_timeout_ms=5000,
                             fetch_max_wait_ms=100)
    try:
        tp = TopicPartition("p", 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        assert not _consume(consumer, 1, timeout=3)
    finally:
        consumer.close()


def test_3_9_serves_the_same_requests(broker: BrokerThread) -> None:
    for api_key, version, body in _REMOVED:
        with WireClient(broker.bootstrap) as wire:
            wire.request(api_key, version, body)  # an answer, not a closed connection
