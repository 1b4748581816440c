"""Kafka Streams with processing.guarantee=exactly_once_v2 against minibroker: a word count with a repartition
topic and a changelog topic (tests/java/src/minibroker/streams/WordCountCheck.java) fed while it runs, and the
broker killed (SIGKILL) and restarted on the same data directory and port in the middle. Every word's committed
output must be exactly 1, 2, ..., n, and the internal topics must have been created with the partitions and
configs Streams asked for in its CreateTopics requests (read from the broker's protocol trace).

The same application also runs on a cluster of three brokers (every topic replicated three times) with the
broker that leads its group coordinator killed in the middle.

With group.protocol=streams (KIP-1071, the 4.4 profile) the broker assigns the tasks and creates the internal
topics itself, from the topology the application sends; the same exactly-once run, on one broker and on
three, and what the Java Admin client sees of the streams group (described, listed, its offsets, deleted)."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker.testkit import BrokerProcess
from tests.java import jvm

RECORDS = 3000
WORDS = 30
RESTART_AT_OUTPUT = RECORDS // 3


def created_topics(trace: Path) -> dict[str, dict[str, Any]]:
    """CreateTopics requests in a protocol trace: {topic: {"partitions", "replication_factor", "configs"}}."""
    topics = {}
    for line in trace.read_text().splitlines():
        entry = json.loads(line)
        if entry["dir"] == "request" and entry["api"] == "CREATE_TOPICS":
            for t in entry["fields"]["topics"]:
                topics[t["name"]] = {"partitions": t["num_partitions"], "replication_factor": t["replication_factor"],
                                     "configs": {c["name"]: c["value"] for c in t["configs"]}}
    return topics


def run_word_count(tmp_path: Path, app: str, bootstrap: str, in_the_middle: Callable[[], None],
                   *extra: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Runs WordCountCheck, calls `in_the_middle` once a third of the output is there; returns the progress
    event it was called on and the result."""
    classes = jvm.require(jvm.build, "4.4", jvm.sources())
    stderr = (tmp_path / "streams.log").open("w")
    proc = subprocess.Popen(
        jvm.command("4.4", classes, "minibroker.streams.WordCountCheck", "--bootstrap", bootstrap,
                    "--app-id", app, "--state-dir", str(tmp_path / "state"), "--records", str(RECORDS),
                    "--words", str(WORDS), "--timeout", "240", *extra),
        stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        lines = jvm.Lines(proc)
        deadline = time.monotonic() + 300
        killed_at: dict[str, Any] | None = None
        result = None
        while result is None:
            event = lines.next_event(deadline)
            assert event is not None, "the Streams check ended without a result:\n" + log_tail(tmp_path)
            if event["event"] == "result":
                result = event
            elif killed_at is None and event["output"] >= RESTART_AT_OUTPUT:
                killed_at = event
                in_the_middle()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.close()
    assert killed_at is not None, "the broker was never killed"
    # The kill came in the middle: input was still being produced and counted.
    assert killed_at["acked"] < RECORDS and killed_at["output"] < RECORDS, killed_at
    assert result["send_errors"] == [], result["send_errors"]
    assert result["acked"] == RECORDS
    assert result["wrong"] == [], f"{result['wrong']}\nStreams states: {result['states']}\n" + log_tail(tmp_path)
    assert result["output_records"] == RECORDS
    # Against Kafka a killed broker costs Streams retries, never a thread: nothing it answers is fatal.
    assert result["replaced_threads"] == 0, f"Streams states: {result['states']}\n" + log_tail(tmp_path)
    assert result["closed"] and result["final_state"] == "NOT_RUNNING", result["states"]
    return killed_at, result


@pytest.mark.parametrize("profile", [None, "4.1"], ids=["profile-default", "profile-4.1"])
def test_streams_exactly_once_across_a_broker_kill(tmp_path: Path, profile: str | None) -> None:
    app = f"wordcount-{uuid.uuid4().hex[:8]}"
    traces = [tmp_path / "trace-1.jsonl", tmp_path / "trace-2.jsonl"]
    version = ["--kafka-version", profile] if profile else []
    brokers = [BrokerProcess(tmp_path / "data", *version, "--trace", str(traces[0])).start()]

    def kill_and_restart() -> None:
        brokers[0].kill()
        brokers[0] = BrokerProcess(tmp_path / "data", *version, "--trace", str(traces[1]),
                                   port=brokers[0].port).start()

    try:
        _, result = run_word_count(tmp_path, app, brokers[0].bootstrap, kill_and_restart)
    finally:
        brokers[0].stop()

    repartition, changelog = f"{app}-by-word-repartition", f"{app}-counts-changelog"
    described = result["topics"]
    assert set(described) == {f"{app}-input", f"{app}-output", repartition, changelog}
    requested = created_topics(traces[0])
    for name in (repartition, changelog):
        assert name in requested, f"Streams did not create {name}: {sorted(requested)}"
        # Streams asks for as many partitions as the input has, the broker's replication factor, and configs.
        assert requested[name]["partitions"] == 3 and requested[name]["replication_factor"] == -1
        assert described[name]["partitions"] == 3
        assert described[name]["configs"] == requested[name]["configs"], name
    assert requested[changelog]["configs"]["cleanup.policy"] == "compact"
    assert {k: requested[repartition]["configs"][k] for k in ("cleanup.policy", "retention.ms", "segment.bytes")} == \
        {"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "52428800"}
    # Streams deletes the repartition records it has committed (DeleteRecords): the log starts later.
    assert described[repartition]["log_start_offsets"] > 0


def java_hash(text: str) -> int:
    """Java's String.hashCode, as Kafka's Utils.abs of it places a group on __consumer_offsets."""
    units = text.encode("utf-16-be")  # Java hashes UTF-16 code units
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h & 0x7FFFFFFF


def test_streams_exactly_once_across_a_broker_kill_in_a_cluster(tmp_path: Path, minibroker_cluster) -> None:
    """Three brokers, every topic replicated three times; the broker leading the application's group
    coordinator is SIGKILLed in the middle and stays down."""
    cluster = minibroker_cluster
    app = f"wordcount-{uuid.uuid4().hex[:8]}"
    victim: list[int] = []

    def kill_the_group_coordinator() -> None:
        victim.append(cluster.leader("__consumer_offsets", java_hash(app) % 50))
        cluster.kill_broker(victim[0])

    _, result = run_word_count(tmp_path, app, cluster.bootstrap, kill_the_group_coordinator,
                               "--replication-factor", "3")
    assert victim
    assert {name: t["replicas"] for name, t in result["topics"].items()} == {
        f"{app}-{suffix}": 3 for suffix in ("input", "output", "by-word-repartition", "counts-changelog")}


def log_tail(tmp_path: Path, lines: int = 60) -> str:
    path = tmp_path / "streams.log"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def check_streams_group(app: str, result: dict[str, Any], partitions: int = 3) -> None:
    """The internal topics the broker created from the topology, and the Admin client's view of the group."""
    repartition, changelog = f"{app}-by-word-repartition", f"{app}-counts-changelog"
    topics = result["topics"]
    assert set(topics) == {f"{app}-input", f"{app}-output", repartition, changelog}
    assert topics[repartition]["partitions"] == topics[changelog]["partitions"] == partitions
    # The configs Streams put in the topology, set on the topics the broker created.
    assert topics[changelog]["configs"]["cleanup.policy"] == "compact"
    assert {k: topics[repartition]["configs"][k] for k in ("cleanup.policy", "retention.ms", "segment.bytes")} == \
        {"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "52428800"}
    assert topics[repartition]["log_start_offsets"] > 0  # Streams purged what it committed
    running = result["group_while_running"]
    assert running["members"] == 2 and running["processes"] == 1, running  # two stream threads, one instance
    assert running["active_tasks"] == 2 * partitions and running["assignor"] == "sticky", running
    assert running["state"] in ("Stable", "Reconciling") and running["topology_epoch"] == 0, running
    assert {s["id"]: (s["source_topics"], s["changelog_partitions"], s["repartition_partitions"])
            for s in running["subtopologies"]} == {
        "0": ([f"{app}-input"], {}, {}),
        "1": ([], {changelog: partitions}, {repartition: partitions})}, running
    assert running["listed"] == {"type": "Streams", "state": running["state"]}
    assert running["committed_partitions"] == 2 * partitions  # the input's and the repartition topic's
    assert result["group_after_close"] == {"state": "Empty", "deleted": "ok",
                                           "described_after": "GroupIdNotFoundException", "listed_after": None}


def test_streams_protocol_exactly_once_across_a_broker_kill(tmp_path: Path) -> None:
    """group.protocol=streams under the 4.4 profile on one broker, SIGKILLed and restarted in the middle."""
    app = f"wordcount-{uuid.uuid4().hex[:8]}"
    brokers = [BrokerProcess(tmp_path / "data", "--kafka-version", "4.4").start()]

    def kill_and_restart() -> None:
        brokers[0].kill()
        brokers[0] = BrokerProcess(tmp_path / "data", "--kafka-version", "4.4", port=brokers[0].port).start()

    try:
        _, result = run_word_count(tmp_path, app, brokers[0].bootstrap, kill_and_restart, "--group-protocol", "streams")
    finally:
        brokers[0].stop()
    check_streams_group(app, result)


@pytest.mark.minibroker_cluster(args=("--kafka-version", "4.4"))
def test_streams_protocol_exactly_once_across_a_broker_kill_in_a_cluster(tmp_path: Path, minibroker_cluster) -> None:
    """group.protocol=streams on three brokers (4.4 profile, every topic replicated three times); the broker
    leading the group's coordinator is SIGKILLed in the middle and stays down."""
    cluster = minibroker_cluster
    app = f"wordcount-{uuid.uuid4().hex[:8]}"
    victim: list[int] = []

    def kill_the_group_coordinator() -> None:
        victim.append(cluster.leader("__consumer_offsets", java_hash(app) % 50))
        cluster.kill_broker(victim[0])

    _, result = run_word_count(tmp_path, app, cluster.bootstrap, kill_the_group_coordinator,
                               "--replication-factor", "3", "--group-protocol", "streams")
    assert victim
    check_streams_group(app, result)
    assert {name: t["replicas"] for name, t in result["topics"].items()} == {
        f"{app}-{suffix}": 3 for suffix in ("input", "output", "by-word-repartition", "counts-changelog")}
