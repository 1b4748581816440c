"""The chaos test's clients (confluent-kafka, living across the kills as an application's would) and the
ledger of what they were told:

- idempotent producers (acks=all) write numbered messages to the input topic at a steady rate; each
  acknowledgement (partition, offset, when) goes into the ledger;
- a consume-transform-produce loop reads the input topic (read_committed, group CTP_GROUP) and, in one
  transaction per batch, writes each record's transform to the output topic and commits the batch's
  offsets; every fifth transaction is aborted on purpose; the loop rewinds to the committed offsets after
  any abort, as an exactly-once application does;
- a read_committed reader follows the output topic and remembers everything it was shown;
- a consumer group member commits what it consumed (tests.soak.crash_loop.group_member);
- a monitor reads both groups' committed offsets twice a second: they must never go backwards.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from tests.soak.crash_loop import Ledger, fatal_check

log = logging.getLogger("tests.chaos")

IN_TOPIC, OUT_TOPIC = "chaos-in", "chaos-out"
PARTITIONS = 3
CTP_GROUP, PLAIN_GROUP = "chaos-transform", "chaos-group"
TRANSACTIONAL_ID = "chaos-transform"
ABORT_EVERY = 5
BATCH = 500  # input records transformed in one transaction, at most (a backlog left by a nemesis drains fast)
# librdkafka's own log lines (connection refused while a broker is down, ...) would drown the report;
# what matters reaches the clients as errors and is recorded.
QUIET = {"log_level": 2, "reconnect.backoff.max.ms": 200}


def parse_output(value: bytes) -> tuple[int, int, int, bytes]:
    """An output record's value: (transaction, input partition, input offset, input value)."""
    txn, partition, offset, original = value.split(b":", 3)
    return int(txn), int(partition), int(offset), original


@dataclass
class Txn:
    """One transaction of the transform loop, as the loop saw it."""

    number: int
    commit: bool  # what the loop meant to do with it
    begun: float
    outputs: list[bytes] = field(default_factory=list)
    offsets: dict[int, int] = field(default_factory=dict)  # input partition -> offset committed with it
    outcome: str = "open"  # committed / aborted: what the producer was told; unknown: it never learned
    ended: float | None = None


@dataclass
class ChaosLedger(Ledger):
    """What the clients were told (crash_loop's Ledger: acked, group_commits, fatal, consumed), and when."""

    sent: dict[bytes, float] = field(default_factory=dict)  # value -> when it was handed to the producer
    ack_log: list[tuple[int, float, float]] = field(default_factory=list)  # (partition, sent, acknowledged)
    txns: dict[int, Txn] = field(default_factory=dict)
    seen: list[tuple[int, int, bytes]] = field(default_factory=list)  # what the read_committed reader was shown
    reader_errors: list[str] = field(default_factory=list)
    backwards: list[str] = field(default_factory=list)  # committed offsets seen going backwards
    offsets_read: int = 0  # answers the offset monitor had
    producers_replaced: int = 0

    def snapshot(self) -> ChaosLedger:
        """A copy of what the clients had been told up to now, for a check while they go on."""
        with self.lock:
            return ChaosLedger(
                acked=dict(self.acked), group_commits=dict(self.group_commits), fatal=list(self.fatal),
                consumed=self.consumed, sent=dict(self.sent), ack_log=list(self.ack_log),
                txns={n: dataclasses.replace(t, outputs=list(t.outputs), offsets=dict(t.offsets))
                      for n, t in self.txns.items()},
                seen=list(self.seen), reader_errors=list(self.reader_errors), backwards=list(self.backwards),
                offsets_read=self.offsets_read, producers_replaced=self.producers_replaced)

    def progress(self) -> tuple[int, int, int]:
        """(acknowledged messages, committed transactions, messages consumed by the group)."""
        with self.lock:
            return len(self.acked), sum(t.outcome == "committed" for t in self.txns.values()), self.consumed

    def caught_up(self) -> bool:
        """Every acknowledged input record transformed in a committed transaction and consumed by the group
        (their committed offsets at the input's end), every committed output shown to the reader."""
        return self.lag()["behind"] == 0

    def lag(self) -> dict[str, Any]:
        """How far the consumers are from caught_up(): per input partition its end, the transform loop's and
        the group's committed offsets; the committed outputs not yet shown to the reader; the loop's last
        transaction. "behind": how many of these are short."""
        with self.lock:
            ends: dict[int, int] = {}
            for partition, offset in self.acked.values():
                ends[partition] = max(ends.get(partition, 0), offset + 1)
            transformed: dict[int, int] = {}
            outputs = 0
            for txn in self.txns.values():
                if txn.outcome == "committed":
                    outputs += len(txn.outputs)
                    for partition, offset in txn.offsets.items():
                        transformed[partition] = max(transformed.get(partition, 0), offset)
            shown = len({(p, o) for p, o, _ in self.seen})
            last = max(self.txns.values(), key=lambda t: t.number, default=None)
            behind = sum(transformed.get(p, 0) < end for p, end in ends.items()) + \
                sum(self.group_commits.get(p, 0) < end for p, end in ends.items()) + (shown < outputs)
            return {"behind": behind, "ends": ends, "transformed": transformed, "group": dict(self.group_commits),
                    "outputs": outputs, "shown": shown, "reader_errors": self.reader_errors[-3:],
                    "last_txn": None if last is None else (last.number, last.outcome, last.begun, last.ended),
                    "now": time.monotonic(), "producers_replaced": self.producers_replaced}

    def first_acks_since(self, t0: float) -> dict[int, float]:
        """Per input partition, the earliest acknowledgement of a message handed over at t0 or later."""
        found: dict[int, float] = {}
        with self.lock:
            for partition, sent, acked in reversed(self.ack_log):
                if acked < t0 - 1.0:  # two producers append: their times interleave a little
                    break
                if sent >= t0:
                    found[partition] = min(acked, found.get(partition, acked))
        return found

    def first_commit_since(self, t0: float) -> float | None:
        """When the first transaction begun at t0 or later was committed."""
        with self.lock:
            ends = [t.ended for t in self.txns.values() if t.begun >= t0 and t.outcome == "committed"]
        return min(ends) if ends else None  # type: ignore[type-var]


def idempotent_producer(bootstrap: str, ledger: ChaosLedger, stop: threading.Event, index: int,
                        rate: float) -> None:
    """Messages b"p<index>-<n>" to partition n % PARTITIONS, `rate` a second."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, "message.timeout.ms": 900_000, **QUIET,
                         "error_cb": fatal_check(ledger, f"producer {index}")})

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        now = time.monotonic()
        if err is None:
            with ledger.lock:
                ledger.acked[msg.value()] = (msg.partition(), msg.offset())
                ledger.ack_log.append((msg.partition(), ledger.sent[msg.value()], now))
        elif err.code() == KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER or err.fatal():
            with ledger.lock:
                ledger.fatal.append(f"producer {index} delivery: {err}")

    n = 0
    interval = 1.0 / rate
    due = time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        # A backlog builds while a partition has no leader; beyond this, wait rather than flood it.
        if now < due or len(producer) > 5000:
            producer.poll(min(max(due - now, 0.001), 0.05))
            continue
        value = f"p{index}-{n}".encode()
        with ledger.lock:
            ledger.sent[value] = now
        producer.produce(IN_TOPIC, value, partition=n % PARTITIONS, on_delivery=on_delivery)
        n += 1
        due = max(due + interval, now - 1.0)  # after a stall, no burst to catch up
    if producer.flush(300):
        with ledger.lock:
            ledger.fatal.append(f"producer {index}: {len(producer)} messages undelivered after 300 s")


def _transactional_producer(bootstrap: str, stop: threading.Event) -> Producer | None:
    """A producer with the loop's transactional id, initialized (which fences a predecessor and completes
    or aborts its open transaction); None if stopped first."""
    while not stop.is_set():
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TRANSACTIONAL_ID,
                             "transaction.timeout.ms": 60_000, "message.timeout.ms": 60_000, "linger.ms": 5,
                             **QUIET, "error_cb": lambda err: None})
        try:
            _bounded(lambda p=producer: p.init_transactions(60), 65)
            log.info("transactional producer ready")
            return producer
        except (KafkaException, Stuck) as exc:
            log.info("init_transactions: %s", exc.args[0])
            time.sleep(0.2)
    return None


# How long a transactional call may take before the loop gives up on its producer and starts a new one (whose
# init fences the old and settles its transaction). A failover takes seconds here; longer is librdkafka stuck
# after a broker it had forgotten came back. Seen with 2.16: a partition left with the client's internal broker
# when one Metadata answer both drops a dead broker and moves the partition's leadership away from it (only a
# later leader epoch moves it back, cf. confluentinc/librdkafka#4804), so a commit waits for messages never sent;
# send_offsets_to_transaction blocked for two minutes, past its own timeout, before sending TxnOffsetCommit.
PATIENCE_S = 30.0


class Stuck(Exception):
    """A librdkafka call that outlived PATIENCE_S (and its own timeout): its producer is given up."""


def _bounded(call: Callable[[], Any], limit: float) -> Any:
    """`call` in a thread of its own, `limit` seconds at most; Stuck after that. The thread is left to finish
    (or not) with the producer it holds, which nothing uses any more."""
    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # handed to the caller
            failure.append(exc)

    worker = threading.Thread(target=run, daemon=True, name="librdkafka-call")
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        raise Stuck(f"no answer in {limit:.0f} s")
    if failure:
        raise failure[0]
    return result[0] if result else None


def _retrying(call: Callable[[float], None]) -> None:
    """A transactional call, again after a retriable error (librdkafka's advice), for PATIENCE_S in all."""
    deadline = time.monotonic() + PATIENCE_S
    while True:
        remaining = max(deadline - time.monotonic(), 1.0)
        try:
            _bounded(lambda r=remaining: call(r), remaining + 5)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or time.monotonic() > deadline:
                raise


def _transact(producer: Producer, consumer: Consumer, txn: Txn, messages: list[Any]) -> tuple[str, bool]:
    """Transform `messages` in one transaction with their offsets; returns (outcome, producer usable)."""
    decided = False  # EndTxn(commit) sent: the coordinator may have committed whatever we hear back
    try:
        producer.begin_transaction()
        for msg in messages:
            value = b"%d:%d:%d:" % (txn.number, msg.partition(), msg.offset()) + msg.value()
            producer.produce(OUT_TOPIC, value, partition=msg.partition())
            txn.outputs.append(value)
            txn.offsets[msg.partition()] = msg.offset() + 1
        offsets = [TopicPartition(IN_TOPIC, p, o) for p, o in txn.offsets.items()]
        group = consumer.consumer_group_metadata()
        _retrying(lambda timeout: producer.send_offsets_to_transaction(offsets, group, timeout))
        if not txn.commit:
            _retrying(producer.abort_transaction)
            return "aborted", True
        decided = True
        _retrying(producer.commit_transaction)
        return "committed", True
    except (KafkaException, Stuck) as exc:
        log.info("transaction %d: %s", txn.number, exc.args[0])
        if isinstance(exc, KafkaException) and exc.args[0].txn_requires_abort():
            try:
                _retrying(producer.abort_transaction)
                return "aborted", True
            except (KafkaException, Stuck):
                pass
        return ("unknown" if decided else "aborted"), False


def _rewind(consumer: Consumer, stop: threading.Event) -> None:
    """Back to the group's committed offsets. librdkafka asks for stable offsets under read_committed
    (OffsetFetch require_stable): a transaction still completing is waited for, not read around."""
    while not stop.is_set():
        try:
            committed = consumer.committed(consumer.assignment(), timeout=10)
        except KafkaException as exc:
            log.info("rewind: %s", exc.args[0])
            continue
        if any(tp.error is not None for tp in committed):
            log.info("rewind: %s", [tp.error for tp in committed if tp.error is not None])
            time.sleep(0.1)
            continue
        log.info("rewound to %s", {tp.partition: tp.offset for tp in committed})
        for tp in committed:
            try:
                consumer.seek(TopicPartition(IN_TOPIC, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
            except KafkaException:
                pass  # not fetching yet: it will start at the committed offset anyway
        return


def transform_loop(bootstrap: str, ledger: ChaosLedger, stop: threading.Event) -> None:
    """Consume-transform-produce, exactly once: see the module docstring."""
    rebalanced = threading.Event()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": CTP_GROUP, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "session.timeout.ms": 10_000, **QUIET, "error_cb": lambda err: None})
    consumer.subscribe([IN_TOPIC], on_assign=lambda c, ps: rebalanced.set(), on_revoke=lambda c, ps: rebalanced.set())
    producer = _transactional_producer(bootstrap, stop)
    number = 0
    while producer is not None and not stop.is_set():
        if ledger.txn_pause.is_set():  # a check reads the output topic: hold still between transactions
            ledger.txn_paused.set()
            while ledger.txn_pause.is_set() and not stop.is_set():
                time.sleep(0.01)
            ledger.txn_paused.clear()
            continue
        messages = [m for m in consumer.consume(BATCH, 0.5) if not m.error()]
        if rebalanced.is_set():
            # A batch that straddles a rebalance is dropped: after it the positions are the committed offsets.
            rebalanced.clear()
            _rewind(consumer, stop)
            continue
        if not messages:
            continue
        number += 1
        txn = Txn(number, commit=number % ABORT_EVERY != 0, begun=time.monotonic())
        with ledger.lock:
            ledger.txns[number] = txn
        outcome, usable = _transact(producer, consumer, txn, messages)
        with ledger.lock:
            txn.outcome, txn.ended = outcome, time.monotonic()
        if outcome != "committed" or time.monotonic() - txn.begun > 5:
            log.info("transaction %d: %s after %.1f s", number, outcome, time.monotonic() - txn.begun)
        if not usable:
            with ledger.lock:
                ledger.producers_replaced += 1
            producer = _transactional_producer(bootstrap, stop)
        if outcome != "committed":
            _rewind(consumer, stop)
    consumer.close()


def committed_reader(bootstrap: str, ledger: ChaosLedger, stop: threading.Event) -> None:
    """Follows the output topic from its start in read_committed; an offset reset (auto.offset.reset=error)
    would mean records it had been shown were truncated away."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "error", **QUIET,
                         "error_cb": lambda err: None})
    consumer.assign([TopicPartition(OUT_TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    while not stop.is_set():
        for msg in consumer.consume(500, 0.2):
            with ledger.lock:
                if msg.error():
                    ledger.reader_errors.append(f"{msg.topic()}-{msg.partition()}: {msg.error()}")
                else:
                    ledger.seen.append((msg.partition(), msg.offset(), msg.value()))
    consumer.close()


def offset_monitor(bootstrap: str, ledger: ChaosLedger, stop: threading.Event) -> None:
    """Both groups' committed offsets, twice a second: each must stay at or above what was seen before
    (no committed offset at all, after one, counts as going backwards)."""
    watchers = {group: Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                                 "isolation.level": "read_committed", **QUIET, "error_cb": lambda err: None})
                for group in (CTP_GROUP, PLAIN_GROUP)}
    highest: dict[tuple[str, int], int] = {}
    while not stop.wait(0.5):
        for group, watcher in watchers.items():
            try:
                found = watcher.committed([TopicPartition(IN_TOPIC, p) for p in range(PARTITIONS)], timeout=5)
            except KafkaException:
                continue  # no answer now (a coordinator moving): nothing learned
            with ledger.lock:
                ledger.offsets_read += 1
            for tp in found:
                if tp.error is not None:
                    continue
                before = highest.get((group, tp.partition))
                if before is not None and tp.offset < before:
                    with ledger.lock:
                        ledger.backwards.append(f"{group} {IN_TOPIC}-{tp.partition}: {before} then {tp.offset}")
                highest[(group, tp.partition)] = max(tp.offset, before if before is not None else tp.offset)
    for watcher in watchers.values():
        watcher.close()
