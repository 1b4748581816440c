"""The cluster chaos test: ZooKeeper and three brokers; topics with replication factor 3 and
min.insync.replicas=2; the clients of tests.chaos.workload (idempotent acks=all producers, a transactional
consume-transform-produce loop, a read_committed reader, a consumer group member); and, round after round,
one nemesis of the families chosen (`--nemeses kill,partition,pause`, `make chaos CHAOS_NEMESES=...`):

- kill: a broker SIGKILLed and restarted on its data (a random one, the controller, the transaction
  coordinator of the loop, the coordinator of its group), or a broker's ZooKeeper session expired while it
  runs on;
- partition (tests.chaos.netns: ZooKeeper and each broker in a network namespace of its own): a broker cut
  off from the other brokers and ZooKeeper (the clients still reach it); the controller isolated from
  everything, clients included; a partition's leader cut off from its followers and ZooKeeper but reachable
  by clients (the zombie leader Kafka's leader epochs exist for); an asymmetric partition (a leader hears
  nothing from the brokers and ZooKeeper, they hear it);
- pause: a partition's leader SIGSTOPped past its ZooKeeper session, resumed once its leaderships moved;
  ZooKeeper SIGSTOPped for 2-9 s (sometimes past the sessions' timeout).

    python -m tests.chaos.run --rounds 20 --nemeses kill,partition,pause   # prints the counts and windows

Each round hits a whole cluster (every ISR full, the clients making progress: one failure at a time, what
replication factor 3 with min.insync.replicas=2 promises to survive) after a random 1-3 s under load, heals
it, and measures the unavailability it caused: how long until every partition had a live leader again, until
the producers were acknowledged again on every partition, until a transaction committed again, and until
every ISR was full again. After every round the logs are read and checked against what the clients were told
(tests.chaos.checks: the transform loop holds still between transactions meanwhile); at the end the clients
stop, the consumers finish, and the whole is checked once more. The exit status is 1 unless every count is 0.

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
from tests.chaos import checks, netns, workload
from tests.chaos.workload import CTP_GROUP, IN_TOPIC, OUT_TOPIC, PARTITIONS, PLAIN_GROUP, TRANSACTIONAL_ID
from tests.soak.crash_loop import _offsets, group_member, read_topic

BROKERS = (1, 2, 3)
# Few internal partitions (Kafka's default is 50 each): a 2-core machine runs three brokers and the clients.
CLUSTER_ARGS = (*CLUSTER_DEFAULT_ARGS, "--override", "min.insync.replicas=2",
                "--override", "offsets.topic.num.partitions=3", "--override", "transaction.state.log.num.partitions=3")
TOPICS = (IN_TOPIC, OUT_TOPIC, "__consumer_offsets", "__transaction_state")
NEMESES = {
    "kill": ("broker", "controller", "transaction coordinator", "group coordinator", "session expiry"),
    "partition": ("broker partitioned", "controller isolated", "leader cut off", "asymmetric"),
    "pause": ("leader paused", "zookeeper paused"),
}
KINDS = tuple(kind for kinds in NEMESES.values() for kind in kinds)
KILLS = ("broker", "controller", "transaction coordinator", "group coordinator")
SESSION_TIMEOUT_S = 6.0  # CLUSTER_DEFAULT_ARGS' zookeeper.session.timeout.ms
FIND_COORDINATOR = 10
DEADLINE = 120.0  # for any one wait: far beyond a failover, short of hiding a hang


@dataclass
class Window:
    """One round: what was done to whom, and seconds from then until ..."""

    round: int
    kind: str
    victim: int  # a broker id; ZOOKEEPER for ZooKeeper paused
    leaders: float  # ... every partition had a live leader (the victim out of the cluster, where it was cut off)
    acks: float  # ... every input partition acknowledged a message handed over after it
    txn: float  # ... a transaction begun after it committed
    whole: float  # ... the victim back and every ISR full
    anomalies: int = 0  # found by the check after this round (new ones: each is counted once)


ZOOKEEPER = 0


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


def schedule(rounds: int, rng: random.Random, nemeses: tuple[str, ...] = ("kill",)) -> list[str]:
    """Every kind of the chosen nemeses at least once (as many as there are rounds), then random ones, a
    random broker's SIGKILL weighing four times the others."""
    chosen = [kind for family in nemeses for kind in NEMESES[family]]
    specials = [kind for kind in chosen if kind != "broker"]
    rng.shuffle(specials)
    weights = [4 if kind == "broker" else 1 for kind in chosen]
    kinds = specials[:rounds] + rng.choices(chosen, weights=weights, k=max(0, rounds - len(specials)))
    rng.shuffle(kinds)
    return kinds


def _coordinator(cluster: MinibrokerCluster, key: str, key_type: int) -> int:
    def found() -> int | None:
        with WireClient(cluster.bootstrap, timeout=10) as client:
            answer = client.request(FIND_COORDINATOR, 3, {"key": key, "key_type": key_type})
        return answer.node_id if answer.error_code == 0 and answer.node_id in BROKERS else None

    return cluster.wait_until(found, DEADLINE, f"the coordinator of {key}")


def _victim(cluster: MinibrokerCluster, kind: str, rng: random.Random) -> int:
    if kind in ("controller", "controller isolated"):
        return cluster.wait_until(lambda: cluster.controller_id() if cluster.controller_id() in BROKERS else None,
                                  DEADLINE, "a controller")
    if kind == "transaction coordinator":
        return _coordinator(cluster, TRANSACTIONAL_ID, 1)
    if kind == "group coordinator":
        return _coordinator(cluster, CTP_GROUP, 0)
    if kind in ("leader cut off", "leader paused", "asymmetric"):
        partition = rng.randrange(PARTITIONS)
        return cluster.wait_until(lambda: cluster.leader(IN_TOPIC, partition) if cluster.leader(IN_TOPIC, partition)
                                  in BROKERS else None, DEADLINE, f"a leader of {IN_TOPIC}-{partition}")
    if kind == "zookeeper paused":
        return ZOOKEEPER
    return rng.choice(BROKERS)


def _led(cluster: MinibrokerCluster, without: int | None = None, full_isr: bool = False,
         ask: list[int] | None = None) -> bool | None:
    """Every partition of TOPICS has a leader among the live brokers (not `without`, which must be out of
    the cluster), and with `full_isr` an ISR of three; as the brokers of `ask` (all, when None) see it."""
    answer = cluster.metadata(list(TOPICS), ask)
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


def _name(broker: int) -> str:
    return f"broker-{broker}"


def _round(cluster: MinibrokerCluster, net: netns.Network | None, ledger: workload.ChaosLedger, number: int,
           kind: str, rng: random.Random) -> Window:
    victim = _victim(cluster, kind, rng)
    others = [b for b in BROKERS if b != victim]
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
    elif kind in KILLS:
        cluster.kill_broker(victim)
        # The victim's registration goes when its session times out; only then may it register again.
        leaders = _until(lambda: _led(cluster, without=victim), f"every partition led without broker {victim}",
                         cluster)
        cluster.start_broker(victim, DEADLINE)
    elif kind == "zookeeper paused":
        cluster.zookeeper_server.pause()
        try:
            time.sleep(rng.uniform(2.0, 9.0))  # the nemesis itself: sometimes past the sessions' timeout
        finally:
            cluster.zookeeper_server.resume()
        leaders = _until(lambda: _led(cluster), "every partition led", cluster)
    elif kind == "asymmetric":
        assert net is not None
        net.isolate(_name(victim), [*map(_name, others), "zookeeper"], inbound_only=True)
        try:
            time.sleep(SESSION_TIMEOUT_S + rng.uniform(1.0, 3.0))  # the nemesis itself
        finally:
            net.heal()
        leaders = _until(lambda: _led(cluster, ask=others), "every partition led", cluster)
    else:
        # Deposed: paused, or cut off from the other brokers and ZooKeeper (and the clients, for the
        # controller), until the others have moved its leaderships; then a moment more in which it may still
        # take requests, unaware, before it comes back.
        if kind == "leader paused":
            cluster.pause_broker(victim)
        else:
            assert net is not None
            net.isolate(_name(victim), [*map(_name, others), "zookeeper",
                                        *(["client"] if kind == "controller isolated" else [])])
        try:
            leaders = _until(lambda: _led(cluster, without=victim, ask=others),
                             f"every partition led without broker {victim}", cluster)
            time.sleep(rng.uniform(0.5, 2.0))
        finally:
            if kind == "leader paused":
                cluster.resume_broker(victim)
            else:
                assert net is not None
                net.heal()
    whole = _until(lambda: _led(cluster, full_isr=True, ask=others), "every ISR full again", cluster)
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


def _catch_up(cluster: MinibrokerCluster, ledger: workload.ChaosLedger) -> None:
    """Until the consumers are through the input (ChaosLedger.caught_up()): a backlog the nemeses left (the
    transform loop stalls with its coordinator, and holds still while each round is checked) takes as long as
    it takes, so the deadline is on progress: TimeoutError when they went DEADLINE s without any."""
    seen: Any = None
    since = time.monotonic()
    while not ledger.caught_up():
        lag = ledger.lag()
        now = (sorted(lag["transformed"].items()), sorted(lag["group"].items()), lag["shown"])
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since > DEADLINE:
            offsets = "\n".join(f"  {topic} on broker {b}: {_offsets(cluster.broker(b).bootstrap, topic, PARTITIONS)}"
                                for topic in (IN_TOPIC, OUT_TOPIC) for b in BROKERS)
            raise TimeoutError(f"the consumers made no progress through the input for {DEADLINE:.0f} s: {lag}\n"
                               f"{offsets}\n{_describe(cluster)}")
        time.sleep(0.1)


def _check_now(cluster: MinibrokerCluster, ledger: workload.ChaosLedger, found: checks.Findings,
               final: bool = False) -> tuple[int, int, int]:
    """The logs against what the clients had been told: the transform loop holds still between transactions
    while the topics and offsets are read (after the ledger was taken; at the end, `final`, the clients are
    gone). Adds to `found`; returns how many anomalies were new, the records stored, the outputs visible."""
    def describe() -> str:
        return _describe(cluster)

    before = sum(found.counts().values())
    if not final:
        ledger.txn_pause.set()
    try:
        if not final and not ledger.txn_paused.wait(DEADLINE):
            raise TimeoutError(f"the transform loop did not finish its transaction\n{describe()}")
        taken = ledger.snapshot()
        bootstrap = cluster.bootstrap
        input_log = read_topic(bootstrap, IN_TOPIC, PARTITIONS, "read_uncommitted", describe)
        output_view = read_topic(bootstrap, OUT_TOPIC, PARTITIONS, "read_committed", describe)
        checks.check(taken, input_log, output_view, _committed(bootstrap, CTP_GROUP),
                     _committed(bootstrap, PLAIN_GROUP), found)
    finally:
        ledger.txn_pause.clear()
    return sum(found.counts().values()) - before, len(input_log), len(output_view)


def run(rounds: int, seed: int, data_dir: Path, zookeeper: str | None = None, rate: float = 150.0,
        log: Callable[[str], None] = print, nemeses: tuple[str, ...] = ("kill",),
        kinds: list[str] | None = None) -> Report:
    """The chaos test: `rounds` rounds of the `nemeses` (schedule(), or `kinds` in this order), then the
    counts. `zookeeper`: a running ZooKeeper's HOST:PORT (one is started under `data_dir` otherwise, and
    always for partitions and pauses: in its own namespace, or paused); `rate`: messages a second from each
    of the two idempotent producers. Partitions need root (tests.chaos.netns.NetworkUnavailable otherwise)."""
    rng = random.Random(seed)
    kinds = list(kinds) if kinds is not None else schedule(rounds, rng, nemeses)
    families = {family for family, members in NEMESES.items() for kind in kinds if kind in members}
    started = time.monotonic()
    net = netns.Network(["zookeeper", *map(_name, BROKERS)]).start() if "partition" in families else None
    own_zookeeper = net is not None or "zookeeper paused" in kinds
    cluster = MinibrokerCluster(data_dir, len(BROKERS), zookeeper=None if own_zookeeper else zookeeper,
                                extra_args=CLUSTER_ARGS, placement=net)
    ledger = workload.ChaosLedger()
    found = checks.Findings()
    stop, stop_producing = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []
    windows: list[Window] = []
    try:
        cluster.start(DEADLINE)
        for topic in (IN_TOPIC, OUT_TOPIC):
            cluster.create_topic(topic, PARTITIONS, len(BROKERS), {"min.insync.replicas": "2"})
        bootstrap = cluster.bootstrap  # every broker's fixed address: right across restarts
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
        log(f"cluster up, clients working ({time.monotonic() - started:.0f} s); {len(kinds)} rounds")
        for number, kind in enumerate(kinds, 1):
            time.sleep(rng.uniform(1.0, 3.0))  # a random moment under load, not a condition
            window = _round(cluster, net, ledger, number, kind, rng)
            window.anomalies = _check_now(cluster, ledger, found)[0]
            windows.append(window)
            log(f"round {number}/{len(kinds)}: {kind} ({_who(window.victim)}): leaders {window.leaders:.1f} s, "
                f"producers acknowledged {window.acks:.1f} s, transaction committed {window.txn:.1f} s, "
                f"ISRs full {window.whole:.1f} s; anomalies {window.anomalies}")
        # The producers stop (every message acknowledged); the consumers go on to the end of what was written.
        stop_producing.set()
        for thread in threads[:2]:
            thread.join(300)
        _catch_up(cluster, ledger)
        stop.set()
        for thread in threads:
            thread.join(300)
            if thread.is_alive():
                raise TimeoutError(f"client {thread.name} did not finish")
        _until(lambda: _led(cluster, full_isr=True), "every ISR full at the end", cluster)
        _, stored, visible = _check_now(cluster, ledger, found, final=True)
    finally:
        stop.set()
        stop_producing.set()
        cluster.stop()
        if net is not None:
            net.close()
    with ledger.lock:
        outcomes = [t.outcome for t in ledger.txns.values()]
        figures = {"acknowledged": len(ledger.acked), "stored": stored, "outputs_visible": visible,
                   "committed_txns": outcomes.count("committed"), "aborted_txns": outcomes.count("aborted"),
                   "unknown_txns": outcomes.count("unknown") + outcomes.count("open"),
                   "shown_to_reader": len(ledger.seen), "group_consumed": ledger.consumed,
                   "offset_reads": ledger.offsets_read,
                   "txn_producers_replaced": ledger.producers_replaced}
    return Report(len(kinds), time.monotonic() - started, found.counts(), found.examples, figures, windows)


def _who(victim: int) -> str:
    return "ZooKeeper" if victim == ZOOKEEPER else f"broker {victim}"


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
        # transaction committed, every ISR was full: seconds after the nemesis began, median-max.
        lines.append(f"  unavailability (s, median-max)   {'leaders':>10} {'producers':>10} {'transaction':>12} "
                     f"{'ISRs full':>10} {'anomalies':>10}")
        kills = [w for w in report.windows if w.kind in KILLS]
        groups = [(kind, [w for w in report.windows if w.kind == kind]) for kind in KINDS]
        for label, hit in [*groups, ("every SIGKILL", kills)]:
            if hit:
                lines.append(f"    {label:<24} x{len(hit):<3} " + " ".join(
                    f"{_spread([getattr(w, name) for w in hit]):>{width}}"
                    for name, width in (("leaders", 10), ("acks", 10), ("txn", 12), ("whole", 10))) +
                    f" {sum(w.anomalies for w in hit):>10}")
    return "\n".join(lines)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}-{max(values):.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nemeses", default="kill,partition,pause",
                    help=f"comma-separated families of nemeses: {', '.join(NEMESES)} (default all)")
    ap.add_argument("--kinds", help=f"comma-separated kinds, one round each in this order, instead of --rounds "
                                    f"and --nemeses: {', '.join(KINDS)}")
    ap.add_argument("--rate", type=float, default=150.0, help="messages a second from each idempotent producer")
    ap.add_argument("-v", "--verbose", action="store_true", help="the clients' steps (tests.chaos log) on stderr")
    ns = ap.parse_args(argv)
    nemeses = tuple(n.strip() for n in ns.nemeses.split(",") if n.strip())
    unknown = [n for n in nemeses if n not in NEMESES]
    if unknown or not nemeses:
        ap.error(f"unknown nemeses {unknown}: choose among {', '.join(NEMESES)}")
    kinds = [k.strip() for k in ns.kinds.split(",")] if ns.kinds else None
    if kinds is not None and not set(kinds) <= set(KINDS):
        ap.error(f"unknown kinds {sorted(set(kinds) - set(KINDS))}: choose among {', '.join(KINDS)}")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    if ns.verbose:
        logging.getLogger("tests.chaos").setLevel(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="minibroker-chaos-") as tmp:
        try:
            report = run(ns.rounds, ns.seed, Path(tmp), rate=ns.rate, log=lambda line: print(line, flush=True),
                         nemeses=nemeses, kinds=kinds)
        except netns.NetworkUnavailable as exc:
            print(f"chaos: partitions need network namespaces: {exc} (or CHAOS_NEMESES=kill,pause)", flush=True)
            return 2
    print(summary(report), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
