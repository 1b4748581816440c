"""KIP-932 share groups with Apache Kafka's Java KafkaShareConsumer and Admin client 4.4 (tests/java/src/
minibroker/check/ShareChecks.java). Under the 4.4 profile: two consumers with explicit acknowledgement in the
batch-optimized mode (ShareFetch v1 or v2) and the record-limit mode (v2 only) get every record, released
records come back and rejected ones do not (issue 34: records were archived without ever being delivered when
a fetch acquired part of a batch); implicit acknowledgement; records of a consumer gone silent go to the other
once their acquisition lock times out; RENEW keeps them from it; share.delivery.count.limit archives records
released at every delivery; the Admin client lists, describes and deletes the group and lists its offsets
and lags. Under the 4.1 profile (ShareFetch v1 only) the checks its client can run there. The broker's lock
is 5 s, so that the lock checks take seconds (each check reads it from the consumer).

On a cluster of three brokers (4.4 profile; tests/java/src/minibroker/share/ShareFailoverCheck.java): two
consumers with explicit acknowledgement while the leader of a partition is SIGKILLed, then (once it is back) the
broker of the share coordinator of the group's partitions: every record is acknowledged, and none whose
acknowledgement was answered is delivered again."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coordinator.share_coordinator import coordinator_key
from tests.java import jvm
from tests.kafka_wire import WireClient

LOCK_MS = 5_000  # RENEW must come round within it on a loaded machine


@pytest.mark.minibroker(kafka_version="4.4", group_share_record_lock_duration_ms=LOCK_MS)
def test_java_share_consumers(minibroker: str) -> None:
    results = jvm.require(jvm.run_checks, "4.4", minibroker, ["share."])
    assert len(results) == 7
    assert all(r.ok for r in results), jvm.failures(results)


@pytest.mark.minibroker(kafka_version="4.1", group_share_record_lock_duration_ms=LOCK_MS)
def test_java_share_consumers_share_fetch_v1(minibroker: str) -> None:
    results = jvm.require(jvm.run_checks, "4.4", minibroker,
                          ["share.explicit_batch_optimized", "share.implicit", "share.lock_timeout"])
    assert len(results) == 3
    assert all(r.ok for r in results), jvm.failures(results)


FAILOVER_RECORDS = 600


def find_share_coordinator(bootstrap: str, group: str, topic_id: uuid.UUID, partition: int) -> int:
    """The broker that coordinates a share partition's state (FindCoordinator v6, key type SHARE), asked of the
    broker at `bootstrap`."""
    with WireClient(bootstrap, timeout=10) as client:
        answer = client.request(10, 6, {"key_type": 2,
                                        "coordinator_keys": [coordinator_key(group, topic_id, partition)]})
    found = answer.coordinators[0]
    assert found.error_code == 0, found
    return found.node_id


def run_share_failover(tmp_path: Path, bootstrap: str, first: Callable[[str], None],
                       second: Callable[[str, str], None]) -> dict[str, Any]:
    """ShareFailoverCheck against a cluster: `first(topic)` runs at a third of the acknowledgements (kill a
    partition's leader), `second(topic, group)` at two thirds (bring it back, kill a share coordinator's broker);
    returns the check's result, once checked: every record acknowledged, none delivered again after its
    acknowledgement was answered."""
    topic, group = f"failover-{uuid.uuid4().hex[:8]}", f"failover-group-{uuid.uuid4().hex[:8]}"
    classes = jvm.require(jvm.build, "4.4", jvm.sources())
    log_path = tmp_path / "share-failover.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        jvm.command("4.4", classes, "minibroker.share.ShareFailoverCheck", "--bootstrap", bootstrap,
                    "--topic", topic, "--group", group, "--records", str(FAILOVER_RECORDS),
                    "--pause-at", f"{FAILOVER_RECORDS // 3},{2 * FAILOVER_RECORDS // 3}", "--timeout", "300"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
    pauses = 0
    try:
        lines = jvm.Lines(proc)
        deadline = time.monotonic() + 400
        result = None
        while result is None:
            event = lines.next_event(deadline)
            assert event is not None, "the check ended without a result:\n" + _tail(log_path)
            if event["event"] == "result":
                result = event
                continue
            if pauses == 0:
                first(topic)
            else:
                second(topic, group)
            pauses += 1
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    assert pauses == 2, result
    assert result["missing"] == [], f"{result}\n" + _tail(log_path)
    assert result["redelivered_after_ack"] == [], result
    assert result["confirmed"] == result["delivered"] == FAILOVER_RECORDS, result
    return result


@pytest.mark.minibroker_cluster(args=("--kafka-version", "4.4"))
def test_java_share_consumers_on_a_cluster_across_broker_kills(tmp_path: Path, minibroker_cluster) -> None:
    cluster = minibroker_cluster
    killed: list[int] = []

    def kill_a_leader(topic: str) -> None:
        killed.append(cluster.leader(topic, 0))
        cluster.kill_broker(killed[0])
        cluster.wait_leader(topic, 0, not_broker=killed[0])

    def restart_it_and_kill_a_share_coordinator(topic: str, group: str) -> None:
        restart_after_its_session(cluster, killed[0])
        topic_id = next(t.topic_id for t in cluster.metadata([topic]).topics)
        killed.append(find_share_coordinator(cluster.broker(killed[0]).bootstrap, group, topic_id, 0))
        cluster.kill_broker(killed[1])

    run_share_failover(tmp_path, cluster.bootstrap, kill_a_leader, restart_it_and_kill_a_share_coordinator)
    assert len(killed) == 2


def restart_after_its_session(cluster: Any, broker: int) -> None:
    """Start a killed broker again once the others no longer list it (its ZooKeeper session ended)."""
    alive = [b for b in cluster.broker_ids if b != broker]
    cluster.wait_until(lambda: broker not in {b.node_id for b in cluster.metadata([], brokers=alive).brokers}
                       or None, 60, "the end of the killed broker's session")
    cluster.start_broker(broker)


def _tail(path: Path, lines: int = 60) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""
