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
from pathlib import Path

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


def share_coordinator(cluster, group: str, topic: str, partition: int, broker: int) -> int:
    """The broker that coordinates the share partition's state (FindCoordinator v6, key type SHARE), asked of
    `broker`."""
    topic_id = next(t.topic_id for t in cluster.metadata([topic]).topics)
    with WireClient(cluster.broker(broker).bootstrap, timeout=10) as client:
        answer = client.request(10, 6, {"key_type": 2,
                                        "coordinator_keys": [coordinator_key(group, topic_id, partition)]})
    found = answer.coordinators[0]
    assert found.error_code == 0, found
    return found.node_id


@pytest.mark.minibroker_cluster(args=("--kafka-version", "4.4"))
def test_java_share_consumers_on_a_cluster_across_broker_kills(tmp_path: Path, minibroker_cluster) -> None:
    cluster = minibroker_cluster
    topic, group = f"failover-{uuid.uuid4().hex[:8]}", f"failover-group-{uuid.uuid4().hex[:8]}"
    classes = jvm.require(jvm.build, "4.4", jvm.sources())
    log = (tmp_path / "share-failover.log").open("w")
    proc = subprocess.Popen(
        jvm.command("4.4", classes, "minibroker.share.ShareFailoverCheck", "--bootstrap", cluster.bootstrap,
                    "--topic", topic, "--group", group, "--records", str(FAILOVER_RECORDS),
                    "--pause-at", f"{FAILOVER_RECORDS // 3},{2 * FAILOVER_RECORDS // 3}", "--timeout", "300"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
    killed: list[int] = []
    try:
        lines = jvm.Lines(proc)
        deadline = time.monotonic() + 400
        result = None
        while result is None:
            event = lines.next_event(deadline)
            assert event is not None, "the check ended without a result:\n" + _tail(tmp_path)
            if event["event"] == "result":
                result = event
                continue
            if not killed:  # the first pause: the leader of a partition dies
                killed.append(cluster.leader(topic, 0))
                cluster.kill_broker(killed[0])
                cluster.wait_leader(topic, 0, not_broker=killed[0])
            else:  # the second: it comes back, then the share coordinator's broker dies
                restart_after_its_session(cluster, killed[0])
                killed.append(share_coordinator(cluster, group, topic, 0, killed[0]))
                cluster.kill_broker(killed[1])
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    assert len(killed) == 2, killed
    assert result["missing"] == [], f"{result}\n" + _tail(tmp_path)
    assert result["redelivered_after_ack"] == [], result
    assert result["confirmed"] == result["delivered"] == FAILOVER_RECORDS, result


def restart_after_its_session(cluster, broker: int) -> None:
    """Start a killed broker again once the others no longer list it (its ZooKeeper session ended)."""
    alive = [b for b in cluster.broker_ids if b != broker]
    cluster.wait_until(lambda: broker not in {b.node_id for b in cluster.metadata([], brokers=alive).brokers}
                       or None, 60, "the end of the killed broker's session")
    cluster.start_broker(broker)


def _tail(tmp_path: Path, lines: int = 60) -> str:
    path = tmp_path / "share-failover.log"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""
