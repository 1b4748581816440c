"""Per-partition state of idempotent producers: epoch, sequence numbers and the last 5 batches.

Pure logic after Kafka's ProducerStateManager / ProducerAppendInfo. `check` validates a batch header
against the current state without changing it and says whether to append it, acknowledge it as a
duplicate (with the offsets it got the first time), or reject it; `commit` records an appended batch.
Time is passed in. The state is rebuilt from a snapshot plus the batch headers after it (`replay`).
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

INT32_MAX = 0x7FFFFFFF
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
BATCHES_KEPT = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN, also the client's max in flight


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

    def check(self, producer_id: int, epoch: int, first_seq: int, last_offset_delta: int) -> Check:
        """Validate a client batch from its header fields (Kafka's analyzeAndValidateProducerState)."""
        if producer_id == NO_PRODUCER_ID:
            return APPEND
        last_seq = increment_sequence(first_seq, last_offset_delta)
        entry = self.producers.get(producer_id)
        if entry is None:
            if first_seq != 0:
                # Kafka 4.x: the broker has no state for this producer (never seen, or expired/deleted).
                return Check(Verdict.REJECT, "UNKNOWN_PRODUCER_ID",
                             f"Found no record of producerId={producer_id} on the broker at {self.partition}. "
                             f"It is possible that the last message with the producerId={producer_id} has been "
                             "removed due to hitting the retention limit.")
            return APPEND
        duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
        if duplicate is not None:
            return Check(Verdict.DUPLICATE, duplicate=duplicate)
        if epoch < entry.epoch:
            return Check(Verdict.REJECT, "INVALID_PRODUCER_EPOCH",
                         f"Epoch of producer {producer_id} in {self.partition} is {epoch}, which is smaller "
                         f"than the last seen epoch {entry.epoch}")
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
        return APPEND

    def commit(self, producer_id: int, epoch: int, first_seq: int, last_offset_delta: int, first_offset: int,
               timestamp: int) -> None:
        """Record a batch appended at `first_offset` (also used when replaying the log)."""
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

    def replay(self, headers: Any) -> int:
        """Apply stored batch headers (from the log) in order; returns how many were applied."""
        n = 0
        for h in headers:
            if h.producer_id != NO_PRODUCER_ID and not h.is_control:
                self.commit(h.producer_id, h.producer_epoch, h.base_sequence, h.last_offset_delta, h.base_offset,
                            h.max_timestamp)
            n += 1
        return n

    def expire(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers whose last batch is older than producer.id.expiration.ms."""
        expired = [pid for pid, e in self.producers.items() if now_ms - e.last_timestamp >= expiration_ms]
        for pid in expired:
            del self.producers[pid]
        return expired

    def remove_before(self, offset: int) -> None:
        """After DeleteRecords/retention: drop producers whose last batch is gone from the log."""
        gone = [pid for pid, e in self.producers.items() if e.batches and e.batches[-1].last_offset < offset]
        for pid in gone:
            del self.producers[pid]

    # --- snapshots ----------------------------------------------------------------------------------

    def snapshot(self, next_offset: int) -> bytes:
        """State as of `next_offset` (the log end offset it covers)."""
        return json.dumps({
            "version": 1,
            "offset": next_offset,
            "producers": [
                {"producer_id": e.producer_id, "epoch": e.epoch, "last_timestamp": e.last_timestamp,
                 "batches": [[b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp]
                             for b in e.batches]}
                for e in self.producers.values()
            ],
        }, separators=(",", ":")).encode()

    @classmethod
    def from_snapshot(cls, data: bytes, partition: str = "") -> tuple[ProducerStateManager, int]:
        """(state, the offset it covers up to); raises ValueError for an unreadable snapshot."""
        try:
            doc = json.loads(data)
            if doc.get("version") != 1:
                raise ValueError(f"unknown producer snapshot version {doc.get('version')}")
            state = cls(partition)
            for p in doc["producers"]:
                entry = ProducerEntry(int(p["producer_id"]), int(p["epoch"]), last_timestamp=int(p["last_timestamp"]))
                for b in p["batches"]:
                    entry.batches.append(BatchMetadata(*(int(x) for x in b)))
                state.producers[entry.producer_id] = entry
            return state, int(doc["offset"])
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"unreadable producer snapshot: {exc}") from None
