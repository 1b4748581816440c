"""A minibroker cluster for tests: a real ZooKeeper (started here unless one is given) and N brokers as
child processes, so a test can stop, SIGKILL and restart them and watch leaders move as in production.

    with MinibrokerCluster(tmp_path, brokers=3) as cluster:
        cluster.create_topic("orders", partitions=6, replication_factor=3)
        run_my_service(cluster.bootstrap)
        leader = cluster.wait_leader("orders", 0)
        cluster.kill_broker(leader)                         # SIGKILL
        cluster.wait_leader("orders", 0, not_broker=leader)  # a new leader from the ISR
        cluster.start_broker(leader)                        # same port, same data dir
        cluster.expire_session(2)                           # its ZooKeeper session ends; it registers again

`broker(id)` is the BrokerProcess of one broker: its fault rules and introspection (`topics()`,
`groups()`, `inject_error(...)`) are that broker's. The pytest fixture `minibroker_cluster` hands out one
of these, fresh for each test (broker.testkit.plugin).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from broker.testkit.broker_thread import BrokerProcess
from broker.testkit.wire import WireClient

T = TypeVar("T")

METADATA = 3
CREATE_TOPICS = 19
ELECT_LEADERS = 43
ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46


class Placement(Protocol):
    """Where a cluster's processes run ("zookeeper", "broker-1", ...): the address each serves on and the
    command prefix that starts it there. tests/chaos/netns.py puts each in a network namespace of its own."""

    def host(self, name: str) -> str: ...

    def command_prefix(self, name: str) -> tuple[str, ...]: ...


class MinibrokerCluster:
    """A ZooKeeper-mode cluster for tests: N brokers (ids 1..N) as child processes on one ZooKeeper, each in a
    chroot of the cluster's own; the `minibroker_cluster` fixture's handle. Use it as a context manager, or
    start() and stop()."""

    def __init__(self, data_dir: Path | str, brokers: int = 3, *, zookeeper: str | None = None,
                 extra_args: tuple[str, ...] = (), first_id: int = 1, first_port: int = 0,
                 chroot: str | None = None, schema_registry: bool = False, console: bool = False,
                 placement: Placement | None = None) -> None:
        """`zookeeper`: HOST:PORT of a running ZooKeeper (a chroot of this cluster's own is used under it);
        None starts one (its data under `data_dir`; broker.testkit.zookeeper finds or fetches it, and raises
        ZooKeeperUnavailable with what to install when it cannot). `extra_args` go to every broker (e.g.
        "--override", "min.insync.replicas=2"). `first_port`: brokers on first_port, first_port + 1, ... (0: free
        ports). `schema_registry`: every broker serves a schema registry (`schema_registry_urls`); `console`: every
        broker serves the web console (`console_urls`), each showing the whole cluster. `placement`: where
        ZooKeeper (when started here) and each broker run; all on 127.0.0.1 without one."""
        self.data_dir = Path(data_dir)
        self.broker_ids = list(range(first_id, first_id + brokers))
        self.extra_args = tuple(extra_args) + (("--schema-registry", "127.0.0.1:0") if schema_registry else ()) + \
            (("--console", "127.0.0.1:0") if console else ())
        self.first_port = first_port
        self._zk_address = zookeeper
        self._zk_server: Any = None
        self.chroot = chroot or f"/minibroker-{uuid.uuid4().hex[:8]}"
        self.brokers: dict[int, BrokerProcess] = {}
        self.placement = placement

    # -- life -------------------------------------------------------------------------------------------------
    @property
    def zookeeper(self) -> str:
        """The brokers' zookeeper.connect, chroot included."""
        assert self._zk_address is not None
        return self._zk_address + self.chroot

    def start(self, timeout: float = 60.0) -> MinibrokerCluster:
        """Start ZooKeeper (unless given) and the brokers; return once every broker is in the cluster's
        metadata with a controller elected."""
        if self._zk_address is None:
            from broker.testkit.zookeeper import ZooKeeperServer

            self._zk_server = ZooKeeperServer(self.data_dir / "zookeeper", host=self._host("zookeeper"),
                                              command_prefix=self._prefix("zookeeper")).start()
            self._zk_address = self._zk_server.address
        for i, broker_id in enumerate(self.broker_ids):
            host = self._host(f"broker-{broker_id}")
            self.brokers[broker_id] = BrokerProcess(
                self.data_dir / f"broker-{broker_id}", "--broker-id", str(broker_id), "--zookeeper", self.zookeeper,
                "--admin-listen", f"{host}:0", *self.extra_args, port=self.first_port + i if self.first_port else 0,
                host=host, command_prefix=self._prefix(f"broker-{broker_id}"))
            self.brokers[broker_id].start(timeout)
        self.wait_brokers(self.broker_ids, timeout)
        return self

    def _host(self, name: str) -> str:
        return self.placement.host(name) if self.placement is not None else "127.0.0.1"

    def _prefix(self, name: str) -> tuple[str, ...]:
        return self.placement.command_prefix(name) if self.placement is not None else ()

    @property
    def zookeeper_server(self) -> Any:
        """The ZooKeeperServer this cluster started (None when given one): to pause() or stop() it."""
        return self._zk_server

    def stop(self) -> None:
        """Stop every running broker (SIGTERM, SIGKILL if one will not stop) and the ZooKeeper it started."""
        for broker in self.brokers.values():
            if broker.running:
                try:
                    broker.stop(60)
                except Exception:  # a broker that will not stop is killed: the test is over anyway
                    broker.kill()
        if self._zk_server is not None:
            self._zk_server.cleanup()
            self._zk_server = None

    def __enter__(self) -> MinibrokerCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def broker(self, broker_id: int) -> BrokerProcess:
        """One broker's process handle: its fault rules and introspection are that broker's."""
        return self.brokers[broker_id]

    @property
    def bootstrap(self) -> str:
        """Every running broker's address, comma-separated (what clients take as bootstrap.servers)."""
        return ",".join(b.bootstrap for b in self.brokers.values() if b.running)

    @property
    def schema_registry_urls(self) -> dict[int, str]:
        """{broker id: URL of its schema registry}, of the running brokers (a restarted one has a new port)."""
        return {i: b.schema_registry_url for i, b in self.brokers.items() if b.running and b.schema_registry_url}

    @property
    def console_urls(self) -> dict[int, str]:
        """{broker id: URL of its web console}, of the running brokers."""
        return {i: b.console_url for i, b in self.brokers.items() if b.running and b.console_url}

    @property
    def schema_registry_url(self) -> str:
        """The running brokers' registries, comma-separated (confluent-kafka's `url` takes several)."""
        return ",".join(self.schema_registry_urls.values())

    def stop_broker(self, broker_id: int, timeout: float = 60.0) -> int:
        """SIGTERM: a controlled shutdown (its leaderships move first); returns its exit status."""
        return self.brokers[broker_id].stop(timeout)

    def kill_broker(self, broker_id: int) -> None:
        """SIGKILL: the broker dies without a word; the controller notices when its ZooKeeper session ends."""
        self.brokers[broker_id].kill()

    def pause_broker(self, broker_id: int) -> None:
        """SIGSTOP: the broker freezes with its connections open, its ZooKeeper session running out."""
        self.brokers[broker_id].pause()

    def resume_broker(self, broker_id: int) -> None:
        """SIGCONT: the paused broker runs on, unaware of what changed meanwhile."""
        self.brokers[broker_id].resume()

    def start_broker(self, broker_id: int, timeout: float = 60.0) -> None:
        """Start it again, on the same port and data dir; returns once the cluster sees it."""
        self.brokers[broker_id].start(timeout)
        self.wait_brokers([broker_id], timeout)

    def expire_session(self, broker_id: int) -> int:
        """Expire the broker's ZooKeeper session from outside (broker.testkit.zookeeper.expire_session): its
        registration and, if it was the controller, /controller go at once, as after a long pause or a
        partition from ZooKeeper; the broker, still running, starts a new session and registers again.
        Returns the id of the session that ended."""
        from broker.testkit.zookeeper import expire_session

        session = self.brokers[broker_id].zookeeper_session()
        if not session.get("session_id") or not session.get("session_password"):
            raise RuntimeError(f"broker {broker_id} has no ZooKeeper session now: {session}")
        assert self._zk_address is not None
        expire_session(self._zk_address, session["session_id"], bytes.fromhex(session["session_password"]))
        return session["session_id"]

    # -- what the cluster says --------------------------------------------------------------------------------
    def metadata(self, topics: list[str] | None = None, brokers: list[int] | None = None) -> Any:
        """A Metadata (v12) answer from a running broker (not a paused one; of `brokers`, when given)."""
        last: Exception | None = None
        for broker in [b for i, b in self.brokers.items()
                       if b.running and not b.paused and (brokers is None or i in brokers)]:
            try:
                with WireClient(broker.bootstrap, timeout=10, client_id="minibroker-cluster") as client:
                    return client.request(METADATA, 12, {
                        "topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
                        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
            except OSError as exc:
                last = exc
        raise RuntimeError(f"no broker answered Metadata: {last!r}")

    def controller_id(self) -> int:
        """The broker that is the controller now, as Metadata tells it."""
        return self.metadata([]).controller_id

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader as Metadata tells it now (-1: none)."""
        found = self._partition(topic, partition)
        return -1 if found is None else found.leader_id

    def _partition(self, topic: str, partition: int) -> Any:
        for t in self.metadata([topic]).topics:
            if t.name == topic:
                return next((p for p in t.partitions if p.partition_index == partition), None)
        return None

    def wait_brokers(self, broker_ids: list[int], timeout: float = 60.0) -> None:
        """Until Metadata lists these brokers (and a controller)."""
        def listed() -> bool | None:
            answer = self.metadata([])
            return True if set(broker_ids) <= {b.node_id for b in answer.brokers} and \
                answer.controller_id >= 0 else None

        self.wait_until(listed, timeout, f"brokers {broker_ids} in the cluster's metadata")

    def wait_leader(self, topic: str, partition: int, broker: int | None = None, *, not_broker: int | None = None,
                    timeout: float = 60.0) -> int:
        """Until the partition has a leader (`broker`, if given; other than `not_broker`, if given); returns it."""
        def found() -> int | None:
            leader = self.leader(topic, partition)
            if leader < 0 or (broker is not None and leader != broker) or leader == not_broker:
                return None
            return leader

        return self.wait_until(found, timeout, f"a leader of {topic}-{partition}")

    def wait_isr(self, topic: str, partition: int, size: int, timeout: float = 60.0) -> list[int]:
        """Until the partition's ISR has `size` members; returns it."""
        def found() -> list[int] | None:
            p = self._partition(topic, partition)
            return list(p.isr_nodes) if p is not None and len(p.isr_nodes) == size else None

        return self.wait_until(found, timeout, f"an ISR of {size} for {topic}-{partition}")

    @staticmethod
    def wait_until(check: Callable[[], T | None], timeout: float = 60.0, what: str = "a condition") -> T:
        """Call `check` until it returns something other than None (returned); brokers restarting meanwhile
        are waited out. TimeoutError after `timeout` s."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while True:
            try:
                result = check()
                if result is not None:
                    return result
            except (OSError, RuntimeError) as exc:  # a broker restarting meanwhile
                last = exc
            if time.monotonic() >= deadline:
                raise TimeoutError(f"waited {timeout} s for {what}" + (f" (last error: {last!r})" if last else ""))
            time.sleep(0.05)

    # -- admin, through the controller ------------------------------------------------------------------------
    def _controller_request(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        def attempt() -> Any:
            controller = self.controller_id()
            if controller not in self.brokers or not self.brokers[controller].running:
                return None
            with WireClient(self.brokers[controller].bootstrap, timeout=60, client_id="minibroker-cluster") as c:
                return c.request(api_key, version, body)

        return self.wait_until(attempt, 60, "an answer from the controller")

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        """Create a topic through the controller (CreateTopics), and wait until each partition has a leader."""
        answer = self._controller_request(CREATE_TOPICS, 7, {"topics": [{
            "name": name, "num_partitions": partitions, "replication_factor": replication_factor, "assignments": [],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            "timeout_ms": 30000, "validate_only": False})
        result = answer.topics[0]
        if result.error_code:
            raise RuntimeError(f"creating topic {name}: error {result.error_code} {result.error_message}")
        for partition in range(partitions):
            self.wait_leader(name, partition)

    def move_leader(self, topic: str, partition: int, broker: int, timeout: float = 60.0) -> None:
        """Make `broker` the partition's leader, as an operator would: it becomes the preferred (first) replica
        through a reassignment (added as a replica if it is not one, which then catches up), then a
        preferred-leader election."""
        current = self._partition(topic, partition)
        if current is None:
            raise ValueError(f"no partition {topic}-{partition}")
        replicas = list(current.replica_nodes)
        target = [broker] + [r for r in replicas if r != broker]
        if broker not in replicas:
            target = target[:len(replicas)]
        if target != replicas:
            answer = self._controller_request(ALTER_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 30000, "topics": [
                {"name": topic, "partitions": [{"partition_index": partition, "replicas": target}]}]})
            error = answer.responses[0].partitions[0].error_code if answer.responses else answer.error_code
            if error:
                raise RuntimeError(f"reassigning {topic}-{partition} to {target}: error {error}")

            def reassigned() -> bool | None:
                p = self._partition(topic, partition)
                return True if p is not None and list(p.replica_nodes) == target and broker in p.isr_nodes \
                    else None

            self.wait_until(reassigned, timeout, f"{topic}-{partition} reassigned to {target}")
        if self.leader(topic, partition) != broker:
            self._controller_request(ELECT_LEADERS, 2, {"election_type": 0, "timeout_ms": 30000, "topic_partitions": [
                {"topic": topic, "partitions": [partition]}]})
        self.wait_leader(topic, partition, broker, timeout=timeout)


def main(argv: list[str] | None = None) -> int:
    """`make cluster`: ZooKeeper and N brokers on this machine until Ctrl-C."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="python -m broker.testkit.cluster",
                                     description="A local minibroker cluster: ZooKeeper and N brokers (Ctrl-C stops)")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--port", type=int, default=9092, help="the first broker's port; the others follow")
    parser.add_argument("--data-dir", type=Path, default=Path("data/cluster"))
    parser.add_argument("broker_args", nargs="*", help="more options for every broker (after --)")
    args = parser.parse_args(argv)
    cluster = MinibrokerCluster(args.data_dir, args.brokers, extra_args=tuple(args.broker_args),
                                first_port=args.port, chroot="/minibroker")
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    cluster.start()
    try:
        print(f"cluster ready: bootstrap {cluster.bootstrap}, ZooKeeper {cluster.zookeeper}, controller "
              f"{cluster.controller_id()}, data in {args.data_dir} (Ctrl-C stops it)", flush=True)
        stop.wait()
    finally:
        print("stopping the cluster...", flush=True)
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
