"""A leader deposed while it was paused (SIGSTOP past its ZooKeeper session: the controller elected another
from the ISR), then resumed with produce requests waiting in its sockets: the same steps against Kafka 3.9
in ZooKeeper mode and against minibroker, over the same raw wire.

- acks=all: the deposed leader never answers success for a write the new leader does not have (its
  followers fetch from the new leader; the delayed produce ends NOT_LEADER_OR_FOLLOWER or times out), and its
  log is truncated to the new leader's by leader epoch when it follows again (KIP-101, KIP-279);
- acks=1: Kafka's known weakness. The deposed leader appends and answers success before it learns it was
  deposed; the write is then usually truncated away. minibroker answers as Kafka does
  (docs/running/durability.md).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from protocol.records import Record, build_batch
from tests.reference.wire import WireConnection
from tests.soak.crash_loop import read_topic

PRODUCE, METADATA = 0, 3
NONE = 0
PARTITIONS = 3  # leaders on every broker: the one paused is a leader that is not the controller


class Deposable(Protocol):
    """A three-broker cluster whose brokers can be paused: Kafka's reference or minibroker's."""

    brokers: list[int]

    def bootstrap(self) -> str: ...

    def address(self, broker: int) -> str: ...

    def create_topic(self, name: str) -> None: ...

    def controller(self) -> int: ...

    def pause(self, broker: int) -> None: ...

    def resume(self, broker: int) -> None: ...


class _Kafka:
    def __init__(self, reference: Any) -> None:
        self.ref = reference
        self.brokers = list(reference.nodes)

    def bootstrap(self) -> str:
        return self.ref.bootstrap

    def address(self, broker: int) -> str:
        return self.ref.cluster.nodes[broker].address

    def create_topic(self, name: str) -> None:
        self.ref.create_topic(name, PARTITIONS, 3, {"min.insync.replicas": "2"})

    def controller(self) -> int:
        return self.ref.metadata([])["controller_id"]

    def pause(self, broker: int) -> None:
        self.ref.pause_node(broker)

    def resume(self, broker: int) -> None:
        self.ref.resume_node(broker)


class _Minibroker:
    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.brokers = list(cluster.broker_ids)

    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def address(self, broker: int) -> str:
        return self.cluster.broker(broker).bootstrap

    def create_topic(self, name: str) -> None:
        self.cluster.create_topic(name, PARTITIONS, 3, {"min.insync.replicas": "2"})

    def controller(self) -> int:
        return self.cluster.controller_id()

    def pause(self, broker: int) -> None:
        self.cluster.pause_broker(broker)

    def resume(self, broker: int) -> None:
        self.cluster.resume_broker(broker)


def _partition(cluster: Deposable, topic: str, asked: int, index: int) -> dict[str, Any] | None:
    """Partition `index` of `topic` as broker `asked` sees it: {"leader", "isr"}."""
    with WireConnection(cluster.address(asked), timeout=10) as conn:
        answer = conn.request(METADATA, 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    for t in answer["topics"]:
        if t["name"] == topic and t["error_code"] == 0:
            for p in t["partitions"]:
                if p["partition_index"] == index:
                    return {"leader": p["leader_id"], "isr": sorted(p["isr_nodes"])}
    return None


def _wait(check: Any, what: str, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = check()
        except (OSError, ConnectionError):
            found = None
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s for {what}")
        time.sleep(0.1)


def _produce_body(topic: str, index: int, value: bytes, acks: int) -> dict[str, Any]:
    batch = build_batch([Record(0, 0, None, value)], base_timestamp=int(time.time() * 1000))
    return {"transactional_id": None, "acks": acks, "timeout_ms": 20_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": index, "records": batch}]}]}


def _error(answer: dict[str, Any]) -> int:
    return answer["responses"][0]["partition_responses"][0]["error_code"]


def deposed_leader(cluster: Deposable, topic: str) -> dict[str, tuple[int, bool]]:
    """The steps of the module docstring; {"acks=all" | "acks=1": (error answered, value in the log at the
    end)}."""
    cluster.create_topic(topic)
    any_broker = cluster.brokers[0]

    def led(index: int) -> int | None:
        p = _partition(cluster, topic, any_broker, index)
        return p["leader"] if p is not None and p["leader"] >= 0 and len(p["isr"]) == 3 else None

    leaders = _wait(lambda: all(led(i) is not None for i in range(PARTITIONS)) and
                    {i: led(i) for i in range(PARTITIONS)} or None, "leaders and full ISRs")
    controller = cluster.controller()
    index, leader = next((i, b) for i, b in leaders.items() if b != controller)
    others = [b for b in cluster.brokers if b != leader]
    with WireConnection(cluster.address(leader), timeout=90) as to_all, \
            WireConnection(cluster.address(leader), timeout=90) as to_one:
        assert _error(to_all.request(PRODUCE, 9, _produce_body(topic, index, b"before", -1))) == NONE
        cluster.pause(leader)
        try:
            to_all.send(PRODUCE, 9, _produce_body(topic, index, b"zombie acks=all", -1))
            to_one.send(PRODUCE, 9, _produce_body(topic, index, b"zombie acks=1", 1))
            def elected() -> int | None:  # as any of the others sees it (one may be slow to hear of it)
                for asked in others:
                    p = _partition(cluster, topic, asked, index)
                    if p is not None and p["leader"] in others:
                        return p["leader"]
                return None

            new = _wait(elected, f"a new leader of {topic}-{index} among {others} (paused {leader}, controller "
                                 f"{controller})")
            with WireConnection(cluster.address(new), timeout=60) as to_new:
                assert _error(to_new.request(PRODUCE, 9, _produce_body(topic, index, b"new leader", -1))) == NONE
        finally:
            cluster.resume(leader)
        answers = {"acks=all": _error(to_all.receive()), "acks=1": _error(to_one.receive())}
    _wait(lambda: (p := _partition(cluster, topic, new, index)) and len(p["isr"]) == 3 or None,
          "the deposed leader back in the ISR")
    values = [v for p, _, v in read_topic(cluster.bootstrap(), topic, PARTITIONS, "read_uncommitted") if p == index]
    assert b"before" in values and b"new leader" in values, values
    return {k: (error, f"zombie {k}".encode() in values) for k, error in answers.items()}


def _acknowledged_and_lost(outcome: tuple[int, bool]) -> bool:
    error, kept = outcome
    return error == NONE and not kept


def test_a_deposed_leader_acknowledges_as_kafka_does(kafka_reference, minibroker_cluster, topic_name):
    kafka = kafka_reference(release="3.9", brokers=3, config={"zookeeper.session.timeout.ms": "6000"}, fresh=True)
    theirs = deposed_leader(_Kafka(kafka), topic_name)
    ours = deposed_leader(_Minibroker(minibroker_cluster), topic_name)
    summary = f"Kafka 3.9: {theirs}, minibroker: {ours}"
    # acks=all: never a success for a write the new leader does not have, on either.
    assert not _acknowledged_and_lost(theirs["acks=all"]), summary
    assert not _acknowledged_and_lost(ours["acks=all"]), summary
    # acks=1: both acknowledge the deposed leader's write. Whether Kafka then loses it depends on the moment
    # its controller's word arrives (lost in most runs here, kept in some); minibroker's answer is Kafka's.
    assert ours["acks=1"][0] == theirs["acks=1"][0] == NONE, summary
