"""The short chaos run of `make test` (`make chaos` runs 20 rounds): ZooKeeper and three brokers, each in a
network namespace of its own, under idempotent, transactional (consume-transform-produce) and consumer-group
load while a partition's leader is cut off from its followers and ZooKeeper (its clients still reach it), a
leader is paused past its ZooKeeper session, and the transaction coordinator is SIGKILLed and restarted;
after each round and at the end: nothing acknowledged lost, nothing twice, nothing out of order, no committed
offset backwards, no transaction half visible (see tests/chaos/run.py). Network namespaces need root (CI
and `make test` here run as root); without it the test is skipped with the reason."""

from __future__ import annotations

import pytest

from tests.chaos import netns
from tests.chaos.run import run, summary

KINDS = ["leader cut off", "leader paused", "transaction coordinator"]


def test_cluster_chaos(tmp_path):
    reason = netns.available()
    if reason is not None:
        pytest.skip(f"partitions need network namespaces: {reason}")
    lines: list[str] = []
    report = run(len(KINDS), seed=2, data_dir=tmp_path / "chaos", log=lines.append, kinds=KINDS)
    text = "\n".join(lines) + "\n" + summary(report)
    assert [w.kind for w in report.windows] == KINDS
    assert report.ok, text
    assert all(w.anomalies == 0 for w in report.windows), text  # checked after each round, not only at the end
    figures = report.figures
    assert figures["acknowledged"] > 0 and figures["committed_txns"] > 0 and figures["aborted_txns"] > 0, text
    # The consumers went through everything: each input record transformed once, every output shown.
    assert figures["outputs_visible"] == figures["stored"] == figures["acknowledged"], text
    assert figures["shown_to_reader"] == figures["outputs_visible"] and figures["group_consumed"] > 0, text
    assert figures["offset_reads"] > 0, text  # the monitor of committed offsets had answers to compare
    # Each round cost a failover, not a hang: producers were acknowledged again within the session timeout
    # and a few seconds (6 s here), whatever the machine's load, well under the 120 s a wait allows.
    assert max(w.acks for w in report.windows) < 60, text


def test_a_killed_run_leaves_no_namespace(tmp_path):
    """The namespaces live as long as the process that made them, however it ends: a child that builds a
    Network and is SIGKILLed leaves no link behind (the holders die with it, the namespaces with them)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    reason = netns.available()
    if reason is not None:
        pytest.skip(f"partitions need network namespaces: {reason}")
    child = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        "from tests.chaos.netns import Network\n"
        "net = Network(['zookeeper', 'broker-1']).start()\n"
        "print(net.subnet, flush=True)\n"
        "time.sleep(600)\n")], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert child.stdout is not None
    subnet = child.stdout.readline().strip()
    assert subnet.isdigit(), subnet
    assert os.path.exists(f"/sys/class/net/mbchaos{subnet}")
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/sys/class/net/mbchaos{subnet}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(f"/sys/class/net/mbchaos{subnet}")
