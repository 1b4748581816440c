"""The trio shell around the pure group coordinators (classic, KIP-848 consumer, KIP-932 share and KIP-1071
streams groups): `__consumer_offsets` through the coordinator runtime (which loads its partitions and writes to
them: this service is its shard), the timer task that fires session and rebalance deadlines, offset expiry, and
the awaitable form of JoinGroup/SyncGroup (whose answers wait for other members).

Every answer that follows a write waits until that write is durable (the log's --fsync policy), as an
acks=all produce to `__consumer_offsets` would in Kafka.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import trio

from broker.clock import Clock
from broker.config.options import BrokerConfig
from broker.services.coordinator_runtime import CoordinatorRuntime, CoordinatorWriteError
from broker.services.durability import Durability
from broker.services.topics import OFFSETS_TOPIC, Topic, TopicManager
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
from protocol.records import CONTROL_COMMIT, BatchHeader, parse_control_record
from protocol.records import Record as LogRecord

if TYPE_CHECKING:
    from broker.log.append import Appender
    from broker.services.share_persister import SharePersister

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
                 appender: Appender, internal_topic: Callable[[str], Topic | ErrorCode], *,
                 per_partition: bool = False, group_config: Callable[[str, str], str | None] | None = None,
                 share_persister: Callable[[], SharePersister] | None = None) -> None:
        """`internal_topic(name)`: `__consumer_offsets`, created if it is not there yet (an ErrorCode while it
        cannot be had). `per_partition`: a cluster's broker coordinates only the groups of the partitions it
        leads, loaded when it becomes their leader (`runtime.on_partition`); a single broker, every group.
        `group_config(group_id, name)`: a group's own setting of a group config (None: the default).
        `share_persister()`: how share groups' share-partition state is initialized, read and deleted at the
        share coordinator."""
        self.config = config
        self.topics = topics
        self.clock = clock
        self.runtime = CoordinatorRuntime(OFFSETS_TOPIC, "group(s)", self, topics, internal_topic, appender,
                                          durability, clock, per_partition=per_partition)
        self.loaded = self.runtime.loaded
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
            **share_epochs_of(c),
        ), self, TopicsView(topics))
        self._share_persister = share_persister
        self._nursery: trio.Nursery | None = None
        self._group_config = group_config
        self.streams = StreamsGroupCoordinator(self.streams_config, self, TopicsView(topics))
        self.share.other_group_type = self.other_group_type
        self.consumer.other_group_type = self.other_group_type
        self.streams.other_group_type = self.other_group_type
        self.streams.on_classic_converted = self.coordinator.demote_to_simple
        self.coordinator.retained = self._consumer_subscribed
        self._topic_snapshot: dict[str, tuple[uuid.UUID, int]] | None = None
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

    # -- the runtime's shard: loading `__consumer_offsets` ---------------------------------------------
    def start_load(self, index: int) -> _GroupsLoad:
        return _GroupsLoad(self)

    def unload(self, belongs: Callable[[str], bool]) -> int:
        return sum(coordinator.unload(belongs)
                   for coordinator in (self.coordinator, self.consumer, self.share, self.streams))

    def on_loaded(self, index: int, epoch: int) -> None:
        self.changed()

    # -- writing `__consumer_offsets` (the coordinators' GroupStore) ------------------------------------
    def write(self, group_id: str, records: list[Record], now_ms: int) -> None:
        try:
            self.runtime.append(group_id, records, timestamp=now_ms, now_ms=now_ms)
        except CoordinatorWriteError as exc:
            raise StoreError(exc.error, exc.message) from exc

    def write_txn(self, group_id: str, producer_id: int, producer_epoch: int, records: list[Record],
                  now_ms: int) -> None:
        """A transactional batch of the producer (TxnOffsetCommit): the partition's producer state opens the
        transaction there, so the LSO and the marker treat it like any transactional write. A fenced producer's
        late commit is refused (its transaction was aborted by a marker of a newer epoch, and its offsets, kept
        pending, would be committed by the producer id's next commit marker)."""
        try:
            self.runtime.append(group_id, records, timestamp=now_ms, now_ms=now_ms, producer_id=producer_id,
                                producer_epoch=producer_epoch)
        except CoordinatorWriteError as exc:
            raise StoreError(exc.error, exc.message) from exc

    async def durable(self, group_id: str) -> ErrorCode:
        """Wait until everything written for the group's partition so far is durable (on disk and, in a
        cluster, in every in-sync replica). The error, as Kafka's GroupMetadataManager maps an append's."""
        return await self.runtime.durable_key(group_id)

    async def forget_topics(self, names: list[str]) -> None:
        """Deleted topics: their committed offsets go (tombstones written, as Kafka's handleDeletedPartitions)."""
        changed = self.coordinator.topics_deleted(names, self.clock.now_ms())
        self.changed()
        for group_id in changed:
            await self.durable(group_id)

    # -- background tasks ---------------------------------------------------------------------------
    async def run(self) -> None:
        """Load `__consumer_offsets` (a single broker, all of it now; a cluster's, partition by partition as it
        becomes their leader), then fire the coordinator's timers and expire old offsets."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await self.runtime.start(nursery)
            if not self.runtime.per_partition:
                log.info("loaded %d classic and %d consumer group(s) from %s", len(self.coordinator.groups),
                         len(self.consumer.groups), OFFSETS_TOPIC)
                self.sync_topics()
            nursery.start_soon(self._run_expiry)
            await self._run_timers()

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
        error = self.runtime.error_for(group_id)
        if error:
            return JoinResult(error, request["member_id"])
        if group_id in self.share.groups or group_id in self.streams.groups:
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")  # Kafka's answer for a share group
        consumer = self.consumer.groups.get(group_id)
        if consumer is not None and consumer.members:
            # A classic member of a consumer group (KIP-848 mixed membership): answered at once.
            result = self.consumer.classic_join(**request, now_ms=self.clock.now_ms())
            self.changed()
            stored = await self.durable(group_id)
            return JoinResult(stored, request["member_id"]) if stored and result.error == ErrorCode.NONE else result
        if consumer is not None:
            # Kafka converts an empty consumer group into a classic one when a classic member joins.
            error = self.consumer.delete_group(group_id, self.clock.now_ms())
            if error != ErrorCode.NONE:
                return JoinResult(error, request["member_id"])
            log.info("[GroupId %s] Converted the empty consumer group to a classic group.", group_id)
        reply = _Reply()
        self.coordinator.join_group(**request, respond=reply.set, now_ms=self.clock.now_ms())
        self.changed()
        result: JoinResult = await reply.wait()
        await self.durable(request["group_id"])
        return result

    def heartbeat(self, **request: Any) -> ErrorCode:
        """A classic Heartbeat: the classic coordinator's, or the consumer group's for its classic members."""
        error = self.runtime.error_for(request["group_id"])
        if error:
            return error
        owner = self.consumer.classic_heartbeat if request["group_id"] in self.consumer.groups \
            else self.coordinator.heartbeat
        error = owner(**request, now_ms=self.clock.now_ms())
        self.changed()
        return error

    async def leave_group(self, group_id: str, members: list[tuple[str, str | None]]
                          ) -> tuple[ErrorCode, list[ErrorCode]]:
        """LeaveGroup: of a classic group, or of a consumer group (its members leave as if fenced); answered once
        durable."""
        await self.loaded.wait()
        error = self.runtime.error_for(group_id)
        if error:
            return error, []
        owner = self.consumer.classic_leave if group_id in self.consumer.groups else self.coordinator.leave_group
        result = owner(group_id=group_id, members=members, now_ms=self.clock.now_ms())
        self.changed()
        await self.durable(group_id)
        return result

    async def consumer_group_heartbeat(self, **request: Any) -> Any:
        """ConsumerGroupHeartbeat (KIP-848): answered once its records are durable."""
        await self.loaded.wait()
        error = self.runtime.error_for(request["group_id"])
        if error:
            return HeartbeatResult(error)
        self.sync_topics()
        result = self.consumer.heartbeat(**request, now_ms=self.clock.now_ms())
        self.changed()
        stored = await self.durable(request["group_id"])
        return HeartbeatResult(stored) if stored and result.error == ErrorCode.NONE else result

    async def share_group_heartbeat(self, **request: Any) -> Any:
        """ShareGroupHeartbeat (KIP-932): answered once its records are durable; the share partitions it starts
        initializing are initialized at the share coordinator meanwhile (the next heartbeat assigns them)."""
        await self.loaded.wait()
        group_id = request["group_id"]
        error = self.runtime.error_for(group_id)
        if error:
            return ShareHeartbeatResult(error)
        result = self.share.heartbeat(**request, now_ms=self.clock.now_ms())
        self.changed()
        stored = await self.durable(group_id)
        if stored and result.error == ErrorCode.NONE:
            return ShareHeartbeatResult(stored)
        if result.initialize and self._nursery is not None:
            self._nursery.start_soon(self._initialize_share_state, group_id, result.initialize, result.state_epoch)
        return result

    async def _initialize_share_state(self, group_id: str, partitions: dict[uuid.UUID, frozenset[int]],
                                      state_epoch: int, start_offsets: dict[tuple[uuid.UUID, int], int] | None = None
                                      ) -> ErrorCode:
        """InitializeShareGroupState of each share partition at `state_epoch` (start offset -1: the partition
        leader applies share.auto.offset.reset, unless `start_offsets` gives one), then the group records which
        were initialized; the first error, if any."""
        persister = self._share_persister() if self._share_persister is not None else None
        if persister is None:
            return ErrorCode.UNKNOWN_SERVER_ERROR
        done: dict[uuid.UUID, set[int]] = {}
        failed: dict[uuid.UUID, set[int]] = {}
        errors: list[ErrorCode] = []

        async def one(topic_id: uuid.UUID, partition: int) -> None:
            start = (start_offsets or {}).get((topic_id, partition), -1)
            result = await persister.initialize((group_id, topic_id, partition), state_epoch, start)
            (failed if result.error else done).setdefault(topic_id, set()).add(partition)
            if result.error:
                errors.append(result.error)
                log.warning("share group %s: initializing the state of %s-%d failed: %s", group_id, topic_id,
                            partition, result.error.name)

        async with trio.open_nursery() as nursery:
            for topic_id, indexes in partitions.items():
                for index in indexes:
                    nursery.start_soon(one, topic_id, index)
        self.share.initialized(group_id, {t: frozenset(p) for t, p in done.items()},
                               {t: frozenset(p) for t, p in failed.items()}, self.clock.now_ms())
        stored = await self.durable(group_id)
        return errors[0] if errors else stored

    async def create_share_group(self, group_id: str, epoch: int) -> ErrorCode:
        """An empty share group (AlterShareGroupOffsets of a group not there yet), once its record is durable."""
        await self.loaded.wait()
        error = self.runtime.error_for(group_id) or self.share.create_empty(group_id, epoch, self.clock.now_ms())
        if error:
            return error
        return await self.durable(group_id) or ErrorCode.NONE

    async def alter_share_offsets(self, group_id: str, offsets: dict[tuple[uuid.UUID, int], int]) -> ErrorCode:
        """AlterShareGroupOffsets: the share partitions' state initialized again at the given start offsets (at the
        group's epoch), as Kafka's group coordinator does through its persister."""
        partitions: dict[uuid.UUID, frozenset[int]] = {}
        for topic_id, index in offsets:
            partitions[topic_id] = partitions.get(topic_id, frozenset()) | {index}
        error, state_epoch = self.share.prepare_initialize(group_id, partitions, self.clock.now_ms())
        if error:
            return error
        return await self._initialize_share_state(group_id, partitions, state_epoch, offsets)

    async def delete_share_state(self, group_id: str, topic_ids: list[uuid.UUID]) -> ErrorCode:
        """DeleteShareGroupOffsets and DeleteGroups: the topics' share-partition state deleted at the share
        coordinator (marked as being deleted first, in the group's records)."""
        wanted = self.share.state_partitions(group_id, topic_ids)
        error = self.share.prepare_delete(group_id, topic_ids, self.clock.now_ms())
        if error:
            return error
        persister = self._share_persister() if self._share_persister is not None else None
        errors: list[ErrorCode] = []

        async def one(key: tuple[str, uuid.UUID, int]) -> None:
            assert persister is not None
            result = await persister.delete(key)
            if result.error:
                errors.append(result.error)

        if persister is not None:
            async with trio.open_nursery() as nursery:
                for topic_id, indexes in wanted.items():
                    for index in indexes:
                        nursery.start_soon(one, (group_id, topic_id, index))
        if errors:
            return errors[0]
        error = self.share.deleted(group_id, topic_ids, self.clock.now_ms())
        return error or await self.durable(group_id)

    async def share_offsets(self, group_id: str) -> dict[tuple[uuid.UUID, int], Any]:
        """ReadShareGroupStateSummary of every share partition of the group with state: {(topic id, partition):
        persister StateResult}."""
        persister = self._share_persister() if self._share_persister is not None else None
        out: dict[tuple[uuid.UUID, int], Any] = {}
        if persister is None:
            return out

        async def one(topic_id: uuid.UUID, index: int) -> None:
            out[(topic_id, index)] = await persister.summary((group_id, topic_id, index))

        async with trio.open_nursery() as nursery:
            for topic_id, indexes in self.share.state_partitions(group_id).items():
                for index in indexes:
                    nursery.start_soon(one, topic_id, index)
        return out

    async def streams_group_heartbeat(self, request: HeartbeatRequest) -> StreamsHeartbeatResult:
        """StreamsGroupHeartbeat (KIP-1071): answered once its records are durable."""
        await self.loaded.wait()
        error = self.runtime.error_for(request.group_id)
        if error:
            return StreamsHeartbeatResult(error)
        self.sync_topics()
        result = self.streams.heartbeat(request, self.clock.now_ms())
        self.changed()
        stored = await self.durable(request.group_id)
        return StreamsHeartbeatResult(stored) if stored and result.error == ErrorCode.NONE else result

    async def sync_group(self, **request: Any) -> SyncResult:
        await self.loaded.wait()
        error = self.runtime.error_for(request["group_id"])
        if error:
            return SyncResult(error)
        if request["group_id"] in self.consumer.groups:  # a classic member of a consumer group
            result = self.consumer.classic_sync(**request, now_ms=self.clock.now_ms())
            self.changed()
            stored = await self.durable(request["group_id"])  # what it was assigned is durable
            return SyncResult(stored) if stored and result.error == ErrorCode.NONE else result
        reply = _Reply()
        self.coordinator.sync_group(**request, respond=reply.set, now_ms=self.clock.now_ms())
        self.changed()
        result: SyncResult = await reply.wait()
        await self.durable(request["group_id"])
        return result


def share_epochs_of(config: BrokerConfig) -> dict[str, Any]:
    """How the profile's release numbers share group epochs and assigns their partitions (recorded from the real
    releases: tests/reference/recorded/*/share_group_epochs.json): Kafka 4.1 and 4.2 bump a group's epoch once
    more at the first heartbeat after a member left, and 4.1 hashes members onto partitions (4.2 balances them);
    4.3 starts groups at epoch 1 and computes a group's assignment at most every share.assignment.interval.ms (its
    default, 1 s); 4.4 also brings the empty group's assignment epoch up to date when the last member leaves."""
    from broker.config.kafka_versions import check_release, release_key

    release = release_key(check_release(config.kafka_version))
    if release < (4, 3):
        return {"reassign_after_leave": True, "balanced_assignor": release >= (4, 2)}
    return {"initial_epoch": 1, "assignment_interval_ms": 1000, "empty_assignment_on_leave": release >= (4, 4)}


def consumer_epochs_of(config: BrokerConfig) -> dict[str, Any]:
    """How the profile's release numbers consumer group epochs and batches their assignments (recorded from the
    real releases: tests/reference/recorded/*/consumer_group_epochs.json): Kafka 4.3 starts groups at epoch 1 and
    computes a group's assignment at most every group.consumer.assignment.interval.ms (its default, 1 s), 4.4
    also brings the empty group's assignment epoch up to date when the last member leaves."""
    from broker.config.kafka_versions import check_release, release_key

    release = release_key(check_release(config.kafka_version))
    if release < (4, 3):
        return {}
    return {"initial_epoch": 1, "assignment_interval_ms": 1000, "empty_assignment_on_leave": release >= (4, 4),
            "classic_rejoin_at_assignment_epoch": True}


def _decoded(records: list[Record]) -> Iterator[Any]:
    for key, value in records:
        try:
            kind, k, v = decode_group_record(key, value)
        except RecordError as exc:
            log.warning("skipping a __consumer_offsets record: %s", exc)
            continue
        yield kind, dict(k), None if v is None else dict(v)


class _GroupsLoad:
    """One partition of `__consumer_offsets` replayed. A transaction's records count when its COMMIT marker is
    reached, and never if it aborted; those of transactions still open at the end are pending again. The classic
    records (offset commits, classic group metadata) and Kafka 4's group records go to their coordinators."""

    def __init__(self, service: GroupService) -> None:
        self.service = service
        self.classic: list[Record] = []
        self.modern: list[Record] = []
        self.pending: dict[int, list[Record]] = {}  # open transactions' records, by producer id

    def replay(self, header: BatchHeader, records: list[LogRecord]) -> None:
        if header.is_control:
            done = self.pending.pop(header.producer_id, [])
            if records and parse_control_record(records[0])[0] == CONTROL_COMMIT:
                self._add(done)
            return
        keyed = [(r.key, r.value) for r in records if r.key is not None]
        if header.is_transactional:
            self.pending.setdefault(header.producer_id, []).extend(keyed)
        else:
            self._add(keyed)

    def _add(self, records: list[Record]) -> None:
        for key, value in records:
            try:
                kind = record_type(key)
            except RecordError:
                continue
            if kind in KAFKA4_GROUP_RECORD_TYPES:
                self.modern.append((key, value))
            elif kind <= 2:
                self.classic.append((key, value))

    def complete(self, now_ms: int) -> None:
        service = self.service
        service.coordinator.load(self.classic, now_ms)
        for producer_id, records in self.pending.items():
            service.coordinator.load_pending_txn(producer_id, records)
        decoded = list(_decoded(self.modern))
        service.consumer.load((r for r in decoded if r[0].name.startswith("CONSUMER_GROUP")), now_ms)
        service.share.load((r for r in decoded if r[0].name.startswith("SHARE_GROUP")), now_ms)
        service.streams.load((r for r in decoded if r[0].name.startswith("STREAMS_GROUP")), now_ms)
