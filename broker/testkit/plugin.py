"""pytest plugin: a real minibroker for your tests (registered through the `pytest11` entry point).

    def test_roundtrip(minibroker):              # "127.0.0.1:PORT", a fresh broker and data dir per test
        producer = KafkaProducer(bootstrap_servers=minibroker)

`minibroker_server` gives the `BrokerThread` handle (broker.testkit.broker_thread: restart, data dir,
stop, `call` into the broker, introspection, fault rules).

A test's data is thrown away, so the fixture brokers do not fdatasync (`--fsync none`: acks=all answered with
the data in the page cache, as Kafka's default leaves it); `@pytest.mark.minibroker(fsync="grouped")` gives a
test the default of `python -m broker`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.testkit.broker_thread import BrokerThread

TRACE_LINES_IN_REPORT = 200


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minibroker")
    group.addoption("--minibroker-trace", choices=("on-failure", "off"), default="on-failure",
                    help="trace the fixture broker's protocol and attach it to the report of a failing test "
                         "(default), or not")
    group.addoption("--minibroker-kafka-version", metavar="RELEASE", default=None,
                    help="the fixture broker advertises this Kafka release's API versions (e.g. 3.9, 4.0)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "minibroker(**config): BrokerConfig settings for the minibroker fixture "
                                       "broker of this test, e.g. minibroker(kafka_version='3.9'), and a secured "
                                       "listener: minibroker(security='SASL_SSL', users={'alice': 'secret'})")
    config.addinivalue_line("markers", "minibroker_cluster(brokers=3, args=(), schema_registry=False): the "
                                       "minibroker_cluster fixture's size, its brokers' command-line options, "
                                       "and whether they serve a schema registry")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    broker = getattr(item, "_minibroker_server", None)
    if report.when != "call" or not report.failed or broker is None or broker.trace_file is None:
        return
    broker.flush_trace()
    path = Path(broker.trace_file)
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    shown = lines[-TRACE_LINES_IN_REPORT:]
    report.sections.append((f"minibroker protocol trace (last {len(shown)} of {len(lines)} lines, {path})",
                            "\n".join(shown)))


@pytest.fixture
def minibroker_server(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """A running broker (thread handle) with its own temporary data dir; its protocol trace is attached
    to the report of a failing test (--minibroker-trace=off to skip tracing). Its logs are not fdatasynced
    (BrokerThread's default fsync="none"). A test's `@pytest.mark.minibroker(...)` settings (BrokerConfig
    fields such as fsync="grouped", and BrokerThread's security, users, client_auth, security_settings:
    docs/security.md) apply to its broker, and --minibroker-kafka-version to every fixture broker of the run."""
    data_dir = tmp_path_factory.mktemp("minibroker")
    changes: dict[str, Any] = {}
    if request.config.getoption("--minibroker-trace", default="off") != "off":
        changes["trace_file"] = str(data_dir.parent / (data_dir.name + "-trace.jsonl"))
    kafka_version = request.config.getoption("--minibroker-kafka-version", default=None)
    if kafka_version:
        changes["kafka_version"] = kafka_version
    marker = request.node.get_closest_marker("minibroker")
    if marker is not None:
        changes.update(marker.kwargs)
    broker = BrokerThread(data_dir, **changes)
    broker.start()
    request.node._minibroker_server = broker
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def minibroker(minibroker_server: BrokerThread) -> str:
    """Bootstrap address ("127.0.0.1:PORT") of a fresh broker for this test."""
    return minibroker_server.bootstrap


# Failover within seconds: a killed broker is noticed when its ZooKeeper session expires (Kafka's default is
# 18 s; ZooKeeper's smallest is 2 ticks, 4 s).
CLUSTER_DEFAULT_ARGS = ("--fsync", "none", "--override", "zookeeper.session.timeout.ms=6000")


@pytest.fixture(scope="session")
def minibroker_zookeeper() -> Iterator[str]:
    """A real ZooKeeper for the session ("127.0.0.1:PORT"); each cluster takes a chroot of its own."""
    from broker.testkit.zookeeper import ZooKeeperServer, available

    if not available():
        pytest.skip("ZooKeeper is not installed (Debian: apt-get install zookeeper)")
    server = ZooKeeperServer().start()
    try:
        yield server.address
    finally:
        server.cleanup()


@pytest.fixture
def minibroker_cluster(request: pytest.FixtureRequest, minibroker_zookeeper: str,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A fresh cluster for this test (broker.testkit.cluster.MinibrokerCluster): 3 brokers (ids 1-3) as
    child processes on the session's ZooKeeper, with `--fsync none` and a 6 s ZooKeeper session timeout;
    `@pytest.mark.minibroker_cluster(brokers=N, args=[...])` changes them."""
    from broker.testkit.cluster import MinibrokerCluster

    marker = request.node.get_closest_marker("minibroker_cluster")
    options = dict(marker.kwargs) if marker is not None else {}
    cluster = MinibrokerCluster(tmp_path_factory.mktemp("minibroker-cluster"), options.get("brokers", 3),
                                zookeeper=minibroker_zookeeper,
                                extra_args=(*CLUSTER_DEFAULT_ARGS, *options.get("args", ())),
                                schema_registry=options.get("schema_registry", False))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
