"""The container tests' engine: podman as root with docker-compose on its Docker-compatible socket, the base
images made locally (base_images.py), the project's images built from its Dockerfile by docker-compose, and
health checks run by this harness (podman runs them only through systemd). `make compose-test` runs these
tests (MINIBROKER_CONTAINER_TESTS=1); `make test` skips them.

Everything a test starts belongs to the compose project `minibroker-ct` or is a container named `mbct-*`:
removed before the first test (what an interrupted run left) and after the last, passed or failed. So two runs
on one machine (one podman) get in each other's way: run one at a time.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.containers import base_images
from tests.containers.podman import HealthChecks, Podman, available

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
PROJECT = "minibroker-ct"
ENABLED = os.environ.get("MINIBROKER_CONTAINER_TESTS") == "1"
# The host ports the compose file publishes by default, and the variables that change them. A default taken on
# this host (another broker on a shared machine) is replaced by a free port, as a user would do.
DEFAULT_PORTS = {"MINIBROKER_PORT": 9092, "MINIBROKER_PORT_1": 19092, "MINIBROKER_PORT_2": 19093,
                 "MINIBROKER_PORT_3": 19094, "MINIBROKER_REGISTRY_PORT": 8081, "MINIBROKER_CONSOLE_PORT": 8080}
TIMINGS: list[tuple[str, float]] = []
SIZES: dict[str, str] = {}


SKIP_UNLESS_ASKED = pytest.mark.skipif(
    not ENABLED, reason="container tests: `make compose-test` runs them (podman, docker-compose, mmdebstrap)")


class Compose:
    """`docker-compose -p minibroker-ct -f docker-compose.yml ...` on podman's socket."""

    def __init__(self, engine: Podman, ports: dict[str, int]) -> None:
        self.engine = engine
        self.ports = ports

    def run(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        command = ["docker-compose", "--no-ansi", "-p", PROJECT, "-f", str(COMPOSE_FILE), *args]
        env = {k: v for k, v in self.engine.env.items() if not k.startswith("MINIBROKER_")}  # the file's defaults
        env.update({name: str(port) for name, port in self.ports.items() if port != DEFAULT_PORTS[name]})
        result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"docker-compose {' '.join(args)} exited {result.returncode}:\n"
                                 f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
        return result

    def container(self, service: str) -> str:
        """The id of the service's (first) container."""
        ids = self.run("ps", "-q", service).stdout.split()
        assert ids, f"no container for {service}"
        return ids[0]

    def wait_healthy(self, *services: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        for service in services:
            while (status := self.engine.health(self.container(service))) != "healthy":
                if time.monotonic() > deadline:
                    logs = self.run("logs", "--tail", "40", service, check=False).stdout
                    raise AssertionError(f"{service} is {status or 'gone'} after {timeout} s:\n{logs}")
                time.sleep(0.5)

    def down(self) -> None:
        self.run("--profile", "cluster", "--profile", "secure", "down", "-v", "--remove-orphans", "-t", "10",
                 check=False)


def timed(label: str, started: float) -> None:
    TIMINGS.append((label, time.monotonic() - started))


def host_ports() -> dict[str, int]:
    """The default ports where free on this host, else free ones the kernel picks."""
    ports = {}
    for name, port in DEFAULT_PORTS.items():
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("0.0.0.0", port))
            except OSError:
                port = 0
        if port == 0:
            with socket.socket() as free:
                free.bind(("127.0.0.1", 0))
                port = free.getsockname()[1]
        ports[name] = port
    return ports


def _remove_leftovers(engine: Podman, compose: Compose) -> None:
    compose.down()
    names = engine.podman("ps", "-a", "--filter", "name=^mbct-", "--format", "{{.Names}}").stdout.split()
    if names:
        engine.podman("rm", "-f", *names)


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Podman]:
    """podman with its socket serving, the base images present and health checks running."""
    assert ENABLED, "the container tests' engine is started only by `make compose-test`"
    missing = available()
    if missing:
        pytest.fail(missing)
    engine = Podman(tmp_path_factory.mktemp("podman"))
    started = time.monotonic()
    for image in base_images.ALL:
        how = base_images.ensure(engine, image)
        timed(f"base image {image.name} ({how})", started)
        started = time.monotonic()
    engine.start_service()
    compose = Compose(engine, DEFAULT_PORTS)
    try:
        _remove_leftovers(engine, compose)
        with HealthChecks(engine):
            yield engine
    finally:
        _remove_leftovers(engine, compose)
        engine.stop_service()


@pytest.fixture(scope="session")
def compose(engine: Podman) -> Compose:
    """docker-compose on the engine, the project's images built (broker and pipeline)."""
    compose = Compose(engine, host_ports())
    started = time.monotonic()
    compose.run("build", "broker", "pipeline", timeout=1800)
    timed("docker-compose build broker pipeline", started)
    for image in ("minibroker:latest", "minibroker-pipeline:latest", base_images.PYTHON.name,
                  base_images.ZOOKEEPER.name):
        SIZES[image] = engine.check("image", "inspect", "--format", "{{.Size}}", image).strip()
    return compose


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not TIMINGS:
        return
    terminalreporter.section("container test timings and image sizes")
    for label, seconds in TIMINGS:
        terminalreporter.write_line(f"{seconds:7.1f} s  {label}")
    for image, size in SIZES.items():
        terminalreporter.write_line(f"{int(size) / 1e6:7.0f} MB {image}")
