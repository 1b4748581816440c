"""The pytest plugin's run options, in a pytest run of their own: `--minibroker-scope session` (or the
`minibroker_scope` ini setting) shares one broker, reset before each test, and gives a test with its own marker
settings a broker of its own; the default gives each test a fresh broker, and a failing test's report carries
its broker's protocol trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SUITE = '''
import pytest
from kafka import KafkaProducer

PORTS = []


def test_one(minibroker_server):
    PORTS.append(minibroker_server.port)
    KafkaProducer(bootstrap_servers=minibroker_server.bootstrap).send("orders", b"x").get(timeout=10)
    assert "orders" in minibroker_server.topics()


def test_two_shares_the_broker_reset(minibroker_server, minibroker):
    PORTS.append(minibroker_server.port)
    assert minibroker == minibroker_server.bootstrap
    assert PORTS[0] == PORTS[1], PORTS
    assert minibroker_server.topics() == {}


@pytest.mark.minibroker(num_partitions=2)
def test_three_has_its_own(minibroker_server):
    assert minibroker_server.port != PORTS[0]
'''


def _pytest(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           *args], cwd=directory, env=env, capture_output=True, text=True, timeout=300)


def test_session_scope_shares_one_broker_reset_per_test(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    result = _pytest(tmp_path, "--minibroker-scope", "session")
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout[-3000:]


def test_the_ini_setting_does_the_same(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nminibroker_scope = session\n")
    result = _pytest(tmp_path)
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout[-3000:]


def test_by_default_each_test_has_a_fresh_broker_and_a_failure_shows_its_trace(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    result = _pytest(tmp_path)
    assert result.returncode == 1 and "1 failed, 2 passed" in result.stdout, result.stdout[-3000:]
    assert "FAILED test_suite.py::test_two_shares_the_broker_reset" in result.stdout
    assert "minibroker protocol trace" in result.stdout
