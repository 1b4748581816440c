"""A real Kafka 3.9 broker in ZooKeeper mode, started from its jars (`kafka.Kafka server.properties`) on a free
loopback port, for tests that check zk/ against what Kafka writes and accepts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests import zk_oracle


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Kafka39Broker:
    """`zookeeper_connect` is `host:port/chroot`; no broker.id: Kafka generates one from /brokers/seqid."""

    def __init__(self, zookeeper_connect: str, directory: Path, **overrides: str) -> None:
        self.dir = Path(directory)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        settings = {
            "zookeeper.connect": zookeeper_connect,
            "zookeeper.session.timeout.ms": "18000",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.dir / "data"),
            "broker.rack": "rack0",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # The tests decide when leaders move: no automatic preferred elections, no ISR shrink of the
            # replicas that never fetch (brokers registered by the tests themselves).
            "auto.leader.rebalance.enable": "false",
            "replica.lag.time.max.ms": "600000",
            "controlled.shutdown.enable": "false",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
            "super.users": "User:ANONYMOUS",  # the tests create ACLs; their own clients stay allowed
            **overrides,
        }
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        (self.dir / "log4j.properties").write_text(
            "log4j.rootLogger=INFO, file\n"
            "log4j.appender.file=org.apache.log4j.FileAppender\n"
            f"log4j.appender.file.File={self.dir / 'kafka.log'}\n"
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log(self, tail: int = 4000) -> str:
        path = self.dir / "kafka.log"
        return path.read_text(errors="replace")[-tail:] if path.exists() else ""

    def start(self, timeout: float = 120.0) -> Kafka39Broker:
        out = open(self.dir / "stdout.log", "ab")  # noqa: SIM115 - owned by the child process
        self.proc = subprocess.Popen(
            ["java", "-Xmx512m", "-XX:+UseSerialGC", f"-Dlog4j.configuration=file:{self.dir / 'log4j.properties'}",
             "-cp", zk_oracle.classpath(), "kafka.Kafka", str(self.dir / "server.properties")],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        deadline = time.monotonic() + timeout
        while "started (kafka.server.KafkaServer)" not in self.log(tail=200_000):
            if self.proc.poll() is not None:
                raise RuntimeError(f"Kafka 3.9 exited ({self.proc.returncode}):\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"Kafka 3.9 did not start within {timeout:.0f} s:\n{self.log()}")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
