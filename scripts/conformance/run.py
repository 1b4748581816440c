#!/usr/bin/env python3
"""`make conformance`: the client libraries' own integration suites (librdkafka's tests/, kafka-python's
test/integration) against minibroker, one suite after the other, never two at once.

With --bootstrap the suites run against that broker or cluster. Without it, each suite gets a fresh broker (or,
with --brokers 3, a fresh ZooKeeper-mode cluster, as `make cluster` starts) with the settings of the Kafka cluster
the suite was written for, and the broker's log is kept beside the suite's results. Each suite prints its
per-test table and `N passed, M failed, K skipped`; the last line adds them up. Exit status: 0 if nothing
failed, 1 if a test failed, 2 if a suite could not be set up.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

CACHE = Path(os.environ.get("CONFORMANCE_CACHE", Path.home() / ".cache" / "minibroker" / "conformance"))
TOTALS = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$")

# What every suite's broker is given: Kafka's grouped durability, and topics auto-created with 4 partitions
# and sessions down to 1 s as in both suites' own broker configurations (librdkafka's tests produce to
# partitions 1-3 of auto-created topics; kafka-python's test fixtures set num.partitions=4 and
# group.min.session.timeout.ms=1000).
COMMON_BROKER_ARGS = ("--fsync", "grouped", "--num-partitions", "4", "-o", "group.min.session.timeout.ms=1000")


@dataclass(frozen=True)
class Suite:
    name: str
    script: str
    broker_args: tuple[str, ...]

    def env(self, kafka_version: str) -> dict[str, str]:
        """The release the suite is told the broker is (it gates tests and caps the clients' versions)."""
        if self.name == "librdkafka":
            return {"RDK_BROKER_VERSION": f"{kafka_version}.0"}
        return {"KP_BROKER_VERSION": kafka_version}


SUITES = {
    # librdkafka's tests run against trivup's Kafka with its default initial rebalance delay, and count
    # rebalances accordingly.
    "librdkafka": Suite("librdkafka", "librdkafka.sh", ("-o", "group.initial.rebalance.delay.ms=3000")),
    # kafka-python's fixture configures group.initial.rebalance.delay.ms=0, minibroker's default.
    "kafka-python": Suite("kafka-python", "kafka-python.sh", ()),
}


@contextmanager
def started_brokers(suite: Suite, brokers: int, kafka_version: str, extra: list[str]) -> Iterator[str]:
    """A fresh broker (or cluster) for one suite; yields its bootstrap address and keeps its log."""
    args = [*COMMON_BROKER_ARGS, *suite.broker_args, "--kafka-version", kafka_version, *extra]
    logs = CACHE / "results" / f"{suite.name}-broker-{time.strftime('%Y%m%d-%H%M%S')}"
    logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="conformance-", dir=CACHE) as data:
        if brokers == 1:
            from broker.testkit.broker_thread import BrokerProcess

            single = BrokerProcess(Path(data) / "broker", *args).start(timeout=60)
            print(f"[conformance] {suite.name}: broker on {single.bootstrap} ({' '.join(args)})", flush=True)
            try:
                yield single.bootstrap
            finally:
                single.stop()
                (logs / "broker.log").write_text("".join(single.log_lines))
        else:
            from broker.testkit.cluster import MinibrokerCluster

            cluster = MinibrokerCluster(data, brokers, extra_args=tuple(args)).start(timeout=120)
            first = cluster.broker(cluster.broker_ids[0]).bootstrap
            print(f"[conformance] {suite.name}: {brokers} brokers on ZooKeeper, bootstrap {first} "
                  f"({' '.join(args)})", flush=True)
            try:
                yield first
            finally:
                procs = {i: cluster.broker(i) for i in cluster.broker_ids}
                cluster.stop()
                for broker_id, proc in procs.items():
                    (logs / f"broker-{broker_id}.log").write_text("".join(proc.log_lines))
        print(f"[conformance] broker logs in {logs}", flush=True)


def run_suite(suite: Suite, bootstrap: str, kafka_version: str) -> tuple[int, tuple[int, int, int] | None]:
    """Run one suite's script, passing its output through; its exit status and closing counts."""
    env = {**os.environ, **suite.env(kafka_version), "BOOTSTRAP": bootstrap, "CONFORMANCE_CACHE": str(CACHE)}
    started = time.monotonic()
    proc = subprocess.Popen(["bash", str(HERE / suite.script)], env=env, stdout=subprocess.PIPE, text=True)
    counts = None
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        m = TOTALS.match(line.strip())
        if m:
            counts = (int(m[1]), int(m[2]), int(m[3]))
    rc = proc.wait()
    print(f"[conformance] {suite.name} took {time.monotonic() - started:.0f} s", flush=True)
    return rc, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/conformance/run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default="all", help="librdkafka, kafka-python or all (comma-separated)")
    parser.add_argument("--bootstrap", default="", help="a running broker's host:port (default: start one)")
    parser.add_argument("--brokers", type=int, default=1, help="brokers to start when no --bootstrap is given")
    parser.add_argument("--kafka-version", default="3.9", help="the release the broker and the suites assume")
    parser.add_argument("broker_args", nargs="*", help="more options for the started brokers (after --)")
    args = parser.parse_args(argv)
    names = list(SUITES) if args.suites == "all" else [s.strip() for s in args.suites.split(",") if s.strip()]
    unknown = [n for n in names if n not in SUITES]
    if unknown or not names:
        parser.error(f"unknown suite {', '.join(unknown)}: choose from {', '.join(SUITES)} or all")
    CACHE.mkdir(parents=True, exist_ok=True)
    worst = 0
    total = [0, 0, 0]
    for name in names:
        suite = SUITES[name]
        if args.bootstrap:
            rc, counts = run_suite(suite, args.bootstrap, args.kafka_version)
        else:
            with started_brokers(suite, args.brokers, args.kafka_version, args.broker_args) as bootstrap:
                rc, counts = run_suite(suite, bootstrap, args.kafka_version)
        if counts is None:
            print(f"[conformance] {name}: no results (exit status {rc})", flush=True)
            rc = 2
        else:
            total = [a + b for a, b in zip(total, counts, strict=True)]
        worst = max(worst, min(rc, 2))
    if len(names) > 1:
        print(f"\nall suites: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
