"""Kafka's share coordinator as pure logic (KIP-932; Kafka 4.4's ShareCoordinatorShard and
PersisterStateBatchCombiner): the share-partition state of every share group, kept in `__share_group_state` as
ShareSnapshot records (the whole state of a share partition) and ShareUpdate records (what one write changed),
and the five state APIs the group coordinator and the partition leaders call through their persister:
InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
ReadShareGroupStateSummary.

A share partition's state is keyed by (group id, topic id, partition) and lives in the `__share_group_state`
partition of its coordinator key "group:topicId:partition" (the topic id as Kafka prints a Uuid). Its leader
epoch and state epoch fence writers: a partition leader of an older leader epoch (the partition moved), or a
writer of an older state epoch (the group coordinator initialized the state again) is refused. Every
`share.coordinator.snapshot.update.records.per.snapshot` updates, a write is a snapshot again, so that the state
is replayed from a bounded number of records; the records before a key's latest snapshot are not needed, and
`redundant_offset` says up to where a coordinator partition may be pruned.

The checks and their errors are Kafka 4.4's as it answers them (tests/reference/recorded/4.4/
share_coordinator_state_apis.json). Pure: every operation returns the records to append (replayed into the state
once appended, as Kafka's runtime does) and the answer.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from protocol.header import ErrorCode
from protocol.kafka4_group_records import ShareStateRecordType, encode_share_state_record

SNAPSHOT, UPDATE = ShareStateRecordType.SHARE_SNAPSHOT, ShareStateRecordType.SHARE_UPDATE
UNINITIALIZED_START_OFFSET = -1
UNKNOWN = -1  # a write's "not being written" value of an epoch, start offset or delivery complete count

Key = tuple[str, uuid.UUID, int]  # group id, topic id, partition
Record = tuple[bytes, bytes | None]

NEGATIVE_PARTITION = "The partition id cannot be a negative number."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
UNINITIALIZED_READ = "Read operation on uninitialized share partition not allowed."
UNINITIALIZED_WRITE = "Write operation on uninitialized share partition not allowed."
OLDER_LEADER_EPOCH = "The leader epoch in the request is older than the epoch on the broker."
STATE_EPOCH_MISMATCH = "The coordinator rejected the request because the state epoch did not match."
UNKNOWN_PARTITION = "This server does not host this topic-partition."


def kafka_uuid(topic_id: uuid.UUID) -> str:
    """A topic id as Kafka's Uuid.toString prints it: URL-safe base64 of its 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """Kafka's Uuid.fromString; ValueError for anything else (a hyphenated UUID included)."""
    if len(text) != 22:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return uuid.UUID(bytes=raw)


def coordinator_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """Kafka's SharePartitionKey.asCoordinatorKey: what FindCoordinator(SHARE) is asked and what chooses the
    share partition's `__share_group_state` partition."""
    return f"{group_id}:{kafka_uuid(topic_id)}:{partition}"


def parse_coordinator_key(key: str) -> Key:
    """Kafka's SharePartitionKey.validate: "group:topicId:partition" with a group id, a Kafka Uuid and a
    number; ValueError otherwise."""
    parts = key.split(":")
    if len(parts) != 3 or not parts[0].strip():
        raise ValueError(f"Invalid key format: expected - groupId:topicId:partition, found - {key}")
    return parts[0], parse_kafka_uuid(parts[1]), int(parts[2])


@dataclass(frozen=True, slots=True)
class PersisterBatch:
    """One run of offsets with the same delivery state and count (Kafka's PersisterStateBatch)."""

    first_offset: int
    last_offset: int
    delivery_state: int  # 0 available, 2 acknowledged, 4 archived
    delivery_count: int


def combine(current: Iterable[PersisterBatch], newer: Iterable[PersisterBatch], start_offset: int
            ) -> tuple[PersisterBatch, ...]:
    """Kafka's PersisterStateBatchCombiner: `newer` batches (in order, each over the ones before it) laid over
    `current`, nothing below `start_offset`, and neighbouring runs of the same state and count joined."""
    runs: list[PersisterBatch] = []
    for batch in [*current, *newer]:
        first = max(batch.first_offset, start_offset)
        if first > batch.last_offset:
            continue
        kept: list[PersisterBatch] = []
        for run in runs:
            if run.last_offset < first or run.first_offset > batch.last_offset:
                kept.append(run)
                continue
            if run.first_offset < first:
                kept.append(replace(run, last_offset=first - 1))
            if run.last_offset > batch.last_offset:
                kept.append(replace(run, first_offset=batch.last_offset + 1))
        kept.append(replace(batch, first_offset=first))
        runs = sorted(kept, key=lambda r: r.first_offset)
    joined: list[PersisterBatch] = []
    for run in runs:
        last = joined[-1] if joined else None
        if last is not None and last.last_offset + 1 == run.first_offset and \
                (last.delivery_state, last.delivery_count) == (run.delivery_state, run.delivery_count):
            joined[-1] = replace(last, last_offset=run.last_offset)
        else:
            joined.append(run)
    return tuple(joined)


@dataclass(frozen=True, slots=True)
class ShareState:
    """A share partition's state as the coordinator holds it (Kafka's ShareGroupOffset)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = UNKNOWN
    create_timestamp: int = 0
    write_timestamp: int = 0
    batches: tuple[PersisterBatch, ...] = ()

    def record_value(self) -> dict[str, Any]:
        return {"snapshot_epoch": self.snapshot_epoch, "state_epoch": self.state_epoch,
                "leader_epoch": self.leader_epoch, "start_offset": self.start_offset,
                "delivery_complete_count": self.delivery_complete_count,
                "create_timestamp": self.create_timestamp, "write_timestamp": self.write_timestamp,
                "state_batches": _batches_out(self.batches)}


def _batches_out(batches: Iterable[PersisterBatch]) -> list[dict[str, int]]:
    return [{"first_offset": b.first_offset, "last_offset": b.last_offset, "delivery_state": b.delivery_state,
             "delivery_count": b.delivery_count} for b in batches]


def batches_in(values: Iterable[Any]) -> tuple[PersisterBatch, ...]:
    """State batches of a request or record (objects or mappings with Kafka's field names)."""
    def get(v: Any, name: str) -> int:
        return int(v[name] if isinstance(v, dict) else getattr(v, name))
    return tuple(PersisterBatch(get(v, "first_offset"), get(v, "last_offset"), get(v, "delivery_state"),
                                get(v, "delivery_count")) for v in values)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One share partition's answer, and the record to append first (None: nothing to write)."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    record: Record | None = None
    state: ShareState | None = None  # a read's or summary's state (None: uninitialized, or an error)


class TopicsLookup(Protocol):
    def partition_count(self, topic_id: uuid.UUID) -> int: ...  # -1 when unknown


@dataclass(frozen=True, slots=True)
class ShareCoordinatorConfig:
    snapshot_update_records_per_snapshot: int = 500  # share.coordinator.snapshot.update.records.per.snapshot
    # How each release takes a leader epoch of -1 and a delivery complete count of -1 (recorded from 4.2, 4.3 and
    # 4.4): 4.4 refuses the epoch and keeps the count; 4.2 and 4.3 write the state without fencing and take the
    # count as it is, 4.2 also fences such a read when it knows a leader epoch.
    refuse_negative_leader_epoch: bool = True
    fence_read_without_leader_epoch: bool = False
    keep_unknown_complete_count: bool = True


@dataclass(slots=True)
class _Entry:
    state: ShareState
    snapshot_offset: int  # the offset of its latest ShareSnapshot record: the records before it are redundant
    updates: int = 0  # ShareUpdate records since that snapshot


@dataclass
class ShareCoordinatorShard:
    """The share-partition states of the `__share_group_state` partitions led here."""

    config: ShareCoordinatorConfig
    topics: TopicsLookup
    entries: dict[Key, _Entry] = field(default_factory=dict)
    # Kafka keeps the highest leader and state epochs seen per key apart from the state (a read of a newer
    # leader raises the leader epoch before its first write).
    leader_epochs: dict[Key, int] = field(default_factory=dict)
    state_epochs: dict[Key, int] = field(default_factory=dict)
    last_offsets: dict[int, int] = field(default_factory=dict)  # coordinator partition -> last record's offset

    # -- replay ------------------------------------------------------------------------------------------
    def replay(self, index: int, offset: int, kind: ShareStateRecordType, key: Key, value: Any | None) -> None:
        """A `__share_group_state` record of coordinator partition `index` at `offset` (written here or loaded)."""
        self.last_offsets[index] = max(self.last_offsets.get(index, -1), offset)
        if value is None:
            self.entries.pop(key, None)
            self.leader_epochs.pop(key, None)
            self.state_epochs.pop(key, None)
            return
        _raise(self.leader_epochs, key, int(value.leader_epoch))
        entry = self.entries.get(key)
        if kind is SNAPSHOT:
            _raise(self.state_epochs, key, int(value.state_epoch))
            state = ShareState(int(value.snapshot_epoch), int(value.state_epoch), int(value.leader_epoch),
                               int(value.start_offset), int(value.delivery_complete_count),
                               int(value.create_timestamp), int(value.write_timestamp), batches_in(value.state_batches))
            updates = entry.updates if entry is not None else 0
            if updates >= self.config.snapshot_update_records_per_snapshot:
                updates = 0
            self.entries[key] = _Entry(state, offset, updates)
            return
        update = ShareState(int(value.snapshot_epoch), UNKNOWN, int(value.leader_epoch), int(value.start_offset),
                            int(value.delivery_complete_count), batches=batches_in(value.state_batches))
        if entry is None:  # an update without a snapshot (its snapshot was pruned): it is the state
            self.entries[key] = _Entry(replace(update, state_epoch=0, batches=combine((), update.batches,
                                                                                      update.start_offset)), offset)
            return
        entry.state = _merged(entry.state, update, self.config.keep_unknown_complete_count)
        entry.updates += 1

    def forget(self, belongs: Any) -> int:
        """Unload the keys whose coordinator key `belongs` (a partition moved away); how many."""
        gone = [k for k in self.entries if belongs(coordinator_key(*k))]
        for key in gone:
            del self.entries[key]
        for epochs in (self.leader_epochs, self.state_epochs):
            for key in [k for k in epochs if belongs(coordinator_key(*k))]:
                del epochs[key]
        return len(gone)

    def forget_partition(self, index: int) -> None:
        self.last_offsets.pop(index, None)

    # -- the state APIs ------------------------------------------------------------------------------------
    def initialize(self, key: Key, state_epoch: int, start_offset: int, now_ms: int) -> Outcome:
        """InitializeShareGroupState: a new state (no batches) at `start_offset` (-1: the partition leader
        applies share.auto.offset.reset at its first read), of `state_epoch`, replacing any older one."""
        _group, topic_id, partition = key
        if partition < 0:
            return Outcome(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
        if not 0 <= partition < self.topics.partition_count(topic_id):
            return Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_PARTITION)
        if state_epoch < self.state_epochs.get(key, state_epoch):
            return Outcome(ErrorCode.FENCED_STATE_EPOCH, STATE_EPOCH_MISMATCH)
        entry = self.entries.get(key)
        state = ShareState(entry.state.snapshot_epoch + 1 if entry is not None else 0, state_epoch, 0, start_offset,
                           0 if start_offset != UNINITIALIZED_START_OFFSET else UNKNOWN, now_ms, now_ms)
        return Outcome(record=_record(SNAPSHOT, key, state))

    def read(self, key: Key, leader_epoch: int, now_ms: int) -> Outcome:
        """ReadShareGroupState by a partition leader at `leader_epoch`: the state; a newer leader epoch is
        written (older leaders' writes are fenced from then on)."""
        entry, refused = self._checked(key, leader_epoch, UNINITIALIZED_READ)
        if refused is not None:
            return refused
        assert entry is not None
        state = entry.state
        if leader_epoch < 0 and self.config.fence_read_without_leader_epoch and \
                self.leader_epochs.get(key, leader_epoch) > leader_epoch:
            return Outcome(ErrorCode.FENCED_LEADER_EPOCH, OLDER_LEADER_EPOCH)
        if leader_epoch < 0 or leader_epoch == self.leader_epochs.get(key):
            return Outcome(state=state)
        return Outcome(record=self._state_record(key, entry, leader_epoch, state.state_epoch, state.start_offset,
                                                 state.delivery_complete_count, (), now_ms), state=state)

    def write(self, key: Key, state_epoch: int, leader_epoch: int, start_offset: int, delivery_complete_count: int,
              batches: Sequence[PersisterBatch], now_ms: int) -> Outcome:
        """WriteShareGroupState by a partition leader: the batches that changed, the new start offset (-1:
        unchanged) and delivery complete count (-1: unchanged)."""
        entry, refused = self._checked(key, leader_epoch, UNINITIALIZED_WRITE)
        if refused is not None:
            return refused
        assert entry is not None
        if state_epoch < self.state_epochs.get(key, state_epoch):
            return Outcome(ErrorCode.FENCED_STATE_EPOCH, STATE_EPOCH_MISMATCH)
        return Outcome(record=self._state_record(key, entry, leader_epoch, state_epoch, start_offset,
                                                 delivery_complete_count, batches, now_ms))

    def delete(self, key: Key) -> Outcome:
        """DeleteShareGroupState: the state goes (a tombstone); nothing to delete is no error."""
        if key[2] < 0:
            return Outcome(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
        if key not in self.entries:
            return Outcome()
        return Outcome(record=(_key_bytes(key), None))

    def summary(self, key: Key) -> Outcome:
        """ReadShareGroupStateSummary: the start offset, epochs and delivery complete count (an uninitialized
        share partition: start offset -1, no error)."""
        if key[2] < 0:
            return Outcome(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
        entry = self.entries.get(key)
        if entry is None:
            return Outcome(state=None)
        return Outcome(state=replace(entry.state, leader_epoch=self.leader_epochs.get(key, entry.state.leader_epoch)))

    # -- pruning -----------------------------------------------------------------------------------------
    def redundant_offset(self, index: int, belongs: Any) -> int:
        """The first offset of coordinator partition `index` still needed: the oldest latest-snapshot of its
        keys (`belongs(coordinator key)`), or past its last record when it holds no state (Kafka's
        ShareCoordinatorOffsetsManager.lastRedundantOffset)."""
        offsets = [e.snapshot_offset for k, e in self.entries.items() if belongs(coordinator_key(*k))]
        return min(offsets) if offsets else self.last_offsets.get(index, -1) + 1

    # -- helpers ------------------------------------------------------------------------------------------
    def _checked(self, key: Key, leader_epoch: int, uninitialized: str) -> tuple[_Entry | None, Outcome | None]:
        if key[2] < 0:
            return None, Outcome(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
        entry = self.entries.get(key)
        if entry is None:
            return None, Outcome(ErrorCode.INVALID_REQUEST, uninitialized)
        if leader_epoch < 0:  # none given
            if self.config.refuse_negative_leader_epoch:
                return None, Outcome(ErrorCode.INVALID_REQUEST, NEGATIVE_LEADER_EPOCH)
        elif leader_epoch < self.leader_epochs.get(key, leader_epoch):
            return None, Outcome(ErrorCode.FENCED_LEADER_EPOCH, OLDER_LEADER_EPOCH)
        return entry, None

    def _state_record(self, key: Key, entry: _Entry, leader_epoch: int, state_epoch: int, start_offset: int,
                      delivery_complete_count: int, batches: Sequence[PersisterBatch], now_ms: int) -> Record:
        """Kafka's generateShareStateRecord: a ShareUpdate of what changed, or every so many updates a new
        ShareSnapshot of the whole state."""
        current = entry.state
        if entry.updates < self.config.snapshot_update_records_per_snapshot:
            return _record(UPDATE, key, ShareState(current.snapshot_epoch, UNKNOWN, leader_epoch, start_offset,
                                                   delivery_complete_count,
                                                   batches=combine((), batches, UNINITIALIZED_START_OFFSET)))
        start = start_offset if start_offset != UNKNOWN else current.start_offset
        return _record(SNAPSHOT, key, ShareState(
            current.snapshot_epoch + 1, state_epoch if state_epoch != UNKNOWN else current.state_epoch,
            leader_epoch if leader_epoch != UNKNOWN else current.leader_epoch, start,
            delivery_complete_count if delivery_complete_count != UNKNOWN or not
            self.config.keep_unknown_complete_count else current.delivery_complete_count,
            current.create_timestamp, now_ms, combine(current.batches, batches, start)))


def _raise(epochs: dict[Key, int], key: Key, epoch: int) -> None:
    if epoch > epochs.get(key, epoch - 1):
        epochs[key] = epoch


def _merged(current: ShareState, update: ShareState, keep_unknown_count: bool) -> ShareState:
    """A ShareUpdate applied to the state (Kafka's ShareCoordinatorShard.merge)."""
    start = update.start_offset if update.start_offset != UNKNOWN else current.start_offset
    count = update.delivery_complete_count
    if count == UNKNOWN and keep_unknown_count:
        count = current.delivery_complete_count
    return replace(current, start_offset=start,
                   leader_epoch=update.leader_epoch if update.leader_epoch != UNKNOWN else current.leader_epoch,
                   delivery_complete_count=count, batches=combine(current.batches, update.batches, start))


def _key_bytes(key: Key) -> bytes:
    return encode_share_state_record(SNAPSHOT, _key_value(key), None)[0]


def _key_value(key: Key) -> dict[str, Any]:
    return {"group_id": key[0], "topic_id": key[1], "partition": key[2]}


def _record(kind: ShareStateRecordType, key: Key, state: ShareState) -> Record:
    value = state.record_value()
    if kind is UPDATE:
        for name in ("state_epoch", "create_timestamp", "write_timestamp"):
            del value[name]
    return encode_share_state_record(kind, _key_value(key), value)
