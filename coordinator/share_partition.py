"""One topic partition as a share group consumes it (KIP-932, Kafka's SharePartition): which records are in
flight, who holds them and until when, how often each was delivered, and the share-partition start offset
(SPSO) below which everything is done.

A record moves AVAILABLE -> ACQUIRED (a ShareFetch hands it to one member, under a lock of
`group.share.record.lock.duration.ms`) -> ACKNOWLEDGED (ACCEPT) or ARCHIVED (REJECT), or back to AVAILABLE
(RELEASE, the lock expiring, the member leaving). Every acquisition counts a delivery; a record released after
its `group.share.delivery.count.limit`-th delivery is ARCHIVED instead of offered again. The start offset moves
past the records at its front that are ACKNOWLEDGED or ARCHIVED; the end offset is the next offset never
acquired.

What the share coordinator keeps of it, as Kafka's persister writes it: acquisitions stay in memory; every other
change (acknowledged, released, archived records and their delivery counts) is collected for the next
WriteShareGroupState (`take_changes`), with the start offset from before the change (`persisted_start`: Kafka
moves its start offset once the write is done) and the delivery complete count. A new leader rebuilds the
partition from the state read back (`from_state`): records acquired but never acknowledged are offered again.
Pure logic: time comes in as `now_ms`; the shell reads records from the log and writes the state.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from coordinator.share_coordinator import PersisterBatch
from protocol.header import ErrorCode


class RecordState(Enum):
    """Kafka's RecordState; the value is the DeliveryState byte of `__share_group_state`."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class ShareAcquireMode(Enum):
    """How a ShareFetch counts MaxRecords (KIP-1206; the ShareAcquireMode field of ShareFetch v2)."""

    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1


class AcknowledgeType(Enum):
    """ShareFetch/ShareAcknowledge AcknowledgeTypes."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4  # KIP-1222, ShareFetch/ShareAcknowledge v2


def check_acknowledgements(batches: Sequence[tuple[int, int, Sequence[int]]], *, renew: bool) -> ErrorCode:
    """One partition's acknowledgement batches as Kafka's KafkaApis.validateAcknowledgementBatches checks
    them before any is applied: ranges in order (first <= last, none starting below the previous one's
    last offset), types given (one, or one per offset), each a known type, RENEW only in a request flagged
    IsRenewAck (`renew`; v2, so a v1 request has none). INVALID_REQUEST otherwise."""
    previous_last = -1
    for first, last, types in batches:
        if first > last or first < previous_last or not types:
            return ErrorCode.INVALID_REQUEST
        if len(types) > 1 and last - first != len(types) - 1:
            return ErrorCode.INVALID_REQUEST
        if any(t < 0 or t > AcknowledgeType.RENEW.value for t in types):
            return ErrorCode.INVALID_REQUEST
        if not renew and AcknowledgeType.RENEW.value in types:
            return ErrorCode.INVALID_REQUEST
        previous_last = last
    return ErrorCode.NONE


@dataclass(slots=True)
class InFlight:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline_ms: int = -1


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    first_offset: int
    last_offset: int
    delivery_count: int


class SharePartition:
    def __init__(self, start_offset: int, *, lock_duration_ms: int = 30_000, delivery_count_limit: int = 5,
                 max_in_flight: int = 2_000) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset  # the next offset never acquired
        self.lock_duration_ms = lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.in_flight: dict[int, InFlight] = {}  # offsets in [start_offset, end_offset) not done yet
        # The start offset the next state write carries: the one from before the latest change (Kafka moves its
        # start offset only once the write is done, so the next write carries it).
        self.persisted_start = start_offset
        self._changes: dict[int, tuple[RecordState, int]] = {}  # offset -> (state, delivery count) to write
        self._start_moved = False

    # -- the share coordinator's state ------------------------------------------------------------------------
    @classmethod
    def from_state(cls, start_offset: int, batches: Iterable[PersisterBatch], **config: int) -> SharePartition:
        """The partition as its state was read back: what was acquired is offered again (locks do not survive),
        offsets between the state's batches (acquired, never acknowledged) too, with no delivery counted
        (Kafka's SharePartition.maybeInitialize and its initial read gap)."""
        partition = cls(start_offset, **config)
        for batch in batches:
            state = RecordState(batch.delivery_state) if batch.delivery_state in _PERSISTED else RecordState.AVAILABLE
            for offset in range(max(batch.first_offset, start_offset), batch.last_offset + 1):
                partition.in_flight[offset] = InFlight(state, batch.delivery_count)
                partition.end_offset = max(partition.end_offset, offset + 1)
        for offset in range(start_offset, partition.end_offset):
            partition.in_flight.setdefault(offset, InFlight())
        partition._advance_start()
        partition.persisted_start = partition.start_offset
        partition._start_moved = False
        return partition

    def take_changes(self) -> tuple[list[PersisterBatch], bool] | None:
        """What changed since the last call, for the next state write: the records' runs of equal state and
        delivery count, and whether the start offset moved; None if nothing did."""
        if not self._changes and not self._start_moved:
            return None
        batches: list[PersisterBatch] = []
        for offset in sorted(self._changes):
            state, count = self._changes[offset]
            last = batches[-1] if batches else None
            if last is not None and last.last_offset == offset - 1 and \
                    (last.delivery_state, last.delivery_count) == (state.value, count):
                batches[-1] = PersisterBatch(last.first_offset, offset, state.value, count)
            else:
                batches.append(PersisterBatch(offset, offset, state.value, count))
        moved = self._start_moved
        self._changes.clear()
        self._start_moved = False
        return batches, moved

    def restore_changes(self, batches: Iterable[PersisterBatch], start_moved: bool) -> None:
        """A write that failed: its changes go into the next one (newer changes of the same records win)."""
        for batch in batches:
            for offset in range(batch.first_offset, batch.last_offset + 1):
                self._changes.setdefault(offset, (RecordState(batch.delivery_state), batch.delivery_count))
        self._start_moved = self._start_moved or start_moved

    def delivery_complete_count(self) -> int:
        """Offsets from `persisted_start` on that are done (acknowledged or archived): what KIP-1226's lag
        subtracts."""
        done = sum(1 for r in self.in_flight.values() if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))
        return max(self.start_offset - self.persisted_start, 0) + done

    def reset_start(self, offset: int) -> None:
        """A new start offset (records deleted below it): everything before it is forgotten."""
        self.in_flight = {o: r for o, r in self.in_flight.items() if o >= offset}
        if offset != self.start_offset:
            self._start_moved = True
        self.start_offset = offset
        self.end_offset = max(self.end_offset, offset)
        self._advance_start()

    # -- ShareFetch ---------------------------------------------------------------------------------------
    def next_fetch_offset(self) -> int:
        """Where the next fetch reads the log from: the first record offered again, else the end offset."""
        available = [o for o, r in self.in_flight.items() if r.state is RecordState.AVAILABLE]
        return min(available, default=self.end_offset)

    def acquire(self, member_id: str, batches: Sequence[tuple[int, int]], max_records: int, now_ms: int,
                mode: ShareAcquireMode = ShareAcquireMode.BATCH_OPTIMIZED,
                aborted: Collection[int] = ()) -> list[AcquiredRange]:
        """Hand records to a member from `batches`, the (first, last) offsets of the log's batches read from
        `next_fetch_offset()` (below the high watermark), so that every acquired offset comes with its
        batch: available in-flight records (redeliveries) and new ones, within the in-flight limit.
        BATCH_OPTIMIZED takes whole batches until `max_records` is reached (the last batch may pass it, as
        Kafka's SharePartition does); RECORD_LIMIT stops at `max_records` exactly (KIP-1206). Offsets
        between batches that the log no longer has (compaction) go with the next batch: the client
        acknowledges them as gaps. `aborted`: the first offsets of batches of aborted transactions (under
        share.isolation.level=read_committed), whose records are archived, never delivered."""
        acquired: list[int] = []
        per_record = mode is ShareAcquireMode.RECORD_LIMIT
        for first, last in batches:
            if len(acquired) >= max_records:
                break
            if first in aborted:
                self._archive_unread(first, last)
                continue
            for offset in range(min(max(first, self.start_offset), self.end_offset), last + 1):
                if offset >= self.end_offset:
                    if len(self.in_flight) >= self.max_in_flight:
                        break
                    # A batch read is taken in flight whole; what the record limit leaves of it stays
                    # available (Kafka: acknowledging it is INVALID_RECORD_STATE, not past the records).
                    self.in_flight[offset] = InFlight()
                    self.end_offset = offset + 1
                record = self.in_flight.get(offset)
                if record is not None and record.state is RecordState.AVAILABLE \
                        and not (per_record and len(acquired) >= max_records):
                    acquired.append(offset)
        ranges: list[AcquiredRange] = []
        for offset in acquired:
            record = self.in_flight[offset]
            record.state = RecordState.ACQUIRED
            record.delivery_count += 1
            record.member_id = member_id
            record.lock_deadline_ms = now_ms + self.lock_duration_ms
            last = ranges[-1] if ranges else None
            if last is not None and last.last_offset == offset - 1 and last.delivery_count == record.delivery_count:
                ranges[-1] = AcquiredRange(last.first_offset, offset, record.delivery_count)
            else:
                ranges.append(AcquiredRange(offset, offset, record.delivery_count))
        return ranges

    def _archive_unread(self, first: int, last: int) -> None:
        """The records of [first, last] nobody holds are archived (an aborted transaction's), and offsets before
        it that the log no longer has."""
        for offset in range(min(max(first, self.start_offset), self.end_offset), last + 1):
            if offset >= self.end_offset:
                self.in_flight[offset] = InFlight()
                self.end_offset = offset + 1
            record = self.in_flight.get(offset)
            if record is not None and record.state is RecordState.AVAILABLE:
                self._finish(offset, record, RecordState.ARCHIVED)
        self._advance_start()

    # -- ShareAcknowledge (and the acknowledgements piggybacked on ShareFetch) ---------------------------------
    def acknowledge(self, member_id: str, first_offset: int, last_offset: int, types: Sequence[AcknowledgeType],
                    now_ms: int = 0) -> ErrorCode:
        """One acknowledgement batch: see `acknowledge_batches`."""
        return self.acknowledge_batches(member_id, [(first_offset, last_offset, types)], now_ms)

    def acknowledge_batches(self, member_id: str, batches: Sequence[tuple[int, int, Sequence[AcknowledgeType]]],
                            now_ms: int = 0) -> ErrorCode:
        """A partition's acknowledgement batches (checked by `check_acknowledgements`), each with one type for
        its whole range or one per offset. All or nothing, as Kafka's SharePartition: INVALID_REQUEST for
        offsets past the records ever acquired, INVALID_RECORD_STATE for an offset this member does not
        hold. RENEW (KIP-1222) keeps the records and starts their acquisition lock again."""
        for first_offset, last_offset, types in batches:
            count = last_offset - first_offset + 1
            if count <= 0 or len(types) not in (1, count) or last_offset >= self.end_offset:
                return ErrorCode.INVALID_REQUEST
            for offset in range(first_offset, last_offset + 1):
                record = self.in_flight.get(offset)
                if offset < self.start_offset or record is None or record.state is not RecordState.ACQUIRED \
                        or record.member_id != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
        self.persisted_start = self.start_offset
        for first_offset, last_offset, types in batches:
            for i, offset in enumerate(range(first_offset, last_offset + 1)):
                kind = types[0] if len(types) == 1 else types[i]
                record = self.in_flight[offset]
                if kind is AcknowledgeType.ACCEPT:
                    self._finish(offset, record, RecordState.ACKNOWLEDGED)
                elif kind in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
                    self._finish(offset, record, RecordState.ARCHIVED)
                elif kind is AcknowledgeType.RENEW:
                    record.lock_deadline_ms = now_ms + self.lock_duration_ms
                else:
                    self._release(offset, record)
        self._advance_start()
        return ErrorCode.NONE

    def release_member(self, member_id: str) -> int:
        """The member left (or its share session closed): its acquired records are offered again."""
        released = 0
        start = self.start_offset
        for offset, record in self.in_flight.items():
            if record.state is RecordState.ACQUIRED and record.member_id == member_id:
                self._release(offset, record)
                released += 1
        if released:
            self.persisted_start = start
            self._advance_start()
        return released

    # -- timers ---------------------------------------------------------------------------------------------
    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self.in_flight.values() if r.state is RecordState.ACQUIRED]
        return min(deadlines, default=None)

    def expire_locks(self, now_ms: int) -> int:
        """Acquisition locks past their deadline: the records are offered again (or archived at the limit)."""
        expired = 0
        start = self.start_offset
        for offset, record in self.in_flight.items():
            if record.state is RecordState.ACQUIRED and record.lock_deadline_ms <= now_ms:
                self._release(offset, record)
                expired += 1
        if expired:
            self.persisted_start = start
            self._advance_start()
        return expired

    # -- helpers ----------------------------------------------------------------------------------------
    def _release(self, offset: int, record: InFlight) -> None:
        state = RecordState.ARCHIVED if record.delivery_count >= self.delivery_count_limit else RecordState.AVAILABLE
        self._finish(offset, record, state)

    def _finish(self, offset: int, record: InFlight, state: RecordState) -> None:
        record.state = state
        record.member_id = None
        record.lock_deadline_ms = -1
        self._changes[offset] = (state, record.delivery_count)

    def _advance_start(self) -> None:
        while True:
            record = self.in_flight.get(self.start_offset)
            if record is None or record.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del self.in_flight[self.start_offset]
            self.start_offset += 1
        self.end_offset = max(self.end_offset, self.start_offset)

    def counts(self) -> dict[str, int]:
        out = {state.name: 0 for state in RecordState}
        for record in self.in_flight.values():
            out[record.state.name] += 1
        return out


_PERSISTED = frozenset({RecordState.AVAILABLE.value, RecordState.ACKNOWLEDGED.value, RecordState.ARCHIVED.value})
