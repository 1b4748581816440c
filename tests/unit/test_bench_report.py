"""The benchmark's arithmetic on synthetic figures: medians, minibroker / Tansu ratios, targets, CPU shares."""

from __future__ import annotations

import pytest

from benchmarks.report import failures, summarize, table
from benchmarks.runner import add_cpu_figures


def _broker(**figures: list[dict]) -> dict:
    return {"startup_ms": [120.0], "idle_rss_kib": [30_000], "final_rss_kib": [90_000],
            "scenarios": figures}


def _rows(results: dict) -> dict:
    return {r.row: r for r in summarize(results)}


def test_ratios_and_targets():
    results = {"brokers": {
        "minibroker-nofsync": _broker(
            produce_large=[{"ok": True, "mb_per_s": 300.0}, {"ok": True, "mb_per_s": 500.0},
                           {"ok": True, "mb_per_s": 400.0}],
            produce_small=[{"ok": True, "msgs_per_s": 90.0}],
            latency_p50=[{"ok": True, "p50_ms": 0.5, "p99_ms": 0.8}],
            group_join=[{"ok": True, "median_ms": 150.0}]),
        "tansu": _broker(
            produce_large=[{"ok": True, "mb_per_s": 100.0}],
            produce_small=[{"ok": True, "msgs_per_s": 100.0}],
            latency_p50=[{"ok": True, "p50_ms": 0.25, "p99_ms": 1.6}],
            group_join=[{"ok": True, "median_ms": 5000.0}])}}
    rows = _rows(results)
    assert rows["produce_large"].minibroker_nofsync == 400.0  # the median of three rounds
    assert rows["produce_large"].ratio == 4.0 and rows["produce_large"].passed
    assert rows["produce_small"].ratio == 0.9 and rows["produce_small"].passed is False
    # Lower is better: p99 at half of Tansu's passes "<= Tansu".
    assert rows["latency_p99"].ratio == 0.5 and rows["latency_p99"].passed
    assert rows["latency_p50"].ratio == 2.0 and rows["latency_p50"].passed is False
    assert rows["group_join"].passed is False  # 150 ms > 100 ms, whatever Tansu does
    assert rows["startup"].passed is False  # 120 ms > 50 ms
    assert rows["idle_rss"].passed and rows["final_rss"].passed
    assert "FAIL" in table(list(rows.values()))


def test_failed_runs_do_not_count_and_missing_peer_gives_no_verdict():
    results = {"brokers": {"minibroker-nofsync": _broker(
        produce_small=[{"ok": False, "msgs_per_s": 1e9}, {"ok": True, "msgs_per_s": 10.0}],
        txn=[{"ok": False, "error": "boom"}])}}
    rows = _rows(results)
    assert rows["produce_small"].minibroker_nofsync == 10.0
    assert rows["produce_small"].ratio is None and rows["produce_small"].passed is None
    assert rows["txn"].minibroker_nofsync is None
    assert len(failures(results)) == 2


def test_peer_targets_judge_the_nofsync_mode_and_the_durable_one_is_shown_without():
    results = {"brokers": {
        "minibroker": _broker(produce_small=[{"ok": True, "msgs_per_s": 50.0}],
                              group_join=[{"ok": True, "median_ms": 150.0}]),
        "minibroker-nofsync": _broker(produce_small=[{"ok": True, "msgs_per_s": 120.0}],
                                      group_join=[{"ok": True, "median_ms": 50.0}]),
        "tansu": _broker(produce_small=[{"ok": True, "msgs_per_s": 100.0}]),
        "kafka": _broker(produce_small=[{"ok": True, "msgs_per_s": 240.0}])}}
    rows = _rows(results)
    small = rows["produce_small"]
    assert (small.minibroker_nofsync, small.minibroker, small.ratio, small.passed) == (120.0, 50.0, 1.2, True)
    assert small.durable_ratio == 0.5 and small.kafka_ratio == 0.5  # Kafka's ratio: the nofsync mode's too
    # A bound on minibroker's own figure holds for each mode: the durable one's 150 ms misses it.
    assert rows["group_join"].passed is False
    only_durable = _rows({"brokers": {"minibroker": results["brokers"]["minibroker"],
                                      "tansu": results["brokers"]["tansu"]}})
    assert only_durable["produce_small"].ratio is None and only_durable["produce_small"].passed is None


def test_extra_rows_of_a_scenario_and_skipped_runs():
    results = {"brokers": {"minibroker-nofsync": _broker(
        restart_kill=[{"ok": True, "api_versions_ms": 300.0, "served_ms": 320.0}],
        rss_per_connection=[{"ok": True, "kib_per_connection": 20.0, "kib_per_partition": 40.0}],
        produce_large_replicated=[{"ok": False, "skipped": "ZooKeeper is not installed"}])}}
    rows = _rows(results)
    assert (rows["restart_kill"].minibroker_nofsync, rows["restart_kill_served"].minibroker_nofsync) == (300.0, 320.0)
    assert rows["rss_per_partition"].unit == "KiB" and rows["rss_per_partition"].minibroker_nofsync == 40.0
    order = [r.row for r in summarize(results)]
    assert order.index("restart_kill") + 1 == order.index("restart_kill_served")
    assert rows["produce_large_replicated"].minibroker_nofsync is None
    assert failures(results) == []  # skipped, with its reason: not a failure


def test_rss_targets_fail_above_their_bounds():
    broker = _broker()
    broker["idle_rss_kib"] = [60 * 1024]
    broker["final_rss_kib"] = [120 * 1024]
    rows = _rows({"brokers": {"minibroker-nofsync": broker}})
    assert rows["idle_rss"].passed is False and rows["final_rss"].passed is False


def test_cpu_figures_per_message_mb_and_request():
    result = add_cpu_figures({"ok": True, "broker_cpu_s": 2.0, "delivered": 1_000_000, "bytes": 100_000_000,
                              "requests": 4000})
    assert result["broker_cpu_us_per_msg"] == 2.0
    assert result["broker_cpu_ms_per_mb"] == 20.0
    assert result["broker_cpu_us_per_request"] == 500.0
    assert "broker_cpu_us_per_msg" not in add_cpu_figures({"ok": False, "broker_cpu_s": 1.0, "delivered": 5})


def test_chart_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    from benchmarks.chart import draw

    rows = [r.__dict__ for r in summarize({"brokers": {
        "minibroker": _broker(produce_small=[{"ok": True, "msgs_per_s": 90.0}],
                              latency_p50=[{"ok": True, "p50_ms": 0.5, "p99_ms": 0.8}]),
        "minibroker-nofsync": _broker(produce_small=[{"ok": True, "msgs_per_s": 120.0}]),
        "tansu": _broker(produce_small=[{"ok": True, "msgs_per_s": 100.0}],
                         latency_p50=[{"ok": True, "p50_ms": 0.25, "p99_ms": 0.4}])}})]
    scale = [{"broker": broker, "partitions": n, "producers": 1, "broker_cpu_us_per_msg": float(n)}
             for n in (1, 10, 100, 1000) for broker in ("minibroker", "minibroker-nofsync")]
    path = tmp_path / "bench.png"
    draw(rows, scale, str(path), "test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_kafka_column_beside_tansu():
    results = {"brokers": {
        "minibroker-nofsync": _broker(produce_small=[{"ok": True, "msgs_per_s": 90.0,
                                                       "broker_cpu_us_per_msg": 2.0}]),
        "kafka": _broker(produce_small=[{"ok": True, "msgs_per_s": 180.0, "broker_cpu_us_per_msg": 4.0}],
                         kafka_producer_perf=[{"ok": True, "msgs_per_s": 500.0}])}}
    rows = _rows(results)
    assert (rows["produce_small"].kafka, rows["produce_small"].kafka_ratio) == (180.0, 0.5)
    assert rows["produce_small"].kafka_cpu_us_per_msg == 4.0
    # Kafka has no targets: a row only Kafka ran still shows, with no verdict.
    assert rows["kafka_producer_perf"].kafka == 500.0 and rows["kafka_producer_perf"].passed is None
    assert "none/Kafka" in table(list(rows.values()))
