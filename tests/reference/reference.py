"""A running Apache Kafka reference with the conveniences of minibroker's `BrokerThread` (bootstrap, topics,
waits), and the pool that shares references between tests and scenarios.

    ref = pool.get("4.1", brokers=3)          # started on first use, shared while nobody breaks it
    ref.create_topic("t", partitions=3, replication_factor=3)
    ref.topics()["t"]["partitions"][0]["leader"]
    ref.kill_node(ref.leader("t", 0)); ref.wait_leader("t", 0, not_in={old})
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests import kafka_jars
from tests.reference import releases
from tests.reference.kafka import KafkaCluster
from tests.reference.wire import WireConnection


class KafkaReference:
    """One Kafka cluster of one release (1 or N nodes)."""

    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster = cluster
        self.broken = False  # a node was stopped or killed: not handed to the next user

    @property
    def release(self) -> str:
        return self.cluster.release

    @property
    def version(self) -> str:
        return self.cluster.version

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def nodes(self) -> list[int]:
        return [n.node_id for n in self.cluster.nodes]

    def describe(self) -> str:
        return self.cluster.describe()

    def wire(self, node: int | None = None) -> WireConnection:
        """A raw connection (tests.reference.wire) to one node (default: the first running)."""
        address = self.bootstrap.split(",")[0] if node is None else self.cluster.nodes[node].address
        return WireConnection(address)

    # -- admin conveniences (raw requests: no client library quirks in the way) ---------------------------
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: dict[str, str] | None = None, timeout: float = 60.0) -> None:
        """Create (through the controller: a 3.x broker that is not answers NOT_CONTROLLER) and wait until every
        partition has a leader on every node's Metadata."""
        controller = self.metadata([])["controller_id"]
        with self.wire(controller if controller in self.nodes else None) as conn:
            answer = conn.request(19, 5, {"topics": [{
                "name": name, "num_partitions": partitions, "replication_factor": replication_factor,
                "assignments": [], "configs": [{"name": k, "value": v} for k, v in (config or {}).items()]}],
                "timeout_ms": int(timeout * 1000), "validate_only": False})
        error = answer["topics"][0]["error_code"]
        if error not in (0, 36):
            raise RuntimeError(f"CreateTopics {name}: error {error} {answer['topics'][0]['error_message']}")
        self.wait_until(lambda: self._has_leaders(name, partitions), timeout, f"leaders of {name}")

    def delete_topic(self, name: str, timeout: float = 60.0) -> None:
        with self.wire() as conn:
            conn.request(20, 4, {"topic_names": [name], "timeout_ms": int(timeout * 1000)})
        self.wait_until(lambda: name not in self.topics() or None, timeout, f"{name} deleted")

    def _has_leaders(self, name: str, partitions: int) -> bool | None:
        for node in self.cluster.nodes:
            if not node.alive():
                continue
            found = self.topics(node.node_id).get(name)
            if found is None or len(found["partitions"]) < partitions or any(
                    p["leader"] < 0 for p in found["partitions"]):
                return None
        return True

    def metadata(self, topics: list[str] | None = None, node: int | None = None) -> dict[str, Any]:
        with self.wire(node) as conn:
            body = {"topics": None if topics is None else [{"name": t} for t in topics],
                    "allow_auto_topic_creation": False}
            return conn.request(3, 12, body)

    def topics(self, node: int | None = None) -> dict[str, dict[str, Any]]:
        """{topic: {"topic_id", "internal", "partitions": [{"partition", "leader", "leader_epoch", "replicas",
        "isr", "error_code"}]}} from Metadata (of one node)."""
        answer = self.metadata(None, node)
        return {t["name"]: {"topic_id": t["topic_id"], "internal": t["is_internal"], "partitions": [
            {"partition": p["partition_index"], "leader": p["leader_id"], "leader_epoch": p["leader_epoch"],
             "replicas": p["replica_nodes"], "isr": p["isr_nodes"], "error_code": p["error_code"]}
            for p in sorted(t["partitions"], key=lambda p: p["partition_index"])]}
            for t in answer["topics"] if t["error_code"] == 0}

    def leader(self, topic: str, partition: int = 0) -> int:
        return self.topics()[topic]["partitions"][partition]["leader"]

    def wait_leader(self, topic: str, partition: int = 0, not_in: set[int] | None = None,
                    timeout: float = 60.0) -> int:
        """Wait until the partition has a leader outside `not_in` (after a kill, say); returns it."""
        def check() -> int | None:
            try:
                leader = self.leader(topic, partition)
            except (KeyError, OSError, ConnectionError):
                return None
            return leader if leader >= 0 and leader not in (not_in or set()) else None

        return self.wait_until(check, timeout, f"a new leader of {topic}-{partition}")

    def offsets(self, topic: str, partition: int = 0) -> tuple[int, int]:
        """(log start offset, high watermark) of a partition, asked of its leader."""
        leader = self.leader(topic, partition)
        out = []
        for timestamp in (-2, -1):
            with self.wire(leader) as conn:
                answer = conn.request(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
                    {"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp,
                                                    "current_leader_epoch": -1}]}]})
            out.append(answer["topics"][0]["partitions"][0]["offset"])
        return out[0], out[1]

    @staticmethod
    def wait_until(check: Callable[[], Any], timeout: float = 60.0, what: str = "a condition") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                result = check()
            except (OSError, ConnectionError):
                result = None
            if result is not None:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(f"waited {timeout} s for {what}")
            time.sleep(0.05)

    # -- nodes (for cluster scenarios) -------------------------------------------------------------------
    def stop_node(self, node_id: int) -> None:
        self.broken = True
        self.cluster.stop_node(node_id)

    def kill_node(self, node_id: int) -> None:
        self.broken = True
        self.cluster.kill_node(node_id)

    def pause_node(self, node_id: int) -> None:
        self.broken = True
        self.cluster.pause_node(node_id)

    def resume_node(self, node_id: int) -> None:
        self.cluster.resume_node(node_id)

    def start_node(self, node_id: int) -> None:
        self.cluster.start_node(node_id)

    def stop(self) -> None:
        self.cluster.stop()


class ReferencePool:
    """References keyed by (release, brokers, config), started on first use and shared: scenarios and
    tests use names of their own. `fresh=True` gets one nobody else uses; a reference whose nodes were
    stopped or killed is dropped when given back."""

    def __init__(self, zookeeper: Callable[[], str] | None = None) -> None:
        self.zookeeper = zookeeper  # called once a 3.x (ZooKeeper-mode) reference is needed
        self._shared: dict[tuple[Any, ...], KafkaReference] = {}
        self._unavailable: dict[str, str] = {}
        self._private: list[KafkaReference] = []

    def get(self, release: str = "4.1", brokers: int = 1, config: dict[str, str] | None = None,
            fresh: bool = False) -> KafkaReference:
        """Raises kafka_jars.Unavailable (with the reason) when the release cannot be fetched here."""
        if release in self._unavailable:
            raise kafka_jars.Unavailable(self._unavailable[release])
        key = (release, brokers, tuple(sorted((config or {}).items())))
        if not fresh and key in self._shared and not self._shared[key].broken:
            return self._shared[key]
        try:
            releases.classpath(release)
        except kafka_jars.Unavailable as exc:
            self._unavailable[release] = f"Kafka {release} ({releases.version(release)}): {exc}"
            raise kafka_jars.Unavailable(self._unavailable[release]) from None
        zookeeper = None
        if releases.uses_zookeeper(release):
            if self.zookeeper is None:
                raise ValueError(f"Kafka {release} runs on ZooKeeper: give the pool a ZooKeeper address")
            zookeeper = self.zookeeper()
        cluster = KafkaCluster(release, brokers=brokers, zookeeper=zookeeper, config=dict(config or {}))
        reference = KafkaReference(cluster.start())
        if fresh:
            self._private.append(reference)
        else:
            old = self._shared.pop(key, None)
            if old is not None:
                old.stop()
            self._shared[key] = reference
        return reference

    def give_back(self, reference: KafkaReference) -> None:
        """A test is done with it: private and broken references are stopped."""
        if reference in self._private:
            self._private.remove(reference)
            reference.stop()
        elif reference.broken:
            for key, shared in list(self._shared.items()):
                if shared is reference:
                    del self._shared[key]
            reference.stop()

    def close(self) -> None:
        for reference in [*self._shared.values(), *self._private]:
            reference.stop()
        self._shared.clear()
        self._private.clear()
