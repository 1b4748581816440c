"""podman as root in place of a Docker engine: its settings for a machine without systemd, its Docker-compatible
socket for docker-compose, and the health checks it does not run by itself there.

    engine = Podman(workdir)                 # writes containers.conf; engine.podman("ps") runs podman with it
    engine.start_service()                   # `podman system service` on workdir/podman.sock (DOCKER_HOST)
    with HealthChecks(engine):               # `podman healthcheck run` each container at its interval
        compose("up", "-d", "broker")        # depends_on: condition: service_healthy can be met
    engine.stop_service()

What the settings are for (each failed without it, on a Debian VM with a hybrid cgroup v1/v2 layout, no
systemd, root without CAP_SYS_RESOURCE): runc (crun refuses hybrid cgroups), cgroupfs (no systemd to ask),
file events and logs (no journald), ulimits within the hard limits this process has (podman's defaults are
higher, and raising them needs the capability).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

_PID_MAX = Path("/proc/sys/kernel/pid_max")


def containers_conf() -> str:
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    pid_max = int(_PID_MAX.read_text()) if _PID_MAX.exists() else 32768
    if nproc == resource.RLIM_INFINITY or nproc > pid_max:
        nproc = pid_max
    if nofile == resource.RLIM_INFINITY:
        nofile = 1048576
    return (
        "[containers]\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        'log_driver = "k8s-file"\n'
        "[engine]\n"
        'runtime = "runc"\n'
        'cgroup_manager = "cgroupfs"\n'
        'events_logger = "file"\n'
        "[network]\n"
        'network_backend = "cni"\n'
    )


class Podman:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.conf = workdir / "containers.conf"
        self.conf.write_text(containers_conf())
        self.socket = workdir / "podman.sock"
        self._service: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        """The environment for podman and for docker-compose (DOCKER_HOST: the service's socket)."""
        return {**os.environ, "CONTAINERS_CONF": str(self.conf), "DOCKER_HOST": f"unix://{self.socket}",
                # docker-compose builds through the API (no docker CLI, no BuildKit here), with patience for
                # a long build or a slow first start.
                "COMPOSE_DOCKER_CLI_BUILD": "0", "DOCKER_BUILDKIT": "0", "COMPOSE_HTTP_TIMEOUT": "600"}

    def podman(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["podman", *args], env=self.env, capture_output=True, text=True, timeout=timeout)

    def check(self, *args: str, timeout: float = 300) -> str:
        result = self.podman(*args, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"podman {' '.join(args)} exited {result.returncode}:\n{result.stderr[-3000:]}")
        return result.stdout

    # -- the Docker-compatible socket --------------------------------------------------------------------
    def start_service(self, timeout: float = 30) -> None:
        self.socket.unlink(missing_ok=True)
        log = open(self.workdir / "service.log", "ab")  # noqa: SIM115 - owned by the service process
        self._service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{self.socket}"],
                                         env=self.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while not self._answers_ping():
            if self._service.poll() is not None:
                raise RuntimeError(f"podman system service exited {self._service.returncode}: "
                                   + (self.workdir / "service.log").read_text()[-2000:])
            if time.monotonic() > deadline:
                raise TimeoutError(f"podman system service did not answer on {self.socket} within {timeout} s")
            time.sleep(0.1)

    def _answers_ping(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX) as conn:
                conn.settimeout(2)
                conn.connect(str(self.socket))
                conn.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
                status = conn.recv(64).split(b"\r\n", 1)[0]
                return status.startswith(b"HTTP/1.") and b" 200" in status
        except OSError:
            return False

    def stop_service(self) -> None:
        if self._service is not None and self._service.poll() is None:
            self._service.terminate()
            try:
                self._service.wait(30)
            except subprocess.TimeoutExpired:
                self._service.kill()
                self._service.wait(10)
        self._service = None

    # -- containers --------------------------------------------------------------------------------------
    def running(self) -> list[str]:
        result = self.podman("ps", "-q", "--no-trunc")
        return result.stdout.split() if result.returncode == 0 else []

    def health_interval(self, container: str) -> float | None:
        """The container's health-check interval in seconds, None when it has no health check."""
        result = self.podman("inspect", "--format", "{{json .Config.Healthcheck}}", container)
        if result.returncode != 0:
            return None
        check = json.loads(result.stdout.strip() or "null")
        if not check or not check.get("Test") or check["Test"][0] == "NONE":
            return None
        return (check.get("Interval") or 30_000_000_000) / 1e9

    def health(self, container: str) -> str:
        result = self.podman("inspect", "--format", "{{.State.Health.Status}}", container)
        return result.stdout.strip() if result.returncode == 0 else ""


def available() -> str | None:
    """None when podman, docker-compose and mmdebstrap are installed, else what is missing."""
    missing = [tool for tool in ("podman", "docker-compose", "mmdebstrap") if shutil.which(tool) is None]
    return f"not installed: {', '.join(missing)} (make compose-test installs them)" if missing else None


class HealthChecks:
    """Runs every running container's health check at its interval (`podman healthcheck run`), as Docker's
    daemon does and podman does only through systemd timers: without it, `depends_on: condition:
    service_healthy` waits forever. A thread, from `with HealthChecks(engine):` until the block ends."""

    def __init__(self, engine: Podman, tick: float = 1.0) -> None:
        self.engine = engine
        self.tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="healthchecks", daemon=True)
        self._due: dict[str, float] = {}
        self._interval: dict[str, float | None] = {}

    def __enter__(self) -> HealthChecks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)

    def _loop(self) -> None:
        while not self._stop.wait(self.tick):
            now = time.monotonic()
            running = self.engine.running()
            for container in running:
                if container not in self._interval:
                    self._interval[container] = self.engine.health_interval(container)
                    self._due[container] = now + min(self._interval[container] or 0, 1.0)
                interval = self._interval[container]
                if interval is None or now < self._due[container] or self._stop.is_set():
                    continue
                try:
                    self.engine.podman("healthcheck", "run", container, timeout=60)
                except subprocess.TimeoutExpired:
                    pass  # counted as a failed check by podman; the next one comes at the interval
                self._due[container] = time.monotonic() + interval
            for gone in set(self._interval) - set(running):  # a restarted container keeps its id: checked anew
                self._interval.pop(gone)
                self._due.pop(gone, None)
