"""The Java side of the tests: Java sources compiled against a Kafka client release's jars (fetched with
tests/kafka_jars.py) into the cache outside the repo, rebuilt when a source changes, and run as `java`
subprocesses against a broker.

    classes = build("4.4", sources())                      # <cache>/java-tests/checks-4.4-<hash>/classes
    result = run("4.4", classes, "minibroker.check.Main", "--bootstrap", bootstrap, "producer.")

Java's start-up costs more than most checks, so a run does several (minibroker.check.Main takes a list).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import kafka_jars

SOURCES = Path(__file__).resolve().parent / "src"
# The client, Streams, and a logger binding so that the clients' warnings reach stderr (the test's report).
CLIENT_ARTIFACTS = ["kafka-clients", "kafka-streams", "org.slf4j:slf4j-simple:1.7.36"]
_MARKER = ".complete"


class JavaUnavailable(Exception):
    """No JDK, no Maven, or the jars cannot be fetched: the message says why."""


def require(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args)`, or skip the test with the reason it cannot run here (under CI: fail, since `make test`
    installs Java and Maven)."""
    try:
        return fn(*args, **kwargs)
    except (JavaUnavailable, kafka_jars.Unavailable) as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the Java tests cannot run: {exc}")
        pytest.skip(str(exc))


def client_jars(release: str) -> list[Path]:
    return kafka_jars.fetch(release, CLIENT_ARTIFACTS)


# Sources that use what only newer clients have (share consumers and groups, streams groups, the group types and
# member protocols of KIP-848): left out of an older client's build, and its checks with them
# (minibroker.check.Main registers ShareChecks and MigrationChecks if they are there).
NEWER_CLIENTS = {"minibroker/check/ShareChecks.java": "4.1", "minibroker/streams/StreamsGroupAdmin.java": "4.2",
                 "minibroker/streams/WordCountCheck.java": "4.2", "minibroker/check/MigrationChecks.java": "4.0",
                 "minibroker/share/ShareFailoverCheck.java": "4.2"}


def sources(release: str | None = None) -> list[Path]:
    """The Java sources to compile against `release`'s client (None: every source, for the newest)."""
    def wanted(path: Path) -> bool:
        since = NEWER_CLIENTS.get(path.relative_to(SOURCES).as_posix())
        return release is None or since is None or _key(release) >= _key(since)

    return sorted(p for p in SOURCES.rglob("*.java") if wanted(p))


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split(".")[:2])


def build(release: str, files: list[Path], name: str = "checks", into: Path | None = None) -> Path:
    """Compiles `files` against the client jars of `release`; returns the classes directory: `into`/classes,
    or in the cache (built again only when a source, the jars or the JDK change)."""
    javac = shutil.which("javac")
    if javac is None:
        raise JavaUnavailable("javac (a JDK) is not installed")
    jars = client_jars(release)
    if into is not None:
        _javac(javac, jars, files, into / "classes", release)
        return into / "classes"
    digest = hashlib.sha256()
    digest.update(f"{release}\n{_java_version()}\n".encode())
    for jar in jars:
        digest.update(jar.name.encode() + b"\n")
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    target = kafka_jars.cache_root() / "java-tests" / f"{name}-{release}-{digest.hexdigest()[:12]}"
    if (target / _MARKER).exists():
        return target / "classes"
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        _javac(javac, jars, files, work / "classes", release)
        (work / _MARKER).write_text("\n".join(str(f) for f in files) + "\n")
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target / "classes"


def _javac(javac: str, jars: list[Path], files: list[Path], out: Path, release: str) -> None:
    result = subprocess.run(
        [javac, "--release", "17", "-encoding", "UTF-8", "-nowarn", "-Xlint:none", "-d", str(out),
         "-cp", os.pathsep.join(map(str, jars)), *map(str, files)],
        capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise AssertionError(f"javac failed against the {release} client:\n{result.stdout}{result.stderr}")


def _java_version() -> str:
    result = subprocess.run(["java", "-version"], capture_output=True, text=True)
    return result.stderr.splitlines()[0] if result.stderr else ""


def command(release: str, classes: Path, main: str, *args: str) -> list[str]:
    java = shutil.which("java")
    if java is None:
        raise JavaUnavailable("Java is not installed")
    classpath = os.pathsep.join([str(classes), *map(str, client_jars(release))])
    return [java, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-cp", classpath, main, *args]


def run(release: str, classes: Path, main: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(release, classes, main, *args), capture_output=True, text=True, timeout=timeout)


@dataclass(frozen=True)
class CheckResult:
    check: str
    ok: bool
    seconds: float
    error: str | None = None
    trace: str | None = None


def run_checks(release: str, bootstrap: str, selectors: list[str], timeout: float = 600,
               zookeeper_mode: bool = False, client_config: dict[str, str] | None = None) -> list[CheckResult]:
    """Runs minibroker.check.Main's checks named by `selectors` in one JVM; returns one result per check.
    `zookeeper_mode`: the broker plays a ZooKeeper-mode Kafka (a 3.x profile), which reports no features;
    `client_config`: settings every client gets (a secured listener's)."""
    classes = build(release, sources(release))
    mode = ["--zookeeper-mode"] if zookeeper_mode else []
    config = [arg for key, value in (client_config or {}).items() for arg in ("--client-config", f"{key}={value}")]
    proc = run(release, classes, "minibroker.check.Main", "--bootstrap", bootstrap, *mode, *config, *selectors,
               timeout=timeout)
    results = [CheckResult(**json.loads(line)) for line in proc.stdout.splitlines() if line.startswith("{")]
    if not results or (proc.returncode != 0 and all(r.ok for r in results)):
        raise AssertionError(f"the checks did not run (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-5000:]}")
    return results


def failures(results: list[CheckResult]) -> str:
    return "\n\n".join(f"{r.check}: {r.error}\n{r.trace}" for r in results if not r.ok)


class Lines:
    """A subprocess's stdout lines, read by a thread, taken with a deadline."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(proc,), daemon=True).start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.queue.put(line)
        self.queue.put(None)

    def next_event(self, deadline: float) -> dict[str, Any] | None:
        while True:
            line = self.queue.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                return None
            if line.startswith("{"):
                return json.loads(line)
