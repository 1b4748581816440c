"""The log cleaner service: compacts the partitions of `cleanup.policy=compact` topics in the background.

Each round looks at every compacted partition (`__consumer_offsets` and `__transaction_state` included);
a partition that is due (`broker.log.cleaner.plan_cleaning`) is cleaned in a worker thread, so produce
and fetch go on meanwhile, and the new segments are swapped in on the event loop. With nothing to clean
it sleeps log.cleaner.backoff.ms. Shutting down does not wait for a pass in progress: its thread only
writes the `cleaner/` directory, which the next open removes.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING

import trio

from broker.clock import Clock
from broker.config.options import BrokerConfig
from broker.services.topics import Partition, TopicManager

if TYPE_CHECKING:
    from broker.log.cleaner import CleaningResult
    from broker.log.partition_log import PartitionLog

log = logging.getLogger(__name__)


class LogCleaner:
    def __init__(self, config: BrokerConfig, topics: TopicManager, clock: Clock) -> None:
        self.config = config
        self.topics = topics
        self.clock = clock
        # Per log object, so that a topic deleted and created again starts afresh.
        self._horizons: weakref.WeakKeyDictionary[PartitionLog, int] = weakref.WeakKeyDictionary()  # next horizon
        self._failed: weakref.WeakSet[PartitionLog] = weakref.WeakSet()  # Kafka: uncleanable until restart
        self.passes = 0

    async def run(self) -> None:
        while True:
            if not await self.clean_round():
                await self.clock.sleep(self.config.log_cleaner_backoff_ms / 1000)  # dynamic: read each time

    async def clean_round(self) -> int:
        """One look at every compacted partition; returns the number of partitions cleaned."""
        cleaned = 0
        for partition in self.topics.hosted():
            if partition.log.config.compacted and not partition.log.closed:
                cleaned += await self.clean(partition)
        return cleaned

    async def clean(self, partition: Partition) -> bool:
        """Clean the partition if it is due; True when a pass was swapped in. A failure (disk, corrupt data)
        stops cleaning this partition, never the broker."""
        name = (partition.topic, partition.index)
        if partition.log in self._failed:
            return False
        try:
            return await self._clean(partition, name)
        except (OSError, ValueError) as exc:  # CorruptRecordError is a ValueError
            log.error("cleaning %s-%d failed, not cleaning it again until restart: %s", *name, exc)
            self._failed.add(partition.log)
            return False

    async def _clean(self, partition: Partition, name: tuple[str, int]) -> bool:
        from broker.log.cleaning_plan import plan_cleaning  # with the first compacted log, not at startup

        plog = partition.log
        if plog.has_unflushed_segments:  # with acks=1 or log.flush.policy=none nothing else may flush soon
            await trio.to_thread.run_sync(plog.flush)
        now = self.clock.now_ms()
        horizon = self._horizons.get(plog)
        job = plan_cleaning(plog, partition.producers, now_ms=now, first_dirty=plog.first_dirty_offset,
                            horizon_due=horizon is not None and horizon <= now,
                            max_map_entries=self.config.log_cleaner_dedupe_buffer_entries)
        if job is None:
            return False
        result: CleaningResult = await trio.to_thread.run_sync(job.run, abandon_on_cancel=True)
        if plog.closed or not plog.swap_cleaned(job, result, now_ms=self.clock.now_ms()):
            return False
        self.passes += 1
        if result.delete_horizon is None:
            self._horizons.pop(plog, None)
        else:
            self._horizons[plog] = result.delete_horizon
        # The aborted transactions below the cleaned range have no data left (and their markers may be
        # gone): forget them, also in the snapshot a restart would load.
        partition.producers.drop_aborted_before(result.end_offset)
        try:
            await trio.to_thread.run_sync(plog.flush)
            partition.save_producer_state()
        except OSError as exc:
            log.error("snapshot of %s-%d after cleaning failed: %s", *name, exc)
        log.info("cleaned %s-%d up to offset %d: %d bytes -> %d, %d records and %d markers removed", *name,
                 result.end_offset, result.bytes_read, result.bytes_written, result.records_removed,
                 result.markers_removed)
        return True
