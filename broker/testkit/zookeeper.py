"""A real ZooKeeper server (Debian's `zookeeper` package) on a free loopback port, for
tests: the cluster fixture (broker.testkit.cluster) starts one when it is not given an address."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"
JAR = Path("/usr/share/java/zookeeper.jar")


def available() -> bool:
    return JAR.exists() and shutil.which("java") is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent() -> None:
    """In the child before exec: Linux kills it when the thread that started it ends (PR_SET_PDEATHSIG), so a
    test run killed by a timeout, or a cluster stopped with a signal, leaves no JVM behind. Start such children
    from a thread that lives as long as they should (the main thread)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _ruok(port: int) -> bool:
    """ZooKeeper answers 'srvr' (whitelisted by default) once it serves clients."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"srvr")
            return b"Zookeeper version" in s.recv(4096)
    except OSError:
        return False


def expire_session(hosts: str, session_id: int, password: bytes, timeout: float = 30.0) -> None:
    """End another client's session, as ZooKeeper does when its timeout passes: take the session over with
    its id and password, then close it (the classic trick; ZooKeeper has no command for it). The client
    whose session it was learns on its next exchange with the server that the session expired.
    `hosts`: "HOST:PORT[,...]" (no chroot)."""
    from kazoo.client import KazooClient

    other = KazooClient(hosts=hosts, client_id=(session_id, password))
    other.start(timeout=timeout)
    try:
        other.stop()  # sends closeSession: the session and its ephemeral znodes end now
    finally:
        other.close()


class ZooKeeperServer:
    """Start/stop/restart one standalone server; `address` is "127.0.0.1:PORT"."""

    def __init__(self, directory: Path | None = None, port: int = 0) -> None:
        """`directory`: where it keeps its data (a temporary one, removed by cleanup(), when None); `port`: a
        free one when 0."""
        self._temporary = directory is None
        self.dir = Path(tempfile.mkdtemp(prefix="minibroker-zk-")) if directory is None else Path(directory)
        self.port = port or _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        (self.dir / "data").mkdir(parents=True, exist_ok=True)
        (self.dir / "zoo.cfg").write_text(
            f"tickTime=2000\ndataDir={self.dir / 'data'}\nclientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n"
            "maxSessionTimeout=60000\n")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        log = open(self.dir / "zookeeper.log", "ab")  # noqa: SIM115 - owned by the child process
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-Dzookeeper.log.dir=" + str(self.dir), "-cp", CLASSPATH,
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(self.dir / "zoo.cfg")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=die_with_parent if threading.current_thread() is threading.main_thread() else None)
        log.close()
        deadline = time.monotonic() + timeout
        while not _ruok(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited: {(self.dir / 'zookeeper.log').read_text()[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("ZooKeeper did not start in time")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def cleanup(self) -> None:
        """Stop it, and remove its data when it was a temporary directory."""
        self.stop()
        if self._temporary:
            shutil.rmtree(self.dir, ignore_errors=True)
