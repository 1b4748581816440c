"""Runs one scenario in a forked child process with a wall-clock limit, so that a client or broker that
hangs yields a failed record instead of a hung run; the client's own log (librdkafka writes to fd 2) is
kept out of the report. The child leads a process group of its own: the brokers a scenario starts for itself
(a cluster's) go with it when it is killed."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import tempfile
import time
import traceback
from dataclasses import replace
from typing import Any

from benchmarks import procfs, scenarios
from benchmarks.brokers import RunningBroker
from benchmarks.scenarios import Params


def _child(name: str, broker: RunningBroker, params: Params, prefix: str, conn: Any) -> None:
    os.setpgrp()
    log = tempfile.TemporaryFile()
    os.dup2(log.fileno(), 2)
    scenarios.BROKER_PIDS = (broker.pid,)
    scenarios.BROKER_SPEC = broker.spec
    try:
        result = scenarios.SCENARIOS[name].run(broker.bootstrap, params, prefix)
    except Exception as exc:  # reported as a failed scenario, with the client's last log lines
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=4)}
    if not result.get("ok"):
        log.seek(0)
        result["client_log_tail"] = log.read().decode(errors="replace").splitlines()[-5:]
    conn.send(result)
    conn.close()


def run(name: str, broker: RunningBroker, params: Params, prefix: str) -> dict[str, Any]:
    ctx = mp.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    started = time.perf_counter()
    proc = ctx.Process(target=_child, args=(name, broker, params, prefix, sender), daemon=True)
    proc.start()
    sender.close()
    result = None
    if receiver.poll(params.timeout):
        try:
            result = receiver.recv()
        except EOFError:
            result = None
    proc.join(5 if result is not None else 0.1)
    timed_out = proc.is_alive()
    if timed_out:
        proc.kill()
        proc.join(5)
    if result is None:
        result = {"ok": False, "error": f"timed out after {params.timeout} s" if timed_out
                  else f"scenario process died (exit code {proc.exitcode})"}
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    result = {"scenario": name, **result, "wall_s": round(time.perf_counter() - started, 3),
              "broker_rss_kib_after": procfs.rss_kib(broker.pid)}
    return add_cpu_figures(result)


def add_cpu_figures(result: dict[str, Any]) -> dict[str, Any]:
    """Broker CPU per message, per MB and per request from the CPU seconds of the timed part."""
    cpu = result.get("broker_cpu_s")
    if not cpu or not result.get("ok"):
        return result
    messages = result.get("delivered") or result.get("consumed") or result.get("sends")
    if messages:
        result["broker_cpu_us_per_msg"] = round(cpu / messages * 1e6, 3)
    if result.get("bytes"):
        result["broker_cpu_ms_per_mb"] = round(cpu / (result["bytes"] / 1e6) * 1e3, 3)
    if result.get("requests"):
        result["broker_cpu_us_per_request"] = round(cpu / result["requests"] * 1e6, 1)
    return result


def scale_params(base: Params, partitions: int, producers: int) -> Params:
    # A lighter load than the headline rows: 100 producers are 100 librdkafka instances on 2 cores.
    return replace(base, partitions=partitions, producers=producers, n_small=max(base.n_small // 4, 1000))
