"""Driver-side topic work: create the write job's topic, and find the offset range of each partition the read
job should read (from the earliest offset to the end a read_committed consumer may read, the LSO)."""

from __future__ import annotations

import time
from dataclasses import dataclass


def ensure_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> bool:
    """Create `topic` with `partitions` partitions unless it exists; True if this call created it."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, replication_factor)])
        return True
    except TopicAlreadyExistsError:
        return False
    finally:
        admin.close()


@dataclass(frozen=True)
class PartitionRange:
    partition: int
    start: int  # first offset to read
    end: int  # read up to here (exclusive): the last stable offset under read_committed


def partition_ranges(bootstrap: str, topic: str, isolation_level: str = "read_committed",
                     timeout: float = 30.0) -> list[PartitionRange]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level, enable_auto_commit=False)
    try:
        deadline = time.monotonic() + timeout
        while not (partitions := consumer.partitions_for_topic(topic)):
            if time.monotonic() > deadline:
                raise LookupError(f"topic {topic!r} not found on {bootstrap}")
            consumer.topics()  # refreshes metadata
            time.sleep(0.2)
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        starts = consumer.beginning_offsets(tps)
        ends = consumer.end_offsets(tps)
        return [PartitionRange(tp.partition, starts[tp], ends[tp]) for tp in tps]
    finally:
        consumer.close(autocommit=False)
