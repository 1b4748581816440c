"""The test-suite rows: what a user's pytest suite pays per test. A generated test module runs under pytest (a
subprocess, as a user runs it); each test takes its broker from the `minibroker` fixture (a fresh broker per
test: start, stop, fresh data dir) or, for the other brokers, the one under test, started once and reused (what
users of an embedded or container Kafka do). Two modules:

- steps: create a topic, the first message produced and consumed through a group, one transaction committed
  (confluent-kafka, as a user's test would, the consumer closed before the test ends);
- produce: one message produced with confluent-kafka, the producer dropped at the end of the test.

Per test: the time from the start of its setup to the end of its teardown (median), and the module's wall time
from the first test's start to the last one's end divided by the tests after the first (the first pays the
imports), which also counts what pytest and the clients do between tests."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_CONFTEST = '''
import json, os, time
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    started = time.perf_counter()
    yield
    with open(os.environ["SUITE_TIMES"], "a") as out:
        out.write(json.dumps([started, time.perf_counter()]) + "\\n")
'''

_BOOTSTRAP = '''
import os, time, uuid
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

REUSED = os.environ.get("SUITE_BOOTSTRAP")


@pytest.fixture
def bootstrap(request):
    return REUSED or request.getfixturevalue("minibroker")
'''

_STEPS = _BOOTSTRAP + '''

@pytest.mark.parametrize("i", range(int(os.environ["SUITE_TESTS"])))
def test_steps(bootstrap, i):
    topic = f"suite-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    producer.produce(topic, b"first")
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    message = None
    while (message is None or message.error()) and time.monotonic() < deadline:
        message = consumer.poll(0.1)
    consumer.close()
    assert message is not None and message.value() == b"first"
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic, "linger.ms": 0})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(topic, b"in-a-transaction")
    txn.commit_transaction(30)
'''

_PRODUCE = _BOOTSTRAP + '''

@pytest.mark.parametrize("i", range(int(os.environ["SUITE_TESTS"])))
def test_produce(bootstrap, i):
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("orders", b"order-1")
    assert producer.flush(30) == 0
'''

MODULES = {"steps": _STEPS, "produce": _PRODUCE}


def run_module(kind: str, tests: int, reused_bootstrap: str | None, timeout: float) -> dict[str, Any]:
    """Runs the `kind` module of `tests` tests under pytest; the per-test figures in ms."""
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as work:
        directory = Path(work)
        (directory / "conftest.py").write_text(_CONFTEST)
        (directory / f"test_{kind}.py").write_text(MODULES[kind])
        times = directory / "times.jsonl"
        env = {**os.environ, "SUITE_TIMES": str(times), "SUITE_TESTS": str(tests)}
        env.pop("SUITE_BOOTSTRAP", None)
        if reused_bootstrap:
            env["SUITE_BOOTSTRAP"] = reused_bootstrap
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", work,
                               "--minibroker-trace", "off", str(directory)], cwd=work, env=env,
                              capture_output=True, text=True, timeout=timeout)
        spans = [json.loads(line) for line in times.read_text().splitlines()] if times.exists() else []
    if proc.returncode != 0 or len(spans) != tests:
        return {"ok": False, "error": f"pytest exit {proc.returncode}, {len(spans)} of {tests} tests timed",
                "pytest_tail": proc.stdout.splitlines()[-15:]}
    per_test = [(end - start) * 1000 for start, end in spans]
    later = spans[1:]
    wall = (later[-1][1] - later[0][0]) * 1000 / len(later) if later else per_test[0]
    return {"tests": tests, "per_test_median_ms": round(statistics.median(per_test[1:] or per_test), 1),
            "first_test_ms": round(per_test[0], 1), "per_test_wall_ms": round(wall, 1), "ok": True}


def suite_cost(bootstrap: str, tests: int, timeout: float, fresh_per_test: bool) -> dict[str, Any]:
    """Both modules: with the fixture's fresh broker per test (minibroker) or against `bootstrap`, reused."""
    reused = None if fresh_per_test else bootstrap
    steps = run_module("steps", tests, reused, timeout / 2)
    if not steps.get("ok"):
        return steps
    produce = run_module("produce", tests, reused, timeout / 2)
    if not produce.get("ok"):
        return produce
    return {"fresh_broker_per_test": fresh_per_test, "tests": tests,
            "steps_ms": steps["per_test_wall_ms"], "steps": steps,
            "produce_ms": produce["per_test_wall_ms"], "produce": produce, "ok": True}
