"""The trio shell of KIP-932 share consumption on the partitions this broker leads (Kafka's
SharePartitionManager): the share partitions of every share group (coordinator/share_partition.py), their share
sessions (ShareFetch/ShareAcknowledge session epochs), records read from the logs and handed out under
acquisition locks, the lock-expiry timer, and long polls that wait for new records.

A share partition's state is the share coordinator's (broker/services/share_coordinator.py), reached through
the persister (broker/services/share_persister.py) as Kafka's SharePartition does: read at its first use here,
and every change but an acquisition (acknowledgements, releases, expired locks, with the delivery counts and
the start offset) written before it is answered, so nothing acknowledged is delivered again when this broker
restarts, dies, or stops leading the partition; records acquired and not acknowledged then are offered again.
A share partition leaves this broker's memory when the partition is led elsewhere (its next leader reads the
state), when its state is fenced (a newer leader, or the group coordinator initialized the state again), and
when the group's last share session here ends (the group coordinator may change the state of an empty group:
AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups).
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
from broker.services.appends import AppendSignal
from broker.services.share_persister import SharePersister
from broker.services.topics import Partition, TopicManager
from coordinator.share_coordinator import UNINITIALIZED_START_OFFSET
from coordinator.share_partition import (
    AcknowledgeType,
    AcquiredRange,
    ShareAcquireMode,
    SharePartition,
    check_acknowledgements,
)
from protocol.header import ErrorCode
from protocol.records import iter_batches

log = logging.getLogger(__name__)

Key = tuple[str, uuid.UUID, int]  # group id, topic id, partition
FINAL_EPOCH = -1
INITIAL_EPOCH = 0
# The state is not this leader's to write any more: the share partition is read again at its next use.
FENCED = frozenset({ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.FENCED_STATE_EPOCH})


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


@dataclass(slots=True, eq=False)
class _Held:
    """A share partition led here: its state as read from the share coordinator, and its writes (one at a time,
    in order: each carries the start offset from before its change)."""

    partition: SharePartition
    state_epoch: int
    leader_epoch: int
    lock: trio.Lock = field(default_factory=trio.Lock)
    changed: int = 0  # changes made (a count)
    written: int = 0  # changes written


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
                 persister: SharePersister, group_config: Any) -> None:
        """`group_config(group_id, name)`: a group config's value (share.auto.offset.reset, ...) or None."""
        self.config = config
        self.topics = topics
        self.clock = clock
        self.appends = appends  # wakes share fetches waiting for records (released ones too)
        self.persister = persister
        self.group_config = group_config
        self.held: dict[Key, _Held] = {}
        self._reading: dict[Key, trio.Event] = {}
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self.loaded = trio.Event()
        self._wake = trio.Event()
        self._nursery: trio.Nursery | None = None

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

    def _led(self, topic_id: uuid.UUID, index: int) -> Partition | ErrorCode:
        topic = self.topics.get_by_id(topic_id)
        if topic is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return self.topics.leader_partition(topic.name, index)

    async def get(self, group_id: str, topic_id: uuid.UUID, index: int) -> _Held | ErrorCode:
        """The share partition, its state read from the share coordinator at its first use here (Kafka's
        SharePartition.maybeInitialize); NOT_LEADER_OR_FOLLOWER where another broker leads the partition, the
        read's error if its state cannot be had (the group coordinator has not initialized it yet, say)."""
        key = (group_id, topic_id, index)
        while True:
            partition = self._led(topic_id, index)
            if isinstance(partition, ErrorCode):
                return partition
            held = self.held.get(key)
            if held is not None and held.leader_epoch == partition.leader_epoch:
                for name, value in self._limits(group_id).items():  # group configs may have changed
                    setattr(held.partition, name, value)
                return held
            reading = self._reading.get(key)
            if reading is None:
                break
            await reading.wait()
        self.held.pop(key, None)
        reading = self._reading[key] = trio.Event()
        try:
            result = await self.persister.read(key, partition.leader_epoch)
            if result.error:
                log.info("share group %s: the state of %s-%d cannot be read: %s %s", group_id, partition.topic,
                         index, result.error.name, result.message or "")
                return result.error
            if self._led(topic_id, index) is not partition:  # the leadership moved meanwhile
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            start = result.start_offset
            if start == UNINITIALIZED_START_OFFSET:
                start = self._reset_offset(group_id, partition)
            sp = SharePartition.from_state(start, result.batches, **self._limits(group_id))
            if sp.start_offset < partition.log.log_start_offset:  # records deleted meanwhile
                sp.reset_start(partition.log.log_start_offset)
            held = self.held[key] = _Held(sp, result.state_epoch, partition.leader_epoch)
            return held
        finally:
            del self._reading[key]
            reading.set()

    def _reset_offset(self, group_id: str, partition: Partition) -> int:
        """Where a share partition without a start offset starts: share.auto.offset.reset (Kafka's default:
        latest; by_duration: the first record at most that old)."""
        plog = partition.log
        reset = (self.group_config(group_id, "share.auto.offset.reset") or "latest").lower()
        if reset == "earliest":
            return plog.log_start_offset
        if reset.startswith("by_duration:"):
            from broker.config.group_configs import duration_ms

            found = plog.offset_for_timestamp(self.clock.now_ms() - duration_ms(reset.partition(":")[2]))
            return partition.high_watermark if found is None else min(found[0], partition.high_watermark)
        return partition.high_watermark

    def cached(self, group_id: str | None = None) -> Iterator[tuple[Key, SharePartition]]:
        """The share partitions held here (of one group)."""
        for key, held in list(self.held.items()):
            if group_id is None or key[0] == group_id:
                yield key, held.partition

    def leadership_lost(self, topic: str, index: int) -> None:
        """The partition is led elsewhere now: its share partitions go (the new leader reads their state)."""
        found = self.topics.get(topic)
        if found is None:
            return
        for key in [k for k in self.held if k[1] == found.topic_id and k[2] == index]:
            del self.held[key]
        self.appends.notify()

    # -- writing the state ---------------------------------------------------------------------------------
    def _changed(self, key: Key, held: _Held) -> int:
        """A change was made: the ticket a write covering it reaches."""
        held.changed += 1
        return held.changed

    async def _write(self, key: Key, held: _Held, ticket: int) -> ErrorCode:
        """Until the changes up to `ticket` are written to the share coordinator (one write at a time, in
        order; a failed write's changes go into the next one); the error if they could not be."""
        async with held.lock:
            if held.written >= ticket:
                return ErrorCode.NONE
            taken = held.partition.take_changes()
            covered = held.changed
            if taken is None:
                held.written = covered
                return ErrorCode.NONE
            batches, moved = taken
            sp = held.partition
            result = await self.persister.write(key, held.state_epoch, held.leader_epoch, sp.persisted_start,
                                                sp.delivery_complete_count(), batches)
            if result.error in FENCED:
                log.info("share group %s: the state of %s-%d is fenced (%s): read again at its next use", key[0],
                         key[1], key[2], result.error.name)
                if self.held.get(key) is held:
                    del self.held[key]
                return result.error
            if result.error:
                log.warning("share group %s: writing the state of %s-%d failed: %s %s", key[0], key[1], key[2],
                            result.error.name, result.message or "")
                sp.restore_changes(batches, moved)
                return result.error
            held.written = covered
            return ErrorCode.NONE

    def _write_later(self, key: Key, held: _Held) -> None:
        """Write what changed without an answer waiting for it (a release, an expired lock)."""
        ticket = self._changed(key, held)
        if self._nursery is not None:
            self._nursery.start_soon(self._write, key, held, ticket)

    # -- members ----------------------------------------------------------------------------------------------
    def member_gone(self, group_id: str, member_id: str) -> None:
        """The member left the group, or its share session here ended: what it held goes back."""
        self.sessions.pop((group_id, member_id), None)
        for key, held in list(self.held.items()):
            if key[0] == group_id and held.partition.release_member(member_id):
                self._write_later(key, held)
        self.appends.notify()  # waiting fetches may now get the released records
        if not any(g == group_id for g, _ in self.sessions):
            self._forget_group(group_id)

    def _forget_group(self, group_id: str) -> None:
        """No share session of the group here any more: its share partitions leave memory once written (the
        group coordinator may change an empty group's state), as Kafka's SharePartitionManager on an empty
        group."""
        for key, held in list(self.held.items()):
            if key[0] == group_id and held.partition.counts()["ACQUIRED"] == 0:
                if self._nursery is not None:
                    self._nursery.start_soon(self._write_and_forget, key, held)

    async def _write_and_forget(self, key: Key, held: _Held) -> None:
        await self._write(key, held, held.changed)
        if self.held.get(key) is held and not any(g == key[0] for g, _ in self.sessions):
            del self.held[key]

    # -- sessions -------------------------------------------------------------------------------------------
    def session(self, group_id: str, member_id: str, epoch: int, added: list[tuple[uuid.UUID, int]],
                forgotten: list[tuple[uuid.UUID, int]]) -> ShareSession | None:
        """Kafka's ShareSessionCache: epoch 0 opens a session (replacing any), -1 closes it (`close_session`,
        once the request's acknowledgements are done), others must be the expected epoch. None for the final
        epoch."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if key in self.sessions:  # a new session of a member: what it held under the old one goes back
                self.member_gone(group_id, member_id)
            session = self.sessions[key] = ShareSession(1, set(added))
            return session
        session = self.sessions.get(key)
        if session is None:
            raise ShareSessionError(ErrorCode.SHARE_SESSION_NOT_FOUND,
                                    f"Share session not found for member {member_id} of group {group_id}.")
        if epoch == FINAL_EPOCH:
            return None
        if epoch != session.epoch:
            raise ShareSessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                                    f"Share session epoch {epoch} is not the expected {session.epoch}.")
        session.epoch = session.epoch + 1 if session.epoch < 2**31 - 1 else 1
        session.partitions |= set(added)
        session.partitions -= set(forgotten)
        return session

    def close_session(self, group_id: str, member_id: str) -> None:
        """The final epoch's request is done: the session ends, and what the member still holds goes back (Kafka's
        releaseSession)."""
        self.member_gone(group_id, member_id)

    # -- acknowledgements and fetches ---------------------------------------------------------------------------
    async def acknowledge(self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int,
                          batches: list[tuple[int, int, list[int]]], *, renew: bool = False) -> ErrorCode:
        """One partition's acknowledgement batches, all or nothing, answered once written to the share
        coordinator (Kafka's persister write)."""
        error = check_acknowledgements(batches, renew=renew)
        if error != ErrorCode.NONE:
            return error
        held = await self.get(group_id, topic_id, index)
        if isinstance(held, ErrorCode):
            return held
        if renew and not self.renew_enabled(group_id) \
                and any(AcknowledgeType.RENEW.value in types for _, _, types in batches):
            return ErrorCode.INVALID_RECORD_STATE
        key = (group_id, topic_id, index)
        error = held.partition.acknowledge_batches(member_id, [(first, last, [AcknowledgeType(t) for t in types])
                                                              for first, last, types in batches], self.clock.now_ms())
        if error != ErrorCode.NONE:
            return error
        ticket = self._changed(key, held)
        self.appends.notify()  # released records may be fetched now
        self.changed()  # a renewed lock moves the next deadline
        return await self._write(key, held, ticket)

    async def fetch(self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int, max_records: int,
                    max_bytes: int, mode: ShareAcquireMode = ShareAcquireMode.BATCH_OPTIMIZED) -> PartitionResult:
        held = await self.get(group_id, topic_id, index)
        if isinstance(held, ErrorCode):
            return PartitionResult(held)
        partition = self._led(topic_id, index)
        if isinstance(partition, ErrorCode):
            return PartitionResult(partition)
        return self._acquire(group_id, member_id, held, partition, max_records, max_bytes, mode)

    def _acquire(self, group_id: str, member_id: str, held: _Held, partition: Partition, max_records: int,
                 max_bytes: int, mode: ShareAcquireMode) -> PartitionResult:
        sp = held.partition
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
        # (The records of aborted transactions archived here are written with the next change, as Kafka does.)
        acquired = sp.acquire(member_id, [(first, last) for first, last, _, _ in spans], max_records,
                              self.clock.now_ms(), mode, aborted)
        if not acquired:
            return PartitionResult()
        # From the batch of the first acquired record to that of the last, as Kafka slices what it read (the
        # batches in between go too: an aborted transaction's, records done meanwhile).
        chosen = [i for i, (first, last, _, _) in enumerate(spans)
                  if any(r.first_offset <= last and first <= r.last_offset for r in acquired)]
        chunks = [bytes(data[start:end]) for _, _, start, end in spans[chosen[0]:chosen[-1] + 1]]
        self.changed()  # the lock-expiry timer may sleep past the new locks' deadline
        return PartitionResult(acquired=acquired, records=b"".join(chunks))

    # -- timers ---------------------------------------------------------------------------------------------------
    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.loaded.set()
            while True:
                now = self.clock.now_ms()
                deadlines = [d for h in self.held.values() if (d := h.partition.next_lock_deadline()) is not None]
                deadline = min(deadlines, default=None)
                if deadline is not None and deadline <= now:
                    for key, held in list(self.held.items()):
                        if held.partition.expire_locks(now):
                            log.info("share group %s: acquisition locks expired on %s-%d", key[0], key[1], key[2])
                            self._write_later(key, held)
                    self.appends.notify()
                    continue
                self._wake = trio.Event()
                await self.clock.wait(self._wake, math.inf if deadline is None else (deadline - now) / 1000)

    def changed(self) -> None:
        self._wake.set()
