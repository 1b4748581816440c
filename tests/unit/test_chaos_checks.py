"""The chaos test's checks (tests/chaos/checks.py) on made-up outcomes: a consistent one counts nothing, and
each kind of damage is counted where it belongs (so a chaos run's zeros mean something)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.chaos.checks import check
from tests.chaos.workload import ChaosLedger, Txn


def _out(txn: int, partition: int, offset: int, value: bytes) -> bytes:
    return b"%d:%d:%d:" % (txn, partition, offset) + value


@dataclass
class Outcome:
    """What the clients were told and what the logs hold, consistent to begin with: two producers' messages
    on two partitions; transaction 1 (committed) transformed offsets 0-1 of both, 2 (aborted) tried offset 2 of
    partition 0, 3 (committed) transformed offset 2 of both."""

    ledger: ChaosLedger
    input_log: list[tuple[int, int, bytes]]
    output_view: list[tuple[int, int, bytes]]
    transform_offsets: dict[int, int]
    group_offsets: dict[int, int]

    @classmethod
    def consistent(cls) -> Outcome:
        ledger = ChaosLedger()
        input_log = [(0, 0, b"p0-0"), (0, 1, b"p1-0"), (0, 2, b"p0-2"), (1, 0, b"p0-1"), (1, 1, b"p1-1"),
                     (1, 2, b"p0-3")]
        ledger.acked = {value: (p, o) for p, o, value in input_log}
        values = {(p, o): value for p, o, value in input_log}
        plan = {1: ("committed", [(0, 0), (0, 1), (1, 0), (1, 1)]), 2: ("aborted", [(0, 2)]),
                3: ("committed", [(0, 2), (1, 2)])}
        output_view = []
        for number, (outcome, inputs) in plan.items():
            txn = Txn(number, commit=outcome == "committed", begun=0.0, outcome=outcome, ended=1.0)
            for p, o in inputs:
                txn.outputs.append(_out(number, p, o, values[(p, o)]))
                txn.offsets[p] = o + 1
                if outcome == "committed":
                    output_view.append((p, len([x for x in output_view if x[0] == p]), txn.outputs[-1]))
            ledger.txns[number] = txn
        ledger.seen = list(output_view)
        ledger.group_commits = {0: 3, 1: 3}
        return cls(ledger, input_log, sorted(output_view), {0: 3, 1: 3}, {0: 3, 1: 3})

    def counts(self) -> dict[str, int]:
        return check(self.ledger, self.input_log, self.output_view, self.transform_offsets,
                     self.group_offsets).counts()


def _drop_input(o: Outcome) -> None:  # an acknowledged message gone from the log, after it was transformed
    o.input_log = [r for r in o.input_log if r[2] != b"p1-1"]


def _store_twice(o: Outcome) -> None:
    o.input_log.append((1, 3, b"p0-1"))


def _swap(o: Outcome) -> None:  # producer p0's messages 0 and 2 stored (and acknowledged) the other way round
    o.input_log[0], o.input_log[2] = (0, 0, b"p0-2"), (0, 2, b"p0-0")
    o.ledger.acked.update({b"p0-2": (0, 0), b"p0-0": (0, 2)})

    def swapped(value: bytes) -> bytes:
        return value.replace(b"p0-0", b"X").replace(b"p0-2", b"p0-0").replace(b"X", b"p0-2")

    for txn in o.ledger.txns.values():
        txn.outputs = [swapped(v) for v in txn.outputs]
    o.output_view = [(p, off, swapped(v)) for p, off, v in o.output_view]
    o.ledger.seen = list(o.output_view)


def _offsets_back(o: Outcome) -> None:
    o.group_offsets = {0: 2, 1: 3}


def _half(o: Outcome) -> None:  # one of transaction 3's two outputs visible
    o.output_view = [r for r in o.output_view if not r[2].startswith(b"3:1:")]
    o.ledger.seen = list(o.output_view)


def _aborted_visible(o: Outcome) -> None:  # its input's output then twice
    o.output_view.append((0, 3, o.ledger.txns[2].outputs[0]))
    o.ledger.seen = list(o.output_view)


def _committed_lost(o: Outcome) -> None:  # transaction 3 gone although its commit returned, offsets too
    o.output_view = [r for r in o.output_view if not r[2].startswith(b"3:")]
    o.transform_offsets = {0: 2, 1: 2}
    o.ledger.seen = list(o.output_view)


def _seen_then_gone(o: Outcome) -> None:
    o.ledger.seen.append((1, 3, _out(9, 1, 9, b"ghost")))


def _monitor(o: Outcome) -> None:
    o.ledger.backwards.append("chaos-group chaos-in-0: 3 then 1")


def _fatal(o: Outcome) -> None:
    o.ledger.fatal.append("producer 0: OUT_OF_ORDER_SEQUENCE_NUMBER")


CASES: list[tuple[Callable[[Outcome], Any], dict[str, int]]] = [
    (_drop_input, {"lost": 2}),  # the message, and the input of an output
    (_store_twice, {"duplicates": 1}),
    (_swap, {"reordered": 1}),
    (_offsets_back, {"backwards": 1}),
    (_half, {"half_visible": 1}),
    (_aborted_visible, {"half_visible": 1, "duplicates": 1}),
    (_committed_lost, {"lost": 2, "backwards": 2}),
    (_seen_then_gone, {"lost": 1}),
    (_monitor, {"backwards": 1}),
    (_fatal, {"fatal": 1}),
]


def test_a_consistent_outcome_counts_nothing() -> None:
    assert set(Outcome.consistent().counts().values()) == {0}


@pytest.mark.parametrize(("damage", "expected"), CASES, ids=[c[0].__name__.strip("_") for c in CASES])
def test_each_damage_is_counted(damage: Callable[[Outcome], Any], expected: dict[str, int]) -> None:
    outcome = Outcome.consistent()
    damage(outcome)
    assert {k: v for k, v in outcome.counts().items() if v} == expected
