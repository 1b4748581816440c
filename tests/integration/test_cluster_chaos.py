"""The short chaos run of `make test` (`make chaos` runs 20 rounds): three brokers on ZooKeeper under
idempotent, transactional (consume-transform-produce) and consumer-group load while a transaction coordinator
and a group coordinator are SIGKILLed and restarted and a broker's ZooKeeper session is expired; nothing
acknowledged lost, nothing twice, nothing out of order, no committed offset backwards, no transaction half
visible (see tests/chaos/run.py)."""

from __future__ import annotations

from tests.chaos.run import run, summary


def test_cluster_chaos(minibroker_zookeeper, tmp_path):
    lines: list[str] = []
    report = run(3, seed=2, data_dir=tmp_path / "chaos", zookeeper=minibroker_zookeeper, log=lines.append)
    text = "\n".join(lines) + "\n" + summary(report)
    assert [w.kind for w in report.windows] == ["session expiry", "transaction coordinator", "group coordinator"]
    assert report.ok, text
    figures = report.figures
    assert figures["acknowledged"] > 0 and figures["committed_txns"] > 0 and figures["aborted_txns"] > 0, text
    # The consumers went through everything: each input record transformed once, every output shown.
    assert figures["outputs_visible"] == figures["stored"] == figures["acknowledged"], text
    assert figures["shown_to_reader"] == figures["outputs_visible"] and figures["group_consumed"] > 0, text
    assert figures["offset_reads"] > 0, text  # the monitor of committed offsets had answers to compare
    # Each kill cost a failover, not a hang: producers were acknowledged again within the session timeout
    # and a few seconds (6 s here), whatever the machine's load, well under the 120 s a wait allows.
    assert max(w.acks for w in report.windows) < 60, text
