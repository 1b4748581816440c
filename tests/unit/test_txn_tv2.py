"""Transaction version 2 (KIP-890 part 2) in the transaction coordinator, with explicit time: every EndTxn
bumps the epoch, retries get the current id and epoch, older epochs are fenced, the producer id rotates past
an exhausted epoch, and the transaction log keeps what a restart needs."""

from __future__ import annotations

from broker.services.transactions import transit_from_value, transit_value
from coordinator.txn import EPOCH_EXHAUSTED, TransactionCoordinator, TxnConfig, TxnState
from protocol.header import ErrorCode as E
from protocol.txn_records import decode_txn_value

T = ("t", 0)


def started(epoch_offset: int = 0) -> TransactionCoordinator:
    coord = TransactionCoordinator(TxnConfig())
    result = coord.init_producer_id("x", 10_000, None, 1000, 0)
    coord.complete(result.transit)
    txn = coord.txns["x"]
    txn.producer_epoch += epoch_offset
    return coord


def add(coord: TransactionCoordinator, epoch: int, now: int = 1, tp: tuple[str, int] = T) -> E:
    outcome = coord.add_partitions("x", coord.txns["x"].producer_id, epoch, [tp], now)
    if outcome.transit is not None:
        coord.complete(outcome.transit)
    return outcome.error


def end(coord: TransactionCoordinator, epoch: int, commit: bool = True, pid: int | None = None, new_pid=None):
    outcome = coord.end_txn("x", coord.txns["x"].producer_id if pid is None else pid, epoch, commit, 5, tv2=True,
                            new_producer_id=new_pid)
    if outcome.transit is not None:
        coord.complete(outcome.transit)
    return outcome


def finish(coord: TransactionCoordinator) -> None:
    coord.complete(coord.prepare_complete("x", 6))


def test_every_end_bumps_the_epoch_and_returns_it() -> None:
    coord = started()
    assert add(coord, 0) == E.NONE
    outcome = end(coord, 0)
    assert (outcome.error, outcome.producer_id, outcome.producer_epoch) == (E.NONE, 1000, 1)
    assert outcome.transit.state is TxnState.PREPARE_COMMIT and outcome.transit.producer_epoch == 1
    assert outcome.transit.client_transaction_version == 2  # the markers carry epoch 1
    finish(coord)
    txn = coord.txns["x"]
    assert (txn.state, txn.producer_epoch, txn.last_producer_epoch) == (TxnState.COMPLETE_COMMIT, 1, 0)
    # The next transaction at epoch 1; the old epoch is fenced.
    assert add(coord, 0) == E.PRODUCER_FENCED
    assert add(coord, 1) == E.NONE
    assert end(coord, 1, commit=False).producer_epoch == 2


def test_a_retried_end_gets_the_current_epoch() -> None:
    coord = started()
    add(coord, 0)
    end(coord, 0)
    # Retry while PrepareCommit is not complete: still being finished.
    assert end(coord, 0).error == E.CONCURRENT_TRANSACTIONS
    finish(coord)
    retry = end(coord, 0)
    assert (retry.error, retry.producer_id, retry.producer_epoch, retry.transit) == (E.NONE, 1000, 1, None)
    assert end(coord, 0, commit=False).error == E.INVALID_TXN_STATE  # a retry cannot change the outcome
    assert end(coord, 5).error == E.PRODUCER_FENCED


def test_abort_without_a_transaction_bumps_too() -> None:
    coord = started()
    outcome = end(coord, 0, commit=False)  # Empty: nothing was written, the epoch moves anyway
    assert (outcome.error, outcome.producer_epoch, outcome.transit.state) == (E.NONE, 1, TxnState.PREPARE_ABORT)
    finish(coord)
    assert end(coord, 1, commit=True).error == E.INVALID_TXN_STATE


def test_producer_id_rotates_past_an_exhausted_epoch() -> None:
    coord = started(epoch_offset=EPOCH_EXHAUSTED)
    epoch = coord.txns["x"].producer_epoch
    assert add(coord, epoch) == E.NONE
    assert coord.end_txn_needs_producer_id("x", True)
    outcome = end(coord, epoch, new_pid=2000)
    assert (outcome.producer_id, outcome.producer_epoch) == (2000, 0)
    finish(coord)
    txn = coord.txns["x"]
    assert (txn.producer_id, txn.producer_epoch, txn.last_producer_id) == (2000, 0, 1000)
    # The client's retry with its old id and last epoch is answered with the new ones.
    retry = end(coord, epoch, pid=1000)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, 2000, 0)


def test_tv1_end_keeps_the_epoch() -> None:
    coord = started()
    add(coord, 0)
    outcome = coord.end_txn("x", 1000, 0, True, 5)
    coord.complete(outcome.transit)
    finish(coord)
    assert coord.txns["x"].producer_epoch == 0


def test_the_log_keeps_the_client_version_and_next_producer_id() -> None:
    coord = started(epoch_offset=EPOCH_EXHAUSTED)
    epoch = coord.txns["x"].producer_epoch
    add(coord, epoch)
    outcome = coord.end_txn("x", 1000, epoch, True, 5, tv2=True, new_producer_id=2000)
    data = transit_value(outcome.transit)
    assert data[:2] == b"\x00\x01"  # TransactionLogValue v1, with its tagged fields
    value = decode_txn_value(data)
    assert (value.client_transaction_version, value.next_producer_id) == (2, 2000)
    loaded = transit_from_value("x", value)
    assert (loaded.client_transaction_version, loaded.next_producer_id, loaded.producer_epoch) == (2, 2000, epoch + 1)


def test_timeout_abort_of_a_tv2_transaction_bumps_once() -> None:
    coord = started()
    add(coord, 0)
    end(coord, 0)
    finish(coord)
    add(coord, 1, now=100)
    [transit] = coord.abort_timed_out(100 + 10_000)
    assert (transit.state, transit.producer_epoch, transit.last_producer_epoch) == (TxnState.PREPARE_ABORT, 2, 1)
