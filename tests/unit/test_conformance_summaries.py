"""The conformance scripts' summaries (scripts/conformance/, `make conformance`): a suite's results become a
per-test table and `N passed, M failed, K skipped`, and the exit status says whether anything failed. The
suites themselves take too long for `make test`; these check how their outcomes are read, from files in the
formats the suites write (pytest's JUnit XML, librdkafka's test-runner logs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "conformance"

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="test.integration.test_admin_integration" name="test_create_partitions" time="0.5"/>
<testcase classname="test.integration.test_admin_integration" name="test_delete_records" time="1.3">
  <failure message="AssertionError: assert 3 == 6">long traceback</failure></testcase>
<testcase classname="test.integration.test_consumer_integration" name="test_group" time="60.0">
  <error message="Failed: Timeout &gt;90.0s">traceback</error></testcase>
<testcase classname="test.integration.test_admin_integration" name="test_describe_metadata_quorum" time="0">
  <skipped message="DescribeQuorum requires KRaft (broker &gt;=4.0)"/></testcase>
</testsuite></testsuites>
"""


def test_junit_summary_counts_and_fails_on_a_failure_or_an_error(tmp_path: Path) -> None:
    xml = tmp_path / "results.xml"
    xml.write_text(JUNIT)
    run = subprocess.run([sys.executable, str(SCRIPTS / "junit_summary.py"), "kafka-python", str(xml)],
                         capture_output=True, text=True, timeout=60)
    lines = run.stdout.splitlines()
    assert lines[-1] == "1 passed, 2 failed, 1 skipped"
    assert run.returncode == 1
    rows = {line.split()[2]: line.split()[0] for line in lines if line.startswith(("PASS", "FAIL", "ERROR", "SKIP"))}
    assert rows == {"test_admin_integration::test_create_partitions": "PASS",
                    "test_admin_integration::test_delete_records": "FAIL",
                    "test_consumer_integration::test_group": "ERROR",
                    "test_admin_integration::test_describe_metadata_quorum": "SKIP"}
    assert "AssertionError: assert 3 == 6" in run.stdout


def test_junit_summary_passes_when_nothing_failed(tmp_path: Path) -> None:
    xml = tmp_path / "results.xml"
    xml.write_text('<testsuite><testcase classname="t" name="test_a" time="1"/></testsuite>')
    run = subprocess.run([sys.executable, str(SCRIPTS / "junit_summary.py"), "suite", str(xml)],
                         capture_output=True, text=True, timeout=60)
    assert run.stdout.splitlines()[-1] == "1 passed, 0 failed, 0 skipped"
    assert run.returncode == 0


def _rdk_log(name: str, status: str, failure: str = "") -> str:
    """The end of a test-runner log as librdkafka v2.12.0 writes it (summary rows between #=== lines)."""
    main = "PASSED" if status == "PASSED" else "FAILED"
    return (f"[{name:<28}/  1.000s] {name}: starting\n{failure}"
            f"TEST 20260101000000 (bare, scenario default) SUMMARY\n"
            "#==================================================================#\n"
            f"| {'<MAIN>':<40} | {main:>10} |   2.000s |\n"
            f"| {name:<40} | {status:>10} |   1.000s |\n"
            "#==================================================================#\n")


@pytest.fixture
def librdkafka_results(tmp_path: Path) -> Path:
    results = tmp_path / "librdkafka-run"
    results.mkdir()
    (results / "test.conf").write_text("bootstrap.servers=127.0.0.1:9092\ntest.timeout.multiplier=2\n")
    failure = ('### Test "0103_transactions (do_test_basic_producer_txn:42)" failed at '
               "0103-transactions.c:59:do_test_basic_producer_txn() at Thu Jan  1 00:00:00 2026: ###\n"
               "CreateTopics failed: Broker: Invalid replication factor\n")
    for test, name, status, text, rc in (
            ("0012", "0012_produce_consume", "PASSED", "", 0),
            ("0103", "0103_transactions", "FAILED", failure, 1),
            ("0110", "0110_batch_size", "SKIPPED", "[0110_batch_size] skipping: needs RapidJSON\n", 0)):
        (results / f"{test}.log").write_text(_rdk_log(name, status, text))
        (results / f"{test}.rc").write_text(f"{rc}\n")
        (results / f"{test}.time").write_text("3\n")
    return results


def test_librdkafka_summary_reads_the_test_runner_logs(librdkafka_results: Path, tmp_path: Path) -> None:
    """RDK_RESUMMARIZE re-reads a run's logs, without the source or the build (an empty cache here)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CONFORMANCE_CACHE": str(tmp_path / "cache"),
           "RDK_RESUMMARIZE": str(librdkafka_results), "RDK_TESTS": "0012 0103 0110"}
    run = subprocess.run(["bash", str(SCRIPTS / "librdkafka.sh")], env=env, capture_output=True, text=True,
                         timeout=60)
    lines = run.stdout.splitlines()
    assert lines[-1] == "1 passed, 1 failed, 1 skipped", run.stdout + run.stderr
    assert run.returncode == 1
    rows = {line.split()[0]: line.split()[2] for line in lines if line[:4] in ("0012", "0103", "0110")}
    assert rows == {"0012": "PASS", "0103": "FAIL", "0110": "SKIP"}
    assert "0103-transactions.c:59: CreateTopics failed: Broker: Invalid replication factor" in run.stdout
    assert not (tmp_path / "cache" / "librdkafka").exists()
