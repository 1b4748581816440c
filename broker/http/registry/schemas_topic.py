"""The `_schemas` topic as one broker's registry uses it: created on first use (one partition, compacted, as
Confluent's registry creates it; in a cluster replicated to up to 3 brokers, its kafkastore.topic.replication.factor),
read back up to its high watermark (what every in-sync replica has), and appended to by the partition's leader.

The registry's leader is the leader of `_schemas-0`, which the controller chooses: its writes must be appended
there anyway, a leader change comes with a new leader epoch, and the controller picks the new leader from the
in-sync replicas, which have every acknowledged registration (Confluent elects its leader through a JoinGroup
of protocol type "sr"; choosing by the controller needs no second election to agree with the first).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import trio

from broker.http.registry.records import SCHEMAS_TOPIC
from broker.services.topics import Partition, TopicError
from protocol.header import ErrorCode

if TYPE_CHECKING:
    from broker.cluster.replica_manager import ReplicaManager
    from broker.cluster.zk_cluster import ZkCluster
    from broker.services.cluster_view import ClusterView

log = logging.getLogger(__name__)

TOPIC_CONFIGS = {"cleanup.policy": "compact"}
REPLICATION_FACTOR = 3  # Confluent's kafkastore.topic.replication.factor, at most the live brokers
_READ_CHUNK = 1024 * 1024


class BrokerParts(Protocol):
    """What the registry uses of broker.app.Broker."""

    node_id: int
    topics: Any  # broker.services.topics.TopicManager
    durability: Any  # broker.services.durability.Durability
    appender: Any  # broker.log.append.Appender
    clock: Any
    cluster: ClusterView
    zk_cluster: ZkCluster | None  # None on a single broker
    replicas: ReplicaManager | None  # None on a single broker


class NotReady(Exception):
    """The topic cannot be used here now (being created, no leader, a failed append): the message says why."""


class SchemasTopic:
    def __init__(self, broker: BrokerParts) -> None:
        self.broker = broker
        self._creating = False

    @property
    def clustered(self) -> bool:
        return self.broker.cluster.replicated

    def partition(self) -> Partition | None:
        return self.broker.topics.partition(SCHEMAS_TOPIC, 0)

    def ensure(self, nursery: trio.Nursery) -> Partition | None:
        """The partition, created on first use (in a cluster, through ZooKeeper, in the background: None until
        this broker's metadata has it)."""
        partition = self.partition()
        if partition is not None:
            return partition
        if not self.clustered:
            try:
                topic = self.broker.topics.create(SCHEMAS_TOPIC, 1, configs=TOPIC_CONFIGS,
                                                  now_ms=self.broker.clock.now_ms())
            except TopicError as exc:
                raise NotReady(f"cannot create {SCHEMAS_TOPIC}: {exc}") from None
            return topic.partitions[0]
        if not self._creating:
            self._creating = True
            nursery.start_soon(self._create_in_cluster)
        return None

    async def _create_in_cluster(self) -> None:
        cluster = self.broker.zk_cluster
        assert cluster is not None, "clustered"
        try:
            brokers = await cluster.zk.get_all_brokers()
            replication = min(REPLICATION_FACTOR, max(1, len(brokers)))
            await cluster.admin.write_topic(SCHEMAS_TOPIC, 1, replication, None, TOPIC_CONFIGS)
            log.info("created %s (replication factor %d)", SCHEMAS_TOPIC, replication)
        except Exception as exc:  # TopicExists (another broker was first) is fine; anything else is retried
            log.info("creating %s: %s", SCHEMAS_TOPIC, exc)
        finally:
            self._creating = False

    def leader(self) -> int | None:
        """The broker that leads `_schemas-0` now (None: none known)."""
        partition = self.partition()
        if partition is None:
            return None
        if not self.clustered:
            return self.broker.node_id
        return partition.leader if partition.leader >= 0 else None

    def leads(self, partition: Partition) -> bool:
        if not self.clustered:
            return partition.log is not None
        replicas = self.broker.replicas
        return partition.log is not None and partition.leader == self.broker.node_id and \
            replicas is not None and (SCHEMAS_TOPIC, 0) in replicas.leading

    def readable(self) -> bool:
        """Whether this broker holds a replica it can read the registry from."""
        partition = self.partition()
        return partition is not None and partition.log is not None

    def records(self, partition: Partition, offset: int) -> Iterator[tuple[int, bytes | None, bytes | None]]:
        """(offset, key, value) of the records from `offset` up to the high watermark."""
        from protocol.records import CorruptRecordError, decode_records, iter_batches

        plog = partition.log
        offset = max(offset, plog.log_start_offset)
        end = min(partition.high_watermark, plog.log_end_offset)
        while offset < end:
            data = plog.read(offset, _READ_CHUNK, max_offset=end)
            if not data:
                return
            for header, start, stop in iter_batches(data):
                next_offset = header.base_offset + header.last_offset_delta + 1
                if header.is_control:
                    offset = next_offset
                    continue
                try:
                    batch = decode_records(memoryview(data)[start:stop])
                except CorruptRecordError as exc:
                    log.error("%s: skipping a corrupt batch at %d: %s", SCHEMAS_TOPIC, header.base_offset, exc)
                    batch = []
                for record in batch:
                    at = header.base_offset + record.offset_delta
                    if at >= offset:
                        yield at, record.key, record.value
                offset = max(offset, next_offset)

    async def append(self, partition: Partition, records: list[tuple[bytes, bytes | None]]) -> int:
        """Append `records` as the leader and wait until every in-sync replica has them (acks=all); returns the
        offset after the last. The registry's one write to the log (NotReady if it failed)."""
        from broker.log.append import AppendOrigin
        from protocol.records import Record, build_batch

        now = self.broker.clock.now_ms()
        batch = build_batch([Record(i, 0, key, value) for i, (key, value) in enumerate(records)],
                            base_timestamp=now)
        appended = self.broker.appender.append(partition, batch, AppendOrigin.COORDINATOR, now)
        if appended.error:
            raise NotReady(f"append to {SCHEMAS_TOPIC} failed: {appended.error.name}: {appended.message}")
        last = appended.last_offset
        error = await self.broker.durability.wait(partition, last)
        if error != ErrorCode.NONE:
            raise NotReady(f"append to {SCHEMAS_TOPIC} not acknowledged: {error.name}")
        return last + 1
