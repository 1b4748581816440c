"""The trio shell around the pure group coordinator: the `__consumer_offsets` topic it writes to and
replays at start, the timer task that fires session and rebalance deadlines, offset expiry, and the
awaitable form of JoinGroup/SyncGroup (whose answers wait for other members).

Every answer that follows a write waits until that write is durable (the log's --fsync policy), as an
acks=all produce to `__consumer_offsets` would in Kafka.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import trio

from broker.clock import Clock
from broker.config.options import BrokerConfig
from broker.services.appends import AppendSignal
from broker.services.durability import Durability
from broker.services.internal_topics import partition_for, stored_batches
from broker.services.topics import OFFSETS_TOPIC, Partition, Topic, TopicError, TopicManager
from coordinator.consumer_group_coordinator import ConsumerGroupConfig, ConsumerGroupCoordinator, HeartbeatResult
from coordinator.group import GroupConfig, GroupState, JoinResult, SyncResult
from coordinator.group_coordinator import GroupCoordinator
from coordinator.group_interfaces import Record, StoreError
from coordinator.share_group import ShareGroupConfig, ShareGroupCoordinator, ShareHeartbeatResult
from coordinator.streams_group_coordinator import StreamsGroupConfig, StreamsGroupCoordinator
from coordinator.streams_heartbeat import HeartbeatRequest, StreamsHeartbeatResult
from protocol.header import ErrorCode
from protocol.kafka4_group_records import (
    KAFKA4_GROUP_RECORD_TYPES,
    RecordError,
    decode_group_record,
    record_type,
)
from protocol.records import CONTROL_COMMIT, build_batch, parse_control_record
from protocol.records import Record as LogRecord

log = logging.getLogger(__name__)


class TopicsView:
    """The broker's topics as the consumer group coordinator sees them (Kafka's metadata image)."""

    def __init__(self, topics: TopicManager) -> None:
        self._topics = topics

    def topic_id(self, name: str) -> uuid.UUID | None:
        topic = self._topics.get(name)
        return None if topic is None else topic.topic_id

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self._topics.get_by_id(topic_id)
        return None if topic is None else topic.name

    def partition_count(self, topic_id: uuid.UUID) -> int:
        topic = self._topics.get_by_id(topic_id)
        return -1 if topic is None else len(topic.partitions)

    def topic_names(self) -> list[str]:
        return [topic.name for topic in self._topics]


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
                 per_partition: bool = False, group_config: Callable[[str, str], str | None] | None = None) -> None:
        """`internal_topic(name)`: `__consumer_offsets`, created if it is not there yet (an ErrorCode while it
        cannot be had). `per_partition`: a cluster's broker coordinates only the groups of the partitions it
        leads, loaded when it becomes their leader (`on_partition`); a single broker, every group.
        `group_config(group_id, name)`: a group's own setting of a group config (None: the default)."""
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
        # KIP-848 consumer groups (the 4.x profiles serve ConsumerGroupHeartbeat); same topic, same offsets.
        self.consumer = ConsumerGroupCoordinator(ConsumerGroupConfig(
            session_timeout_ms=c.group_consumer_session_timeout_ms,
            heartbeat_interval_ms=c.group_consumer_heartbeat_interval_ms,
            max_size=c.group_consumer_max_size,
            assignors=tuple(a.strip() for a in c.group_consumer_assignors.split(",") if a.strip()),
            migration_policy=c.group_consumer_migration_policy.lower(),
            regex_refresh_interval_ms=c.group_consumer_regex_refresh_interval_ms,
            **consumer_epochs_of(c),
        ), self, TopicsView(topics), self.coordinator)
        self.share = ShareGroupCoordinator(ShareGroupConfig(
            session_timeout_ms=c.group_share_session_timeout_ms,
            heartbeat_interval_ms=c.group_share_heartbeat_interval_ms,
            max_size=c.group_share_max_size,
        ), self, TopicsView(topics))
        self._group_config = group_config
        self.streams = StreamsGroupCoordinator(self.streams_config, self, TopicsView(topics))
        self.share.other_group_type = self.other_group_type
        self.consumer.other_group_type = self.other_group_type
        self.streams.other_group_type = self.other_group_type
        self.streams.on_classic_converted = self.coordinator.demote_to_simple
        self.consumer.on_classic_converted = self.coordinator.demote_to_simple
        self.coordinator.retained = self._consumer_subscribed
        self._topic_snapshot: dict[str, tuple[uuid.UUID, int]] | None = None
        self.loaded = trio.Event()
        self._wake = trio.Event()

    def streams_config(self, group_id: str) -> StreamsGroupConfig:
        """A streams group's settings: Kafka's group.streams.* defaults, or the group's streams.* configs, as the
        profile's release has them (4.2: no assignment interval; 4.4: static members, task offsets reported)."""
        from broker.config.group_configs import GROUP_CONFIGS
        from broker.config.kafka_versions import check_release, release_key

        release = release_key(check_release(self.config.kafka_version))

        def value(name: str) -> int:
            definition = GROUP_CONFIGS[name]
            own = self._group_config(group_id, name) if self._group_config is not None else None
            if own is None or release < release_key(definition.since):
                own = definition.default(self.config)
            return int(own)

        since_44 = release >= (4, 4)
        return StreamsGroupConfig(
            session_timeout_ms=value("streams.session.timeout.ms"),
            heartbeat_interval_ms=value("streams.heartbeat.interval.ms"),
            num_standby_replicas=value("streams.num.standby.replicas"),
            initial_rebalance_delay_ms=value("streams.initial.rebalance.delay.ms"),
            assignment_interval_ms=value("streams.assignment.interval.ms") if release >= (4, 3) else 0,
            task_offset_interval_ms=value("streams.task.offset.interval.ms") if since_44 else 0,
            acceptable_recovery_lag=value("streams.acceptable.recovery.lag") if since_44 else 0,
            num_warmup_replicas=value("streams.num.warmup.replicas"), static_members=since_44,
            initial_assignment_epoch=1 if release >= (4, 3) else 0, empty_target_on_last_leave=since_44)

    # -- which coordinator owns a group id ------------------------------------------------------------
    def other_group_type(self, group_id: str) -> str | None:
        """For the modern coordinators: what a group id they do not own is here (Kafka's group types)."""
        if group_id in self.share.groups:
            return "share"
        if group_id in self.streams.groups:
            return "streams"
        if group_id in self.consumer.groups:
            return "consumer"
        group = self.coordinator.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return None
        if group.is_empty_of_members() and group.protocol_type is None:
            return "simple"  # only committed offsets (Kafka's simple classic group)
        if group.is_empty_of_members() and group.is_in(GroupState.EMPTY):
            return "classic-empty"
        return "classic"

    def modern_coordinator(self, group_id: str) -> ConsumerGroupCoordinator | StreamsGroupCoordinator | None:
        """The coordinator of a KIP-848 consumer group or a KIP-1071 streams group of that id (their offset
        commits and fetches check member epochs), or None."""
        if group_id in self.consumer.groups:
            return self.consumer
        return self.streams if group_id in self.streams.groups else None

    def _consumer_subscribed(self, group_id: str, topic: str) -> bool:
        group = self.consumer.groups.get(group_id) or self.streams.groups.get(group_id)
        return group is not None and bool(group.members) and group.is_subscribed_to(topic)

    def group_type(self, group_id: str) -> str | None:
        """"consumer", "classic", or None for an unknown group id (a simple group counts as classic)."""
        if group_id in self.consumer.groups:
            return "consumer"
        if group_id in self.share.groups:
            return "share"
        if group_id in self.streams.groups:
            return "streams"
        return "classic" if self.other_group_type(group_id) is not None else None

    def sync_topics(self) -> None:
        """Tell the consumer group coordinator which topics appeared, went or grew since it last looked
        (Kafka's coordinators learn it from the metadata image)."""
        snapshot = {t.name: (t.topic_id, len(t.partitions)) for t in self.topics}
        previous = self._topic_snapshot
        self._topic_snapshot = snapshot
        if previous is None or previous == snapshot:
            return
        created = [n for n in snapshot if n not in previous or previous[n][0] != snapshot[n][0]]
        changed = created + [n for n in previous if snapshot.get(n) != previous[n] and n not in created]
        self.consumer.on_topics_changed(changed, created=bool(created))
        self.streams.on_topics_changed(changed)

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
            gone += self.consumer.unload(lambda group_id: partition_for(group_id, count) == index)
            gone += self.share.unload(lambda group_id: partition_for(group_id, count) == index)
            gone += self.streams.unload(lambda group_id: partition_for(group_id, count) == index)
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
        self.consumer.unload(lambda group_id: partition_for(group_id, count) == index)
        self.streams.unload(lambda group_id: partition_for(group_id, count) == index)
        pending: dict[int, list[Record]] = {}
        modern: list[Record] = []
        self.coordinator.load(_classic_only(_replay(partition, pending), modern), self.clock.now_ms())
        for producer_id, records in pending.items():
            self.coordinator.load_pending_txn(producer_id, records)
        decoded = list(_decoded(modern))
        self.consumer.load((r for r in decoded if r[0].name.startswith("CONSUMER_GROUP")), self.clock.now_ms())
        self.share.load((r for r in decoded if r[0].name.startswith("SHARE_GROUP")), self.clock.now_ms())
        self.streams.load((r for r in decoded if r[0].name.startswith("STREAMS_GROUP")), self.clock.now_ms())
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
        # A fenced producer's late commit: its transaction was aborted by a marker of a newer epoch, and its
        # offsets, kept pending, would be committed by the producer id's next commit marker.
        refused = partition.producers.check_coordinator_append(producer_id, producer_epoch)
        if refused is not None:
            raise StoreError(ErrorCode[refused], f"producer {producer_id}'s epoch {producer_epoch} is fenced in "
                                                 f"{OFFSETS_TOPIC}-{partition.index}")
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
                modern: list[Record] = []
                self.coordinator.load(_classic_only(_replay(partition, pending), modern), self.clock.now_ms())
                for producer_id, records in pending.items():
                    self.coordinator.load_pending_txn(producer_id, records)
                decoded = list(_decoded(modern))
                self.consumer.load((r for r in decoded if r[0].name.startswith("CONSUMER_GROUP")), self.clock.now_ms())
                self.share.load((r for r in decoded if r[0].name.startswith("SHARE_GROUP")), self.clock.now_ms())
                self.streams.load((r for r in decoded if r[0].name.startswith("STREAMS_GROUP")),
                                  self.clock.now_ms())
                await trio.sleep(0)  # let connections be served between partitions
            log.info("loaded %d classic and %d consumer group(s) from %s", len(self.coordinator.groups),
                     len(self.consumer.groups), OFFSETS_TOPIC)
        self.sync_topics()
        self.loaded.set()

    async def _run_timers(self) -> None:
        while True:
            now = self.clock.now_ms()
            deadlines = [d for d in (self.coordinator.next_deadline(), self.consumer.next_deadline(),
                                     self.share.next_deadline(), self.streams.next_deadline()) if d is not None]
            deadline = min(deadlines, default=None)
            if deadline is not None and deadline <= now:
                self.coordinator.tick(now)
                self.consumer.tick(now)
                self.share.tick(now)
                self.streams.tick(now)
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
        group_id = request["group_id"]
        error = self.error_for(group_id)
        if error:
            return JoinResult(error, request["member_id"])
        if group_id in self.share.groups or group_id in self.streams.groups:
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")  # Kafka's answer for a share group
        if group_id in self.consumer.groups:
            # Kafka converts an empty consumer group into a classic one when a classic member joins.
            error = self.consumer.delete_group(group_id, self.clock.now_ms())
            if error == ErrorCode.NON_EMPTY_GROUP:
                # KIP-848 mixed membership (classic members in a consumer group) is not implemented.
                log.warning("group %s: a classic member cannot join the consumer group while it has members",
                            group_id)
                return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, request["member_id"])
            if error != ErrorCode.NONE:
                return JoinResult(error, request["member_id"])
            log.info("[GroupId %s] Converted the empty consumer group to a classic group.", group_id)
        reply = _Reply()
        self.coordinator.join_group(**request, respond=reply.set, now_ms=self.clock.now_ms())
        self.changed()
        result: JoinResult = await reply.wait()
        await self.durable(request["group_id"])
        return result

    async def consumer_group_heartbeat(self, **request: Any) -> Any:
        """ConsumerGroupHeartbeat (KIP-848): answered once its records are durable."""
        await self.loaded.wait()
        error = self.error_for(request["group_id"])
        if error:
            return HeartbeatResult(error)
        self.sync_topics()
        result = self.consumer.heartbeat(**request, now_ms=self.clock.now_ms())
        self.changed()
        stored = await self.durable(request["group_id"])
        return HeartbeatResult(stored) if stored and result.error == ErrorCode.NONE else result

    async def share_group_heartbeat(self, **request: Any) -> Any:
        """ShareGroupHeartbeat (KIP-932): answered once its records are durable."""
        await self.loaded.wait()
        error = self.error_for(request["group_id"])
        if error:
            return ShareHeartbeatResult(error)
        result = self.share.heartbeat(**request, now_ms=self.clock.now_ms())
        self.changed()
        stored = await self.durable(request["group_id"])
        return ShareHeartbeatResult(stored) if stored and result.error == ErrorCode.NONE else result

    async def create_share_group(self, group_id: str, epoch: int) -> ErrorCode:
        """An empty share group (AlterShareGroupOffsets of a group not there yet), once its record is durable."""
        await self.loaded.wait()
        error = self.error_for(group_id) or self.share.create_empty(group_id, epoch, self.clock.now_ms())
        if error:
            return error
        return await self.durable(group_id) or ErrorCode.NONE

    async def streams_group_heartbeat(self, request: HeartbeatRequest) -> StreamsHeartbeatResult:
        """StreamsGroupHeartbeat (KIP-1071): answered once its records are durable."""
        await self.loaded.wait()
        error = self.error_for(request.group_id)
        if error:
            return StreamsHeartbeatResult(error)
        self.sync_topics()
        result = self.streams.heartbeat(request, self.clock.now_ms())
        self.changed()
        stored = await self.durable(request.group_id)
        return StreamsHeartbeatResult(stored) if stored and result.error == ErrorCode.NONE else result

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


def consumer_epochs_of(config: BrokerConfig) -> dict[str, Any]:
    """How the profile's release numbers consumer group epochs and batches their assignments (recorded from the
    real releases: tests/reference/recorded/*/consumer_group_epochs.json): Kafka 4.3 starts groups at epoch 1 and
    computes a group's assignment at most every group.consumer.assignment.interval.ms (its default, 1 s), 4.4
    also brings the empty group's assignment epoch up to date when the last member leaves."""
    from broker.config.kafka_versions import check_release, release_key

    release = release_key(check_release(config.kafka_version))
    if release < (4, 3):
        return {}
    return {"initial_epoch": 1, "assignment_interval_ms": 1000, "empty_assignment_on_leave": release >= (4, 4)}


def _classic_only(records: Iterator[Record], modern: list[Record]) -> Iterator[Record]:
    """The classic records (offset commits, classic group metadata); Kafka 4's group records go to `modern`."""
    for key, value in records:
        try:
            kind = record_type(key)
        except RecordError:
            continue
        if kind in KAFKA4_GROUP_RECORD_TYPES:
            modern.append((key, value))
        elif kind <= 2:
            yield key, value


def _decoded(records: list[Record]) -> Iterator[Any]:
    for key, value in records:
        try:
            kind, k, v = decode_group_record(key, value)
        except RecordError as exc:
            log.warning("skipping a __consumer_offsets record: %s", exc)
            continue
        yield kind, dict(k), None if v is None else dict(v)


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
