"""The trio shell of KIP-932 share consumption: the share partitions of every share group (coordinator/
share_partition.py), their share sessions (ShareFetch/ShareAcknowledge session epochs), records read from the
logs and handed out under acquisition locks, the lock-expiry timer, long polls that wait for new records, and
the share-partition state persisted in `__share_group_state` (Kafka's ShareSnapshot records, keyed by group,
topic id and partition) and read back at start, so acknowledged records are never delivered again after a
restart or SIGKILL.

Single broker only: in a ZooKeeper-mode cluster share groups are not served (docs/compatibility/kafka4.md).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import trio

from broker.clock import Clock
from broker.config.options import BrokerConfig
from broker.log.append import Appender, AppendOrigin
from broker.services.appends import AppendSignal
from broker.services.internal_topics import internal_topic, partition_for, stored_batches
from broker.services.topics import SHARE_STATE_TOPIC, Partition, TopicManager
from coordinator.share_partition import (
    AcknowledgeType,
    AcquiredRange,
    ShareAcquireMode,
    SharePartition,
    StateBatch,
    check_acknowledgements,
)
from coordinator.share_partition import RecordState as ShareRecordState
from protocol.header import ErrorCode
from protocol.kafka4_group_records import (
    RecordError,
    ShareStateRecordType,
    decode_share_state_record,
    encode_share_state_record,
)
from protocol.records import Record as LogRecord
from protocol.records import build_batch, iter_batches

log = logging.getLogger(__name__)

Key = tuple[str, uuid.UUID, int]  # group id, topic id, partition
FINAL_EPOCH = -1
INITIAL_EPOCH = 0


@dataclass(slots=True)
class ShareSession:
    """Kafka's ShareSession: the partitions a member fetches and the epoch its next request must carry."""

    epoch: int
    partitions: set[tuple[uuid.UUID, int]] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class PartitionResult:
    error: ErrorCode = ErrorCode.NONE
    acknowledge_error: ErrorCode = ErrorCode.NONE
    acquired: list[AcquiredRange] = field(default_factory=list)
    records: bytes | None = None


class ShareSessionError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


def _aborted_batches(partition: Partition, headers: list[Any]) -> set[int]:
    """The base offsets of the data batches among `headers` (in log order) that aborted transactions wrote,
    as a read_committed consumer skips them: from an aborted transaction's first offset to its producer's
    abort marker."""
    first_offsets = partition.producers.aborted_transactions(
        headers[0].base_offset, headers[-1].base_offset + headers[-1].last_offset_delta + 1)
    if not first_offsets:
        return set()
    pending = sorted(first_offsets, key=lambda t: t[1])
    aborting: set[int] = set()
    out: set[int] = set()
    for header in headers:
        while pending and pending[0][1] <= header.base_offset:
            aborting.add(pending.pop(0)[0])
        if header.producer_id in aborting:
            if header.is_control:
                aborting.discard(header.producer_id)
            elif header.is_transactional:
                out.add(header.base_offset)
    return out


class SharePartitions:
    def __init__(self, config: BrokerConfig, topics: TopicManager, clock: Clock, appends: AppendSignal,
                 appender: Appender, group_config: Any) -> None:
        """`group_config(group_id, name)`: a group config's value (share.auto.offset.reset, ...) or None."""
        self.config = config
        self.topics = topics
        self.clock = clock
        self.appends = appends  # wakes share fetches waiting for records (released ones too)
        self.appender = appender
        self.group_config = group_config
        self.partitions: dict[Key, SharePartition] = {}
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self._persisted: dict[Key, tuple[int, list[StateBatch]]] = {}
        self.loaded = trio.Event()
        self._wake = trio.Event()
        self._snapshot_epochs: dict[Key, int] = {}

    # -- state in __share_group_state -------------------------------------------------------------------
    def _state_partition(self, key: Key) -> Partition:
        topic = internal_topic(self.topics, SHARE_STATE_TOPIC, self.clock.now_ms())
        return topic.partitions[partition_for(f"{key[0]}:{key[1]}:{key[2]}", len(topic.partitions))]

    def _persist(self, key: Key, sp: SharePartition) -> Partition:
        epoch = self._snapshot_epochs.get(key, -1) + 1
        self._snapshot_epochs[key] = epoch
        now = self.clock.now_ms()
        k, v = encode_share_state_record(
            ShareStateRecordType.SHARE_SNAPSHOT,
            {"group_id": key[0], "topic_id": key[1], "partition": key[2]},
            {"snapshot_epoch": epoch, "state_epoch": 0, "leader_epoch": 0, "start_offset": sp.start_offset,
             "create_timestamp": now, "write_timestamp": now,
             "state_batches": [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                                "delivery_state": b.state.value, "delivery_count": b.delivery_count}
                               for b in sp.snapshot()]})
        return self._write_state(key, k, v, now)

    def _delete_state(self, key: Key) -> None:
        k, _ = encode_share_state_record(ShareStateRecordType.SHARE_SNAPSHOT,
                                         {"group_id": key[0], "topic_id": key[1], "partition": key[2]}, None)
        self._write_state(key, k, None, self.clock.now_ms())

    def _write_state(self, key: Key, record_key: bytes, value: bytes | None, now: int) -> Partition:
        """One record in the share partition's partition of `__share_group_state`; OSError if not written."""
        partition = self._state_partition(key)
        appended = self.appender.append(partition, build_batch([LogRecord(0, 0, record_key, value)],
                                                               base_timestamp=now), AppendOrigin.COORDINATOR, now)
        if appended.error:
            raise OSError(f"writing the state of {key} failed: {appended.error.name}: {appended.message}")
        return partition

    def load(self) -> None:
        topic = self.topics.get(SHARE_STATE_TOPIC)
        if topic is not None:
            for partition in topic.partitions:
                for _header, records in stored_batches(partition):
                    for record in records:
                        if record.key is None:
                            continue
                        try:
                            kind, key, value = decode_share_state_record(record.key, record.value)
                        except RecordError as exc:
                            log.warning("skipping a %s record: %s", SHARE_STATE_TOPIC, exc)
                            continue
                        k = (key.group_id, key.topic_id, key.partition)
                        if value is None:
                            self._persisted.pop(k, None)
                        elif kind is ShareStateRecordType.SHARE_SNAPSHOT:
                            self._snapshot_epochs[k] = value.snapshot_epoch
                            self._persisted[k] = (value.start_offset, [
                                StateBatch(b.first_offset, b.last_offset, ShareRecordState(b.delivery_state),
                                           b.delivery_count) for b in value.state_batches])
            log.info("loaded the state of %d share partition(s) from %s", len(self._persisted), SHARE_STATE_TOPIC)
        self.loaded.set()

    # -- share partitions ---------------------------------------------------------------------------------
    def _limits(self, group_id: str) -> dict[str, int]:
        """The group's share.* configs (KIP-932 group configs over the broker's group.share.* defaults)."""
        def setting(name: str, default: int) -> int:
            value = self.group_config(group_id, name)
            return int(value) if value else default
        return {"lock_duration_ms": setting("share.record.lock.duration.ms",
                                            self.config.group_share_record_lock_duration_ms),
                "delivery_count_limit": setting("share.delivery.count.limit",
                                                self.config.group_share_delivery_count_limit),
                "max_in_flight": setting("share.partition.max.record.locks",
                                         self.config.group_share_partition_max_record_locks)}

    def lock_duration_ms(self, group_id: str) -> int:
        return self._limits(group_id)["lock_duration_ms"]

    def renew_enabled(self, group_id: str) -> bool:
        """share.renew.acknowledge.enable (KIP-1222; true by default): RENEW acknowledgements allowed."""
        return (self.group_config(group_id, "share.renew.acknowledge.enable") or "true").lower() == "true"

    def get(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition | None:
        key = (group_id, topic_id, index)
        sp = self.partitions.get(key)
        if sp is not None:
            for name, value in self._limits(group_id).items():  # group configs may have changed
                setattr(sp, name, value)
            return sp
        topic = self.topics.get_by_id(topic_id)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        log_ = topic.partitions[index].log
        persisted = self._persisted.get(key)
        if persisted is not None:
            sp = SharePartition.from_snapshot(persisted[0], persisted[1], **self._limits(group_id))
        else:
            # A share partition starts where share.auto.offset.reset says (Kafka's default: latest).
            reset = (self.group_config(group_id, "share.auto.offset.reset") or "latest").lower()
            start = log_.log_start_offset if reset == "earliest" else topic.partitions[index].high_watermark
            sp = SharePartition(start, **self._limits(group_id))
        if sp.start_offset < log_.log_start_offset:  # records deleted meanwhile
            sp.reset_start(log_.log_start_offset)
        self.partitions[key] = sp
        return sp

    def group_partitions(self, group_id: str) -> Iterator[tuple[Key, SharePartition]]:
        for key, sp in self.partitions.items():
            if key[0] == group_id:
                yield key, sp
        for key, (start, batches) in self._persisted.items():
            if key[0] == group_id and key not in self.partitions:
                yield key, SharePartition.from_snapshot(start, batches)

    def group_partitions_all(self) -> Iterator[tuple[Key, SharePartition]]:
        yield from self.partitions.items()
        for key, (start, batches) in self._persisted.items():
            if key not in self.partitions:
                yield key, SharePartition.from_snapshot(start, batches)

    def member_gone(self, group_id: str, member_id: str) -> None:
        self.sessions.pop((group_id, member_id), None)
        for key, sp in list(self.partitions.items()):
            if key[0] == group_id and sp.release_member(member_id):
                self._persist(key, sp)
        self.appends.notify()  # waiting fetches may now get the released records

    def delete_offsets(self, group_id: str, topic_id: uuid.UUID) -> None:
        for key in [k for k in list(self.partitions) + list(self._persisted) if k[0] == group_id and k[1] == topic_id]:
            self.partitions.pop(key, None)
            self._persisted.pop(key, None)
            self._delete_state(key)

    def alter_start(self, group_id: str, topic_id: uuid.UUID, index: int, offset: int) -> None:
        sp = self.get(group_id, topic_id, index)
        if sp is not None:
            sp.alter_start(offset)
            self._persist((group_id, topic_id, index), sp)

    # -- sessions -------------------------------------------------------------------------------------------
    def session(self, group_id: str, member_id: str, epoch: int, added: list[tuple[uuid.UUID, int]],
                forgotten: list[tuple[uuid.UUID, int]]) -> ShareSession | None:
        """Kafka's ShareSessionCache: epoch 0 opens a session (replacing any), -1 closes it, others must be
        the expected epoch. None for the final epoch (the session is gone)."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            self.member_gone_from_session(group_id, member_id)
            session = self.sessions[key] = ShareSession(1, set(added))
            return session
        session = self.sessions.get(key)
        if session is None:
            raise ShareSessionError(ErrorCode.SHARE_SESSION_NOT_FOUND,
                                    f"Share session not found for member {member_id} of group {group_id}.")
        if epoch == FINAL_EPOCH:
            del self.sessions[key]
            return None
        if epoch != session.epoch:
            raise ShareSessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                                    f"Share session epoch {epoch} is not the expected {session.epoch}.")
        session.epoch = session.epoch + 1 if session.epoch < 2**31 - 1 else 1
        session.partitions |= set(added)
        session.partitions -= set(forgotten)
        return session

    def member_gone_from_session(self, group_id: str, member_id: str) -> None:
        """A new session of a member: what it held under the old one goes back."""
        if (group_id, member_id) in self.sessions:
            del self.sessions[(group_id, member_id)]
            for key, sp in list(self.partitions.items()):
                if key[0] == group_id and sp.release_member(member_id):
                    self._persist(key, sp)

    # -- acknowledgements and fetches ---------------------------------------------------------------------------
    def acknowledge(self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int,
                    batches: list[tuple[int, int, list[int]]], *, renew: bool = False
                    ) -> tuple[ErrorCode, Partition | None]:
        """One partition's acknowledgement batches, all or nothing; the state written to __share_group_state
        when they were applied (the partition to wait on for durability), else None."""
        error = check_acknowledgements(batches, renew=renew)
        if error != ErrorCode.NONE:
            return error, None
        sp = self.get(group_id, topic_id, index)
        if sp is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        if renew and not self.renew_enabled(group_id) \
                and any(AcknowledgeType.RENEW.value in types for _, _, types in batches):
            return ErrorCode.INVALID_RECORD_STATE, None
        error = sp.acknowledge_batches(member_id, [(first, last, [AcknowledgeType(t) for t in types])
                                                  for first, last, types in batches], self.clock.now_ms())
        if error != ErrorCode.NONE:
            return error, None
        stored = self._persist((group_id, topic_id, index), sp)
        self.appends.notify()  # released records may be fetched now
        self.changed()  # a renewed lock moves the next deadline
        return error, stored

    def fetch(self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int, max_records: int,
              max_bytes: int, mode: ShareAcquireMode = ShareAcquireMode.BATCH_OPTIMIZED) -> PartitionResult:
        sp = self.get(group_id, topic_id, index)
        topic = self.topics.get_by_id(topic_id)
        if sp is None or topic is None:
            return PartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        partition = topic.partitions[index]
        plog = partition.log
        if sp.start_offset < plog.log_start_offset:
            sp.reset_start(plog.log_start_offset)
        hw = partition.high_watermark
        committed = (self.group_config(group_id, "share.isolation.level") or "").lower() == "read_committed"
        if committed and partition.producers.ongoing_txns:
            hw = partition.producers.last_stable_offset(hw, plog.log_start_offset)
        offset = sp.next_fetch_offset()
        if offset >= hw:
            return PartitionResult()
        # Whole batches from the one holding the fetch offset: records are acquired only from the batches read,
        # so each acquired offset goes out with its batch (a client takes an acquired offset it gets no
        # record for as a gap, and its acknowledgement archives the record).
        data = plog.read(offset, max_bytes, max_offset=hw)
        headers = list(iter_batches(data))
        spans = [(header.base_offset, header.base_offset + header.last_offset_delta, start, end)
                 for header, start, end in headers]
        aborted = _aborted_batches(partition, [h for h, _, _ in headers]) if committed and spans else set()
        acquired = sp.acquire(member_id, [(first, last) for first, last, _, _ in spans], max_records,
                              self.clock.now_ms(), mode, aborted)
        if not acquired:
            return PartitionResult()
        # From the batch of the first acquired record to that of the last, as Kafka slices what it read (the
        # batches in between go too: an aborted transaction's, records done meanwhile).
        held = [i for i, (first, last, _, _) in enumerate(spans)
                if any(r.first_offset <= last and first <= r.last_offset for r in acquired)]
        chunks = [bytes(data[start:end]) for _, _, start, end in spans[held[0]:held[-1] + 1]]
        self._persist((group_id, topic_id, index), sp)
        self.changed()  # the lock-expiry timer may sleep past the new locks' deadline
        return PartitionResult(acquired=acquired, records=b"".join(chunks))

    # -- timers ---------------------------------------------------------------------------------------------------
    async def run(self) -> None:
        self.load()
        while True:
            now = self.clock.now_ms()
            deadlines = [d for sp in self.partitions.values() if (d := sp.next_lock_deadline()) is not None]
            deadline = min(deadlines, default=None)
            if deadline is not None and deadline <= now:
                for key, sp in self.partitions.items():
                    if sp.expire_locks(now):
                        log.info("share group %s: acquisition locks expired on %s-%d", key[0], key[1], key[2])
                        self._persist(key, sp)
                self.appends.notify()
                continue
            self._wake = trio.Event()
            await self.clock.wait(self._wake, math.inf if deadline is None else (deadline - now) / 1000)

    def changed(self) -> None:
        self._wake.set()
