"""The transaction coordinator's state machine, driven with explicit time (Kafka's TransactionCoordinator)."""

from __future__ import annotations

import pytest

from coordinator.txn import (
    EPOCH_EXHAUSTED,
    IllegalTxnTransitionError,
    TransactionCoordinator,
    TxnConfig,
    TxnState,
    TxnTransit,
)
from protocol.header import ErrorCode as E

TIMEOUT = 10_000
T = ("t", 0)
U = ("u", 1)


def coordinator(**config: int) -> TransactionCoordinator:
    return TransactionCoordinator(TxnConfig(**config))


def init(coord: TransactionCoordinator, now: int = 0, txn_id: str = "x", expected: tuple[int, int] | None = None,
         new_pid: int = 1000, timeout: int = TIMEOUT):
    pid = new_pid if coord.needs_new_producer_id(txn_id, expected[1] if expected else None) else None
    result = coord.init_producer_id(txn_id, timeout, expected, pid, now)
    if result.transit is not None:
        coord.complete(result.transit)
    return result


def apply(coord: TransactionCoordinator, transit: TxnTransit | None) -> None:
    assert transit is not None
    coord.complete(transit)


def state(coord: TransactionCoordinator, txn_id: str = "x") -> TxnState:
    return coord.txns[txn_id].state


def test_new_transactional_id_gets_a_producer_id_and_epoch_0() -> None:
    coord = coordinator()
    assert coord.needs_new_producer_id("x", None)
    result = init(coord)
    assert (result.error, result.producer_id, result.producer_epoch) == (E.NONE, 1000, 0)
    assert state(coord) == TxnState.EMPTY
    assert not coord.needs_new_producer_id("x", None)


def test_init_again_bumps_the_epoch_and_a_retry_with_the_last_epoch_keeps_it() -> None:
    coord = coordinator()
    init(coord)
    again = init(coord, expected=(1000, 0))
    assert (again.producer_id, again.producer_epoch) == (1000, 1)
    # The same request retried (its answer was lost): the producer still sends epoch 0.
    retry = init(coord, expected=(1000, 0))
    assert (retry.error, retry.producer_epoch) == (E.NONE, 1)
    assert init(coord, expected=(1000, 7)).error == E.PRODUCER_FENCED
    assert init(coord, expected=(999, 1)).error == E.PRODUCER_FENCED
    assert init(coord).producer_epoch == 2  # no expected id: always a bump


def test_transaction_timeout_bounds() -> None:
    coord = coordinator(max_timeout_ms=60_000)
    assert init(coord, timeout=60_001).error == E.INVALID_TRANSACTION_TIMEOUT
    assert init(coord, timeout=0).error == E.INVALID_TRANSACTION_TIMEOUT
    assert init(coord, timeout=60_000).error == E.NONE
    assert coord.init_producer_id("", TIMEOUT, None, 1, 0).error == E.INVALID_REQUEST


def test_add_partitions_opens_the_transaction_once() -> None:
    coord = coordinator()
    init(coord)
    out = coord.add_partitions("x", 1000, 0, [T], 5)
    assert out.error == E.NONE and out.transit.state == TxnState.ONGOING and out.transit.start_ms == 5
    # While the write is pending, everything else waits.
    assert coord.add_partitions("x", 1000, 0, [U], 6).error == E.CONCURRENT_TRANSACTIONS
    assert coord.end_txn("x", 1000, 0, True, 6).error == E.CONCURRENT_TRANSACTIONS
    apply(coord, out.transit)
    same = coord.add_partitions("x", 1000, 0, [T], 7)
    assert same.error == E.NONE and same.transit is None  # already in: no write
    more = coord.add_partitions("x", 1000, 0, [U], 8)
    assert more.transit.partitions == {T, U} and more.transit.start_ms == 5
    apply(coord, more.transit)
    assert coord.verify_partition("x", 1000, 0, U) == E.NONE
    assert coord.verify_partition("x", 1000, 0, ("v", 0)) == E.INVALID_TXN_STATE
    assert coord.producer_in_transaction(1000, 0, T) == E.NONE
    assert coord.producer_in_transaction(1000, 0, ("v", 0)) == E.INVALID_TXN_STATE


def test_add_partitions_errors() -> None:
    coord = coordinator()
    init(coord)
    assert coord.add_partitions("x", 1000, 1, [T], 0).error == E.PRODUCER_FENCED
    assert coord.add_partitions("x", 999, 0, [T], 0).error == E.INVALID_PRODUCER_ID_MAPPING
    assert coord.add_partitions("nope", 1000, 0, [T], 0).error == E.INVALID_PRODUCER_ID_MAPPING
    assert coord.add_partitions(None, 1000, 0, [T], 0).error == E.INVALID_REQUEST


def test_commit_goes_through_prepare_then_complete() -> None:
    coord = coordinator()
    init(coord)
    apply(coord, coord.add_partitions("x", 1000, 0, [T, U], 1).transit)
    prepare = coord.end_txn("x", 1000, 0, True, 2).transit
    assert prepare.state == TxnState.PREPARE_COMMIT and prepare.partitions == {T, U}
    apply(coord, prepare)
    # The client retries EndTxn while markers are written.
    assert coord.end_txn("x", 1000, 0, True, 3).error == E.CONCURRENT_TRANSACTIONS
    assert coord.end_txn("x", 1000, 0, False, 3).error == E.INVALID_TXN_STATE
    assert coord.add_partitions("x", 1000, 0, [T], 3).error == E.CONCURRENT_TRANSACTIONS
    complete = coord.prepare_complete("x", 4)
    assert complete.state == TxnState.COMPLETE_COMMIT and complete.partitions == frozenset()
    apply(coord, complete)
    assert coord.end_txn("x", 1000, 0, True, 5).error == E.NONE  # a retry of a finished commit
    assert coord.end_txn("x", 1000, 0, False, 5).error == E.INVALID_TXN_STATE
    # The next transaction starts from CompleteCommit.
    nxt = coord.add_partitions("x", 1000, 0, [U], 6).transit
    assert nxt.state == TxnState.ONGOING and nxt.start_ms == 6 and nxt.partitions == {U}


def test_abort_and_end_txn_without_a_transaction() -> None:
    coord = coordinator()
    init(coord)
    assert coord.end_txn("x", 1000, 0, True, 1).error == E.INVALID_TXN_STATE  # Empty
    apply(coord, coord.add_partitions("x", 1000, 0, [T], 1).transit)
    abort = coord.end_txn("x", 1000, 0, False, 2).transit
    assert abort.state == TxnState.PREPARE_ABORT and abort.producer_epoch == 0
    apply(coord, abort)
    apply(coord, coord.prepare_complete("x", 3))
    assert state(coord) == TxnState.COMPLETE_ABORT
    assert coord.end_txn("x", 1000, 0, False, 4).error == E.NONE


def test_init_on_an_ongoing_transaction_fences_and_aborts_it() -> None:
    coord = coordinator()
    init(coord)
    apply(coord, coord.add_partitions("x", 1000, 0, [T], 1).transit)
    zombie_fence = init(coord, now=2)  # a new producer instance with the same transactional id
    assert zombie_fence.error == E.CONCURRENT_TRANSACTIONS and zombie_fence.abort
    assert zombie_fence.transit.state == TxnState.PREPARE_ABORT and zombie_fence.transit.producer_epoch == 1
    # The old producer (epoch 0) is fenced from now on.
    assert coord.end_txn("x", 1000, 0, True, 3).error == E.PRODUCER_FENCED
    assert coord.add_partitions("x", 1000, 0, [U], 3).error == E.PRODUCER_FENCED
    assert init(coord, now=3).error == E.CONCURRENT_TRANSACTIONS  # markers not yet written
    apply(coord, coord.prepare_complete("x", 4))
    done = init(coord, now=5)
    assert (done.error, done.producer_id, done.producer_epoch) == (E.NONE, 1000, 2)


def test_timed_out_transaction_is_aborted_with_a_bumped_epoch() -> None:
    coord = coordinator()
    init(coord)
    assert coord.next_timeout() is None
    apply(coord, coord.add_partitions("x", 1000, 0, [T], 100).transit)
    assert coord.next_timeout() == 100 + TIMEOUT
    assert coord.abort_timed_out(100 + TIMEOUT - 1) == []
    [abort] = coord.abort_timed_out(100 + TIMEOUT)
    assert abort.state == TxnState.PREPARE_ABORT and abort.producer_epoch == 1
    assert coord.next_timeout() is None  # pending: not aborted twice
    apply(coord, abort)
    assert coord.end_txn("x", 1000, 0, True, 100 + TIMEOUT + 1).error == E.PRODUCER_FENCED
    assert coord.pending_markers() and coord.pending_markers()[0].state == TxnState.PREPARE_ABORT
    apply(coord, coord.prepare_complete("x", 100 + TIMEOUT + 2))
    assert coord.pending_markers() == []


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    coord = coordinator()
    init(coord)
    coord.txns["x"].producer_epoch = EPOCH_EXHAUSTED
    assert coord.needs_new_producer_id("x", None)
    rotated = init(coord, new_pid=2000)
    assert (rotated.producer_id, rotated.producer_epoch) == (2000, 0)
    assert coord.txns["x"].last_producer_id == 1000


def test_write_failure_leaves_the_state_as_it_was() -> None:
    coord = coordinator()
    init(coord)
    transit = coord.add_partitions("x", 1000, 0, [T], 1).transit
    coord.abandon(transit)
    assert state(coord) == TxnState.EMPTY and coord.txns["x"].pending is None
    # A brand-new id whose first write failed is forgotten.
    first = coord.init_producer_id("y", TIMEOUT, None, 5, 0)
    coord.abandon(first.transit)
    assert "y" not in coord.txns


def test_idle_ids_expire() -> None:
    coord = coordinator(id_expiration_ms=1000)
    init(coord, now=0)
    apply(coord, coord.add_partitions("x", 1000, 0, [T], 0).transit)
    assert coord.expire_ids(10_000) == []  # an open transaction never expires
    apply(coord, coord.end_txn("x", 1000, 0, True, 10).transit)
    apply(coord, coord.prepare_complete("x", 20))
    assert coord.expire_ids(1019) == []
    [dead] = coord.expire_ids(1020)
    assert dead.state == TxnState.DEAD
    apply(coord, dead)
    assert "x" not in coord.txns


def test_load_replays_the_last_record() -> None:
    coord = coordinator()
    transit = TxnTransit("x", 7, -1, 3, -1, TIMEOUT, TxnState.PREPARE_COMMIT, frozenset({T}), 5, 6)
    coord.load(transit, "x")
    txn = coord.txns["x"]
    assert (txn.producer_id, txn.producer_epoch, txn.state, txn.partitions) == (7, 3, TxnState.PREPARE_COMMIT, {T})
    assert [t.transactional_id for t in coord.pending_markers()] == ["x"]
    coord.load(None, "x")
    assert "x" not in coord.txns


def test_illegal_transitions_raise() -> None:
    coord = coordinator()
    init(coord)
    txn = coord.txns["x"]
    with pytest.raises(IllegalTxnTransitionError):
        txn._transit(TxnState.PREPARE_COMMIT, now_ms=0)  # Empty -> PrepareCommit is not allowed
    assert [s.code for s in TxnState] == list(range(8))


def test_list_and_describe() -> None:
    coord = coordinator()
    init(coord, txn_id="a", new_pid=1)
    init(coord, txn_id="b", new_pid=2)
    apply(coord, coord.add_partitions("b", 2, 0, [T], 0).transit)
    assert [t.transactional_id for t in coord.list(["Ongoing"])] == ["b"]
    assert [t.transactional_id for t in coord.list([], [1])] == ["a"]
    assert coord.describe("b").partitions == {T}
