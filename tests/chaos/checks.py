"""The chaos test's counts: the logs at the end (the input topic read whole, the output topic as
read_committed shows it, both groups' committed offsets) against what the clients were told
(tests.chaos.workload.ChaosLedger). Each count must be 0:

- lost: an acknowledged message not in the log at the offset it was acknowledged with; an output of a
  committed transaction not visible; a record the read_committed reader was shown that is gone (or an offset
  reset of that reader: its position truncated away); an input record consumed, or below the committed
  offset, whose record or output is gone;
- duplicates: a message stored twice; an input record whose output is visible twice; a record shown twice;
- reordered: within a partition, a producer's messages out of their order, outputs out of their inputs'
  order, the reader shown an offset below one it was shown before;
- offsets backwards: a committed offset below one the broker acknowledged (a consumer's commit, a committed
  transaction's offsets) or below one the monitor read before;
- half-visible transactions: some but not all of a transaction's outputs visible; an aborted transaction's
  outputs visible (at the end, or shown to the reader meanwhile); outputs visible while the transaction's
  offsets are not, or offsets committed while its outputs are not;
- fatal producer errors: OUT_OF_ORDER_SEQUENCE_NUMBER or another fatal error (lost idempotence state).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.chaos.workload import ChaosLedger, parse_output

COUNTS = {"lost": "lost acknowledged", "duplicates": "duplicates", "reordered": "reordered",
          "backwards": "offsets backwards", "half_visible": "half-visible transactions",
          "fatal": "fatal producer errors"}
EXAMPLES = 5

Record = tuple[int, int, bytes]  # partition, offset, value


@dataclass
class Findings:
    found: dict[str, set[Any]] = field(default_factory=lambda: {name: set() for name in COUNTS})
    examples: dict[str, list[str]] = field(default_factory=lambda: {name: [] for name in COUNTS})

    def add(self, kind: str, key: Any, detail: str) -> None:
        if key not in self.found[kind]:
            self.found[kind].add(key)
            if len(self.examples[kind]) < EXAMPLES:
                self.examples[kind].append(detail)

    def counts(self) -> dict[str, int]:
        return {name: len(keys) for name, keys in self.found.items()}


def check(ledger: ChaosLedger, input_log: list[Record], output_view: list[Record], transform_offsets: dict[int, int],
          group_offsets: dict[int, int], found: Findings | None = None) -> Findings:
    """`input_log`: the input topic read_uncommitted; `output_view`: the output topic read_committed;
    `*_offsets`: the groups' committed offsets now (partition -> offset, -1 for none); each read after
    `ledger` was taken (ChaosLedger.snapshot() while the clients run). `found`: findings to add to (the
    checks after each round add to one)."""
    with ledger.lock:
        acked = dict(ledger.acked)
        txns = {n: (t.outcome, list(t.outputs), dict(t.offsets)) for n, t in ledger.txns.items()}
        seen = list(ledger.seen)
        reader_errors = list(ledger.reader_errors)
        group_commits = dict(ledger.group_commits)
        backwards = list(ledger.backwards)
        fatal = list(ledger.fatal)
    f = Findings() if found is None else found
    _check_input(f, acked, input_log)
    _check_output(f, txns, input_log, output_view, transform_offsets)
    _check_reader(f, txns, output_view, seen, reader_errors)
    committed_offsets: dict[int, int] = {}
    for outcome, _, offsets in txns.values():
        for partition, offset in offsets.items() if outcome == "committed" else ():
            committed_offsets[partition] = max(offset, committed_offsets.get(partition, offset))
    for partition, offset in committed_offsets.items():
        if transform_offsets.get(partition, -1) < offset:
            f.add("backwards", ("transform", partition), f"transform loop: a committed transaction's offset "
                                                         f"{offset} for partition {partition}, committed now "
                                                         f"{transform_offsets.get(partition)}")
    for partition, offset in group_commits.items():
        if group_offsets.get(partition, -1) < offset:
            f.add("backwards", ("group", partition), f"consumer group: {offset} acknowledged for partition "
                                                     f"{partition}, committed now {group_offsets.get(partition)}")
    for i, what in enumerate(backwards):
        f.add("backwards", ("monitor", i), f"read by the monitor: {what}")
    for i, what in enumerate(fatal):
        f.add("fatal", i, what)
    return f


def _check_input(f: Findings, acked: dict[bytes, tuple[int, int]], input_log: list[Record]) -> None:
    where: dict[bytes, list[tuple[int, int]]] = {}
    for p, o, value in input_log:
        where.setdefault(value, []).append((p, o))
    for value, places in where.items():
        if len(places) > 1:
            f.add("duplicates", ("input", value), f"{value!r} stored {len(places)} times, at {places}")
    for value, at in acked.items():
        if at not in where.get(value, []):
            f.add("lost", ("input", value), f"{value!r} acknowledged at {at}, in the log at {where.get(value)}")
    last: dict[tuple[int, bytes], int] = {}  # (partition, producer) -> its highest number so far
    stored: set[bytes] = set()
    for p, o, value in sorted(input_log):
        if value in stored:
            continue  # a duplicate: counted as such
        stored.add(value)
        producer, _, number = value.partition(b"-")
        n = int(number)
        before = last.get((p, producer))
        if before is not None and n < before:
            f.add("reordered", ("input", p, o), f"{value!r} at {p}/{o} after {producer.decode()}-{before}")
        last[(p, producer)] = max(n, before if before is not None else n)


def _check_output(f: Findings, txns: dict[int, tuple[str, list[bytes], dict[int, int]]], input_log: list[Record],
                  output_view: list[Record], transform_offsets: dict[int, int]) -> None:
    inputs = {(p, o): value for p, o, value in input_log}
    visible = {value for _, _, value in output_view}
    # Each transaction: all of its outputs visible or none, as its outcome says.
    for number, (outcome, outputs, _) in txns.items():
        shown = sum(value in visible for value in outputs)
        if outcome == "committed" and shown == 0:
            for value in outputs:
                f.add("lost", ("output", value), f"transaction {number} committed, its output {value!r} not visible")
        elif 0 < shown < len(outputs):
            f.add("half_visible", number,
                  f"transaction {number} ({outcome}): {shown} of {len(outputs)} outputs visible")
        elif outcome == "aborted" and shown:
            f.add("half_visible", number, f"transaction {number} aborted, its {shown} outputs visible")
    # Exactly once: the outputs visible are those of the input records below the committed offsets, once
    # each, in their order.
    outputs_of: dict[tuple[int, int], list[int]] = {}
    last: dict[int, int] = {}
    for p, o, value in output_view:
        txn, in_p, in_o, original = parse_output(value)
        outputs_of.setdefault((in_p, in_o), []).append(txn)
        if inputs.get((in_p, in_o)) != original:
            f.add("lost", ("consumed", in_p, in_o), f"output {value!r}: input {in_p}/{in_o} is now "
                                                    f"{inputs.get((in_p, in_o))!r}")
        if in_p != p or (p in last and in_o < last[p]):
            f.add("reordered", ("output", p, o), f"output {value!r} at {p}/{o} after input offset {last.get(p)}")
        last[p] = max(in_o, last.get(p, in_o))
        if in_o >= transform_offsets.get(in_p, -1):
            f.add("half_visible", txn, f"transaction {txn}: output {value!r} visible, committed offset of "
                                       f"partition {in_p} only {transform_offsets.get(in_p)}")
    for key, numbers in outputs_of.items():
        if len(numbers) > 1:
            f.add("duplicates", ("output", *key), f"input {key[0]}/{key[1]} output {len(numbers)} times "
                                                  f"(transactions {numbers})")
    included: dict[tuple[int, int], int] = {}  # input record -> the last transaction that had it
    for number, (_, outputs, _) in txns.items():
        for value in outputs:
            _, in_p, in_o, _ = parse_output(value)
            included[(in_p, in_o)] = number
    for (p, o) in inputs:
        if o >= transform_offsets.get(p, -1) or (p, o) in outputs_of:
            continue
        number = included.get((p, o))
        if number is None:
            f.add("lost", ("skipped", p, o), f"input {p}/{o} below the committed offset "
                                             f"{transform_offsets.get(p)}, never transformed")
        elif txns[number][0] != "committed":  # a committed one is counted above (lost or half visible)
            f.add("half_visible", number, f"transaction {number} ({txns[number][0]}): offset of input {p}/{o} "
                                          "committed, its output not visible")


def _check_reader(f: Findings, txns: dict[int, tuple[str, list[bytes], dict[int, int]]], output_view: list[Record],
                  seen: list[Record], reader_errors: list[str]) -> None:
    at = {(p, o): value for p, o, value in output_view}
    last: dict[int, int] = {}
    for p, o, value in seen:
        if at.get((p, o)) != value:
            txn = parse_output(value)[0]
            if txns.get(txn, ("unknown",))[0] == "aborted":
                f.add("half_visible", txn, f"transaction {txn} aborted, its output {value!r} shown to the reader")
            else:
                f.add("lost", ("reader", p, o), f"shown {value!r} at {p}/{o}, now {at.get((p, o))!r}")
        if p in last and o < last[p]:
            f.add("reordered", ("reader", p, o), f"reader shown {p}/{o} after {p}/{last[p]}")
        elif p in last and o == last[p]:
            f.add("duplicates", ("reader", p, o), f"reader shown {p}/{o} twice")
        last[p] = max(o, last.get(p, o))
    for i, error in enumerate(reader_errors):
        f.add("lost", ("reader error", i), f"read_committed reader: {error}")
