"""From results to the summary: medians per row, and the targets of issues 8 and 25 with pass or fail.

The peer targets compare like with like: minibroker with `--fsync none` (data in the page cache, Kafka's own
default) against Tansu's memory engine, which keeps nothing across a crash; Apache Kafka's figures sit beside
them (ratio against the same minibroker mode, no targets). minibroker's default mode, acks=all answered after
a grouped fdatasync, is shown as its own durable figure, with no peer target. Pure functions of the
JSON-ready results (unit-tested)."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.brokers import MINIBROKER, MINIBROKER_NOFSYNC
from benchmarks.scenarios import SCENARIOS

MB = 1024


@dataclass(frozen=True)
class Target:
    """One of the issues' targets: `kind` "ratio" compares minibroker `--fsync none` with Tansu (their ratio
    must be >= `value` for a higher-is-better figure, <= `value` for a lower-is-better one); "max" bounds
    minibroker's own figure, in each mode that ran."""

    row: str
    kind: str
    value: float
    text: str


TARGETS = [
    Target("produce_large", "ratio", 2.0, ">= 2x Tansu"),
    *[Target(name, "ratio", 1.0, ">= 1.0x Tansu") for name in (
        "produce_small", "produce_idem_small", "produce_idem_large", "produce_kp_small", "consume_small",
        "consume_large", "txn")],
    Target("latency_p50", "ratio", 1.0, "<= Tansu"),
    Target("latency_p99", "ratio", 1.0, "<= Tansu"),
    Target("group_join", "max", 100.0, "<= 100 ms"),
    Target("startup", "max", 100.0, "<= 100 ms"),  # issue 39 (issue 25's 50 ms is below CPython + trio here)
    Target("suite_produce_test", "max", 50.0, "<= 50 ms"),  # issue 39: a confluent-kafka producer test
    Target("restart_clean_served", "max", 1000.0, "< 1 s"),
    Target("idle_rss", "max", 50 * MB, "<= 50 MB"),
    Target("final_rss", "max", 100 * MB, "<= 100 MB"),
]


@dataclass
class Row:
    row: str
    unit: str
    higher_is_better: bool
    minibroker_nofsync: float | None  # minibroker --fsync none: the figure the peer targets judge
    tansu: float | None
    ratio: float | None  # minibroker --fsync none / Tansu
    target: str
    passed: bool | None  # None: not measured (e.g. Tansu absent for a ratio target)
    minibroker: float | None = None  # minibroker's default, durable mode (grouped fdatasync): no peer target
    durable_ratio: float | None = None  # minibroker (grouped fdatasync) / Tansu: shown, never judged
    minibroker_nofsync_cpu_us_per_msg: float | None = None
    minibroker_cpu_us_per_msg: float | None = None
    tansu_cpu_us_per_msg: float | None = None
    kafka: float | None = None  # Apache Kafka (newest release, one KRaft node, its default configuration)
    kafka_ratio: float | None = None  # minibroker --fsync none / Kafka
    kafka_cpu_us_per_msg: float | None = None


def median_of(runs: list[dict[str, Any]], field: str) -> float | None:
    values = [r[field] for r in runs if r.get("ok") and isinstance(r.get(field), int | float)]
    return statistics.median(values) if values else None


def _figures(broker: dict[str, Any]) -> dict[str, tuple[float | None, float | None]]:
    """row -> (figure, broker CPU us per message) for one broker's results."""
    runs = broker.get("scenarios", {})
    out: dict[str, tuple[float | None, float | None]] = {}
    for name, scenario in SCENARIOS.items():
        if name in runs:
            out[name] = (median_of(runs[name], scenario.metric), median_of(runs[name], "broker_cpu_us_per_msg"))
            for row, field in scenario.also:
                out[row] = (median_of(runs[name], field), None)
    for key, field in (("startup", "startup_ms"), ("idle_rss", "idle_rss_kib"), ("final_rss", "final_rss_kib")):
        values = [v for v in broker.get(field, []) if v is not None]
        if values:
            out[key] = (statistics.median(values), None)
    return out


def row_kinds() -> list[tuple[str, str, bool]]:
    """Every row in table order, with its unit and whether higher is better."""
    out = []
    for name, scenario in SCENARIOS.items():
        out.append((name, scenario.unit, scenario.higher_is_better))
        out += [(row, scenario.unit, scenario.higher_is_better) for row, _ in scenario.also]
    return out + [("startup", "ms", False), ("idle_rss", "KiB", False), ("final_rss", "KiB", False)]


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def summarize(results: dict[str, Any]) -> list[Row]:
    found = results["brokers"]
    nofsync, durable = _figures(found.get(MINIBROKER_NOFSYNC, {})), _figures(found.get(MINIBROKER, {}))
    tansu, kafka = _figures(found.get("tansu", {})), _figures(found.get("kafka", {}))
    targets = {t.row: t for t in TARGETS}
    rows = []
    for row, unit, higher in row_kinds():
        if not any(row in figures for figures in (nofsync, durable, tansu, kafka)):
            continue
        n, n_cpu = nofsync.get(row, (None, None))
        d, d_cpu = durable.get(row, (None, None))
        t, t_cpu = tansu.get(row, (None, None))
        k, k_cpu = kafka.get(row, (None, None))
        ratio = _ratio(n, t)
        target = targets.get(row)
        passed: bool | None = None
        if target is not None and target.kind == "ratio" and ratio is not None:
            passed = ratio >= target.value if higher else ratio <= target.value
        elif target is not None and target.kind == "max":
            own = [v for v in (n, d) if v is not None]
            passed = all(v <= target.value for v in own) if own else None
        rows.append(Row(row, unit, higher, n, t, ratio, target.text if target else "", passed, d, _ratio(d, t),
                        n_cpu, d_cpu, t_cpu, k, _ratio(n, k), k_cpu))
    return rows


def failures(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The failed runs of every broker; a skipped one (its reason in "skipped") is not a failure."""
    return [r for broker in results["brokers"].values() for runs in broker["scenarios"].values() for r in runs
            if not r.get("ok") and not r.get("skipped")]


def rows_as_dicts(rows: list[Row]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def table(rows: list[Row]) -> str:
    lines = [f"{'row':<27} {'unit':<6} {'mini none':>10} {'Tansu':>10} {'ratio':>6}  {'target':<15} {'result':<6} "
             f"{'Kafka':>10} {'none/Kafka':>10} {'mini fsync':>10}   CPU us/msg (none / fsync / Tansu / Kafka)",
             "-" * 150]
    for r in rows:
        result = {True: "pass", False: "FAIL", None: "-"}[r.passed]
        cpus = (r.minibroker_nofsync_cpu_us_per_msg, r.minibroker_cpu_us_per_msg, r.tansu_cpu_us_per_msg,
                r.kafka_cpu_us_per_msg)
        cpu = "" if all(c is None for c in cpus) else "   " + " / ".join(_fmt(c) for c in cpus)
        lines.append(f"{r.row:<27} {r.unit:<6} {_fmt(r.minibroker_nofsync):>10} {_fmt(r.tansu):>10} "
                     f"{_fmt(r.ratio):>6}  {r.target:<15} {result:<6} {_fmt(r.kafka):>10} {_fmt(r.kafka_ratio):>10} "
                     f"{_fmt(r.minibroker):>10}{cpu}")
    return "\n".join(lines)


def scale_table(points: list[dict[str, Any]]) -> str:
    lines = [f"{'broker':<18} {'partitions':>10} {'producers':>9} {'msg/s':>10} {'MB/s':>7} "
             f"{'CPU us/msg':>10} {'CPU ms/MB':>9}", "-" * 81]
    for p in points:
        lines.append(f"{p['broker']:<18} {p['partitions']:>10} {p['producers']:>9} {_fmt(p.get('msgs_per_s')):>10} "
                     f"{_fmt(p.get('mb_per_s')):>7} {_fmt(p.get('broker_cpu_us_per_msg')):>10} "
                     f"{_fmt(p.get('broker_cpu_ms_per_mb')):>9}" + ("" if p.get("ok") else "  FAILED"))
    return "\n".join(lines)
