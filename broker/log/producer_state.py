"""Per-partition state of idempotent and transactional producers: epoch, sequence numbers, the last 5
batches, the open transaction and the aborted-transaction index.

Pure logic after Kafka's ProducerStateManager / ProducerAppendInfo / ProducerStateEntry. `check`
validates a batch header against the current state without changing it and says whether to append it,
acknowledge it as a duplicate (with the offsets it got the first time), or reject it; `commit` records an
appended batch (a transactional one opens the producer's transaction at its base offset).
`check_marker` / `complete_txn` do the same for transaction markers (control batches): completing an
aborted transaction records it in the aborted index (Kafka's per-segment .txnindex, kept here as one
list ordered by marker offset), which `aborted_transactions` searches as Kafka's
collectAbortedTransactions does. `first_unstable_offset` / `last_stable_offset` give the LSO.
`start_verification` remembers, while a producer's first transactional batch here is being verified (KIP-890),
the lowest sequence seen, so that a later batch cannot be appended ahead of an earlier one whose verification
failed (Kafka's VerificationStateEntry; in memory only, as Kafka's).

Time is passed in. The state is rebuilt from a snapshot plus the batch headers after it (`replay`; a
control batch's type is in its record key, so the caller passes a reader for those only).
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

INT32_MAX = 0x7FFFFFFF
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_COORDINATOR_EPOCH = -1
BATCHES_KEPT = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN, also the client's max in flight
SNAPSHOT_VERSION = 2  # 1: producers only; 2: + coordinator epochs, open transactions, aborted index
CONTROL_ABORT = 0  # Kafka's ControlRecordType (protocol.records has the same values)
CONTROL_COMMIT = 1


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: sequences wrap from INT32 max to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_KEPT))
    last_timestamp: int = -1
    coordinator_epoch: int = NO_COORDINATOR_EPOCH  # of the last transaction marker written for it
    current_txn_first_offset: int | None = None  # first offset of its open transaction here, if any

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """Kafka's AbortedTxn (a .txnindex entry): an aborted transaction's range in this partition and the
    LSO right after its marker was written."""

    producer_id: int
    first_offset: int
    last_offset: int  # the abort marker's offset
    last_stable_offset: int


@dataclass(slots=True)
class VerificationState:
    """Kafka's VerificationStateEntry: a producer's transactional batches being verified with the transaction
    coordinator before its first one here is appended; no batch of its above `lowest_seq` is appended until
    then (the batch at `lowest_seq` may have failed its verification and be retried)."""

    created_ms: int
    lowest_seq: int
    epoch: int
    supports_epoch_bump: bool  # transaction version 2: its markers carry the next transaction's epoch

    def update(self, first_seq: int, epoch: int) -> None:
        """Kafka's maybeUpdateLowestSequenceAndEpoch: a lower sequence at the same epoch, or a newer epoch (its
        sequences start again)."""
        if epoch == self.epoch and first_seq < self.lowest_seq:
            self.lowest_seq = first_seq
        if epoch > self.epoch:
            self.epoch, self.lowest_seq = epoch, first_seq


# (control type, coordinator epoch) of a stored control batch, or None when it holds no end marker
MarkerReader = Callable[[Any], "tuple[int, int] | None"]


class Verdict(Enum):
    APPEND = "append"
    DUPLICATE = "duplicate"
    REJECT = "reject"


@dataclass(frozen=True, slots=True)
class Check:
    verdict: Verdict
    error: str | None = None  # Kafka error name when rejected
    message: str | None = None
    duplicate: BatchMetadata | None = None


APPEND = Check(Verdict.APPEND)


class ProducerStateManager:
    def __init__(self, partition: str = "") -> None:
        self.partition = partition
        self.producers: dict[int, ProducerEntry] = {}
        # Open transactions, first offset -> producer id, in offset order (appends come in offset order;
        # a snapshot's are inserted sorted): the first key is the first unstable offset.
        self.ongoing_txns: dict[int, int] = {}
        self.aborted: list[AbortedTxn] = []  # ordered by last_offset (marker offset)
        self.verifying: dict[int, VerificationState] = {}  # producer id -> its transaction being verified

    # --- data batches ---------------------------------------------------------------------------------

    def check(self, producer_id: int, epoch: int, first_seq: int, last_offset_delta: int,
              is_transactional: bool = False) -> Check:
        """Validate a client batch from its header fields (Kafka's analyzeAndValidateProducerState and
        ProducerAppendInfo.appendDataBatch): duplicate, epoch, a verification in progress, sequence, then
        transaction state."""
        if producer_id == NO_PRODUCER_ID:
            return APPEND
        last_seq = increment_sequence(first_seq, last_offset_delta)
        entry = self.producers.get(producer_id)
        if entry is not None:
            duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
            if duplicate is not None:
                return Check(Verdict.DUPLICATE, duplicate=duplicate)
            if epoch < entry.epoch:
                return Check(Verdict.REJECT, "INVALID_PRODUCER_EPOCH",
                             f"Epoch of producer {producer_id} in {self.partition} is {epoch}, which is smaller "
                             f"than the last seen epoch {entry.epoch}")
        verifying = self.verifying.get(producer_id)
        if verifying is not None and first_seq > verifying.lowest_seq:
            # An earlier batch of this transaction is still to be verified and appended (its verification may
            # have failed and be retried): this one must not get ahead of it.
            return Check(Verdict.REJECT, "OUT_OF_ORDER_SEQUENCE_NUMBER",
                         f"Out of order sequence number for producer {producer_id} in {self.partition}: "
                         f"{first_seq} (incoming seq. number), {verifying.lowest_seq} (earliest seen sequence)")
        if entry is None:
            # A producer this partition has no state for (never seen, or expired): any first sequence is
            # accepted, as Kafka 3.x and 4.x do (ProducerAppendInfo.checkSequence with no current epoch).
            return APPEND
        if epoch != entry.epoch:
            if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                return Check(Verdict.REJECT, "OUT_OF_ORDER_SEQUENCE_NUMBER",
                             f"Invalid sequence number for new epoch of producer {producer_id} in "
                             f"{self.partition}: {epoch} (request epoch), {first_seq} (seq. number), "
                             f"{entry.epoch} (current producer epoch)")
        elif entry.epoch != NO_PRODUCER_EPOCH and not in_sequence(entry.last_seq, first_seq):
            return Check(Verdict.REJECT, "OUT_OF_ORDER_SEQUENCE_NUMBER",
                         f"Out of order sequence number for producer {producer_id} in {self.partition}: "
                         f"{first_seq} (incoming seq. number), {entry.last_seq} (current end sequence number)")
        if entry.current_txn_first_offset is not None and not is_transactional:
            # Received a non-transactional message while a transaction is active.
            return Check(Verdict.REJECT, "INVALID_TXN_STATE",
                         f"Expected transactional write from producer {producer_id} in partition "
                         f"{self.partition}")
        return APPEND

    def commit(self, producer_id: int, epoch: int, first_seq: int, last_offset_delta: int, first_offset: int,
               timestamp: int, is_transactional: bool = False) -> None:
        """Record a batch appended at `first_offset` (also used when replaying the log). A transactional
        batch opens the producer's transaction at `first_offset` unless one is open already."""
        if producer_id == NO_PRODUCER_ID:
            return
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id)
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()  # a new epoch starts a new sequence space
        if first_seq != NO_SEQUENCE:
            entry.batches.append(BatchMetadata(first_seq, increment_sequence(first_seq, last_offset_delta),
                                               first_offset, first_offset + last_offset_delta, timestamp))
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        if is_transactional:
            self.verifying.pop(producer_id, None)  # its transaction has its first offset here
            if entry.current_txn_first_offset is None:
                entry.current_txn_first_offset = first_offset
                self.ongoing_txns[first_offset] = producer_id

    def start_verification(self, producer_id: int, epoch: int, first_seq: int, now_ms: int,
                           supports_epoch_bump: bool = False) -> None:
        """A transactional batch of a producer without an open transaction here at `epoch` goes to be verified
        (Kafka's UnifiedLog.maybeStartTransactionVerification): remember its sequence, the lowest of those
        being verified, until the producer's first transactional batch (or a marker) is appended."""
        if self.has_ongoing_transaction(producer_id, epoch):
            return
        state = self.verifying.get(producer_id)
        if state is None:
            self.verifying[producer_id] = VerificationState(now_ms, first_seq, epoch, supports_epoch_bump)
        else:
            state.update(first_seq, epoch)

    def check_coordinator_append(self, producer_id: int, epoch: int) -> str | None:
        """A coordinator's write for a producer (TxnOffsetCommit's batch on `__consumer_offsets`): no sequence to
        check, but an epoch older than the last this partition saw, from the producer or a marker, is refused
        (Kafka's ProducerAppendInfo.checkProducerEpoch for AppendOrigin.COORDINATOR). None to write it, else the
        Kafka error name."""
        entry = self.producers.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            return "INVALID_PRODUCER_EPOCH"
        return None

    def has_ongoing_transaction(self, producer_id: int, epoch: int) -> bool:
        """Kafka's UnifiedLog.hasOngoingTransaction: the producer has an open transaction here, at `epoch`
        (then a transactional batch needs no KIP-890 verification)."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset is not None and entry.epoch == epoch

    # --- transaction markers ----------------------------------------------------------------------------

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int | None = None
                     ) -> str | None:
        """Validate an end-transaction marker (ProducerAppendInfo.appendEndTxnMarker, transaction versions
        0/1): None to write it, else the Kafka error name. A producer without state or an open transaction
        here is fine: the marker then only updates its epochs."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return None
        if producer_epoch < entry.epoch:
            return "INVALID_PRODUCER_EPOCH"
        if coordinator_epoch is not None and entry.coordinator_epoch > coordinator_epoch:
            return "TRANSACTION_COORDINATOR_FENCED"
        return None

    def complete_txn(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                     marker_offset: int, timestamp: int) -> AbortedTxn | None:
        """Record a marker written at `marker_offset`: closes the producer's open transaction, if any; an
        aborted one goes to the aborted index (returned) with the LSO at completion (Kafka's
        ProducerStateManager.lastStableOffset(completedTxn) + completeTxn, LogSegment.updateTxnIndex)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id)
        aborted = None
        first = entry.current_txn_first_offset
        if first is not None:
            self.ongoing_txns.pop(first, None)
            if not commit:
                # The next incomplete transaction (of another producer; this one has no other), else the
                # offset after the marker.
                lso = next(iter(self.ongoing_txns), marker_offset + 1)
                aborted = AbortedTxn(producer_id, first, marker_offset, lso)
                self.aborted.append(aborted)
        # ProducerStateEntry.update(producerEpoch, coordinatorEpoch, lastTimestamp)
        if producer_epoch != entry.epoch:
            entry.epoch = producer_epoch
            entry.batches.clear()
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp = timestamp
        verifying = self.verifying.get(producer_id)
        # The transaction is complete: its verification is over, unless (transaction version 2) the marker
        # carries the epoch of the next transaction, whose first batch is being verified (Kafka's
        # isV2NextTransactionStarted).
        if verifying is not None and not (verifying.supports_epoch_bump and verifying.epoch == producer_epoch):
            del self.verifying[producer_id]
        return aborted

    # --- last stable offset and the aborted index -------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction (Kafka's firstUndecidedOffset; a single broker
        has no unreplicated completed transactions)."""
        return next(iter(self.ongoing_txns), None)

    def last_stable_offset(self, high_watermark: int, log_start_offset: int = 0) -> int:
        """Kafka's UnifiedLog LSO: the first unstable offset (not below the log start offset) when it is
        below the high watermark, else the high watermark."""
        first = next(iter(self.ongoing_txns), None)
        if first is None:
            return high_watermark
        return min(max(first, log_start_offset), high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[tuple[int, int]]:
        """(producer_id, first_offset) of the aborted transactions overlapping [fetch_offset, upper_bound)
        (Kafka's TransactionIndex.collectAbortedTxns over the segments from the fetch offset on)."""
        aborted = self.aborted
        if not aborted or aborted[-1].last_offset < fetch_offset:
            return []
        out = []
        for i in range(bisect_left(aborted, fetch_offset, key=_last_offset), len(aborted)):
            txn = aborted[i]
            if txn.first_offset < upper_bound:
                out.append((txn.producer_id, txn.first_offset))
            if txn.last_stable_offset >= upper_bound:
                break
        return out

    # --- replay, expiration, retention ------------------------------------------------------------------

    def replay(self, headers: Iterable[Any], read_marker: MarkerReader | None = None) -> int:
        """Apply stored batch headers (from the log) in order; returns how many were applied.

        Control batches carry their type (commit/abort) in their record key: `read_marker(header)` reads
        it as (control type, coordinator epoch), or None for a control batch without an end marker
        (emptied by compaction). It is called for control batches only; without it they are skipped."""
        n = 0
        for h in headers:
            if h.producer_id != NO_PRODUCER_ID:
                if not h.is_control:
                    self.commit(h.producer_id, h.producer_epoch, h.base_sequence, h.last_offset_delta,
                                h.base_offset, h.max_timestamp, getattr(h, "is_transactional", False))
                elif read_marker is not None:
                    marker = read_marker(h)
                    if marker is not None and marker[0] in (CONTROL_ABORT, CONTROL_COMMIT):
                        self.complete_txn(h.producer_id, h.producer_epoch, marker[0] == CONTROL_COMMIT,
                                          marker[1], h.base_offset, h.max_timestamp)
            n += 1
        return n

    def expire(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers whose last batch is older than producer.id.expiration.ms, unless they have an
        open transaction (Kafka's isProducerExpired)."""
        expired = [pid for pid, e in self.producers.items()
                   if e.current_txn_first_offset is None and now_ms - e.last_timestamp >= expiration_ms]
        for pid in expired:
            del self.producers[pid]
        # Verifications never followed by an append (Kafka's removeExpiredProducers drops them too).
        for pid in [pid for pid, v in self.verifying.items() if now_ms - v.created_ms >= expiration_ms]:
            del self.verifying[pid]
        return expired

    def remove_before(self, offset: int) -> None:
        """After DeleteRecords/retention moved the log start offset: forget the aborted transactions wholly
        below `offset` (Kafka deletes a segment's transaction index with the segment). Producers are kept,
        their data gone or not (Kafka's onLogStartOffsetIncremented since KIP-360): a producer whose records
        were deleted continues its sequence; producer.id.expiration.ms forgets it."""
        self.drop_aborted_before(offset)

    def drop_aborted_before(self, offset: int) -> None:
        """Forget the aborted transactions whose marker is below `offset`: their data is gone (retention, or
        the log cleaner, which removes aborted data and, later, the markers; Kafka rewrites the cleaned
        segments' .txnindex). A read_committed consumer must not be told of an abort whose marker it will
        never see: it would drop the producer's later data."""
        aborted = self.aborted
        if aborted and aborted[0].last_offset < offset:
            del aborted[:bisect_left(aborted, offset, key=_last_offset)]

    def last_batches(self) -> dict[int, tuple[int | None, int]]:
        """producer id -> (last offset of its last data batch, or None, epoch): the batches the log cleaner
        keeps, emptied if need be, so that a reload still knows the producer's last sequence (Kafka's
        lastRecordsOfActiveProducers)."""
        return {pid: (e.batches[-1].last_offset if e.batches else None, e.epoch) for pid, e in self.producers.items()}

    # --- snapshots ----------------------------------------------------------------------------------

    def snapshot(self, next_offset: int) -> bytes:
        """State as of `next_offset` (the log end offset it covers)."""
        return json.dumps({
            "version": SNAPSHOT_VERSION,
            "offset": next_offset,
            "producers": [
                {"producer_id": e.producer_id, "epoch": e.epoch, "last_timestamp": e.last_timestamp,
                 "coordinator_epoch": e.coordinator_epoch, "current_txn_first_offset": e.current_txn_first_offset,
                 "batches": [[b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp]
                             for b in e.batches]}
                for e in self.producers.values()
            ],
            "aborted": [[a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset] for a in self.aborted],
        }, separators=(",", ":")).encode()

    @classmethod
    def from_snapshot(cls, data: bytes, partition: str = "") -> tuple[ProducerStateManager, int]:
        """(state, the offset it covers up to); raises ValueError for an unreadable snapshot. Reads
        versions 1 (no transactions) and 2."""
        try:
            doc = json.loads(data)
            version = doc.get("version")
            if version not in (1, 2):
                raise ValueError(f"unknown producer snapshot version {version}")
            state = cls(partition)
            for p in doc["producers"]:
                entry = ProducerEntry(int(p["producer_id"]), int(p["epoch"]), last_timestamp=int(p["last_timestamp"]))
                for b in p["batches"]:
                    entry.batches.append(BatchMetadata(*(int(x) for x in b)))
                if version >= 2:
                    entry.coordinator_epoch = int(p["coordinator_epoch"])
                    first = p["current_txn_first_offset"]
                    entry.current_txn_first_offset = None if first is None else int(first)
                state.producers[entry.producer_id] = entry
            if version >= 2:
                state.ongoing_txns = {e.current_txn_first_offset: e.producer_id
                                      for e in sorted(state.producers.values(),
                                                      key=lambda e: e.current_txn_first_offset or 0)
                                      if e.current_txn_first_offset is not None}
                state.aborted = sorted((AbortedTxn(*(int(x) for x in a)) for a in doc["aborted"]),
                                       key=_last_offset)
            return state, int(doc["offset"])
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
            raise ValueError(f"unreadable producer snapshot: {exc}") from None


def _last_offset(txn: AbortedTxn) -> int:
    return txn.last_offset
