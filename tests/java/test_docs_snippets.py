"""The manual's Java programs (docs/clients.md, docs/compatibility/streams-groups.md), as they are written there
(only their "localhost:9092" becomes the fixture broker's address), compiled against the newest Java client and
Streams and run against minibroker. tests/docs/snippets.py collects them with every other snippet."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.docs.snippets import all_snippets
from tests.java import jvm

# The programs this module runs, by their public class name (tests/docs/test_snippets.py checks that every
# Java snippet of the manual is one of them).
PROGRAMS = ("Greetings", "WordCount", "StreamsProtocolWordCount")


def snippets() -> dict[str, str]:
    """The manual's ```java blocks by their public class name."""
    found = {}
    for snippet in all_snippets():
        if snippet.language == "java":
            found[re.search(r"public class (\w+)", snippet.code).group(1)] = snippet.code
    return found


def compiled(tmp_path: Path, bootstrap: str, *names: str) -> Path:
    found = snippets()
    files = []
    for name in names:
        assert name in found, f"the manual has no Java program {name}: {sorted(found)}"
        path = tmp_path / f"{name}.java"
        path.write_text(found[name].replace("localhost:9092", bootstrap))
        files.append(path)
    return jvm.require(jvm.build, "4.4", files, "docs", into=tmp_path)


def test_docs_java_producer_and_consumer(minibroker_server, tmp_path):
    classes = compiled(tmp_path, minibroker_server.bootstrap, "Greetings")
    result = jvm.run("4.4", classes, "Greetings", timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "sent alice at offset 0", "sent bob at offset 1", "sent carol at offset 2",
        "received alice: hello alice", "received bob: hello bob", "received carol: hello carol"]
    assert minibroker_server.groups()["greeters"]["offsets"] == {"greetings-0": 3}


def test_docs_kafka_streams_word_count(minibroker, tmp_path):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=minibroker)
    admin.create_topics([NewTopic("sentences", 2, 1), NewTopic("word-counts", 2, 1)])
    admin.close()
    classes = compiled(tmp_path, minibroker, "WordCount")
    log = (tmp_path / "streams.log").open("w")
    app = subprocess.Popen(jvm.command("4.4", classes, "WordCount"), stdout=log, stderr=subprocess.STDOUT)
    try:
        producer = KafkaProducer(bootstrap_servers=minibroker)
        for sentence in ["the quick brown fox", "The lazy dog", "a fox, a dog and THE end"]:
            producer.send("sentences", sentence.encode())
        producer.close()
        expected = {"the": 3, "quick": 1, "brown": 1, "fox": 2, "lazy": 1, "dog": 2, "a": 2, "and": 1, "end": 1}
        counts: dict[str, int] = {}
        consumer = KafkaConsumer("word-counts", bootstrap_servers=minibroker, isolation_level="read_committed",
                                 auto_offset_reset="earliest", group_id=None)
        deadline = time.monotonic() + 120
        while counts != expected and time.monotonic() < deadline and app.poll() is None:
            for records in consumer.poll(timeout_ms=500).values():
                for r in records:
                    counts[r.key.decode()] = int.from_bytes(r.value, "big", signed=True)
        consumer.close()
        assert counts == expected, (tmp_path / "streams.log").read_text()[-3000:]
    finally:
        app.send_signal(signal.SIGTERM)  # its shutdown hook closes the Streams app
        assert app.wait(60) in (0, 128 + signal.SIGTERM)
        log.close()


@pytest.mark.minibroker(kafka_version="4.4")
def test_docs_streams_protocol_word_count(minibroker, tmp_path):
    """docs/compatibility/streams-groups.md: the word count with group.protocol=streams; the broker creates its internal
    topics and assigns its tasks, and kafka-streams-groups describes the group."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic

    from tests import kafka_tools

    admin = KafkaAdminClient(bootstrap_servers=minibroker)
    admin.create_topics([NewTopic("sentences", 2, 1), NewTopic("word-counts", 2, 1)])
    classes = compiled(tmp_path, minibroker, "StreamsProtocolWordCount")
    log = (tmp_path / "streams.log").open("w")
    app = subprocess.Popen(jvm.command("4.4", classes, "StreamsProtocolWordCount"), stdout=log,
                           stderr=subprocess.STDOUT)
    group = "wordcount-streams-protocol"
    try:
        producer = KafkaProducer(bootstrap_servers=minibroker)
        for sentence in ["the quick brown fox", "The lazy dog", "a fox, a dog and THE end"]:
            producer.send("sentences", sentence.encode())
        producer.close()
        expected = {"the": 3, "quick": 1, "brown": 1, "fox": 2, "lazy": 1, "dog": 2, "a": 2, "and": 1, "end": 1}
        counts: dict[str, int] = {}
        consumer = KafkaConsumer("word-counts", bootstrap_servers=minibroker, isolation_level="read_committed",
                                 auto_offset_reset="earliest", group_id=None)
        deadline = time.monotonic() + 120
        while counts != expected and time.monotonic() < deadline and app.poll() is None:
            for records in consumer.poll(timeout_ms=500).values():
                for r in records:
                    counts[r.key.decode()] = int.from_bytes(r.value, "big", signed=True)
        consumer.close()
        assert counts == expected, (tmp_path / "streams.log").read_text()[-3000:]
        internal = sorted(t for t in admin.list_topics() if t.startswith(f"{group}-"))
        assert [t.rsplit("-", 1)[1] for t in internal] == ["changelog", "repartition"], internal
        described = kafka_tools.run("kafka-streams-groups", "--bootstrap-server", minibroker, "--describe",
                                    "--group", group)
        assert described.returncode == 0, described.stderr[-2000:]
        # The tool lists the group's offsets per input partition: every sentence read and committed.
        rows = [line.split() for line in described.stdout.splitlines()[1:] if line.strip()]
        assert sorted((topic.rsplit("-", 1)[-1], partition, lag) for _, topic, partition, lag in rows) == [
            ("repartition", "0", "0"), ("repartition", "1", "0"), ("sentences", "0", "0"), ("sentences", "1", "0")], \
            described.stdout
    finally:
        admin.close()
        app.send_signal(signal.SIGTERM)  # its shutdown hook closes the Streams app
        assert app.wait(60) in (0, 128 + signal.SIGTERM)
        log.close()
