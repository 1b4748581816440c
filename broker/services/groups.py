"""The trio shell around the pure group coordinator: the `__consumer_offsets` topic it writes to and
replays at start, the timer task that fires session and rebalance deadlines, offset expiry, and the
awaitable form of JoinGroup/SyncGroup (whose answers wait for other members).

Every answer that follows a write waits until that write is durable (the log's --fsync policy), as an
acks=all produce to `__consumer_offsets` would in Kafka.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from typing import Any

import trio

from broker.clock import Clock
from broker.config.options import BrokerConfig
from broker.services.appends import AppendSignal
from broker.services.durability import Durability
from broker.services.internal_topics import partition_for, stored_batches
from broker.services.topics import OFFSETS_TOPIC, Partition, Topic, TopicError, TopicManager
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
    def __init__(self, config: BrokerConfig, topics: TopicManager, clock: Clock, durability: Durability,
                 appends: AppendSignal, internal_topic: Callable[[str], Topic | ErrorCode], *,
                 per_partition: bool = False) -> None:
        """`internal_topic(name)`: `__consumer_offsets`, created if it is not there yet (an ErrorCode while it
        cannot be had). `per_partition`: a cluster's broker coordinates only the groups of the partitions it
        leads, loaded when it becomes their leader (`on_partition`); a single broker, every group."""
        self.config = config
        self.topics = topics
        self.clock = clock
        self.durability = durability
        self.appends = appends
        self._internal_topic = internal_topic
        self.per_partition = per_partition
        self.owned: dict[int, int] = {}  # partitions of __consumer_offsets loaded here -> their leader epoch
        self.loading: dict[int, int] = {}  # partitions being loaded -> their leader epoch
        self._nursery: trio.Nursery | None = None
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
        """`__consumer_offsets`, created on first use; TopicError(COORDINATOR_NOT_AVAILABLE) while a cluster
        creates it."""
        topic = self._internal_topic(OFFSETS_TOPIC)
        if isinstance(topic, ErrorCode):
            raise TopicError("COORDINATOR_NOT_AVAILABLE", "The coordinator is not available.")
        return topic

    def partition_of(self, group_id: str) -> Partition:
        topic = self.offsets_topic()
        return topic.partitions[partition_for(group_id, len(topic.partitions))]

    def error_for(self, group_id: str) -> ErrorCode | None:
        """Whether this broker coordinates the group now: NOT_COORDINATOR (its partition is led elsewhere),
        COORDINATOR_LOAD_IN_PROGRESS (being loaded), COORDINATOR_NOT_AVAILABLE (no offsets topic yet)."""
        if not self.per_partition:
            return None if self.loaded.is_set() else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None or not topic.partitions:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        index = partition_for(group_id, len(topic.partitions))
        if index in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if index not in self.owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def coordinates(self, group_id: str) -> bool:
        return self.error_for(group_id) is None

    def on_partition(self, index: int, leader_epoch: int | None) -> None:
        """This broker became the leader of a partition of `__consumer_offsets` (its groups are loaded from the
        log), or stopped being it (None: they are forgotten here)."""
        topic = self.topics.get(OFFSETS_TOPIC)
        count = len(topic.partitions) if topic is not None else 0
        if leader_epoch is None:
            self.owned.pop(index, None)
            self.loading.pop(index, None)
            gone = self.coordinator.unload(lambda group_id: partition_for(group_id, count) == index)
            if gone:
                log.info("%s-%d moved: %d group(s) unloaded", OFFSETS_TOPIC, index, gone)
            return
        if self.owned.get(index) == leader_epoch or self.loading.get(index) == leader_epoch:
            return
        self.owned.pop(index, None)
        self.loading[index] = leader_epoch
        if self._nursery is not None:
            self._nursery.start_soon(self._load_partition, index, leader_epoch)

    async def _load_partition(self, index: int, leader_epoch: int) -> None:
        topic = self.topics.get(OFFSETS_TOPIC)
        partition = topic.partitions[index] if topic is not None and index < len(topic.partitions) else None
        if partition is None or partition.log is None or self.loading.get(index) != leader_epoch:
            return
        count = len(topic.partitions)
        self.coordinator.unload(lambda group_id: partition_for(group_id, count) == index)
        pending: dict[int, list[Record]] = {}
        self.coordinator.load(_replay(partition, pending), self.clock.now_ms())
        for producer_id, records in pending.items():
            self.coordinator.load_pending_txn(producer_id, records)
        if self.loading.get(index) == leader_epoch:  # not moved away (or back) meanwhile
            del self.loading[index]
            self.owned[index] = leader_epoch
            log.info("loaded the groups of %s-%d (leader epoch %d)", OFFSETS_TOPIC, index, leader_epoch)
        self.changed()

    def _led_partition(self, group_id: str) -> Partition:
        try:
            partition = self.partition_of(group_id)
        except TopicError as exc:
            raise StoreError(ErrorCode.COORDINATOR_NOT_AVAILABLE, exc.message) from exc
        if partition.log is None:
            raise StoreError(ErrorCode.NOT_COORDINATOR, f"{OFFSETS_TOPIC}-{partition.index} is not led here")
        return partition

    def write(self, group_id: str, records: list[Record], now_ms: int) -> None:
        batch = build_batch([LogRecord(i, 0, key, value) for i, (key, value) in enumerate(records)],
                            base_timestamp=now_ms)
        partition = self._led_partition(group_id)
        try:
            partition.log.append(batch, now_ms=now_ms)
        except OSError as exc:
            raise StoreError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"append to {OFFSETS_TOPIC} failed: {exc}") \
                from exc
        self.durability.appended(partition)
        self.appends.notify()

    def write_txn(self, group_id: str, producer_id: int, producer_epoch: int, records: list[Record],
                  now_ms: int) -> None:
        """A transactional batch of the producer (TxnOffsetCommit): the partition's producer state opens the
        transaction there, so the LSO and the marker treat it like any transactional write."""
        batch = build_batch([LogRecord(i, 0, key, value) for i, (key, value) in enumerate(records)],
                            base_timestamp=now_ms, producer_id=producer_id, producer_epoch=producer_epoch,
                            is_transactional=True)
        partition = self._led_partition(group_id)
        try:
            result = partition.log.append(batch, now_ms=now_ms)
        except OSError as exc:
            raise StoreError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"append to {OFFSETS_TOPIC} failed: {exc}") \
                from exc
        partition.producers.commit(producer_id, producer_epoch, -1, len(records) - 1, result.base_offset, now_ms,
                                   is_transactional=True)
        self.durability.appended(partition)
        self.appends.notify()

    async def durable(self, group_id: str) -> ErrorCode:
        """Wait until everything written for the group's partition so far is durable (on disk and, in a
        cluster, in every in-sync replica). The error, as Kafka's GroupMetadataManager maps an append's."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return ErrorCode.NONE
        partition = topic.partitions[partition_for(group_id, len(topic.partitions))]
        if partition.log is None:
            return ErrorCode.NOT_COORDINATOR
        error = await self.durability.wait(partition, partition.log.log_end_offset - 1)
        return _STORE_ERRORS.get(error, error)

    async def forget_topics(self, names: list[str]) -> None:
        """Deleted topics: their committed offsets go (tombstones written, as Kafka's handleDeletedPartitions)."""
        changed = self.coordinator.topics_deleted(names, self.clock.now_ms())
        self.changed()
        for group_id in changed:
            await self.durable(group_id)

    # -- background tasks ---------------------------------------------------------------------------
    async def run(self) -> None:
        """Replay `__consumer_offsets` (a single broker; a cluster's loads partition by partition as it
        becomes their leader), then fire the coordinator's timers and expire old offsets."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if self.per_partition:
                self.loaded.set()
                for index, epoch in sorted(self.loading.items()):  # leaderships taken before the service ran
                    nursery.start_soon(self._load_partition, index, epoch)
            else:
                await self._load()
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
        error = self.error_for(request["group_id"])
        if error:
            return JoinResult(error, request["member_id"])
        reply = _Reply()
        self.coordinator.join_group(**request, respond=reply.set, now_ms=self.clock.now_ms())
        self.changed()
        result: JoinResult = await reply.wait()
        await self.durable(request["group_id"])
        return result

    async def sync_group(self, **request: Any) -> SyncResult:
        await self.loaded.wait()
        error = self.error_for(request["group_id"])
        if error:
            return SyncResult(error)
        reply = _Reply()
        self.coordinator.sync_group(**request, respond=reply.set, now_ms=self.clock.now_ms())
        self.changed()
        result: SyncResult = await reply.wait()
        await self.durable(request["group_id"])
        return result


# Kafka's GroupMetadataManager: an append's error as the coordinator answers it.
_STORE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}


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
