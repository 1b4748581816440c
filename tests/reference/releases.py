"""The Apache Kafka releases the reference brokers run, and the jars each needs.

tests/kafka_jars.py pins 3.9, 4.0, 4.1 and 4.4; the releases between (4.2, 4.3) are pinned here, for their
ApiVersions tables. 3.x brokers run in ZooKeeper mode (minibroker's own mode, and the mode the 3.x version
tables were recorded in), 4.x brokers in KRaft combined mode (Kafka 4 has no ZooKeeper mode).
"""

from __future__ import annotations

from tests import kafka_jars

# Releases besides kafka_jars.RELEASES: the newest patch level of each on Maven Central.
EXTRA_RELEASES = {"3.7": "3.7.2", "3.8": "3.8.1", "4.2": "4.2.2", "4.3": "4.3.1"}
# The releases the differential scenarios are recorded against (issue 28): the last ZooKeeper release,
# the 4.x minibroker looks like, and the newest.
DIFF_RELEASES = ("3.9", "4.1", "4.4")
# Kafka 4's brokers log through SLF4J 1.7 to Log4j 2, but its Maven artifacts leave the binding (and for
# 4.0 Log4j itself) to the distribution: without it every log line is dropped.
LOG4J2 = ["org.apache.logging.log4j:log4j-slf4j-impl:2.24.3", "org.apache.logging.log4j:log4j-core:2.24.3"]


def version(release: str) -> str:
    """'4.1' -> '4.1.2'; a full version ('4.1.1') is kept as it is."""
    return EXTRA_RELEASES.get(release) or kafka_jars.release_version(release)


def series(release: str) -> tuple[int, int]:
    major, minor = version(release).split(".")[:2]
    return int(major), int(minor)


def uses_zookeeper(release: str) -> bool:
    return series(release) < (4, 0)


def uses_log4j2(release: str) -> bool:
    return series(release) >= (4, 0)


def artifacts(release: str) -> list[str]:
    """The broker, the command-line tools (perf tests, kafka-configs) and a logging backend."""
    base = ["kafka_2.13", "kafka-tools"]
    return base + LOG4J2 if uses_log4j2(release) else base


def classpath(release: str) -> str:
    """The classpath of `release` (fetched with Maven on first use); raises kafka_jars.Unavailable."""
    return kafka_jars.classpath(version(release), artifacts(release))
