"""The trio shell around the pure group coordinator: the `__consumer_offsets` topic it writes to and
replays at start, the timer task that fires session and rebalance deadlines, offset expiry, and the
awaitable form of JoinGroup/SyncGroup (whose answers wait for other members).

Every answer that follows a write waits until that write is durable (the log's --fsync policy), as an
acks=all produce to `__consumer_offsets` would in Kafka.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from typing import Any

import trio

from broker.clock import Clock
from broker.config.options import BrokerConfig
from broker.log.flusher import GroupFlusher
from broker.services.appends import AppendSignal
from broker.services.internal_topics import internal_topic, partition_for, stored_batches
from broker.services.topics import OFFSETS_TOPIC, Partition, Topic, TopicManager
from coordinator.group import JoinResult, SyncResult
from coordinator.group_coordinator import GroupConfig, GroupCoordinator, Record, StoreError
from protocol.header import ErrorCode
from protocol.records import CONTROL_COMMIT, build_batch, parse_control_record
from protocol.records import Record as LogRecord

log = logging.getLogger(__name__)


class _Reply:
    """One delayed answer: set by a coordinator callback, awaited by the request's handler."""

    __slots__ = ("_event", "value")

    def __init__(self) -> None:
        self._event = trio.Event()
        self.value: Any = None

    def set(self, value: Any) -> None:
        if not self._event.is_set():
            self.value = value
            self._event.set()

    async def wait(self) -> Any:
        await self._event.wait()
        return self.value


class GroupService:
    def __init__(self, config: BrokerConfig, topics: TopicManager, clock: Clock, flusher: GroupFlusher,
                 appends: AppendSignal) -> None:
        self.config = config
        self.topics = topics
        self.clock = clock
        self.flusher = flusher
        self.appends = appends
        c = config
        self.coordinator = GroupCoordinator(GroupConfig(
            min_session_timeout_ms=c.group_min_session_timeout_ms,
            max_session_timeout_ms=c.group_max_session_timeout_ms,
            initial_rebalance_delay_ms=c.group_initial_rebalance_delay_ms,
            max_size=c.group_max_size,
            offsets_retention_ms=c.offsets_retention_minutes * 60_000,
            offset_metadata_max_bytes=c.offset_metadata_max_bytes,
        ), self)
        self.loaded = trio.Event()
        self._wake = trio.Event()

    # -- the offsets topic (GroupStore) ---------------------------------------------------------------
    def offsets_topic(self) -> Topic:
        """`__consumer_offsets`, created on first use."""
        return internal_topic(self.topics, OFFSETS_TOPIC, self.clock.now_ms())

    def partition_of(self, group_id: str) -> Partition:
        topic = self.offsets_topic()
        return topic.partitions[partition_for(group_id, len(topic.partitions))]

    def write(self, group_id: str, records: list[Record], now_ms: int) -> None:
        batch = build_batch([LogRecord(i, 0, key, value) for i, (key, value) in enumerate(records)],
                            base_timestamp=now_ms)
        try:
            self.partition_of(group_id).log.append(batch, now_ms=now_ms)
        except OSError as exc:
            raise StoreError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"append to {OFFSETS_TOPIC} failed: {exc}") \
                from exc
        self.appends.notify()

    def write_txn(self, group_id: str, producer_id: int, producer_epoch: int, records: list[Record],
                  now_ms: int) -> None:
        """A transactional batch of the producer (TxnOffsetCommit): the partition's producer state opens the
        transaction there, so the LSO and the marker treat it like any transactional write."""
        batch = build_batch([LogRecord(i, 0, key, value) for i, (key, value) in enumerate(records)],
                            base_timestamp=now_ms, producer_id=producer_id, producer_epoch=producer_epoch,
                            is_transactional=True)
        partition = self.partition_of(group_id)
        try:
            result = partition.log.append(batch, now_ms=now_ms)
        except OSError as exc:
            raise StoreError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"append to {OFFSETS_TOPIC} failed: {exc}") \
                from exc
        partition.producers.commit(producer_id, producer_epoch, -1, len(records) - 1, result.base_offset, now_ms,
                                   is_transactional=True)
        self.appends.notify()

    async def durable(self, group_id: str) -> None:
        """Wait until everything written for the group's partition so far is on disk."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return
        plog = topic.partitions[partition_for(group_id, len(topic.partitions))].log
        await self.flusher.wait_durable(plog, plog.log_end_offset - 1)

    # -- background tasks ---------------------------------------------------------------------------
    async def run(self) -> None:
        """Replay `__consumer_offsets`, then fire the coordinator's timers and expire old offsets."""
        await self._load()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._run_expiry)
            await self._run_timers()

    async def _load(self) -> None:
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is not None:
            for partition in topic.partitions:
                pending: dict[int, list[Record]] = {}
                self.coordinator.load(_replay(partition, pending), self.clock.now_ms())
                for producer_id, records in pending.items():
                    self.coordinator.load_pending_txn(producer_id, records)
                await trio.sleep(0)  # let connections be served between partitions
            log.info("loaded %d group(s) from %s", len(self.coordinator.groups), OFFSETS_TOPIC)
        self.loaded.set()

    async def _run_timers(self) -> None:
        while True:
            now = self.clock.now_ms()
            deadline = self.coordinator.next_deadline()
            if deadline is not None and deadline <= now:
                self.coordinator.tick(now)
                continue
            self._wake = trio.Event()
            await self.clock.wait(self._wake, math.inf if deadline is None else (deadline - now) / 1000)

    async def _run_expiry(self) -> None:
        interval = self.config.offsets_retention_check_interval_ms / 1000
        while True:
            await self.clock.sleep(interval)
            removed = self.coordinator.expire_offsets(self.clock.now_ms())
            if removed:
                log.info("removed %d expired offset(s)", removed)
            self._wake.set()

    def changed(self) -> None:
        """A request may have moved a deadline: let the timer task look again."""
        self._wake.set()

    # -- requests whose answers wait ------------------------------------------------------------------
    async def join_group(self, **request: Any) -> JoinResult:
        await self.loaded.wait()
        reply = _Reply()
        self.coordinator.join_group(**request, respond=reply.set, now_ms=self.clock.now_ms())
        self.changed()
        result: JoinResult = await reply.wait()
        await self.durable(request["group_id"])
        return result

    async def sync_group(self, **request: Any) -> SyncResult:
        await self.loaded.wait()
        reply = _Reply()
        self.coordinator.sync_group(**request, respond=reply.set, now_ms=self.clock.now_ms())
        self.changed()
        result: SyncResult = await reply.wait()
        await self.durable(request["group_id"])
        return result


def _replay(partition: Partition, pending: dict[int, list[Record]]) -> Iterator[Record]:
    """The (key, value) records of a partition of `__consumer_offsets`, in log order. A transaction's
    records come out when its COMMIT marker is reached, and never if it aborted; those of transactions
    still open at the end are left in `pending` (by producer id)."""
    for header, records in stored_batches(partition):
        if header.is_control:
            done = pending.pop(header.producer_id, [])
            if records and parse_control_record(records[0])[0] == CONTROL_COMMIT:
                yield from done
            continue
        keyed = [(r.key, r.value) for r in records if r.key is not None]
        if header.is_transactional:
            pending.setdefault(header.producer_id, []).extend(keyed)
        else:
            yield from keyed
