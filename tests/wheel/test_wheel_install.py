"""minibroker installed into another project, as the README and docs/install.md tell a user to: the wheel built
from this checkout by the pages' own commands, installed with its `testkit` extra into a fresh virtualenv, and a
small user project's tests run from a directory outside the checkout: the fixture, a fault, a secured listener,
and the cluster fixture on a ZooKeeper fetched from Maven Central (MINIBROKER_ZOOKEEPER=maven).

pip's own cache keeps the dependencies' wheels, so a second run downloads nothing (pip may reach PyPI on the
first, for them and for the build backend)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.docs.snippets import REPO, collect

USER_TESTS = '''
import broker
import pytest
from kafka import KafkaConsumer, KafkaProducer


def test_minibroker_comes_from_the_installed_wheel():
    assert "site-packages" in broker.__file__, broker.__file__


def test_the_fixture(minibroker):
    producer = KafkaProducer(bootstrap_servers=minibroker)
    producer.send("orders", b"order-1").get(timeout=30)
    producer.close()
    consumer = KafkaConsumer("orders", bootstrap_servers=minibroker, auto_offset_reset="earliest",
                             consumer_timeout_ms=10000)
    assert [m.value for m in consumer] == [b"order-1"]


def test_a_fault(minibroker_server):
    minibroker_server.inject_error("PRODUCE", "NOT_LEADER_OR_FOLLOWER", count=2)
    producer = KafkaProducer(bootstrap_servers=minibroker_server.bootstrap, retries=5)
    producer.send("orders", b"order-1").get(timeout=30)
    producer.close()
    assert minibroker_server.faults() == []
    assert minibroker_server.topics()["orders"]["partitions"][0]["log_end_offset"] == 1


@pytest.mark.minibroker(security="SASL_SSL", users={"alice": "secret"})
def test_a_secured_listener(minibroker_server):
    settings = minibroker_server.kafka_python("alice", mechanism="SCRAM-SHA-256")
    producer = KafkaProducer(bootstrap_servers=minibroker_server.bootstrap, **settings)
    producer.send("orders", b"order-1").get(timeout=30)
    producer.close()
    assert set(minibroker_server.principals_seen()) == {"User:alice"}


def test_the_cluster_fixture(minibroker_cluster):
    from broker.testkit.zookeeper import find

    assert find().origin == "maven"
    minibroker_cluster.create_topic("orders", partitions=1, replication_factor=3)
    leader = minibroker_cluster.wait_leader("orders", 0)
    minibroker_cluster.kill_broker(leader)
    assert minibroker_cluster.wait_leader("orders", 0, not_broker=leader) != leader
'''


def _install_commands() -> str:
    """The README's commands that build the wheel and install it (the same as docs/install.md's)."""
    [readme] = [s for s in collect(REPO / "README.md") if s.run_by == "tests/wheel/test_wheel_install.py"]
    [install] = [s for s in collect(REPO / "docs" / "install.md") if s.run_by == "tests/wheel/test_wheel_install.py"]
    assert readme.code == install.code
    return readme.code


def _clean_environment(venv_dir: Path) -> dict[str, str]:
    """The user's shell: the virtualenv first on PATH, nothing of this checkout's Python path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join([str(venv_dir / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv_dir)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _checkout_copy(target: Path) -> Path:
    """The checkout's files (tracked, and new ones git does not ignore) without its build leftovers: pip builds a
    local project in its own directory, and a stale build/ there could slip old modules into the wheel."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_the_wheel_installs_into_another_project_and_its_tests_pass(tmp_path: Path) -> None:
    venv_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(venv_dir)
    env = _clean_environment(venv_dir)
    checkout = _checkout_copy(tmp_path / "minibroker")
    commands = _install_commands().replace("/path/to/minibroker", str(checkout))
    work = tmp_path / "build"
    work.mkdir()
    installed = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=work, env=env,
                               capture_output=True, text=True, timeout=900)
    if installed.returncode != 0 and re.search(r"Could not (find|fetch)|Network is unreachable|Temporary failure",
                                               installed.stdout + installed.stderr):
        if os.environ.get("CI"):
            pytest.fail(f"pip could not reach the package index:\n{installed.stderr[-3000:]}")
        pytest.skip("pip could not reach the package index")
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-4000:]

    project = tmp_path / "my-project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_with_minibroker.py").write_text(USER_TESTS)
    env["MINIBROKER_ZOOKEEPER"] = "maven"
    result = subprocess.run([str(venv_dir / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "tests"], cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert re.search(r"\b5 passed\b", result.stdout), result.stdout[-3000:]


def test_the_test_kit_names_what_to_install_without_java(tmp_path: Path) -> None:
    """No Java on the PATH: the cluster fixture's tests fail and say what to install, or are skipped with
    --minibroker-skip-missing."""
    (tmp_path / "test_cluster.py").write_text("def test_it(minibroker_cluster):\n    pass\n")
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME",)}
    env["PATH"] = str(Path(sys.executable).parent)  # this Python, and no java
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_cluster.py"]
    failed = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "Java is not installed" in failed.stdout and "apt-get install default-jre-headless" in failed.stdout
    assert "--minibroker-skip-missing" in failed.stdout
    skipped = subprocess.run(command + ["--minibroker-skip-missing"], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout, skipped.stdout[-3000:]
