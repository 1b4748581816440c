"""`python -m tests.reference fetch|record|diff|replay`: the reference brokers from the command line.

    fetch    fetch the pinned releases (`make reference-fetch`); a second run fetches nothing
    record   run the scenarios against Apache Kafka and write recorded/<release>/<scenario>.json
             (`make reference-record`)
    diff     run the scenarios against Kafka and against minibroker, both live, and print a table:
             scenario, answers compared, differences; last line `N scenarios, M differences`
             (`make reference-diff`)
    replay   the same table from the recordings, without a JVM (what `make test` checks)

--releases 3.9,4.1,4.4 and --scenarios a,b narrow the run; -v prints every difference; --messages compares
error message texts as well.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from tests import kafka_jars
from tests.reference import releases as rel
from tests.reference.harness import (
    Outcome,
    Scenario,
    check,
    exchanges_as_json,
    load_recording,
    load_scenarios,
    run,
    run_on_minibroker,
    save_recording,
)
from tests.reference.reference import ReferencePool


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _ZooKeeper:
    def __init__(self) -> None:
        self.server: Any = None

    def address(self) -> str:
        if self.server is None:
            from broker.testkit.zookeeper import ZooKeeperServer, available

            if not available():
                raise kafka_jars.Unavailable("ZooKeeper is not installed (Debian: apt-get install zookeeper)")
            self.server = ZooKeeperServer().start()
        return str(self.server.address)

    def close(self) -> None:
        if self.server is not None:
            self.server.cleanup()


def _selected(ns: argparse.Namespace) -> list[tuple[str, Scenario]]:
    scenarios = load_scenarios()
    names = [n for n in ns.scenarios.split(",") if n] if ns.scenarios else list(scenarios)
    unknown = [n for n in names if n not in scenarios]
    if unknown:
        raise SystemExit(f"unknown scenarios {unknown}; known: {', '.join(scenarios)}")
    wanted = [r for r in ns.releases.split(",") if r] if ns.releases else None
    pairs = []
    all_releases = sorted({r for s in scenarios.values() for r in s.releases}, key=rel.series)
    for release in all_releases:
        if wanted is not None and release not in wanted:
            continue
        pairs += [(release, scenarios[n]) for n in names if release in scenarios[n].releases]
    return pairs


def _on_kafka(pool: ReferencePool, release: str, scenario: Scenario) -> tuple[str, list[Any], int]:
    reference = pool.get(release, scenario.brokers, scenario.config, fresh=scenario.fresh)
    try:
        exchanges, t0 = run(scenario, reference.bootstrap, release, "kafka", reference)
        return reference.describe(), exchanges, t0
    finally:
        pool.give_back(reference)


def cmd_fetch(ns: argparse.Namespace) -> int:
    wanted = [r for r in ns.releases.split(",") if r] if ns.releases else \
        sorted({r for s in load_scenarios().values() for r in s.releases}, key=rel.series)
    failed = 0
    for release in wanted:
        started = time.monotonic()
        try:
            jars = rel.classpath(release).split(":")
            print(f"Kafka {release} ({rel.version(release)}): {len(jars)} jars "
                  f"({time.monotonic() - started:.1f} s) in {kafka_jars.cache_root()}")
        except kafka_jars.Unavailable as exc:
            failed += 1
            print(f"Kafka {release} ({rel.version(release)}): unavailable: {exc}")
    return 1 if failed else 0


def cmd_record(ns: argparse.Namespace) -> int:
    zookeeper = _ZooKeeper()
    pool = ReferencePool(zookeeper=zookeeper.address)
    failed = 0
    current = None
    try:
        for release, scenario in _selected(ns):
            if release != current:  # one release's JVMs at a time: the machine is small
                pool.close()
                current = release
            try:
                described, exchanges, t0 = _on_kafka(pool, release, scenario)
            except kafka_jars.Unavailable as exc:
                print(f"{release:<5} {scenario.name:<34} skipped: {exc}")
                continue
            except Exception:
                failed += 1
                print(f"{release:<5} {scenario.name:<34} FAILED\n{traceback.format_exc()}")
                continue
            path = save_recording(release, scenario, described, exchanges, t0)
            print(f"{release:<5} {scenario.name:<34} {len(exchanges):>3} answers -> {path.relative_to(Path.cwd())}")
    finally:
        pool.close()
        zookeeper.close()
    return 1 if failed else 0


def _table(outcomes: list[Outcome | tuple[str, str, str]], verbose: bool) -> int:
    print(f"{'release':<8} {'scenario':<36} {'compared':>8} {'differences':>11}  {'explained':>9}")
    print("-" * 80)
    total = unexplained = 0
    for item in outcomes:
        if isinstance(item, tuple):
            release, name, why = item
            print(f"{release:<8} {name:<36} {'-':>8} {'-':>11}  {why}")
            continue
        known = sum(1 for d in item.differences if d.known)
        total += len(item.differences)
        unexplained += len(item.differences) - known
        print(f"{item.release:<8} {item.scenario:<36} {item.compared:>8} {len(item.differences):>11}  {known:>9}")
    details = [(o, d) for o in outcomes if isinstance(o, Outcome) for d in o.differences
               if verbose or not d.known]
    if details:
        print()
        for outcome, d in details:
            print(f"{outcome.release} {outcome.scenario}: {d.line()}")
    print()
    scenarios = sum(1 for o in outcomes if isinstance(o, Outcome))
    if total:
        print(f"{total - unexplained} of the differences are explained (tests/reference/known.py, the manual)")
    print(f"{scenarios} scenarios, {total} differences")
    return unexplained


def cmd_diff(ns: argparse.Namespace, live: bool) -> int:
    zookeeper = _ZooKeeper()
    pool = ReferencePool(zookeeper=zookeeper.address)
    outcomes: list[Outcome | tuple[str, str, str]] = []
    errors = 0
    current = None
    try:
        for release, scenario in _selected(ns):
            if live and release != current:
                pool.close()
                current = release
            try:
                if live:
                    _described, kafka_exchanges, t0 = _on_kafka(pool, release, scenario)
                    kafka_json = exchanges_as_json(kafka_exchanges)
                else:
                    recording = load_recording(release, scenario.name)
                    if recording is None:
                        outcomes.append((release, scenario.name, "no recording (make reference-record)"))
                        continue
                    kafka_json, t0 = recording["exchanges"], recording.get("t0")
                with tempfile.TemporaryDirectory(prefix="reference-mini-") as data_dir:
                    mini = run_on_minibroker(scenario, release, Path(data_dir), t0)
                outcome = check(release, scenario, kafka_json, mini)
            except kafka_jars.Unavailable as exc:
                outcomes.append((release, scenario.name, f"skipped: {exc}"))
                continue
            except Exception as exc:
                errors += 1
                _log(traceback.format_exc())
                outcomes.append((release, scenario.name, f"ERROR {type(exc).__name__}: {exc}"[:120]))
                continue
            outcomes.append(outcome)
            _log(f"{release} {scenario.name}: {outcome.compared} compared, {len(outcome.differences)} differences")
    finally:
        pool.close()
        zookeeper.close()
    unexplained = _table(outcomes, ns.verbose)
    return 1 if errors or unexplained else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.reference", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["fetch", "record", "diff", "replay"])
    ap.add_argument("--releases", default="", help="comma-separated (default: every release a scenario names)")
    ap.add_argument("--scenarios", default="", help="comma-separated scenario names (default: all)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print explained differences too")
    ap.add_argument("--messages", action="store_true",
                    help="compare error message texts too (not counted as differences by default)")
    ns = ap.parse_args(argv)
    if ns.messages:
        from tests.reference import harness

        harness.COMPARE_MESSAGES = True
    if ns.command == "fetch":
        return cmd_fetch(ns)
    if ns.command == "record":
        return cmd_record(ns)
    return cmd_diff(ns, live=ns.command == "diff")


if __name__ == "__main__":
    sys.exit(main())
