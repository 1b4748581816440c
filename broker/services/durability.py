"""When a write the broker acknowledged with acks=all is safe: fdatasynced per log.flush.policy and, for a
replicated partition, in every in-sync replica (its high watermark past it). Produce, the group and
transaction coordinators' writes and transaction markers all wait through this, as Kafka's appends with
requiredAcks=-1 do."""

from __future__ import annotations

from typing import Any

from broker.config.options import BrokerConfig
from broker.log.flusher import GroupFlusher
from broker.services.topics import SHARE_STATE_TOPIC, TRANSACTION_STATE_TOPIC, Partition, TopicManager
from protocol.header import ErrorCode

DEFAULT_TIMEOUT_S = 30.0


def min_insync_replicas(topics: TopicManager, config: BrokerConfig, partition: Partition) -> int:
    """The partition's effective min.insync.replicas: the topic's, else the broker's (read at each request: a
    dynamic broker config), at most its replication factor (Kafka's Partition.effectiveMinIsr: a Kafka 3.9
    broker accepts acks=all to a topic of one replica with min.insync.replicas=2, measured)."""
    topic = topics.get(partition.topic)
    value = topic.configs.get("min.insync.replicas") if topic is not None else None
    if value is not None:
        configured = int(value)
    elif partition.topic == TRANSACTION_STATE_TOPIC:
        configured = config.transaction_state_log_min_isr
    elif partition.topic == SHARE_STATE_TOPIC:
        configured = config.share_coordinator_state_topic_min_isr
    else:
        configured = config.min_insync_replicas
    return min(configured, max(len(partition.replicas), 1))


class Durability:
    def __init__(self, flusher: GroupFlusher, replicas: Any = None) -> None:
        self.flusher = flusher
        self.replicas = replicas  # broker.cluster.replica_manager.ReplicaManager in a cluster, else None

    @property
    def immediate(self) -> bool:
        """Every acks=all write is durable once appended: no fdatasync to wait for, and no other replica."""
        return self.flusher.policy == "none" and self.replicas is None

    @property
    def settles_inline(self) -> bool:
        """acks=all writes can be made durable without awaiting: durable once appended, or (one replica) by
        an fdatasync the flusher would run inline anyway (see `settle_now`)."""
        return self.replicas is None and (self.flusher.policy == "none" or self.flusher.flushes_inline)

    def settle_now(self, partitions: list[Partition]) -> ErrorCode:
        """While `settles_inline`: make what was appended to `partitions` durable now (KAFKA_STORAGE_ERROR if
        the fdatasync failed)."""
        if self.flusher.policy == "none" or not partitions:
            return ErrorCode.NONE
        try:
            self.flusher.flush_now([partition.log for partition in partitions])
        except OSError as exc:
            self.storage_failed(exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.NONE

    def storage_failed(self, exc: OSError) -> None:
        """An append or a flush failed. In a cluster the log directory goes offline, as in Kafka (its
        partitions are led elsewhere); a single broker answers KAFKA_STORAGE_ERROR for what it could not
        store and goes on once writes succeed again (Kafka halts when its only log directory fails)."""
        if self.replicas is not None:
            self.replicas.log_dir_failed(f"{type(exc).__name__}: {exc}")

    def check_min_isr(self, partition: Partition) -> ErrorCode:
        """acks=all before the append: NOT_ENOUGH_REPLICAS when the ISR is below min.insync.replicas."""
        if partition.replicated_hw is None or self.replicas is None:
            return ErrorCode.NONE  # one replica: the effective minimum is 1, whatever is configured
        return self.replicas.check_min_isr(partition)

    async def wait(self, partition: Partition, offset: int, timeout_s: float = DEFAULT_TIMEOUT_S) -> ErrorCode:
        """Until `offset` is durable (KAFKA_STORAGE_ERROR if the fdatasync failed) and, when the partition is
        replicated, in every in-sync replica (NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER,
        REQUEST_TIMED_OUT otherwise)."""
        try:
            await self.flusher.wait_durable(partition.log, offset)
        except OSError as exc:
            self.storage_failed(exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        if partition.replicated_hw is not None and self.replicas is not None:
            return await self.replicas.wait_replicated(partition, offset, timeout_s)
        return ErrorCode.NONE
