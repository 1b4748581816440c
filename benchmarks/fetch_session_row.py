"""The fetch-session row: a Java consumer (Kafka 4.4's client, which keeps a KIP-227 fetch session) over many
partitions while a producer in the same JVM trickles one record every 20 ms to one partition after another
(benchmarks/java/FetchSessionBench.java). Figures: the broker's CPU per fetch the consumer made and the records'
end-to-end latency (send to poll, one clock). With a session, a fetch names only the partitions whose position
moved and is answered with only the partitions that have news; without one, each carries all of them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).resolve().parent / "java" / "FetchSessionBench.java"
CLIENT_RELEASE = "4.4"
INTERVAL_MS = 20


def fetch_sessions(bootstrap: str, partitions: int, records: int, timeout: float, broker_cpu: Any) -> dict[str, Any]:
    from tests.java import jvm
    from tests.kafka_jars import Unavailable

    try:
        classes = jvm.build(CLIENT_RELEASE, [SOURCE], name="bench-fetch-sessions")
        command = jvm.command(CLIENT_RELEASE, classes, "FetchSessionBench", bootstrap, str(partitions),
                              str(records), str(INTERVAL_MS))
    except (jvm.JavaUnavailable, Unavailable) as exc:
        return {"ok": False, "skipped": f"the Java client cannot run: {exc}"}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu_start = cpu_end = None
    result: dict[str, Any] = {}
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.strip()
            if line == "start":
                cpu_start = broker_cpu()
            elif line == "end":
                cpu_end = broker_cpu()
            elif line.startswith("{"):
                result = json.loads(line)
        proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    if proc.returncode != 0 or not result or cpu_start is None or cpu_end is None:
        error = proc.stderr.read()[-2000:] if proc.stderr else ""
        return {"ok": False, "error": f"FetchSessionBench exit {proc.returncode}: {error}"}
    cpu = cpu_end - cpu_start
    ok = result["received"] == records and result["failures"] == 0 and result["fetches"] > 0
    return {**result, "partitions": partitions, "interval_ms": INTERVAL_MS, "broker_cpu_s": cpu,
            "broker_cpu_ms_per_fetch": round(cpu / result["fetches"] * 1e3, 3) if result["fetches"] else None,
            "ok": ok}
