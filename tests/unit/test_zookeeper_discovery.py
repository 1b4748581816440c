"""Where the test kit finds ZooKeeper (broker.testkit.zookeeper.find): the user's classpath, ZOOKEEPER_HOME,
the system's package, else the release fetched from Maven Central; and what it says without Java."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from broker.testkit import zookeeper


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("MINIBROKER_ZOOKEEPER", "MINIBROKER_ZOOKEEPER_JARS", "ZOOKEEPER_HOME", "JAVA_HOME"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_users_classpath_comes_first(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("MINIBROKER_ZOOKEEPER_JARS", f"{tmp_path}/lib/*")
    clean_env.setenv("ZOOKEEPER_HOME", str(tmp_path))
    found = zookeeper.find()
    assert (found.origin, found.classpath) == ("MINIBROKER_ZOOKEEPER_JARS", f"{tmp_path}/lib/*")


def test_zookeeper_home_gives_its_conf_and_jars(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "conf").mkdir()
    for jar in ("zookeeper-3.9.3.jar", "zookeeper-jute-3.9.3.jar", "netty-handler-4.1.jar"):
        (tmp_path / "lib" / jar).write_bytes(b"")
    clean_env.setenv("ZOOKEEPER_HOME", str(tmp_path))
    found = zookeeper.find()
    assert found.origin == "ZOOKEEPER_HOME"
    assert found.classpath.split(os.pathsep) == [str(tmp_path / "conf")] + [
        str(tmp_path / "lib" / j) for j in ("netty-handler-4.1.jar", "zookeeper-3.9.3.jar", "zookeeper-jute-3.9.3.jar")]


def test_a_zookeeper_home_without_zookeeper_says_so(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("ZOOKEEPER_HOME", str(tmp_path))
    with pytest.raises(zookeeper.ZooKeeperUnavailable, match="holds no zookeeper"):
        zookeeper.find()


def test_without_java_it_says_what_to_install(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("PATH", str(Path(sys.executable).parent))
    with pytest.raises(zookeeper.ZooKeeperUnavailable, match="Java is not installed.*apt-get install"):
        zookeeper.find()


def test_java_home_is_used(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\n")
    clean_env.setenv("JAVA_HOME", str(tmp_path))
    clean_env.setenv("MINIBROKER_ZOOKEEPER_JARS", "zk.jar")
    assert zookeeper.find().java == str(java)
