"""Transaction markers on this broker's partitions: the partition side of WriteTxnMarkers (Kafka's
ReplicaManager.appendRecords with AppendOrigin.COORDINATOR for a control batch; the append checks the marker
and completes the producer's transaction: broker/log/append.py).

The WriteTxnMarkers handler calls `MarkerWriter.write`, and so does this broker's transaction
coordinator for the partitions it hosts. Works on any partition, internal topics included (transactional
offset commits in `__consumer_offsets` become visible, or vanish, with their marker).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import trio

from broker.clock import Clock
from broker.log.append import Appender, AppendOrigin
from broker.services.durability import Durability
from broker.services.internal_topics import partition_for
from broker.services.topics import OFFSETS_TOPIC, Partition, TopicManager
from protocol.header import ErrorCode
from protocol.records import control_batch

if TYPE_CHECKING:
    from broker.services.groups import GroupService

# (producer id, producer epoch, commit, coordinator epoch, {topic: [partition indexes]})
Marker = tuple[int, int, bool, int, Mapping[str, Sequence[int]]]


class MarkerWriter:
    def __init__(self, topics: TopicManager, durability: Durability, appender: Appender, clock: Clock,
                 groups: Callable[[], GroupService]) -> None:
        self.topics = topics
        self.durability = durability
        self.appender = appender
        self.clock = clock
        self._groups = groups  # built on first use (see broker.app): only offsets markers need it

    def append_marker(self, partition: Partition, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      commit: bool, now_ms: int) -> tuple[ErrorCode, int]:
        """Append a COMMIT or ABORT control batch (refused for a stale producer epoch: INVALID_PRODUCER_EPOCH,
        or an older coordinator epoch: TRANSACTION_COORDINATOR_FENCED); the append closes the producer's open
        transaction (an abort goes to the aborted index) and wakes the long-polling fetchers (the LSO may have
        moved). Returns (error, the marker's offset or -1)."""
        batch = control_batch(commit, producer_id, producer_epoch, coordinator_epoch, now_ms)
        appended = self.appender.append(partition, batch, AppendOrigin.COORDINATOR, now_ms)
        return appended.error, appended.base_offset

    async def write(self, markers: Sequence[Marker]) -> dict[tuple[str, int], ErrorCode]:
        """Append each marker and wait until they are durable; the errors by partition (for one producer)."""
        results, durable = self._append(markers)

        async def wait(partition: Partition, offset: int, key: tuple[str, int]) -> None:
            error = await self.durability.wait(partition, offset)
            if error:
                results[key] = error

        if len(durable) == 1:
            await wait(*durable[0])
        elif durable:
            async with trio.open_nursery() as nursery:
                for item in durable:
                    nursery.start_soon(wait, *item)
        return results

    def write_now(self, markers: Sequence[Marker]) -> dict[tuple[str, int], ErrorCode]:
        """`write` when the durability is immediate (`Durability.immediate`): nothing to wait for."""
        return self._append(markers)[0]

    def _append(self, markers: Sequence[Marker]
                ) -> tuple[dict[tuple[str, int], ErrorCode], list[tuple[Partition, int, tuple[str, int]]]]:
        """Append each marker: the errors by partition, and what to wait for (partition, offset, key)."""
        results: dict[tuple[str, int], ErrorCode] = {}
        durable: list[tuple[Any, int, tuple[str, int]]] = []
        now = self.clock.now_ms()
        for producer_id, epoch, commit, coordinator_epoch, topics in markers:
            for name, indexes in topics.items():
                topic = self.topics.get(name)
                for index in indexes:
                    partition = self.topics.leader_partition(name, index)
                    if isinstance(partition, ErrorCode):
                        results[(name, index)] = partition
                        continue
                    error, offset = self.append_marker(partition, producer_id, epoch, coordinator_epoch, commit,
                                                       now)
                    results[(name, index)] = error
                    if error == ErrorCode.NONE:
                        durable.append((partition, offset, (name, index)))
                        if name == OFFSETS_TOPIC:
                            # Transactional offset commits become visible (or vanish) with the marker.
                            count = len(topic.partitions)
                            self._groups().coordinator.complete_txn(
                                producer_id, commit, lambda g, i=index, n=count: partition_for(g, n) == i)
        return results, durable
