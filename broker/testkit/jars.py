"""Java jars from Maven Central, fetched once into the user's cache: the one way the test kit (ZooKeeper for
the cluster fixture), the Spark streaming job (its Kafka connector) and the repository's tests (Apache Kafka's
broker, clients and tools: tests/kafka_jars.py) get a JVM program without a download of their own.

    jars = fetch(["org.apache.zookeeper:zookeeper:3.8.4"], "zookeeper-3.8.4")   # Paths, dependencies too
    classpath = os.pathsep.join(map(str, jars))

A set of artifacts is resolved with Maven (`mvn dependency:copy-dependencies`, run-time scope) once into
`<cache>/<name>/<key>/lib/` (`~/.cache/minibroker` unless `MINIBROKER_CACHE` says otherwise), with a marker
file written last, so a second run fetches nothing and an interrupted fetch is redone. `Unavailable` says why
a set cannot be had (no Maven, no Java, no network, an artifact the registry does not serve): callers skip or
fail with that reason, never pass.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

_MARKER = ".complete"


class Unavailable(Exception):
    """The jars cannot be fetched here; the message says why."""


def cache_root() -> Path:
    """Where fetched jars are kept: `MINIBROKER_CACHE`, else `~/.cache/minibroker`."""
    return Path(os.environ.get("MINIBROKER_CACHE") or Path.home() / ".cache" / "minibroker")


Coordinates = tuple[str, str, str, str | None]  # group, artifact, version, classifier


def parse(spec: str) -> Coordinates:
    """'group:artifact:version[:classifier]' -> its parts."""
    parts = spec.split(":")
    if len(parts) not in (3, 4) or not all(parts):
        raise ValueError(f"not a Maven coordinate (group:artifact:version[:classifier]): {spec!r}")
    return parts[0], parts[1], parts[2], parts[3] if len(parts) == 4 else None


def fetched(coordinates: list[Coordinates], name: str) -> Path:
    """The directory a set of artifacts is (or would be) kept in."""
    key = hashlib.sha256(repr(sorted(coordinates)).encode()).hexdigest()[:12]
    return cache_root() / name / key


def fetch(artifacts: list[str] | list[Coordinates], name: str, *, timeout: float = 900.0) -> list[Path]:
    """The jars of `artifacts` (coordinates, as strings or parsed) and everything they depend on at run time,
    kept under `<cache>/<name>/`; raises Unavailable with the reason when they cannot be had."""
    coordinates = [parse(a) if isinstance(a, str) else a for a in artifacts]
    target = fetched(coordinates, name)
    if not (target / _MARKER).exists():
        _resolve(coordinates, target, timeout)
    return sorted((target / "lib").glob("*.jar"))


def _pom(coordinates: list[Coordinates]) -> str:
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
        + (f"<classifier>{c}</classifier>" if c else "") + "</dependency>"
        for g, a, v, c in coordinates)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            '<groupId>minibroker.cache</groupId><artifactId>fetch</artifactId><version>1</version>'
            f'<packaging>pom</packaging><dependencies>{deps}</dependencies></project>')


def _resolve(coordinates: list[Coordinates], target: Path, timeout: float) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise Unavailable("Maven (mvn) is not installed; the jars are fetched from Maven Central with it "
                          "(Debian: apt-get install maven; macOS: brew install maven)")
    if shutil.which("java") is None:
        raise Unavailable("Java is not installed (Debian: apt-get install default-jre-headless; "
                          "macOS: brew install openjdk)")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=target.parent))
    try:
        (work / "pom.xml").write_text(_pom(coordinates))
        try:
            result = subprocess.run(
                [mvn, "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies",
                 "-DincludeScope=runtime", f"-DoutputDirectory={work / 'lib'}"],
                capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"Maven did not fetch {coordinates} within {timeout:.0f} s") from None
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip().splitlines()
            raise Unavailable(f"Maven could not fetch {[':'.join(filter(None, c)) for c in coordinates]}: "
                              + " | ".join(line for line in output if "ERROR" in line)[:1500])
        (work / _MARKER).write_text("\n".join(":".join(filter(None, c)) for c in coordinates) + "\n")
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)  # whole or not at all: a concurrent or cut-short fetch never leaves half a set
    finally:
        shutil.rmtree(work, ignore_errors=True)
