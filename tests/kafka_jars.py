"""Apache Kafka's jars (its broker, Java client, Streams, command-line tools), fetched from Maven Central
into the user's cache by the test kit's one mechanism (broker.testkit.jars): the way the tests, the tools
wrapper and the benchmark get Kafka.

    jars = kafka_jars.fetch("4.1.1", ["kafka_2.13", "kafka-tools"])   # list of Paths, transitive deps too
    classpath = os.pathsep.join(map(str, jars))

`Unavailable` says why a release cannot be had (no Maven, no network, a release the registry does not
serve): callers skip with that reason, never pass.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.testkit.jars import Unavailable, cache_root
from broker.testkit.jars import fetch as fetch_jars

__all__ = ["RELEASES", "Unavailable", "cache_root", "classpath", "fetch", "release_version"]

GROUP = "org.apache.kafka"
# The releases the project runs (issue 28): 3.9 with ZooKeeper, 4.x with KRaft; 4.4 is the newest served.
RELEASES = {"3.9": "3.9.2", "4.0": "4.0.2", "4.1": "4.1.2", "4.4": "4.4.0"}


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


def fetch(release: str, artifacts: list[str], *, timeout: float = 900.0) -> list[Path]:
    """The jars of `artifacts` (Kafka artifact ids of `release`, or full `group:artifact:version`
    coordinates) and everything they depend on at run time."""
    version = release_version(release)
    return fetch_jars([_coordinates(spec, version) for spec in artifacts], f"kafka-{version}", timeout=timeout)


def classpath(release: str, artifacts: list[str]) -> str:
    return os.pathsep.join(str(path) for path in fetch(release, artifacts))
