"""From results to the summary: medians per scenario, minibroker / Tansu ratios, and the targets of
issue 8 with pass or fail; Apache Kafka's figures beside them (minibroker / Kafka, no targets). Pure functions
of the JSON-ready results (unit-tested)."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.scenarios import SCENARIOS

MB = 1024


@dataclass(frozen=True)
class Target:
    """One of the issue's targets: `kind` "ratio" compares minibroker with Tansu (minibroker / Tansu must
    be >= `value` for a higher-is-better figure, <= `value` for a lower-is-better one); "max" bounds
    minibroker's own figure."""

    row: str
    kind: str
    value: float
    text: str


TARGETS = [
    Target("produce_large", "ratio", 2.0, ">= 2x Tansu"),
    *[Target(name, "ratio", 1.0, ">= 1.0x Tansu") for name in (
        "produce_small", "produce_idem_small", "produce_idem_large", "produce_kp_small", "consume_small",
        "consume_large", "txn")],
    Target("latency_p99", "ratio", 1.0, "<= Tansu"),
    Target("group_join", "max", 100.0, "<= 100 ms"),
    Target("startup", "max", 250.0, "<= 250 ms"),
    Target("idle_rss", "max", 50 * MB, "<= 50 MB"),
    Target("final_rss", "max", 100 * MB, "<= 100 MB"),
]


@dataclass
class Row:
    row: str
    unit: str
    higher_is_better: bool
    minibroker: float | None
    tansu: float | None
    ratio: float | None  # minibroker / Tansu
    target: str
    passed: bool | None  # None: not measured (e.g. Tansu absent for a ratio target)
    minibroker_cpu_us_per_msg: float | None = None
    tansu_cpu_us_per_msg: float | None = None
    kafka: float | None = None  # Apache Kafka (newest release, one KRaft node, its default configuration)
    kafka_ratio: float | None = None  # minibroker / Kafka
    kafka_cpu_us_per_msg: float | None = None


def median_of(runs: list[dict[str, Any]], field: str) -> float | None:
    values = [r[field] for r in runs if r.get("ok") and isinstance(r.get(field), int | float)]
    return statistics.median(values) if values else None


def _figures(broker: dict[str, Any]) -> dict[str, tuple[float | None, float | None]]:
    """row -> (headline figure, broker CPU us per message) for one broker's results."""
    runs = broker.get("scenarios", {})
    out: dict[str, tuple[float | None, float | None]] = {}
    for name, scenario in SCENARIOS.items():
        if name in runs:
            out[name] = (median_of(runs[name], scenario.metric), median_of(runs[name], "broker_cpu_us_per_msg"))
    if "latency_p50" in runs:
        out["latency_p99"] = (median_of(runs["latency_p50"], "p99_ms"), None)
    for key, field in (("startup", "startup_ms"), ("idle_rss", "idle_rss_kib"), ("final_rss", "final_rss_kib")):
        values = [v for v in broker.get(field, []) if v is not None]
        if values:
            out[key] = (statistics.median(values), None)
    return out


_UNITS = {"latency_p99": ("ms", False), "startup": ("ms", False), "idle_rss": ("KiB", False),
          "final_rss": ("KiB", False)}


def summarize(results: dict[str, Any]) -> list[Row]:
    mini = _figures(results["brokers"].get("minibroker", {}))
    tansu = _figures(results["brokers"].get("tansu", {}))
    kafka = _figures(results["brokers"].get("kafka", {}))
    targets = {t.row: t for t in TARGETS}
    rows = []
    for row in [*SCENARIOS, "latency_p99", "startup", "idle_rss", "final_rss"]:
        if row not in mini and row not in tansu and row not in kafka:
            continue
        if row in SCENARIOS:
            unit, higher = SCENARIOS[row].unit, SCENARIOS[row].higher_is_better
        else:
            unit, higher = _UNITS[row]
        m, m_cpu = mini.get(row, (None, None))
        t, t_cpu = tansu.get(row, (None, None))
        ratio = round(m / t, 3) if m is not None and t else None
        target = targets.get(row)
        passed: bool | None = None
        if target is not None and target.kind == "ratio" and ratio is not None:
            passed = ratio >= target.value if higher else ratio <= target.value
        elif target is not None and target.kind == "max" and m is not None:
            passed = m <= target.value
        k, k_cpu = kafka.get(row, (None, None))
        k_ratio = round(m / k, 3) if m is not None and k else None
        rows.append(Row(row, unit, higher, m, t, ratio, target.text if target else "", passed, m_cpu, t_cpu,
                        k, k_ratio, k_cpu))
    return rows


def rows_as_dicts(rows: list[Row]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def table(rows: list[Row]) -> str:
    lines = [f"{'row':<20} {'unit':<6} {'minibroker':>12} {'Tansu':>12} {'ratio':>7}  {'target':<15} result "
             f"{'Kafka':>12} {'mini/Kafka':>10}   CPU us/msg (mini / Tansu / Kafka)", "-" * 140]
    for r in rows:
        result = {True: "pass", False: "FAIL", None: "-"}[r.passed]
        cpu = "" if r.minibroker_cpu_us_per_msg is None else \
            f"   {_fmt(r.minibroker_cpu_us_per_msg)} / {_fmt(r.tansu_cpu_us_per_msg)} / {_fmt(r.kafka_cpu_us_per_msg)}"
        lines.append(f"{r.row:<20} {r.unit:<6} {_fmt(r.minibroker):>12} {_fmt(r.tansu):>12} "
                     f"{_fmt(r.ratio):>7}  {r.target:<15} {result:<6} {_fmt(r.kafka):>12} {_fmt(r.kafka_ratio):>10}"
                     f"{cpu}")
    return "\n".join(lines)


def scale_table(points: list[dict[str, Any]]) -> str:
    lines = [f"{'broker':<11} {'partitions':>10} {'producers':>9} {'msg/s':>10} {'MB/s':>7} "
             f"{'CPU us/msg':>10} {'CPU ms/MB':>9}", "-" * 74]
    for p in points:
        lines.append(f"{p['broker']:<11} {p['partitions']:>10} {p['producers']:>9} {_fmt(p.get('msgs_per_s')):>10} "
                     f"{_fmt(p.get('mb_per_s')):>7} {_fmt(p.get('broker_cpu_us_per_msg')):>10} "
                     f"{_fmt(p.get('broker_cpu_ms_per_mb')):>9}" + ("" if p.get("ok") else "  FAILED"))
    return "\n".join(lines)
