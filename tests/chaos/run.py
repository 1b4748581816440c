"""The cluster chaos test: ZooKeeper and three brokers; topics with replication factor 3 and
min.insync.replicas=2; the clients of tests.chaos.workload (idempotent acks=all producers, a transactional
consume-transform-produce loop, a read_committed reader, a consumer group member); and, round after round,
a broker SIGKILLed and restarted on its data: a random one, the controller, the transaction coordinator of
the loop (leader of its __transaction_state partition), the coordinator of its group (__consumer_offsets),
or instead a broker's ZooKeeper session expired while it runs on.

    python -m tests.chaos.run --rounds 20        # `make chaos`; prints the counts and the windows

Each round hits a whole cluster (every ISR full, the clients making progress: one failure at a time, what
replication factor 3 with min.insync.replicas=2 promises to survive) after a random 1-3 s under load, and
measures the unavailability it caused: how long until every partition had a live leader again, until the
producers were acknowledged again on every partition, until a transaction committed again, and until every
ISR was full again. At the end the clients stop and tests.chaos.checks counts what went wrong; the exit
status is 1 unless every count is 0.

The brokers run with --fsync none: a SIGKILL loses nothing the kernel holds (this is not a power cut), and
with a 6 s ZooKeeper session timeout a dead broker is noticed within seconds.
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from broker.testkit.cluster import MinibrokerCluster
from broker.testkit.plugin import CLUSTER_DEFAULT_ARGS
from broker.testkit.wire import WireClient
from tests.chaos import checks, workload
from tests.chaos.workload import CTP_GROUP, IN_TOPIC, OUT_TOPIC, PARTITIONS, PLAIN_GROUP, TRANSACTIONAL_ID
from tests.soak.crash_loop import group_member, read_topic

BROKERS = (1, 2, 3)
# Few internal partitions (Kafka's default is 50 each): a 2-core machine runs three brokers and the clients.
CLUSTER_ARGS = (*CLUSTER_DEFAULT_ARGS, "--override", "min.insync.replicas=2",
                "--override", "offsets.topic.num.partitions=3", "--override", "transaction.state.log.num.partitions=3")
TOPICS = (IN_TOPIC, OUT_TOPIC, "__consumer_offsets", "__transaction_state")
KINDS = ("broker", "controller", "transaction coordinator", "group coordinator", "session expiry")
FIND_COORDINATOR = 10
DEADLINE = 120.0  # for any one wait: far beyond a failover, short of hiding a hang


@dataclass
class Window:
    """One round: what was done to whom, and seconds from then until ..."""

    round: int
    kind: str
    victim: int
    leaders: float  # ... every partition had a live leader (the victim out of the cluster, for a kill)
    acks: float  # ... every input partition acknowledged a message handed over after it
    txn: float  # ... a transaction begun after it committed
    whole: float  # ... the victim back and every ISR full


@dataclass
class Report:
    rounds: int
    seconds: float
    counts: dict[str, int]
    examples: dict[str, list[str]]
    figures: dict[str, int]
    windows: list[Window]

    @property
    def ok(self) -> bool:
        return not any(self.counts.values())


def schedule(rounds: int, rng: random.Random) -> list[str]:
    """Mostly random brokers; the controller, both coordinators and a session expiry at least once each (as
    many of them as there are rounds)."""
    specials = list(KINDS[1:])
    rng.shuffle(specials)
    kinds = specials[:rounds] + rng.choices(KINDS, weights=(4, 1, 1, 1, 1), k=max(0, rounds - len(specials)))
    rng.shuffle(kinds)
    return kinds


def _coordinator(cluster: MinibrokerCluster, key: str, key_type: int) -> int:
    def found() -> int | None:
        with WireClient(cluster.bootstrap, timeout=10) as client:
            answer = client.request(FIND_COORDINATOR, 3, {"key": key, "key_type": key_type})
        return answer.node_id if answer.error_code == 0 and answer.node_id in BROKERS else None

    return cluster.wait_until(found, DEADLINE, f"the coordinator of {key}")


def _victim(cluster: MinibrokerCluster, kind: str, rng: random.Random) -> int:
    if kind == "controller":
        return cluster.wait_until(lambda: cluster.controller_id() if cluster.controller_id() in BROKERS else None,
                                  DEADLINE, "a controller")
    if kind == "transaction coordinator":
        return _coordinator(cluster, TRANSACTIONAL_ID, 1)
    if kind == "group coordinator":
        return _coordinator(cluster, CTP_GROUP, 0)
    return rng.choice(BROKERS)


def _led(cluster: MinibrokerCluster, without: int | None = None, full_isr: bool = False) -> bool | None:
    """Every partition of TOPICS has a leader among the live brokers (not `without`, which must be out of
    the cluster), and with `full_isr` an ISR of three."""
    answer = cluster.metadata(list(TOPICS))
    live = {b.node_id for b in answer.brokers}
    if without in live or (full_isr and live != set(BROKERS)) or len(answer.topics) != len(TOPICS):
        return None
    for topic in answer.topics:
        if topic.error_code or not topic.partitions:
            return None
        for p in topic.partitions:
            if p.leader_id not in live or p.leader_id == without or (full_isr and len(p.isr_nodes) != len(BROKERS)):
                return None
    return True


def _until(check: Callable[[], Any], what: str, cluster: MinibrokerCluster) -> float:
    """When `check` first held (monotonic time); a TimeoutError with the brokers' last words otherwise."""
    try:
        cluster.wait_until(check, DEADLINE, what)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}\n{_describe(cluster)}") from None
    return time.monotonic()


def _describe(cluster: MinibrokerCluster) -> str:
    """The cluster as each broker sees it, and the end of each broker's log: for a failure's message."""
    lines = []
    try:
        answer = cluster.metadata(list(TOPICS))
        lines.append(f"controller {answer.controller_id}, brokers {sorted(b.node_id for b in answer.brokers)}")
        for topic in answer.topics:
            lines.append(f"  {topic.name}: " + ", ".join(
                f"{p.partition_index}: leader {p.leader_id} isr {list(p.isr_nodes)}" for p in topic.partitions))
    except Exception as exc:  # a description must not hide the failure it describes
        lines.append(f"no metadata: {exc!r}")
    for broker_id, broker in cluster.brokers.items():
        state = "running" if broker.running else "down"
        lines.append(f"broker {broker_id} ({state}), last log lines:")
        lines += ["    " + line.rstrip() for line in broker.log_lines[-15:]]
    return "\n".join(lines)


def _acknowledged_again(ledger: workload.ChaosLedger, t0: float, cluster: MinibrokerCluster) -> tuple[float, float]:
    """Seconds from t0 until every input partition acknowledged a message handed over since, and until a
    transaction begun since committed."""
    def done() -> tuple[float, float] | None:
        acks = ledger.first_acks_since(t0)
        commit = ledger.first_commit_since(t0)
        if len(acks) < PARTITIONS or commit is None:
            return None
        return max(acks.values()) - t0, commit - t0

    try:
        return cluster.wait_until(done, DEADLINE, "the producers acknowledged and a transaction committed again")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}: acks {ledger.first_acks_since(t0)}, progress {ledger.progress()}\n"
                           f"{_describe(cluster)}") from None


def _round(cluster: MinibrokerCluster, ledger: workload.ChaosLedger, number: int, kind: str,
           rng: random.Random) -> Window:
    victim = _victim(cluster, kind, rng)
    consumed = ledger.progress()[2]
    t0 = time.monotonic()
    if kind == "session expiry":
        before = cluster.broker(victim).zookeeper_session()
        cluster.expire_session(victim)

        def registered_again() -> bool | None:
            now = cluster.broker(victim).zookeeper_session()
            return True if now.get("session_id") != before["session_id"] and \
                now.get("broker_epoch", -1) > before["broker_epoch"] else None

        _until(registered_again, f"broker {victim} registered again with a new session", cluster)
        leaders = _until(lambda: _led(cluster), "every partition led", cluster)
    else:
        cluster.kill_broker(victim)
        # The victim's registration goes when its session times out; only then may it register again.
        leaders = _until(lambda: _led(cluster, without=victim), f"every partition led without broker {victim}",
                         cluster)
        cluster.start_broker(victim, DEADLINE)
    whole = _until(lambda: _led(cluster, full_isr=True), "every ISR full again", cluster)
    acks, txn = _acknowledged_again(ledger, t0, cluster)
    cluster.wait_until(lambda: ledger.progress()[2] > consumed or None, DEADLINE, "the consumer group consuming")
    return Window(number, kind, victim, leaders - t0, acks, txn, whole - t0)


def _committed(bootstrap: str, group: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "isolation.level": "read_committed", **workload.QUIET})
    try:
        found = consumer.committed([TopicPartition(IN_TOPIC, p) for p in range(PARTITIONS)], timeout=60)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def run(rounds: int, seed: int, data_dir: Path, zookeeper: str | None = None, rate: float = 150.0,
        log: Callable[[str], None] = print) -> Report:
    """The chaos test: `rounds` rounds (schedule()), then the counts. `zookeeper`: a running ZooKeeper's
    HOST:PORT (one is started under `data_dir` otherwise); `rate`: messages a second from each of the two
    idempotent producers."""
    rng = random.Random(seed)
    kinds = schedule(rounds, rng)
    started = time.monotonic()
    cluster = MinibrokerCluster(data_dir, len(BROKERS), zookeeper=zookeeper, extra_args=CLUSTER_ARGS)
    ledger = workload.ChaosLedger()
    stop, stop_producing = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []
    windows: list[Window] = []
    try:
        cluster.start(DEADLINE)
        for topic in (IN_TOPIC, OUT_TOPIC):
            cluster.create_topic(topic, PARTITIONS, len(BROKERS), {"min.insync.replicas": "2"})
        bootstrap = cluster.bootstrap  # every broker's fixed port: right across restarts
        clients: list[tuple[Callable[..., None], tuple[Any, ...]]] = [
            (workload.idempotent_producer, (0, rate)), (workload.idempotent_producer, (1, rate)),
            (workload.transform_loop, ()), (workload.committed_reader, ()),
            (group_member, (IN_TOPIC, PLAIN_GROUP, workload.QUIET)), (workload.offset_monitor, ())]
        for target, args in clients:
            until = stop_producing if target is workload.idempotent_producer else stop
            thread = threading.Thread(target=target, args=(bootstrap, ledger, until, *args), daemon=True,
                                      name=target.__name__)
            thread.start()
            threads.append(thread)
        # Under way: the coordinators' internal topics exist and every client made progress.
        cluster.wait_until(lambda: all(n > 0 for n in ledger.progress()) or None, DEADLINE, "the clients working")
        _until(lambda: _led(cluster, full_isr=True), "every ISR full", cluster)
        log(f"cluster up, clients working ({time.monotonic() - started:.0f} s); {rounds} rounds")
        for number, kind in enumerate(kinds, 1):
            time.sleep(rng.uniform(1.0, 3.0))  # a random moment under load, not a condition
            window = _round(cluster, ledger, number, kind, rng)
            windows.append(window)
            log(f"round {number}/{rounds}: {kind} (broker {window.victim}): leaders {window.leaders:.1f} s, "
                f"producers acknowledged {window.acks:.1f} s, transaction committed {window.txn:.1f} s, "
                f"ISRs full {window.whole:.1f} s")
        # The producers stop (every message acknowledged); the consumers go on to the end of what was written.
        stop_producing.set()
        for thread in threads[:2]:
            thread.join(300)
        cluster.wait_until(lambda: ledger.caught_up() or None, DEADLINE, "the consumers through the input")
        stop.set()
        for thread in threads:
            thread.join(300)
            if thread.is_alive():
                raise TimeoutError(f"client {thread.name} did not finish")
        _until(lambda: _led(cluster, full_isr=True), "every ISR full at the end", cluster)

        def describe() -> str:
            return _describe(cluster)

        input_log = read_topic(bootstrap, IN_TOPIC, PARTITIONS, "read_uncommitted", describe)
        output_view = read_topic(bootstrap, OUT_TOPIC, PARTITIONS, "read_committed", describe)
        findings = checks.check(ledger, input_log, output_view, _committed(bootstrap, CTP_GROUP),
                                _committed(bootstrap, PLAIN_GROUP))
    finally:
        stop.set()
        stop_producing.set()
        cluster.stop()
    with ledger.lock:
        outcomes = [t.outcome for t in ledger.txns.values()]
        figures = {"acknowledged": len(ledger.acked), "stored": len(input_log), "outputs_visible": len(output_view),
                   "committed_txns": outcomes.count("committed"), "aborted_txns": outcomes.count("aborted"),
                   "unknown_txns": outcomes.count("unknown") + outcomes.count("open"),
                   "shown_to_reader": len(ledger.seen), "group_consumed": ledger.consumed,
                   "offset_reads": ledger.offsets_read,
                   "txn_producers_replaced": ledger.producers_replaced}
    return Report(rounds, time.monotonic() - started, findings.counts(), findings.examples, figures, windows)


def summary(report: Report) -> str:
    """The counts, the figures and the windows, for people."""
    lines = [f"chaos: {report.rounds} rounds in {report.seconds:.0f} s; " +
             ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report.figures.items())]
    lines.append("  " + " | ".join(f"{checks.COUNTS[k]} {v}" for k, v in report.counts.items()))
    for kind, examples in report.examples.items():
        for example in examples:
            lines.append(f"    {checks.COUNTS[kind]}: {example}")
    if report.windows:
        # Until every partition had a live leader, the producers were acknowledged on every partition, a
        # transaction committed, every ISR was full: seconds after the kill or expiry, median-max.
        lines.append(f"  unavailability (s, median-max)   {'leaders':>10} {'producers':>10} {'transaction':>12} "
                     f"{'ISRs full':>10}")
        kills = [w for w in report.windows if w.kind != "session expiry"]
        groups = [(kind, [w for w in report.windows if w.kind == kind]) for kind in KINDS]
        for label, hit in [*groups, ("every SIGKILL", kills)]:
            if hit:
                lines.append(f"    {label:<24} x{len(hit):<3} " + " ".join(
                    f"{_spread([getattr(w, name) for w in hit]):>{width}}"
                    for name, width in (("leaders", 10), ("acks", 10), ("txn", 12), ("whole", 10))))
    return "\n".join(lines)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}-{max(values):.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rate", type=float, default=150.0, help="messages a second from each idempotent producer")
    ap.add_argument("-v", "--verbose", action="store_true", help="the clients' steps (tests.chaos log) on stderr")
    ns = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    if ns.verbose:
        logging.getLogger("tests.chaos").setLevel(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="minibroker-chaos-") as tmp:
        report = run(ns.rounds, ns.seed, Path(tmp), rate=ns.rate, log=lambda line: print(line, flush=True))
    print(summary(report), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
