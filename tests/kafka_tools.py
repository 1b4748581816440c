"""Apache Kafka's command-line tools, run by their script names from the jars tests/kafka_jars.py fetches (no
Kafka download or install): what `scripts/kafka-tool` runs, and how the tests run them.

    scripts/kafka-tool kafka-topics --bootstrap-server localhost:9092 --create --topic orders --partitions 3
    scripts/kafka-tool --release 3.9 kafka-configs --bootstrap-server localhost:9092 --describe ...

A tool's main class is the one its `bin/NAME.sh` script runs in that release (some moved from the Scala core to
kafka-tools in 4.0). The classpath is the release's `kafka_2.13` and `kafka-tools` with their dependencies,
logging through slf4j-simple at WARN to stderr (as the scripts' tools-log4j config does). KAFKA_HEAP_OPTS and
KAFKA_OPTS are passed to `java` as the scripts pass them.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests import kafka_jars

# The newest release served (the default), and the one whose tools the tests run.
DEFAULT_RELEASE = max(kafka_jars.RELEASES, key=lambda r: tuple(int(p) for p in r.split(".")))
ARTIFACTS = ["kafka_2.13", "kafka-tools"]
LOGGING = ["org.slf4j:slf4j-simple:1.7.36"]
# Bindings the releases bring themselves (3.x: reload4j), left out so that slf4j finds one.
_OTHER_BINDINGS = ("slf4j-reload4j", "slf4j-log4j12", "log4j-slf4j-impl", "log4j-slf4j2-impl")

# Script name -> the main class of each release, newest first: the first the classpath has is run.
TOOLS: dict[str, list[str]] = {
    "kafka-acls": ["org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand"],
    "kafka-broker-api-versions": ["org.apache.kafka.tools.BrokerApiVersionsCommand"],
    "kafka-client-metrics": ["org.apache.kafka.tools.ClientMetricsCommand"],
    "kafka-cluster": ["org.apache.kafka.tools.ClusterTool"],
    "kafka-configs": ["org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"],
    "kafka-console-consumer": ["org.apache.kafka.tools.consumer.ConsoleConsumer"],
    "kafka-console-producer": ["org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer"],
    "kafka-console-share-consumer": ["org.apache.kafka.tools.consumer.ConsoleShareConsumer"],
    "kafka-consumer-groups": ["org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"],
    "kafka-consumer-perf-test": ["org.apache.kafka.tools.ConsumerPerformance"],
    "kafka-delegation-tokens": ["org.apache.kafka.tools.DelegationTokenCommand"],
    "kafka-delete-records": ["org.apache.kafka.tools.DeleteRecordsCommand"],
    "kafka-dump-log": ["org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"],
    "kafka-e2e-latency": ["org.apache.kafka.tools.EndToEndLatency"],
    "kafka-features": ["org.apache.kafka.tools.FeatureCommand"],
    "kafka-get-offsets": ["org.apache.kafka.tools.GetOffsetShell"],
    "kafka-groups": ["org.apache.kafka.tools.GroupsCommand"],
    "kafka-jmx": ["org.apache.kafka.tools.JmxTool"],
    "kafka-leader-election": ["org.apache.kafka.tools.LeaderElectionCommand"],
    "kafka-log-dirs": ["org.apache.kafka.tools.LogDirsCommand"],
    "kafka-metadata-quorum": ["org.apache.kafka.tools.MetadataQuorumCommand"],
    "kafka-producer-perf-test": ["org.apache.kafka.tools.ProducerPerformance"],
    "kafka-reassign-partitions": ["org.apache.kafka.tools.reassign.ReassignPartitionsCommand"],
    "kafka-replica-verification": ["org.apache.kafka.tools.ReplicaVerificationTool"],
    "kafka-share-groups": ["org.apache.kafka.tools.consumer.group.ShareGroupCommand"],
    "kafka-streams-application-reset": ["org.apache.kafka.tools.StreamsResetter"],
    "kafka-streams-groups": ["org.apache.kafka.tools.streams.StreamsGroupCommand"],
    "kafka-topics": ["org.apache.kafka.tools.TopicCommand"],
    "kafka-transactions": ["org.apache.kafka.tools.TransactionsCommand"],
    "kafka-verifiable-consumer": ["org.apache.kafka.tools.VerifiableConsumer"],
    "kafka-verifiable-producer": ["org.apache.kafka.tools.VerifiableProducer"],
}


class UnknownTool(Exception):
    pass


def classpath(release: str = DEFAULT_RELEASE) -> list[Path]:
    jars = [j for j in kafka_jars.fetch(release, ARTIFACTS) if not j.name.startswith(_OTHER_BINDINGS)]
    names = {j.name for j in jars}
    return jars + [j for j in kafka_jars.fetch(release, LOGGING) if j.name not in names]


def main_class(name: str, jars: list[Path]) -> str:
    """The main class of the tool `name` ("kafka-topics" or "kafka-topics.sh") on this classpath."""
    script = name.removesuffix(".sh")
    if script not in TOOLS:
        raise UnknownTool(f"no Kafka tool is called {name!r}; the tools: {', '.join(sorted(TOOLS))}")
    wanted = {cls.replace(".", "/") + ".class": cls for cls in TOOLS[script]}
    found = set()
    for jar in jars:
        if jar.name.startswith(("kafka", "connect")):
            with zipfile.ZipFile(jar) as archive:
                found.update(n for n in archive.namelist() if n in wanted)
    for path, cls in wanted.items():
        if path in found:
            return cls
    raise UnknownTool(f"{script} is not in this Kafka release (none of {', '.join(TOOLS[script])})")


def command(name: str, args: list[str], release: str = DEFAULT_RELEASE) -> list[str]:
    """The `java` command line that runs the tool `name` with `args`."""
    java = shutil.which("java")
    if java is None:
        raise kafka_jars.Unavailable("Java is not installed")
    jars = classpath(release)
    heap = shlex.split(os.environ.get("KAFKA_HEAP_OPTS", "-Xmx256M"))
    # The tools are short-lived clients: the quick-start compiler and serial GC start them sooner.
    jvm = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
           "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]
    return [java, *heap, *jvm, "-cp", os.pathsep.join(map(str, jars)),
            *shlex.split(os.environ.get("KAFKA_OPTS", "")), main_class(name, jars), *args]


def run(name: str, *args: str, release: str = DEFAULT_RELEASE, input: str | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Runs a tool to its end; stdout and stderr captured."""
    return subprocess.run(command(name, list(args), release), input=input, capture_output=True, text=True,
                          timeout=timeout)


def main(argv: list[str]) -> int:
    release = os.environ.get("KAFKA_TOOLS_RELEASE", DEFAULT_RELEASE)
    if argv[:1] == ["--release"] and len(argv) >= 2:
        release, argv = argv[1], argv[2:]
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print("usage: kafka-tool [--release R] NAME [ARGS...]   (R: "
              f"{', '.join(kafka_jars.RELEASES)}; default {release}; or KAFKA_TOOLS_RELEASE)\n"
              "Runs Apache Kafka's command-line tool NAME (its bin/NAME.sh) from jars fetched with Maven.\n"
              "Tools: " + " ".join(sorted(TOOLS)), file=sys.stderr)
        return 0 if argv else 2
    try:
        cmd = command(argv[0], argv[1:], release)
    except (UnknownTool, kafka_jars.Unavailable) as exc:
        print(f"kafka-tool: {exc}", file=sys.stderr)
        return 2
    os.execv(cmd[0], cmd)  # the tool takes over: its stdin, exit status and signals are the user's
