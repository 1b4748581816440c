"""Moving on to Apache Kafka (docs/moving-to-kafka.md): Kafka's MirrorMaker 2, run as Kafka runs it (dedicated
mode: `org.apache.kafka.connect.mirror.MirrorMaker mm2.properties`, what connect-mirror-maker.sh starts), copies
a topic, its configs and a consumer group's committed offsets (checkpoints, translated, synced to the group)
from minibroker to a Kafka 4.4 node (KRaft), and the group resumes on Kafka where it stopped on minibroker."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests import kafka_jars
from tests.java.jvm import require
from tests.reference import releases

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs/moving-to-kafka.md"

# connect-mirror 4.4.0 is not served by the Maven registry here (4.3.1 is the newest that is): MirrorMaker
# 4.3.1, with its own 4.3.1 clients, between minibroker and a Kafka 4.4 node.
MM2_RELEASE = "4.3.1"
TARGET_RELEASE = "4.4"
PARTITIONS = 3
RECORDS_PER_PARTITION = 100
CLIENT = {"log_level": 3}
OFFSET_SYNCS = "mm2-offset-syncs.kafka.internal"  # MM2's name: offset-syncs on the source, for target `kafka`


def mm2_properties(source: str, target: str) -> str:
    """docs/moving-to-kafka.md's mm2.properties, pointed at these two brokers, for a one-node Kafka and with
    test-speed intervals (a later line of a properties file wins)."""
    documented = re.search(r"`mm2.properties`.*?```ini\n(.*?)```", DOC.read_text(), re.S)
    assert documented, f"{DOC} shows no mm2.properties"
    return documented.group(1) + f"""\
minibroker.bootstrap.servers = {source}
kafka.bootstrap.servers = {target}
replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
sync.group.offsets.interval.seconds = 1
emit.checkpoints.interval.seconds = 1
emit.heartbeats.interval.seconds = 1
refresh.topics.interval.seconds = 5
refresh.groups.interval.seconds = 5
"""


def start_mirror_maker(workdir: Path, properties: str) -> subprocess.Popen[bytes]:
    java = shutil.which("java")
    if java is None:
        raise kafka_jars.Unavailable("Java is not installed")
    jars = kafka_jars.fetch(MM2_RELEASE, ["connect-mirror", *releases.LOG4J2])
    (workdir / "mm2.properties").write_text(properties)
    (workdir / "log4j2.properties").write_text(
        "appender.file.type = File\nappender.file.name = FILE\n"
        f"appender.file.fileName = {workdir / 'mm2.log'}\n"
        "appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = [%d] %p %m (%c)%n\n"
        "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = FILE\n")
    out = open(workdir / "stdout.log", "ab")  # noqa: SIM115 - owned by the child process
    try:
        return subprocess.Popen(
            [java, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             f"-Dlog4j2.configurationFile={workdir / 'log4j2.properties'}",
             "-cp", os.pathsep.join(map(str, jars)), "org.apache.kafka.connect.mirror.MirrorMaker",
             str(workdir / "mm2.properties"), "--clusters", "kafka"],  # the page's connect-mirror-maker.sh line
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        out.close()


def stop(mm2: subprocess.Popen[bytes]) -> None:
    """SIGTERM (MirrorMaker stops its connectors and commits), SIGKILL after a minute."""
    if mm2.poll() is None:
        os.killpg(mm2.pid, signal.SIGTERM)
        try:
            mm2.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(mm2.pid, signal.SIGKILL)
            mm2.wait(30)


def log_tail(workdir: Path, lines: int = 60) -> str:
    parts = []
    for name in ("mm2.log", "stdout.log"):
        path = workdir / name
        if path.exists():
            parts.append(f"--- {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
    return "\n".join(parts)


def wait_for(check: Callable[[], Any], timeout: float, what: str, mm2: subprocess.Popen[bytes],
             workdir: Path) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if mm2.poll() is not None:
            raise AssertionError(f"MirrorMaker exited {mm2.returncode} while waiting for {what}\n{log_tail(workdir)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s\n{log_tail(workdir)}")
        time.sleep(0.5)


def read(bootstrap: str, group: str, topic: str, count: int | None, timeout: float = 60) -> list[str]:
    """Values read by a member of `group` from its committed offsets (none: from the start): `count` of
    them and then commit, or (count None) all until the end of every partition."""
    consumer = Consumer({**CLIENT, "bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.subscribe([topic])
    values: list[str] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if count is not None and len(values) >= count:
                break
            if count is None and len(at_end) == PARTITIONS:
                break
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == -191:  # _PARTITION_EOF
                    at_end.add(message.partition())
                    continue
                raise AssertionError(message.error())
            at_end.discard(message.partition())
            values.append(message.value().decode())
        if values:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offset of each partition, 0 where it has none."""
    consumer = Consumer({**CLIENT, "bootstrap.servers": bootstrap, "group.id": group})
    try:
        offsets = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=20)
    finally:
        consumer.close()
    return {tp.partition: max(tp.offset, 0) for tp in offsets}  # none committed: the start (earliest)


def topic_config(bootstrap: str, topic: str) -> dict[str, tuple[str, bool]]:
    """name -> (value, set on the topic rather than a default)."""
    admin = AdminClient({**CLIENT, "bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    return {name: (entry.value, entry.source == 1) for name, entry in entries.items()}  # 1: DYNAMIC_TOPIC_CONFIG


def partition_count(bootstrap: str, topic: str) -> int:
    metadata = AdminClient({**CLIENT, "bootstrap.servers": bootstrap}).list_topics(timeout=10)
    found = metadata.topics.get(topic)
    return 0 if found is None or found.error is not None else len(found.partitions)


def end_offsets(bootstrap: str, topic: str) -> list[int]:
    consumer = Consumer({**CLIENT, "bootstrap.servers": bootstrap, "group.id": "end-offsets"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)]
    finally:
        consumer.close()


def offset_syncs(source: str) -> int:
    """How many offset syncs MM2 wrote to minibroker (its offset-syncs topic, one partition, on the source)."""
    consumer = Consumer({**CLIENT, "bootstrap.servers": source, "group.id": "end-offsets"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(OFFSET_SYNCS, 0), timeout=10)[1]
    except KafkaException:
        return 0  # not created yet
    finally:
        consumer.close()


def test_mirror_maker_moves_a_topic_its_configs_and_a_group_to_kafka(minibroker, kafka_reference, tmp_path):
    """The move as MirrorMaker 2 does it: MM2 copies while producers and consumers still use minibroker; the
    consumers stop there and start on Kafka, from the offsets MM2 translated and committed for their group."""
    kafka = kafka_reference(release=TARGET_RELEASE, fresh=True)  # MM2 writes its own topics and groups there
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", "billing"
    configs = {"retention.ms": "604800000", "max.message.bytes": "2000000", "cleanup.policy": "delete"}
    admin = AdminClient({**CLIENT, "bootstrap.servers": minibroker})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1, config=configs)])[topic].result(30)

    mm2 = require(start_mirror_maker, tmp_path, mm2_properties(minibroker, kafka.bootstrap))
    try:
        wait_for(lambda: partition_count(kafka.bootstrap, topic) == PARTITIONS, 120, "the topic created on Kafka",
                 mm2, tmp_path)
        copied = topic_config(kafka.bootstrap, topic)
        for name, value in configs.items():
            if name != "cleanup.policy":  # Kafka's default too: a default is not copied (use.defaults.from)
                assert copied[name] == (value, True), (name, copied[name])

        # Producers go on writing to minibroker; MM2 copies as they write. With offset.lag.max=0 MM2 records an
        # offset sync on minibroker for each record copied, but keeps at most 10 unanswered and folds the
        # others of a partition into its latest: rounds of 9, the next once every sync of one is written, keep
        # every offset translatable, so the group's position below translates exactly.
        values = [f"order-{i}" for i in range(PARTITIONS * RECORDS_PER_PARTITION)]
        producer = Producer({**CLIENT, "bootstrap.servers": minibroker, "enable.idempotence": True})
        for start in range(0, len(values), 9):
            end = min(start + 9, len(values))
            for i in range(start, end):
                producer.produce(topic, values[i].encode(), key=str(i).encode(), partition=i % PARTITIONS)
            assert producer.flush(30) == 0
            written = end_offsets(minibroker, topic)
            wait_for(lambda: end_offsets(kafka.bootstrap, topic) == written, 60,  # noqa: B023 - used at once
                     f"records up to {written} copied", mm2, tmp_path)
            wait_for(lambda: offset_syncs(minibroker) >= end, 60,  # noqa: B023 - used at once
                     f"{end} offset syncs written", mm2, tmp_path)

        # The group stops part way on minibroker: where it stopped is where it resumes on Kafka.
        consumed = read(minibroker, group, topic, count=180)
        stopped_at = committed(minibroker, group, topic)
        assert sum(stopped_at.values()) == len(consumed) == 180
        # The checkpoint connector translates the group's offsets and, the group being unknown on Kafka,
        # commits them there (sync.group.offsets.enabled).
        wait_for(lambda: committed(kafka.bootstrap, group, topic) == stopped_at, 120,
                 f"the group's offsets {stopped_at} on Kafka", mm2, tmp_path)
        assert partition_count(kafka.bootstrap, "minibroker.checkpoints.internal") == 1
    finally:
        stop(mm2)

    # The consumers move over: the group reads on Kafka exactly what it had not read on minibroker.
    rest = read(kafka.bootstrap, group, topic, count=None)
    assert sorted(consumed + rest) == sorted(values), (len(consumed), len(rest))
