"""Apache Kafka's jars, fetched with Maven into a cache outside the repo: the one way the tests, the tools
wrapper and the benchmark get Kafka (its broker, Java client, Streams, command-line tools).

    jars = kafka_jars.fetch("4.1.1", ["kafka_2.13", "kafka-tools"])   # list of Paths, transitive deps too
    classpath = os.pathsep.join(map(str, jars))

A set of artifacts is resolved once into `<cache>/kafka-<release>/<set name>/` (`~/.cache/minibroker` unless
`MINIBROKER_CACHE` says otherwise) with a marker file written last, so a second run fetches nothing and an
interrupted fetch is redone. `Unavailable` says why a release cannot be had (no Maven, no network, a release
the registry does not serve): callers skip with that reason, never pass.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

GROUP = "org.apache.kafka"
# The releases the project runs (issue 28): 3.9 with ZooKeeper, 4.x with KRaft; 4.4 is the newest served.
RELEASES = {"3.9": "3.9.2", "4.0": "4.0.2", "4.1": "4.1.2", "4.4": "4.4.0"}
_MARKER = ".complete"


class Unavailable(Exception):
    """The jars cannot be fetched here; the message says why."""


def cache_root() -> Path:
    return Path(os.environ.get("MINIBROKER_CACHE") or Path.home() / ".cache" / "minibroker")


def release_version(release: str) -> str:
    """'4.1' -> the pinned patch release; a full version is kept as it is."""
    return RELEASES.get(release, release)


def _coordinates(spec: str, version: str) -> tuple[str, str, str, str | None]:
    """'kafka-tools' -> (org.apache.kafka, kafka-tools, version, None); 'g:a:v[:classifier]' as given."""
    parts = spec.split(":")
    if len(parts) == 1:
        return GROUP, parts[0], version, None
    if len(parts) == 2:
        return parts[0], parts[1], version, None
    return parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else None


def _pom(coordinates: list[tuple[str, str, str, str | None]]) -> str:
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
        + (f"<classifier>{c}</classifier>" if c else "") + "</dependency>"
        for g, a, v, c in coordinates)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            '<groupId>minibroker.cache</groupId><artifactId>fetch</artifactId><version>1</version>'
            f'<packaging>pom</packaging><dependencies>{deps}</dependencies></project>')


def fetch(release: str, artifacts: list[str], *, timeout: float = 900.0) -> list[Path]:
    """The jars of `artifacts` (Kafka artifact ids of `release`, or full `group:artifact:version`
    coordinates) and everything they depend on at run time."""
    version = release_version(release)
    coordinates = [_coordinates(spec, version) for spec in artifacts]
    key = hashlib.sha256(repr(sorted(coordinates)).encode()).hexdigest()[:12]
    target = cache_root() / f"kafka-{version}" / key
    if not (target / _MARKER).exists():
        _resolve(coordinates, target, timeout)
    return sorted((target / "lib").glob("*.jar"))


def classpath(release: str, artifacts: list[str]) -> str:
    return os.pathsep.join(str(path) for path in fetch(release, artifacts))


def _resolve(coordinates: list[tuple[str, str, str, str | None]], target: Path, timeout: float) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise Unavailable("Maven (mvn) is not installed; Kafka's jars are fetched with it")
    if shutil.which("java") is None:
        raise Unavailable("Java is not installed")
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
