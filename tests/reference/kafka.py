"""Apache Kafka brokers as subprocesses on free loopback ports: the reference minibroker is compared with.

    cluster = KafkaCluster("4.1", brokers=3).start()     # KRaft combined mode: every node broker + controller
    cluster = KafkaCluster("3.9", zookeeper="127.0.0.1:2181").start()   # ZooKeeper mode, a chroot of its own
    cluster.bootstrap; cluster.kill_node(1); cluster.start_node(1); cluster.stop()

Each node is one JVM with a small heap and flags that favour startup over peak speed (the C1 compiler only,
the serial collector): a reference answers a few hundred requests, it is not benchmarked (the benchmark
starts Kafka with its own defaults, benchmarks/brokers.py). Logs go to `<node dir>/server.log`.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.testkit.zookeeper import die_with_parent
from tests.reference import releases

# A reference answers a few hundred requests: start fast, stay small.
JVM_OPTIONS = ["-Xms64m", "-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData",
               "-Xss512k", "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true"]

# Broker settings both brokers of a comparison get (minibroker through tests/reference/harness.py): the
# scenarios write records with fixed timestamps from 2023, which time-based retention (checked 30 s after
# start, then every 5 minutes) would delete from a reference that runs for a while.
SHARED_CONFIG = {"log.retention.check.interval.ms": str(7 * 86_400_000)}
# Kafka only: a consumer alone in a group starts at once (minibroker's documented default).
BASE_CONFIG = {**SHARED_CONFIG, "group.initial.rebalance.delay.ms": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_cluster_id() -> str:
    """Kafka's Uuid text form; like Kafka's Uuid.randomUuid, never one starting with "-" (an option to the
    storage tool's command line)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def api_versions_answered(port: int, timeout: float = 1.0) -> bool:
    """True once the port answers an ApiVersions v0 request."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            body = struct.pack(">hhih", 18, 0, 1, -1)
            s.sendall(struct.pack(">i", len(body)) + body)
            head = s.recv(4)
            return len(head) == 4
    except OSError:
        return False


@dataclass
class KafkaNode:
    node_id: int
    port: int
    controller_port: int | None  # KRaft only
    dir: Path
    properties: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.dir / "server.log"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        parts = []
        for name in ("server.log", "stdout.log"):
            path = self.dir / name
            if path.exists():
                parts.append(f"--- {path}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(parts)


@dataclass
class KafkaCluster:
    """One to N Kafka nodes of one release. 4.x: KRaft combined mode (each node a broker and a controller
    voter). 3.x: ZooKeeper mode on `zookeeper` ("host:port", a chroot per cluster is added)."""

    release: str
    brokers: int = 1
    zookeeper: str | None = None
    config: dict[str, str] = field(default_factory=dict)  # broker settings, Kafka's names
    kraft: bool | None = None  # None: KRaft from 4.0, ZooKeeper below
    root: Path | None = None

    def __post_init__(self) -> None:
        if self.kraft is None:
            self.kraft = not releases.uses_zookeeper(self.release)
        if not self.kraft and self.zookeeper is None:
            raise ValueError(f"Kafka {self.release} in ZooKeeper mode needs a ZooKeeper address")
        self.version = releases.version(self.release)
        self.cluster_id = new_cluster_id()
        self.chroot = None if self.kraft else f"/kafka-{uuid.uuid4().hex[:10]}"
        self.nodes: list[KafkaNode] = []
        self._classpath: str | None = None

    # -- addresses ---------------------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(node.address for node in self.nodes if node.alive()) or self.nodes[0].address

    @property
    def zookeeper_connect(self) -> str | None:
        return None if self.kraft else f"{self.zookeeper}{self.chroot}"

    def describe(self) -> str:
        mode = "KRaft combined" if self.kraft else f"ZooKeeper {self.zookeeper_connect}"
        return f"Kafka {self.version} ({self.brokers} node{'s' if self.brokers > 1 else ''}, {mode})"

    # -- life cycle --------------------------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> KafkaCluster:
        """Fetch the release if needed (kafka_jars.Unavailable says why it cannot be), write each node's
        configuration, format KRaft storage, start every node and wait until Metadata lists them all."""
        self._classpath = releases.classpath(self.release)
        self.root = Path(tempfile.mkdtemp(prefix=f"kafka-{self.version}-"))
        ports = [free_port() for _ in range(self.brokers)]
        controller_ports = [free_port() for _ in range(self.brokers)] if self.kraft else [None] * self.brokers
        voters = ",".join(f"{i}@127.0.0.1:{controller_ports[i]}" for i in range(self.brokers))
        for i in range(self.brokers):
            node_dir = self.root / f"node-{i}"
            (node_dir / "data").mkdir(parents=True)
            props = self._properties(i, ports[i], controller_ports[i], voters, node_dir)
            node = KafkaNode(i, ports[i], controller_ports[i], node_dir, props)
            self._write_config(node)
            self.nodes.append(node)
        try:
            if self.kraft:
                for node in self.nodes:
                    self._format(node)
            for node in self.nodes:
                self._launch(node)
            self.wait_ready(timeout)
        except BaseException:
            self.stop(clean=False)
            raise
        return self

    def _properties(self, node_id: int, port: int, controller_port: int | None, voters: str,
                    node_dir: Path) -> dict[str, str]:
        replication = str(min(3, self.brokers))
        props = {
            **BASE_CONFIG,
            "log.dirs": str(node_dir / "data"),
            "offsets.topic.replication.factor": replication,
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": "1" if self.brokers == 1 else "2",
        }
        if self.kraft:
            props.update({
                "process.roles": "broker,controller",
                "node.id": str(node_id),
                "controller.quorum.voters": voters,
                "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
                # __share_group_state (KIP-932) asks for three replicas, as the other internal topics
                "share.coordinator.state.topic.replication.factor": replication,
                "share.coordinator.state.topic.min.isr": "1" if self.brokers == 1 else "2",
            })
        else:
            props.update({
                "broker.id": str(node_id),
                "zookeeper.connect": str(self.zookeeper_connect),
                "zookeeper.session.timeout.ms": "18000",
                "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            })
        props.update(self.config)
        return props

    def _write_config(self, node: KafkaNode) -> None:
        (node.dir / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in node.properties.items()))
        if releases.uses_log4j2(self.release):
            (node.dir / "log4j2.properties").write_text(
                "appender.file.type = File\nappender.file.name = FILE\n"
                f"appender.file.fileName = {node.log_file}\n"
                "appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = [%d] %p %m (%c)%n\n"
                "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = FILE\n"
                "logger.kafka.name = kafka\nlogger.kafka.level = INFO\n")
        else:
            (node.dir / "log4j.properties").write_text(
                "log4j.rootLogger=INFO, file\nlog4j.appender.file=org.apache.log4j.FileAppender\n"
                f"log4j.appender.file.File={node.log_file}\n"
                "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
                "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
                "log4j.logger.org.apache.zookeeper=WARN\n")

    def _java(self, node: KafkaNode, main: str, *args: str) -> list[str]:
        logging = (f"-Dlog4j2.configurationFile={node.dir / 'log4j2.properties'}"
                   if releases.uses_log4j2(self.release) else
                   f"-Dlog4j.configuration=file:{node.dir / 'log4j.properties'}")
        assert self._classpath is not None
        return ["java", *JVM_OPTIONS, logging, f"-Dkafka.logs.dir={node.dir}", "-cp", self._classpath, main, *args]

    def _format(self, node: KafkaNode) -> None:
        result = subprocess.run(
            self._java(node, "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c",
                       str(node.dir / "server.properties")), capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"formatting {node.dir} failed: {result.stdout[-1500:]} {result.stderr[-1500:]}")

    def _launch(self, node: KafkaNode) -> None:
        out = open(node.dir / "stdout.log", "ab")  # noqa: SIM115 - owned by the child process
        node.proc = subprocess.Popen(self._java(node, "kafka.Kafka", str(node.dir / "server.properties")),
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=die_with_parent)
        out.close()

    def wait_ready(self, timeout: float = 120.0, nodes: list[int] | None = None) -> None:
        """Until every running node answers and Metadata (asked of each) lists every running node."""
        wanted = [n for n in self.nodes if (nodes is None or n.node_id in nodes) and n.proc is not None]
        deadline = time.monotonic() + timeout
        for node in wanted:
            while not api_versions_answered(node.port):
                self._check_alive(node)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.describe()}: node {node.node_id} did not answer within {timeout} s\n"
                                       + node.log_tail())
                time.sleep(0.1)
        expected = {n.node_id for n in self.nodes if n.alive()}
        for node in wanted:
            while self._metadata_brokers(node) != expected:
                self._check_alive(node)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.describe()}: node {node.node_id} does not list brokers {expected}\n"
                                       + node.log_tail())
                time.sleep(0.1)

    @staticmethod
    def _check_alive(node: KafkaNode) -> None:
        if node.proc is not None and node.proc.poll() is not None:
            raise RuntimeError(f"Kafka node {node.node_id} exited with {node.proc.returncode}\n" + node.log_tail())

    @staticmethod
    def _metadata_brokers(node: KafkaNode) -> set[int] | None:
        from tests.reference.wire import WireConnection

        try:
            with WireConnection(node.address, timeout=5) as conn:
                answer = conn.request(3, 9, {"topics": [], "allow_auto_topic_creation": False})
            return {b["node_id"] for b in answer["brokers"]}
        except (OSError, ConnectionError):
            return None

    def stop_node(self, node_id: int, timeout: float = 60.0) -> None:
        """A clean shutdown (SIGTERM: controlled shutdown, leadership moves away first)."""
        node = self.nodes[node_id]
        if node.alive():
            assert node.proc is not None
            os.killpg(node.proc.pid, signal.SIGTERM)
            try:
                node.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill_node(node_id)

    def kill_node(self, node_id: int) -> None:
        """SIGKILL: the node vanishes as in a crash."""
        node = self.nodes[node_id]
        if node.alive():
            assert node.proc is not None
            os.killpg(node.proc.pid, signal.SIGKILL)
            node.proc.wait(30)

    def pause_node(self, node_id: int) -> None:
        """SIGSTOP: the node freezes (a long GC pause) with its connections open."""
        node = self.nodes[node_id]
        assert node.proc is not None
        os.killpg(node.proc.pid, signal.SIGSTOP)

    def resume_node(self, node_id: int) -> None:
        """SIGCONT after pause_node()."""
        node = self.nodes[node_id]
        assert node.proc is not None
        os.killpg(node.proc.pid, signal.SIGCONT)

    def start_node(self, node_id: int, timeout: float = 120.0) -> None:
        """Start a stopped or killed node again, on its data; wait until the cluster lists it."""
        node = self.nodes[node_id]
        if not node.alive():
            self._launch(node)
        self.wait_ready(timeout)

    def stop(self, clean: bool = False) -> None:
        """Stop every node (SIGKILL unless `clean`: the data is thrown away anyway) and remove the files."""
        for node in self.nodes:
            if clean:
                self.stop_node(node.node_id)
            else:
                self.kill_node(node.node_id)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
