"""The trio shell of Kafka's share coordinator (ShareCoordinatorService): the share-partition states of
`__share_group_state` (coordinator/share_coordinator.py), loaded and written through the coordinator runtime
(broker/services/coordinator_runtime.py: a single broker loads every partition at start, a cluster's broker the
partitions it leads), the five state APIs answered per share partition, and the pruning of the records no state
needs any more (Kafka deletes them with DeleteRecords: the topic is neither compacted nor retention-limited).

The partition leaders and the group coordinator reach it through their persister
(broker/services/share_persister.py): here when this broker coordinates the key, else over the network with the
same requests.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import trio

from broker.clock import Clock
from broker.config.options import BrokerConfig
from broker.services.coordinator_runtime import CoordinatorRuntime, CoordinatorState, CoordinatorWriteError
from broker.services.durability import Durability
from broker.services.topics import SHARE_STATE_TOPIC, Topic, TopicManager
from coordinator.share_coordinator import (
    Key,
    Outcome,
    PersisterBatch,
    ShareCoordinatorConfig,
    ShareCoordinatorShard,
    coordinator_key,
)
from protocol.header import ErrorCode
from protocol.kafka4_group_records import RecordError, ShareStateRecordType, decode_share_state_record

if TYPE_CHECKING:
    from broker.log.append import Appender
    from protocol.records import BatchHeader, Record

log = logging.getLogger(__name__)

# Kafka's answers when the key's coordinator is not here (ShareCoordinatorService's messages).
_NOT_HERE = {
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
}


class _Topics:
    """The topics as the shard sees them (InitializeShareGroupState refuses an unknown partition)."""

    def __init__(self, topics: TopicManager) -> None:
        self._topics = topics

    def partition_count(self, topic_id: uuid.UUID) -> int:
        topic = self._topics.get_by_id(topic_id)
        return -1 if topic is None else len(topic.partitions)


class ShareCoordinatorService:
    def __init__(self, config: BrokerConfig, topics: TopicManager, clock: Clock, durability: Durability,
                 appender: Appender, internal_topic: Callable[[str], Topic | ErrorCode], *,
                 per_partition: bool = False) -> None:
        """`per_partition`: a cluster's broker coordinates the keys of the `__share_group_state` partitions it
        leads (`runtime.on_partition`); a single broker, every key."""
        self.config = config
        self.topics = topics
        self.clock = clock
        self.shard = ShareCoordinatorShard(share_coordinator_config(config), _Topics(topics))
        self.runtime = CoordinatorRuntime(SHARE_STATE_TOPIC, "share partition state(s)", self, topics,
                                          internal_topic, appender, durability, clock, per_partition=per_partition)
        self.loaded = self.runtime.loaded

    # -- the runtime's shard ------------------------------------------------------------------------------
    def start_load(self, index: int) -> _StateLoad:
        return _StateLoad(self.shard, index)

    def unload(self, belongs: Callable[[str], bool]) -> int:
        return self.shard.forget(belongs)

    def on_loaded(self, index: int, epoch: int) -> None:
        pass

    # -- the state APIs -----------------------------------------------------------------------------------
    async def initialize(self, key: Key, state_epoch: int, start_offset: int) -> Outcome:
        return await self._apply(key, lambda now: self.shard.initialize(key, state_epoch, start_offset, now))

    async def read(self, key: Key, leader_epoch: int) -> Outcome:
        return await self._apply(key, lambda now: self.shard.read(key, leader_epoch, now))

    async def write(self, key: Key, state_epoch: int, leader_epoch: int, start_offset: int,
                    delivery_complete_count: int, batches: Sequence[PersisterBatch]) -> Outcome:
        return await self._apply(key, lambda now: self.shard.write(key, state_epoch, leader_epoch, start_offset,
                                                                  delivery_complete_count, batches, now))

    async def delete(self, key: Key) -> Outcome:
        return await self._apply(key, lambda _now: self.shard.delete(key))

    async def summary(self, key: Key) -> Outcome:
        return await self._apply(key, lambda _now: self.shard.summary(key))

    async def _apply(self, key: Key, operation: Callable[[int], Outcome]) -> Outcome:
        """One share partition's request: refused when its coordinator is not here, else the shard's answer,
        after the record it writes (if any) is appended, replayed and durable."""
        await self.loaded.wait()
        ckey = coordinator_key(*key)
        error = self.runtime.error_for(ckey)
        if error:
            return Outcome(error, _NOT_HERE.get(error, error.name))
        now = self.clock.now_ms()
        outcome = operation(now)
        if outcome.record is None:
            return outcome
        try:
            partition, offset = self.runtime.append(ckey, [outcome.record], timestamp=now, now_ms=now)
        except CoordinatorWriteError as exc:
            return Outcome(exc.error, exc.message)
        kind, _, value = decode_share_state_record(*outcome.record)
        self.shard.replay(partition.index, offset, kind, key, value)
        error = await self.runtime.durable(partition, offset)
        return Outcome(error, error.name) if error else outcome

    # -- pruning -----------------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Load `__share_group_state`, then delete, every prune interval, the records no state needs."""
        async with trio.open_nursery() as nursery:
            await self.runtime.start(nursery)
            if not self.runtime.per_partition:
                log.info("loaded the state of %d share partition(s) from %s", len(self.shard.entries),
                         SHARE_STATE_TOPIC)
            while True:
                await self.clock.sleep(self.config.share_coordinator_state_topic_prune_interval_ms / 1000)
                self.prune()

    def prune(self) -> None:
        """Kafka's pruning: each `__share_group_state` partition led here loses the records before the oldest
        latest snapshot of its share partitions (below the high watermark: what is replicated)."""
        topic = self.topics.get(SHARE_STATE_TOPIC)
        if topic is None:
            return
        for index, context in list(self.runtime.contexts.items()):
            if context.state is not CoordinatorState.ACTIVE or index >= len(topic.partitions):
                continue
            partition = topic.partitions[index]
            plog = partition.log
            if plog is None or not plog.config.delete_enabled:  # a compacted topic of older releases
                continue
            offset = min(self.shard.redundant_offset(index, self.runtime.belongs(index)), partition.high_watermark)
            if offset <= plog.log_start_offset:
                continue
            try:
                plog.delete_records(offset, now_ms=self.clock.now_ms())
            except OSError as exc:
                log.warning("pruning %s-%d: %s", SHARE_STATE_TOPIC, index, exc)
                continue
            partition.producers.remove_before(plog.log_start_offset)
            log.info("pruned %s-%d below offset %d", SHARE_STATE_TOPIC, index, plog.log_start_offset)


def share_coordinator_config(config: BrokerConfig) -> ShareCoordinatorConfig:
    """The share coordinator as the profile's release answers (recorded from 4.2, 4.3 and 4.4:
    share_coordinator_state_apis; 4.1 as 4.2)."""
    from broker.config.kafka_versions import check_release, release_key

    release = release_key(check_release(config.kafka_version))
    return ShareCoordinatorConfig(config.share_coordinator_snapshot_update_records_per_snapshot,
                                  refuse_negative_leader_epoch=release >= (4, 4),
                                  fence_read_without_leader_epoch=release < (4, 3),
                                  keep_unknown_complete_count=release >= (4, 4))


class _StateLoad:
    """One `__share_group_state` partition replayed: its records go to the shard once all are read (a load
    abandoned halfway leaves nothing behind)."""

    def __init__(self, shard: ShareCoordinatorShard, index: int) -> None:
        self.shard = shard
        self.index = index
        self.records: list[tuple[int, ShareStateRecordType, Key, Any]] = []

    def replay(self, header: BatchHeader, records: list[Record]) -> None:
        if header.is_control:
            return
        for record in records:
            if record.key is None:
                continue
            try:
                kind, key, value = decode_share_state_record(record.key, record.value)
            except RecordError as exc:
                log.warning("skipping a %s record: %s", SHARE_STATE_TOPIC, exc)
                continue
            self.records.append((header.base_offset + record.offset_delta, kind,
                                 (key.group_id, key.topic_id, key.partition), value))

    def complete(self, now_ms: int) -> None:
        self.shard.forget_partition(self.index)
        for offset, kind, key, value in self.records:
            self.shard.replay(self.index, offset, kind, key, value)
