"""Kafka's transaction coordinator as pure logic: transactional id -> producer id and epoch, the transaction
state machine, and Kafka's two phases (`prepare_*` returns an immutable transit and sets a pending state; the
shell writes the transit to `__transaction_state` and calls `complete` only after the write is durable).

Follows TransactionCoordinator.scala / TransactionMetadata.scala of Kafka 3.x (transaction version 1: the
epoch is bumped by InitProducerId and by fencing, not by every transaction). Time is passed in; markers and
log writes are the shell's business (broker/services/transactions.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum

from protocol.header import ErrorCode

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 0x7FFF
EPOCH_EXHAUSTED = MAX_EPOCH - 1  # Kafka's isProducerEpochExhausted: an epoch this high gets a new producer id

TopicPartition = tuple[str, int]


class TxnState(Enum):
    """Kafka's TransactionState; the value is its name, `code` the byte stored in the transaction log."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    @property
    def code(self) -> int:
        return _CODES[self]

    @classmethod
    def from_code(cls, code: int) -> TxnState:
        for state, c in _CODES.items():
            if c == code:
                return state
        raise ValueError(f"unknown transaction state code {code}")


_CODES = {TxnState.EMPTY: 0, TxnState.ONGOING: 1, TxnState.PREPARE_COMMIT: 2, TxnState.PREPARE_ABORT: 3,
          TxnState.COMPLETE_COMMIT: 4, TxnState.COMPLETE_ABORT: 5, TxnState.DEAD: 6,
          TxnState.PREPARE_EPOCH_FENCE: 7}

# target -> states it may be entered from (Kafka's TransactionState.validPreviousStates)
VALID_PREVIOUS_STATES: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset({TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                 TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}

_COMPLETED = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})


class IllegalTxnTransitionError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """What is written to the transaction log; the metadata takes it over once the write is durable."""

    transactional_id: str
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ms: int
    update_ms: int


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    pending: TxnState | None = None  # the state of a transit being written

    def _transit(self, state: TxnState, *, producer_id: int | None = None, epoch: int | None = None,
                 last_epoch: int | None = None, timeout_ms: int | None = None,
                 partitions: Iterable[TopicPartition] | None = None, start_ms: int | None = None,
                 now_ms: int) -> TxnTransit:
        if self.pending is not None:
            raise IllegalTxnTransitionError(f"{self.transactional_id}: {self.pending.value} is still being written")
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalTxnTransitionError(
                f"{self.transactional_id}: cannot go from {self.state.value} to {state.value}")
        self.pending = state
        new_pid = self.producer_id if producer_id is None else producer_id
        return TxnTransit(
            self.transactional_id, new_pid,
            self.producer_id if new_pid != self.producer_id else self.last_producer_id,
            self.producer_epoch if epoch is None else epoch,
            self.last_producer_epoch if last_epoch is None else last_epoch,
            self.timeout_ms if timeout_ms is None else timeout_ms, state,
            frozenset(self.partitions if partitions is None else partitions),
            self.start_ms if start_ms is None else start_ms, now_ms)

    def complete(self, transit: TxnTransit) -> None:
        if self.pending is not transit.state:
            raise IllegalTxnTransitionError(
                f"{self.transactional_id}: completing {transit.state.value} while pending "
                f"{self.pending.value if self.pending else None}")
        self.producer_id, self.last_producer_id = transit.producer_id, transit.last_producer_id
        self.producer_epoch, self.last_producer_epoch = transit.producer_epoch, transit.last_producer_epoch
        self.timeout_ms, self.state = transit.timeout_ms, transit.state
        self.partitions = set(transit.partitions)
        self.start_ms, self.update_ms = transit.start_ms, transit.update_ms
        self.pending = None

    def abandon(self) -> None:
        """The transit's write failed: stay as we were."""
        self.pending = None

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= EPOCH_EXHAUSTED


@dataclass(frozen=True, slots=True)
class InitResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    transit: TxnTransit | None = None  # write it (then complete) before answering
    abort: bool = False  # the transit aborts an ongoing transaction: answer CONCURRENT_TRANSACTIONS after


@dataclass(frozen=True, slots=True)
class Outcome:
    error: ErrorCode
    transit: TxnTransit | None = None


@dataclass(frozen=True, slots=True)
class TxnConfig:
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms


class TransactionCoordinator:
    def __init__(self, config: TxnConfig) -> None:
        self.config = config
        self.txns: dict[str, TxnMetadata] = {}

    # == InitProducerId ==========================================================================
    def needs_new_producer_id(self, transactional_id: str, expected_epoch: int | None) -> bool:
        """Whether InitProducerId will need a fresh producer id (unknown id, or an exhausted epoch)."""
        txn = self.txns.get(transactional_id)
        if txn is None:
            return True
        return txn.epoch_exhausted and txn.state in _COMPLETED and \
            (expected_epoch is None or expected_epoch == txn.producer_epoch)

    def init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None,
                         new_producer_id: int | None, now_ms: int) -> InitResult:
        """Kafka's handleInitProducerId for a transactional id. `expected` is the (id, epoch) a producer
        that already has one sends (KIP-360); `new_producer_id` is a fresh id when needs_new_producer_id."""
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        txn = self.txns.get(transactional_id)
        if txn is None:
            if new_producer_id is None:
                raise ValueError("a new transactional id needs a producer id")
            txn = self.txns[transactional_id] = TxnMetadata(transactional_id, new_producer_id,
                                                            timeout_ms=timeout_ms, update_ms=now_ms)
        if txn.pending is not None:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not self._valid_expected(txn, expected):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if txn.state in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if txn.state is TxnState.ONGOING:
            # Fence the current producer and abort its transaction; the new one retries until it is done.
            transit = self._fence_and_abort(txn, now_ms)
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS, transit=transit, abort=True)
        if txn.state in (TxnState.DEAD, TxnState.PREPARE_EPOCH_FENCE):
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        expected_epoch = expected[1] if expected is not None else None
        if txn.epoch_exhausted and (expected_epoch is None or expected_epoch == txn.producer_epoch):
            if new_producer_id is None:
                raise ValueError("an exhausted epoch needs a new producer id")
            # Kafka's prepareProducerIdRotation: a new id starting at epoch 0.
            transit = txn._transit(TxnState.EMPTY, producer_id=new_producer_id, epoch=0,
                                   last_epoch=txn.producer_epoch if expected is not None else NO_PRODUCER_EPOCH,
                                   timeout_ms=timeout_ms, partitions=(), start_ms=-1, now_ms=now_ms)
        else:
            if expected_epoch is None or txn.producer_epoch == NO_PRODUCER_EPOCH or \
                    expected_epoch == txn.producer_epoch:
                epoch = txn.producer_epoch + 1
                last = txn.producer_epoch if expected_epoch is not None else NO_PRODUCER_EPOCH
            else:  # a retry of an InitProducerId that already bumped (expected == last epoch)
                epoch, last = txn.producer_epoch, txn.last_producer_epoch
            transit = txn._transit(TxnState.EMPTY, epoch=epoch, last_epoch=last, timeout_ms=timeout_ms,
                                   partitions=(), start_ms=-1, now_ms=now_ms)
        return InitResult(ErrorCode.NONE, transit.producer_id, transit.producer_epoch, transit)

    @staticmethod
    def _valid_expected(txn: TxnMetadata, expected: tuple[int, int]) -> bool:
        """Kafka's isValidProducerId: the producer knows the current id and epoch, or the last ones (a retry)."""
        pid, epoch = expected
        if txn.producer_epoch == NO_PRODUCER_EPOCH:
            return True  # just created: an idempotent producer moving to a transactional id
        if pid == txn.producer_id:
            return epoch in (txn.producer_epoch, txn.last_producer_epoch)
        return pid == txn.last_producer_id and epoch == txn.last_producer_epoch

    # == AddPartitionsToTxn / AddOffsetsToTxn ======================================================
    def _check_producer(self, transactional_id: str | None, producer_id: int, epoch: int
                        ) -> tuple[ErrorCode, TxnMetadata | None]:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        txn = self.txns.get(transactional_id)
        if txn is None or txn.state is TxnState.DEAD:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if txn.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED, None
        if txn.pending is not None or txn.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                                                    TxnState.PREPARE_EPOCH_FENCE):
            return ErrorCode.CONCURRENT_TRANSACTIONS, None
        return ErrorCode.NONE, txn

    def add_partitions(self, transactional_id: str | None, producer_id: int, epoch: int,
                       partitions: Iterable[TopicPartition], now_ms: int) -> Outcome:
        error, txn = self._check_producer(transactional_id, producer_id, epoch)
        if txn is None:
            return Outcome(error)
        wanted = set(partitions)
        if txn.state is TxnState.ONGOING and wanted <= txn.partitions:
            return Outcome(ErrorCode.NONE)  # nothing new: no write
        start = now_ms if txn.state in _COMPLETED else txn.start_ms
        return Outcome(ErrorCode.NONE, txn._transit(TxnState.ONGOING, partitions=txn.partitions | wanted,
                                                    start_ms=start, now_ms=now_ms))

    def verify_partition(self, transactional_id: str | None, producer_id: int, epoch: int,
                         partition: TopicPartition) -> ErrorCode:
        """KIP-890 verification (AddPartitionsToTxn v4 verify_only): is the partition in the producer's
        ongoing transaction?"""
        error, txn = self._check_producer(transactional_id, producer_id, epoch)
        if txn is None:
            return error
        if txn.state is not TxnState.ONGOING or partition not in txn.partitions:
            return ErrorCode.INVALID_TXN_STATE
        return ErrorCode.NONE

    def producer_in_transaction(self, producer_id: int, epoch: int, partition: TopicPartition) -> ErrorCode:
        """The produce path's check for a transactional batch (by producer id, the batch carries no
        transactional id)."""
        for txn in self.txns.values():
            if txn.producer_id == producer_id:
                if epoch < txn.producer_epoch:
                    return ErrorCode.INVALID_PRODUCER_EPOCH
                if txn.state is not TxnState.ONGOING or partition not in txn.partitions:
                    return ErrorCode.INVALID_TXN_STATE
                return ErrorCode.NONE
        return ErrorCode.INVALID_TXN_STATE

    # == EndTxn =================================================================================
    def end_txn(self, transactional_id: str | None, producer_id: int, epoch: int, commit: bool,
                now_ms: int) -> Outcome:
        """Kafka's handleEndTransaction from a client."""
        if not transactional_id:
            return Outcome(ErrorCode.INVALID_REQUEST)
        txn = self.txns.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return Outcome(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if txn.producer_epoch != epoch:
            return Outcome(ErrorCode.PRODUCER_FENCED)
        if txn.pending is not None:
            return Outcome(ErrorCode.CONCURRENT_TRANSACTIONS)
        state = txn.state
        if state is TxnState.ONGOING:
            target = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            return Outcome(ErrorCode.NONE, txn._transit(target, now_ms=now_ms))
        if state is TxnState.COMPLETE_COMMIT:
            return Outcome(ErrorCode.NONE if commit else ErrorCode.INVALID_TXN_STATE)
        if state is TxnState.COMPLETE_ABORT:
            return Outcome(ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.NONE)
        if state is TxnState.PREPARE_COMMIT:
            return Outcome(ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE)
        if state is TxnState.PREPARE_ABORT:
            return Outcome(ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.CONCURRENT_TRANSACTIONS)
        return Outcome(ErrorCode.INVALID_TXN_STATE)  # Empty, Dead, PrepareEpochFence

    def _fence_and_abort(self, txn: TxnMetadata, now_ms: int) -> TxnTransit:
        """Kafka's prepareFenceProducerEpoch + endTransaction(abort, isFromClient=false): PrepareAbort with
        the epoch bumped, so the old producer's writes and markers are refused from now on."""
        epoch = txn.producer_epoch + 1 if txn.producer_epoch < MAX_EPOCH else txn.producer_epoch
        return txn._transit(TxnState.PREPARE_ABORT, epoch=epoch, last_epoch=NO_PRODUCER_EPOCH, now_ms=now_ms)

    def prepare_complete(self, transactional_id: str, now_ms: int) -> TxnTransit | None:
        """After every marker is written: CompleteCommit/CompleteAbort with no partitions."""
        txn = self.txns.get(transactional_id)
        if txn is None or txn.pending is not None:
            return None
        target = {TxnState.PREPARE_COMMIT: TxnState.COMPLETE_COMMIT,
                  TxnState.PREPARE_ABORT: TxnState.COMPLETE_ABORT}.get(txn.state)
        if target is None:
            return None
        return txn._transit(target, partitions=(), now_ms=now_ms)

    # == the writes' second phase ===============================================================
    def complete(self, transit: TxnTransit) -> None:
        txn = self.txns[transit.transactional_id]
        txn.complete(transit)
        if transit.state is TxnState.DEAD:
            del self.txns[transit.transactional_id]

    def abandon(self, transit: TxnTransit) -> None:
        txn = self.txns.get(transit.transactional_id)
        if txn is None:
            return
        txn.abandon()
        if txn.state is TxnState.EMPTY and txn.producer_epoch == NO_PRODUCER_EPOCH:
            del self.txns[transit.transactional_id]  # a new id whose first write failed never existed

    # == timers =================================================================================
    def next_timeout(self) -> int | None:
        deadlines = [t.start_ms + t.timeout_ms for t in self.txns.values()
                     if t.state is TxnState.ONGOING and t.pending is None]
        return min(deadlines, default=None)

    def abort_timed_out(self, now_ms: int) -> list[TxnTransit]:
        """Kafka's abortTimedOutTransactions: fence and abort every transaction open for longer than its
        timeout, without help from the producer."""
        transits = []
        for txn in list(self.txns.values()):
            if txn.state is TxnState.ONGOING and txn.pending is None and now_ms >= txn.start_ms + txn.timeout_ms:
                log.info("aborting transaction of %s (producer %d, epoch %d): open for longer than %d ms",
                         txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.timeout_ms)
                transits.append(self._fence_and_abort(txn, now_ms))
        return transits

    def expire_ids(self, now_ms: int) -> list[TxnTransit]:
        """transactional.id.expiration.ms: idle ids (no open transaction) are forgotten (a tombstone)."""
        transits = []
        for txn in list(self.txns.values()):
            if txn.state in _COMPLETED and txn.pending is None and \
                    now_ms - txn.update_ms >= self.config.id_expiration_ms:
                transits.append(txn._transit(TxnState.DEAD, partitions=(), now_ms=now_ms))
        return transits

    def pending_markers(self) -> list[TxnTransit]:
        """Transactions in PrepareCommit/PrepareAbort (after a restart): their markers must be (re)sent."""
        return [self._as_transit(t) for t in self.txns.values()
                if t.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT) and t.pending is None]

    @staticmethod
    def _as_transit(txn: TxnMetadata) -> TxnTransit:
        return TxnTransit(txn.transactional_id, txn.producer_id, txn.last_producer_id, txn.producer_epoch,
                          txn.last_producer_epoch, txn.timeout_ms, txn.state, frozenset(txn.partitions),
                          txn.start_ms, txn.update_ms)

    # == load ===================================================================================
    def load(self, transit: TxnTransit | None, transactional_id: str) -> None:
        """Replay one record of `__transaction_state` (None: a tombstone)."""
        if transit is None or transit.state is TxnState.DEAD:
            self.txns.pop(transactional_id, None)
            return
        txn = TxnMetadata(transactional_id, transit.producer_id)
        txn.pending = transit.state
        txn.state = transit.state  # replayed records are trusted: no transition check
        txn.complete(transit)
        self.txns[transactional_id] = txn

    def unload(self, belongs: Callable[[str], bool]) -> int:
        """This coordinator lost the `__transaction_state` partition of the ids for which `belongs(id)`:
        forget them (the new coordinator loads them from the log). Returns how many went."""
        gone = [txn_id for txn_id in self.txns if belongs(txn_id)]
        for txn_id in gone:
            del self.txns[txn_id]
        return len(gone)

    # == admin ==================================================================================
    def describe(self, transactional_id: str) -> TxnMetadata | None:
        return self.txns.get(transactional_id)

    def list(self, states: Iterable[str] = (), producer_ids: Iterable[int] = ()) -> list[TxnMetadata]:
        wanted_states, wanted_pids = set(states), set(producer_ids)
        return [t for t in self.txns.values()
                if (not wanted_states or t.state.value in wanted_states)
                and (not wanted_pids or t.producer_id in wanted_pids)]
