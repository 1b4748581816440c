"""The pytest plugin (registered through the `pytest11` entry point when minibroker is installed): a real
minibroker for your tests. One fixture per concept:

- `minibroker`: the bootstrap string ("127.0.0.1:PORT") of a broker for this test;
- `minibroker_server`: that broker's handle, a `broker.testkit.BrokerThread` (fault rules, introspection,
  waits, restart, virtual time, secured listeners' client settings);
- `minibroker_cluster`: a cluster of brokers on ZooKeeper for this test, a `broker.testkit.MinibrokerCluster`;
- `minibroker_zookeeper`: the session's ZooKeeper ("127.0.0.1:PORT") the clusters run on.

    def test_roundtrip(minibroker):
        producer = KafkaProducer(bootstrap_servers=minibroker)

Each test gets a fresh broker with its own data dir. `--minibroker-scope=session` (or `minibroker_scope =
session` in the ini file) shares one broker across the run instead and `reset()`s it before each test that
asks for it, for suites that want speed; a test with its own `@pytest.mark.minibroker(...)` settings still
gets a broker of its own.

A test's data is thrown away, so the fixture brokers do not fdatasync (`--fsync none`: acks=all answered with
the data in the page cache, as Kafka's default leaves it); `@pytest.mark.minibroker(fsync="grouped")` gives a
test the default of `python -m broker`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from broker.testkit.broker_thread import BrokerThread

if TYPE_CHECKING:
    from broker.testkit.cluster import MinibrokerCluster

TRACE_LINES_IN_REPORT = 200
SCOPES = ("test", "session")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minibroker")
    group.addoption("--minibroker-trace", choices=("on-failure", "off"), default="on-failure",
                    help="trace the fixture broker's protocol and attach it to the report of a failing test "
                         "(default), or not")
    group.addoption("--minibroker-kafka-version", metavar="RELEASE", default=None,
                    help="the fixture brokers advertise this Kafka release's API versions (e.g. 3.9, 4.0)")
    group.addoption("--minibroker-scope", choices=SCOPES, default=None,
                    help="'test' (default): a fresh broker per test; 'session': one broker for the run, "
                         "reset() before each test")
    group.addoption("--minibroker-skip-missing", action="store_true", default=False,
                    help="skip the tests that need ZooKeeper (the cluster fixture) when Java or ZooKeeper cannot "
                         "be had here, instead of failing them")
    parser.addini("minibroker_scope", "the minibroker fixture's scope: test (default) or session", default="test")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "minibroker(**config): BrokerConfig settings for the minibroker fixture "
                                       "broker of this test, e.g. minibroker(kafka_version='3.9'), and a secured "
                                       "listener: minibroker(security='SASL_SSL', users={'alice': 'secret'})")
    config.addinivalue_line("markers", "minibroker_cluster(brokers=3, args=(), schema_registry=False, "
                                       "console=False): the minibroker_cluster fixture's size, its brokers' "
                                       "command-line options, and whether they serve a schema registry and the "
                                       "web console")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    broker = getattr(item, "_minibroker_server", None)
    if report.when != "call" or not report.failed or broker is None or broker.trace_file is None:
        return
    broker.flush_trace()
    path = Path(broker.trace_file)
    start = getattr(item, "_minibroker_trace_start", 0)
    lines: list[str] = []
    if path.exists():
        with open(path, "rb") as f:
            f.seek(start)
            lines = f.read().decode(errors="replace").splitlines()
    shown = lines[-TRACE_LINES_IN_REPORT:]
    report.sections.append((f"minibroker protocol trace (last {len(shown)} of this test's {len(lines)} lines, "
                            f"{path})", "\n".join(shown)))


def _scope(config: pytest.Config) -> str:
    scope = config.getoption("--minibroker-scope", default=None) or config.getini("minibroker_scope") or "test"
    if scope not in SCOPES:
        raise pytest.UsageError(f"minibroker_scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    return scope


def _settings(config: pytest.Config, data_dir: Path) -> dict[str, Any]:
    """BrokerThread settings of a fixture broker from the command line. Its data dir is the test's temporary
    one: nothing is synced, neither what it writes nor its logs at the stop (durable_data_dir)."""
    changes: dict[str, Any] = {"durable_data_dir": False}
    if config.getoption("--minibroker-trace", default="off") != "off":
        changes["trace_file"] = str(data_dir.parent / (data_dir.name + "-trace.jsonl"))
    kafka_version = config.getoption("--minibroker-kafka-version", default=None)
    if kafka_version:
        changes["kafka_version"] = kafka_version
    return changes


class _SharedBroker:
    """The session's broker under --minibroker-scope=session: started on first use, reset() before each
    later test that uses it."""

    def __init__(self, config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._config = config
        self._tmp = tmp_path_factory
        self.broker: BrokerThread | None = None
        self._used = False

    def for_test(self) -> BrokerThread:
        if self.broker is None:
            data_dir = self._tmp.mktemp("minibroker-session")
            self.broker = BrokerThread(data_dir, **_settings(self._config, data_dir)).start()
        elif self._used:
            self.broker.reset()
        self._used = True
        return self.broker

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.stop()


@pytest.fixture(scope="session")
def _minibroker_shared(request: pytest.FixtureRequest,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[_SharedBroker]:
    shared = _SharedBroker(request.config, tmp_path_factory)
    try:
        yield shared
    finally:
        shared.stop()


@pytest.fixture
def minibroker_server(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """The broker handle (a `BrokerThread`): a running broker with its own temporary data dir, fresh for this
    test (or the session's, reset, under --minibroker-scope=session). Its protocol trace is attached to the
    report of a failing test (--minibroker-trace=off to skip tracing); its logs are not fdatasynced. A test's
    `@pytest.mark.minibroker(...)` settings (BrokerConfig fields such as fsync="grouped" or
    kafka_version="4.1", console=True for the web console at `console_url`; BrokerThread's security, users,
    client_auth, security_settings, virtual_time, admin_listen) apply to its broker, and
    --minibroker-kafka-version to every fixture broker of the run."""
    marker = request.node.get_closest_marker("minibroker")
    if _scope(request.config) == "session" and (marker is None or not marker.kwargs):
        broker = request.getfixturevalue("_minibroker_shared").for_test()
        _watch(request, broker)
        yield broker
        return
    data_dir = tmp_path_factory.mktemp("minibroker")
    changes = _settings(request.config, data_dir)
    if marker is not None:
        changes.update(marker.kwargs)
    broker = BrokerThread(data_dir, **changes)
    broker.start()
    _watch(request, broker)
    try:
        yield broker
    finally:
        broker.stop()


def _watch(request: pytest.FixtureRequest, broker: BrokerThread) -> None:
    """Remember the test's broker, and where its trace starts, for the report of a failure."""
    request.node._minibroker_server = broker
    trace = broker.trace_file
    request.node._minibroker_trace_start = Path(trace).stat().st_size if trace and Path(trace).exists() else 0


@pytest.fixture
def minibroker(minibroker_server: BrokerThread) -> str:
    """The bootstrap string ("127.0.0.1:PORT") of `minibroker_server`, a broker for this test: what clients take
    as bootstrap.servers."""
    return minibroker_server.bootstrap


# Failover within seconds: a killed broker is noticed when its ZooKeeper session expires (Kafka's default is
# 18 s; ZooKeeper's smallest is 2 ticks, 4 s).
CLUSTER_DEFAULT_ARGS = ("--fsync", "none", "--override", "zookeeper.session.timeout.ms=6000")


@pytest.fixture(scope="session")
def minibroker_zookeeper(request: pytest.FixtureRequest) -> Iterator[str]:
    """A real ZooKeeper for the session ("127.0.0.1:PORT"); each cluster takes a chroot of its own. It needs
    Java; its jars are found as broker.testkit.zookeeper says (installed, or fetched from Maven Central). When
    they cannot be had the tests that use it fail with what to install, or are skipped under
    --minibroker-skip-missing."""
    from broker.testkit.zookeeper import ZooKeeperServer, ZooKeeperUnavailable

    try:
        server = ZooKeeperServer()
    except ZooKeeperUnavailable as exc:
        if request.config.getoption("--minibroker-skip-missing", default=False):
            pytest.skip(f"minibroker_cluster needs ZooKeeper: {exc}")
        pytest.fail(f"minibroker_cluster needs ZooKeeper: {exc}. (pytest --minibroker-skip-missing skips these "
                    "tests instead.)", pytrace=False)
    server.start()
    try:
        yield server.address
    finally:
        server.cleanup()


@pytest.fixture
def minibroker_cluster(request: pytest.FixtureRequest, minibroker_zookeeper: str,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[MinibrokerCluster]:
    """The cluster handle (a `MinibrokerCluster`), fresh for this test: 3 brokers (ids 1-3) as child processes on
    the session's ZooKeeper, with `--fsync none` and a 6 s ZooKeeper session timeout (a killed broker is noticed
    within seconds); `@pytest.mark.minibroker_cluster(brokers=N, args=[...])` changes them."""
    from broker.testkit.cluster import MinibrokerCluster

    marker = request.node.get_closest_marker("minibroker_cluster")
    options = dict(marker.kwargs) if marker is not None else {}
    args = list(CLUSTER_DEFAULT_ARGS)
    kafka_version = request.config.getoption("--minibroker-kafka-version", default=None)
    if kafka_version:
        args += ["--kafka-version", kafka_version]
    cluster = MinibrokerCluster(tmp_path_factory.mktemp("minibroker-cluster"), options.get("brokers", 3),
                                zookeeper=minibroker_zookeeper, extra_args=(*args, *options.get("args", ())),
                                schema_registry=options.get("schema_registry", False),
                                console=options.get("console", False))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
