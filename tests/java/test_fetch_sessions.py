"""Fetch sessions (KIP-227) with real clients over many partitions: the Java consumer fetches 1,000 partitions
in a session (after the first full fetch the broker answers only the partitions with news) and closes it when
it is closed; librdkafka, which keeps no sessions, still gets every partition on every fetch."""

from __future__ import annotations

import concurrent.futures
import json
import time
from pathlib import Path
from typing import Any

from tests.java import jvm

PARTITIONS = 1000


def _fetches(trace_file: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(request, response) of every Fetch in the trace, paired by connection and correlation id."""
    requests: dict[tuple[Any, Any], dict[str, Any]] = {}
    pairs = []
    for line in Path(trace_file).read_text().splitlines():
        entry = json.loads(line)
        if entry["api"] != "FETCH":
            continue
        key = (entry["connection"], entry["correlation_id"])
        if entry["dir"] == "request":
            requests[key] = entry
        elif key in requests:
            pairs.append((requests.pop(key), entry))
    return pairs


def _count(items: list[Any]) -> int:
    """A traced list's length: the trace cuts long lists and says how many it left out."""
    if items and isinstance(items[-1], str) and items[-1].startswith("... "):
        return len(items) - 1 + int(items[-1].split()[1])
    return len(items)


def test_a_java_consumer_fetches_1000_partitions_in_a_session(minibroker_server) -> None:
    broker = minibroker_server
    sessions_seen: list[dict[str, Any]] = []
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        run = pool.submit(jvm.require, jvm.run_checks, "4.4", broker.bootstrap, ["fetch_sessions."])
        deadline = time.monotonic() + 600
        while not run.done() and time.monotonic() < deadline:
            sessions_seen += [s for s in broker.fetch_sessions() if s["partitions"] == PARTITIONS]
            time.sleep(0.2)
        results = run.result()
    assert all(r.ok for r in results), jvm.failures(results)
    # The consumer kept one session of every partition, fetched incrementally (its epoch moved on)...
    assert sessions_seen, "no session of 1,000 partitions was ever kept"
    assert len({s["session_id"] for s in sessions_seen}) == 1
    assert max(s["epoch"] for s in sessions_seen) >= 10
    # ...and closed it when it was closed (a fetch at the final epoch).
    assert broker.fetch_sessions() == []
    broker.flush_trace()
    incremental = [(request, response) for request, response in _fetches(broker.trace_file)
                   if request["fields"]["session_epoch"] > 0]
    assert len(incremental) >= 10
    answered = [sum(_count(t["partitions"]) for t in response["fields"]["responses"])
                for _, response in incremental]
    # Most incremental fetches answer nothing or the one partition just written; none answers them all.
    assert max(answered) < PARTITIONS
    assert sorted(answered)[len(answered) // 2] <= 1, answered
