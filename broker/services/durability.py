"""When a write the broker acknowledged with acks=all is safe: fdatasynced per log.flush.policy and, for a
replicated partition, in every in-sync replica (its high watermark past it). Produce, the group and
transaction coordinators' writes and transaction markers all wait through this, as Kafka's appends with
requiredAcks=-1 do."""

from __future__ import annotations

from typing import Any

from broker.config.options import BrokerConfig
from broker.log.flusher import GroupFlusher
from broker.services.topics import TRANSACTION_STATE_TOPIC, Partition, TopicManager
from protocol.header import ErrorCode

DEFAULT_TIMEOUT_S = 30.0


def min_insync_replicas(topics: TopicManager, config: BrokerConfig, topic_name: str) -> int:
    """The topic's min.insync.replicas, else the broker's (read at each request: a dynamic broker config)."""
    topic = topics.get(topic_name)
    value = topic.configs.get("min.insync.replicas") if topic is not None else None
    if value is not None:
        return int(value)
    if topic_name == TRANSACTION_STATE_TOPIC:
        return config.transaction_state_log_min_isr
    return config.min_insync_replicas


class Durability:
    def __init__(self, flusher: GroupFlusher, topics: TopicManager, config: BrokerConfig,
                 replicas: Any = None) -> None:
        self.flusher = flusher
        self.topics = topics
        self.config = config
        self.replicas = replicas  # broker.cluster.replica_manager.ReplicaManager in a cluster, else None

    def appended(self, partition: Partition) -> None:
        """After a leader's append: with an ISR of one the high watermark moves at once."""
        if partition.replicated_hw is not None and self.replicas is not None:
            self.replicas.leader_appended(partition)

    def check_min_isr(self, partition: Partition) -> ErrorCode:
        """acks=all before the append: NOT_ENOUGH_REPLICAS when the ISR is below min.insync.replicas."""
        if partition.replicated_hw is not None and self.replicas is not None:
            return self.replicas.check_min_isr(partition)
        # A single broker's ISR is itself alone, as for a Kafka topic of replication factor 1.
        if min_insync_replicas(self.topics, self.config, partition.topic) > 1:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return ErrorCode.NONE

    async def wait(self, partition: Partition, offset: int, timeout_s: float = DEFAULT_TIMEOUT_S) -> ErrorCode:
        """Until `offset` is durable (KAFKA_STORAGE_ERROR if the fdatasync failed) and, when the partition is
        replicated, in every in-sync replica (NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER,
        REQUEST_TIMED_OUT otherwise)."""
        try:
            await self.flusher.wait_durable(partition.log, offset)
        except OSError:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if partition.replicated_hw is not None and self.replicas is not None:
            return await self.replicas.wait_replicated(partition, offset, timeout_s)
        return ErrorCode.NONE
