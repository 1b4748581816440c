"""The jobs' command lines, end to end, against a broker started with `--zookeeper` (producer-id blocks from a
real ZooKeeper): the exactly-once write with a task killed midway, then the read job's --verify."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from broker.testkit import BrokerProcess
from tests.pipeline.conftest import MASTER, spark_available

pytestmark = pytest.mark.pipeline

REPO = Path(__file__).resolve().parents[2]
ROWS = 3000


def run_job(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", module, "--master", MASTER, "--conf", "spark.ui.enabled=false", "--no-progress",
           *args]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_jobs_against_a_broker_with_zookeeper_pid_blocks(zookeeper, tmp_path, topic_name):
    reason = spark_available()
    if reason:
        pytest.skip(reason)
    chroot = f"/pipeline-{uuid.uuid4().hex[:8]}"
    broker = BrokerProcess(tmp_path / "data", "--zookeeper", zookeeper.address + chroot, "--broker-id", "0").start()
    try:
        write = run_job("jobs.spark_to_kafka", "--bootstrap", broker.bootstrap, "--topic", topic_name,
                        "--generate", str(ROWS), "--partitions", "2", "--spark-partitions", "3",
                        "--delivery", "exactly-once", "--fail-once-partition", "0")
        assert write.returncode == 0, write.stderr[-3000:]
        # The killed attempt shows in Spark's log; the report lists partition 0 on its second attempt.
        assert "exited unexpectedly" in write.stderr or "crashed" in write.stderr
        assert f"{ROWS} rows in" in write.stderr
        report_rows = [line.split() for line in write.stderr.splitlines()]
        assert ["0", "1", str(ROWS // 3)] in [r[:3] for r in report_rows]

        verify = run_job("jobs.kafka_to_spark", "--bootstrap", broker.bootstrap, "--topic", topic_name,
                         "--verify", "--expect-rows", str(ROWS))
        assert verify.returncode == 0, verify.stderr[-3000:]
        assert f"rows {ROWS}, distinct keys {ROWS}, duplicate keys 0" in verify.stderr
    finally:
        assert broker.stop() == 0

    from kazoo.client import KazooClient

    zk = KazooClient(hosts=zookeeper.address)
    zk.start(timeout=30)
    try:
        block = json.loads(zk.get(chroot + "/latest_producer_id_block")[0])
    finally:
        zk.stop()
    assert (block["version"], block["broker"], block["block_start"]) == (1, 0, "0")
