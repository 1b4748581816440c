"""What each Spark task of the write job runs: one kafka-python producer for the task's partition of
(key, value) rows, at least once (idempotent producer) or exactly once (one transaction per partition with a
transactional id derived from the job and the partition, never from the attempt). See the package docs for
why that gives exactly-once across task retries.

The failure hook (`FailurePlan`, the write job's `--fail-once-partition`) is for tests: attempt 0 of one
partition kills its Python worker, as a crashed executor would, either midway (half the rows sent and
flushed, the transaction left open) or after its commit (the result never reaches the driver).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

AT_LEAST_ONCE = "at-least-once"
EXACTLY_ONCE = "exactly-once"
DELIVERY_MODES = (AT_LEAST_ONCE, EXACTLY_ONCE)

MIDWAY = "midway"
AFTER_COMMIT = "after-commit"
FAIL_POINTS = (MIDWAY, AFTER_COMMIT)
# Exit status of a worker killed by the failure hook (shows up in Spark's task failure message).
CRASH_EXIT_CODE = 77

# Throughput over latency: a Spark partition is a bulk write.
DEFAULT_PRODUCER_CONFIG: dict[str, Any] = {"linger_ms": 20, "batch_size": 256 * 1024, "acks": "all"}


@dataclass(frozen=True)
class FailurePlan:
    """Kill attempt 0 of Spark partition `partition` at `point` (a test hook)."""

    partition: int
    point: str = MIDWAY


@dataclass(frozen=True)
class WriterSettings:
    bootstrap: str
    topic: str
    delivery: str
    job_id: str
    producer_config: dict[str, Any] = field(default_factory=dict)
    fail: FailurePlan | None = None

    def transactional_id(self, spark_partition: int) -> str:
        return f"{self.job_id}-{spark_partition}"


@dataclass
class PartitionResult:
    """What one successful task attempt reports to the driver."""

    spark_partition: int
    attempt: int
    rows: int
    kafka_partitions: dict[int, int]  # Kafka partition -> rows this attempt wrote there
    seconds: float
    already_committed: bool = False  # exactly-once: an earlier attempt had committed; nothing written


class _DeliveryCounter:
    """Callbacks from the producer's sender thread: rows acknowledged per Kafka partition, and the first error."""

    def __init__(self) -> None:
        self.per_partition: Counter[int] = Counter()
        self.error: BaseException | None = None

    def delivered(self, metadata: Any) -> None:
        self.per_partition[metadata.partition] += 1

    def failed(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc


def write_partition(settings: WriterSettings, rows: Iterable[Any]) -> Iterator[PartitionResult]:
    """The task body for `mapPartitions`: `rows` have `key` and `value` strings; yields one PartitionResult."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    spark_partition, attempt = ctx.partitionId(), ctx.attemptNumber()
    fail_point = None
    if settings.fail and settings.fail.partition == spark_partition and attempt == 0:
        fail_point = settings.fail.point
    started = time.monotonic()
    if settings.delivery == EXACTLY_ONCE:
        result = _write_transactionally(settings, spark_partition, attempt, rows, fail_point)
    elif settings.delivery == AT_LEAST_ONCE:
        result = _write_idempotently(settings, spark_partition, attempt, rows, fail_point)
    else:
        raise ValueError(f"unknown delivery mode {settings.delivery!r}")
    result.seconds = time.monotonic() - started
    yield result


def _producer(settings: WriterSettings, **extra: Any) -> Any:
    from kafka import KafkaProducer

    config = {**DEFAULT_PRODUCER_CONFIG, **settings.producer_config, **extra}
    return KafkaProducer(bootstrap_servers=settings.bootstrap, enable_idempotence=True, **config)


def _encoded(rows: Iterable[Any]) -> Iterator[tuple[bytes | None, bytes]]:
    for row in rows:
        key = row["key"]
        yield (None if key is None else key.encode()), row["value"].encode()


def _send_all(producer: Any, settings: WriterSettings, rows: Iterable[Any], counter: _DeliveryCounter,
              crash_midway: bool) -> int:
    """Send every row; with `crash_midway`, flush half of them and kill this worker. Returns rows sent."""
    records: Iterable[tuple[bytes | None, bytes]] = _encoded(rows)
    crash_after = None
    if crash_midway:
        records = list(records)  # only this attempt materialises its partition: it needs to know "half"
        crash_after = len(records) // 2
    sent = 0
    for key, value in records:
        if sent == crash_after:
            producer.flush()  # the first half is on the broker (inside the open transaction, if any)
            _crash()
        producer.send(settings.topic, key=key, value=value).add_callback(counter.delivered).add_errback(counter.failed)
        sent += 1
    return sent


def _crash() -> None:
    """Die as a crashed executor would: no close, no abort, no reply to Spark."""
    os._exit(CRASH_EXIT_CODE)


def _write_idempotently(settings: WriterSettings, spark_partition: int, attempt: int, rows: Iterable[Any],
                        fail_point: str | None) -> PartitionResult:
    counter = _DeliveryCounter()
    producer = _producer(settings)
    try:
        sent = _send_all(producer, settings, rows, counter, crash_midway=fail_point == MIDWAY)
        producer.flush()
        if counter.error is not None:
            raise counter.error  # Spark retries the task: at least once
        if fail_point == AFTER_COMMIT:
            _crash()
    finally:
        producer.close()
    return PartitionResult(spark_partition, attempt, sent, dict(counter.per_partition), 0.0)


def _committed_rows(settings: WriterSettings, group_id: str) -> int | None:
    """Rows an earlier attempt committed for this partition (the offset its transaction committed), or None."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=settings.bootstrap, group_id=group_id, enable_auto_commit=False)
    try:
        return consumer.committed(TopicPartition(settings.topic, 0))
    finally:
        consumer.close(autocommit=False)


def _write_transactionally(settings: WriterSettings, spark_partition: int, attempt: int, rows: Iterable[Any],
                           fail_point: str | None) -> PartitionResult:
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    txn_id = settings.transactional_id(spark_partition)
    counter = _DeliveryCounter()
    producer = _producer(settings, transactional_id=txn_id)
    try:
        # Bumps the epoch: an earlier attempt's producer is fenced and its open transaction aborted by the broker
        # (or, if it was committing, completed) before this returns.
        producer.init_transactions()
        done = _committed_rows(settings, txn_id)
        if done is not None:
            return PartitionResult(spark_partition, attempt, done, {}, 0.0, already_committed=True)
        producer.begin_transaction()
        try:
            sent = _send_all(producer, settings, rows, counter, crash_midway=fail_point == MIDWAY)
            # The marker that this partition is done commits atomically with its rows.
            producer.send_offsets_to_transaction(
                {TopicPartition(settings.topic, 0): OffsetAndMetadata(sent, f"spark partition {spark_partition}", -1)},
                txn_id)
            producer.commit_transaction()
        except Exception:
            _abort_quietly(producer)
            raise
        if counter.error is not None:  # cannot happen after a successful commit; kept as a guard
            raise counter.error
        if fail_point == AFTER_COMMIT:
            _crash()
    finally:
        producer.close()
    return PartitionResult(spark_partition, attempt, sent, dict(counter.per_partition), 0.0)


def _abort_quietly(producer: Any) -> None:
    try:
        producer.abort_transaction()
    except Exception:  # fenced or broken: the broker aborts it on the next epoch bump or at its timeout
        pass
