"""Apache Kafka with three brokers for the replicated row: KRaft, a combined quorum of three nodes (each a
broker and a controller voter), each node set up as the single-node spec is (Kafka's launcher's JVM options,
its default settings, no initial rebalance delay); the internal topics keep Kafka's replication factor of 3."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks import brokers


def _properties(node: int, port: int, controller: int, voters: str, data: str) -> str:
    return (f"process.roles=broker,controller\nnode.id={node}\ncontroller.quorum.voters={voters}\n"
            f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n"
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            f"log.dirs={data}\ngroup.initial.rebalance.delay.ms=0\n")


def _log4j(run_dir: str) -> str:
    return ("appender.file.type = File\nappender.file.name = FILE\n"
            f"appender.file.fileName = {os.path.join(run_dir, 'server.log')}\n"
            "appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = FILE\n")


@contextlib.contextmanager
def kafka_cluster(nodes: int = 3, release: str = brokers.KAFKA_RELEASE,
                  timeout: float = 180.0) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(bootstrap, the nodes' pids) of a running cluster whose every broker is registered; raises
    tests.kafka_jars.Unavailable when the jars cannot be had."""
    from broker.testkit.zookeeper import die_with_parent
    from tests.reference.kafka import new_cluster_id

    classpath = brokers.kafka_classpath(release)
    ports = [brokers.free_port() for _ in range(nodes)]
    controllers = [brokers.free_port() for _ in range(nodes)]
    voters = ",".join(f"{n + 1}@127.0.0.1:{c}" for n, c in enumerate(controllers))
    cluster_id = new_cluster_id()
    run_dirs = [tempfile.mkdtemp(prefix=f"bench-kafka{n + 1}-") for n in range(nodes)]
    procs: list[subprocess.Popen] = []
    try:
        formats = []
        for n, run_dir in enumerate(run_dirs):
            Path(run_dir, "server.properties").write_text(
                _properties(n + 1, ports[n], controllers[n], voters, os.path.join(run_dir, "data")))
            Path(run_dir, "log4j2.properties").write_text(_log4j(run_dir))
            formats.append(subprocess.Popen(
                ["java", "-Xmx256m", "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", cluster_id,
                 "-c", os.path.join(run_dir, "server.properties")],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        for proc in formats:
            if proc.wait(120) != 0:
                raise RuntimeError(f"kafka-storage format failed: {proc.stderr.read() if proc.stderr else ''}")
        for run_dir in run_dirs:
            with open(os.path.join(run_dir, "broker.log"), "ab") as log:
                procs.append(subprocess.Popen(
                    ["java", *brokers.KAFKA_JVM, f"-Dlog4j2.configurationFile={run_dir}/log4j2.properties", "-cp",
                     classpath, "kafka.Kafka", os.path.join(run_dir, "server.properties")],
                    stdout=log, stderr=log, start_new_session=True, preexec_fn=die_with_parent))
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
        _wait_registered(bootstrap, nodes, procs, time.monotonic() + timeout)
        yield bootstrap, tuple(p.pid for p in procs)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(15)
        for run_dir in run_dirs:
            shutil.rmtree(run_dir, ignore_errors=True)


def _wait_registered(bootstrap: str, nodes: int, procs: list[subprocess.Popen], deadline: float) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError("a Kafka node exited while the cluster started")
        with contextlib.suppress(Exception):
            if len(admin.list_topics(timeout=5).brokers) >= nodes:
                return
        time.sleep(0.2)
    raise TimeoutError(f"Kafka's {nodes} brokers were not all registered in time")
