"""The Spark jobs against a real broker, in real Spark (local mode, a task may fail 4 times), with real
kafka-python: exactly-once survives a task that dies mid-transaction or right after its commit, at-least-once
is measured to duplicate what the dead attempt had sent, and the read job gives back what was written."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from jobs import kafka_to_spark, spark_to_kafka
from jobs.inputs import generate, to_records
from tests.pipeline.conftest import read_topic_plainly

pytestmark = pytest.mark.pipeline

ROWS = 4000
SPARK_PARTITIONS = 4  # 1000 rows each
FAILED_PARTITION = 1
ROWS_BEFORE_CRASH = ROWS // SPARK_PARTITIONS // 2  # the midway crash flushes half its partition first
# Far beyond the tests' waits: a dead attempt's transaction must be aborted by fencing, not by its timeout.
TRANSACTION_TIMEOUT_MS = 600_000


def write(spark, bootstrap: str, topic: str, delivery: str, *extra: str):
    args = spark_to_kafka.build_parser().parse_args([
        "--bootstrap", bootstrap, "--topic", topic, "--generate", str(ROWS), "--partitions", "3",
        "--spark-partitions", str(SPARK_PARTITIONS), "--delivery", delivery,
        "--producer-option", f"transaction_timeout_ms={TRANSACTION_TIMEOUT_MS}", *extra])
    return {r.spark_partition: r for r in spark_to_kafka.run(spark, args)}


def keys(records) -> Counter:
    return Counter(key for _, key, _ in records)


def test_exactly_once_survives_a_task_killed_mid_transaction(spark, minibroker, topic_name):
    results = write(spark, minibroker, topic_name, "exactly-once",
                    "--fail-once-partition", str(FAILED_PARTITION), "--fail-point", "midway")

    # The failed partition succeeded on its second attempt, the others on their first.
    assert {p: r.attempt for p, r in results.items()} == {0: 0, 1: 1, 2: 0, 3: 0}
    assert sum(r.rows for r in results.values()) == ROWS
    committed = read_topic_plainly(minibroker, topic_name, "read_committed")
    assert len(committed) == ROWS
    assert keys(committed) == Counter(str(i) for i in range(ROWS))
    # The dead attempt's half partition is in the log, aborted: only read_uncommitted shows it.
    everything = read_topic_plainly(minibroker, topic_name, "read_uncommitted")
    assert len(everything) == ROWS + ROWS_BEFORE_CRASH
    value = json.loads(next(v for _, k, v in committed if k == "42"))
    assert (value["id"], value["name"]) == (42, "user-42")


def test_exactly_once_retry_after_a_lost_commit_writes_nothing_again(spark, minibroker, topic_name):
    results = write(spark, minibroker, topic_name, "exactly-once",
                    "--fail-once-partition", str(FAILED_PARTITION), "--fail-point", "after-commit")

    retried = results[FAILED_PARTITION]
    assert (retried.attempt, retried.already_committed, retried.rows) == (1, True, ROWS // SPARK_PARTITIONS)
    committed = read_topic_plainly(minibroker, topic_name, "read_committed")
    assert keys(committed) == Counter(str(i) for i in range(ROWS))
    # Nothing was written a second time, not even into an aborted transaction.
    assert len(read_topic_plainly(minibroker, topic_name, "read_uncommitted")) == ROWS


def test_at_least_once_duplicates_what_the_killed_task_had_sent(spark, minibroker, topic_name):
    results = write(spark, minibroker, topic_name, "at-least-once",
                    "--fail-once-partition", str(FAILED_PARTITION), "--fail-point", "midway")

    assert results[FAILED_PARTITION].attempt == 1
    records = read_topic_plainly(minibroker, topic_name, "read_committed")
    counts = keys(records)
    duplicated = {k for k, n in counts.items() if n > 1}
    # Measured: the rows the dead attempt had flushed (half its partition) are there twice, nothing else is.
    assert len(records) == ROWS + ROWS_BEFORE_CRASH
    assert len(duplicated) == ROWS_BEFORE_CRASH
    assert set(counts) == {str(i) for i in range(ROWS)}
    assert max(counts.values()) == 2

    # The read job's --verify reports them and fails the expectation.
    verified = kafka_to_spark.verify(kafka_to_spark.read_topic(spark, minibroker, topic_name))
    assert (verified.rows, verified.distinct_keys, verified.duplicate_keys, verified.extra_rows) == (
        ROWS + ROWS_BEFORE_CRASH, ROWS, ROWS_BEFORE_CRASH, ROWS_BEFORE_CRASH)
    args = kafka_to_spark.build_parser().parse_args(
        ["--bootstrap", minibroker, "--topic", topic_name, "--verify", "--expect-rows", str(ROWS)])
    assert kafka_to_spark.run(spark, args) == 1


def test_read_job_returns_the_rows_written(spark, minibroker, topic_name, tmp_path):
    write(spark, minibroker, topic_name, "exactly-once")
    expected = sorted((r["key"], r["value"]) for r in to_records(generate(spark, ROWS), "id").collect())

    df = kafka_to_spark.read_topic(spark, minibroker, topic_name)
    assert df.rdd.getNumPartitions() == 3  # one Spark task per Kafka partition
    assert sorted((r["key"], r["value"]) for r in df.collect()) == expected

    out = tmp_path / "out"
    args = kafka_to_spark.build_parser().parse_args(
        ["--bootstrap", minibroker, "--topic", topic_name, "--output", str(out), "--output-format", "json"])
    assert kafka_to_spark.run(spark, args) == 0
    assert sorted((r["key"], r["value"]) for r in spark.read.json(str(out)).collect()) == expected
    verify = kafka_to_spark.build_parser().parse_args(
        ["--bootstrap", minibroker, "--topic", topic_name, "--verify", "--expect-rows", str(ROWS)])
    assert kafka_to_spark.run(spark, verify) == 0


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_write_job_reads_each_input_format(spark, minibroker, topic_name, tmp_path, fmt):
    path = tmp_path / f"input.{fmt}"
    source = spark.createDataFrame([(f"sku-{i}", i, i * 1.5) for i in range(300)], "sku STRING, qty INT, price DOUBLE")
    source.coalesce(2).write.format(fmt).option("header", "true").save(str(path))

    args = spark_to_kafka.build_parser().parse_args([
        "--bootstrap", minibroker, "--topic", topic_name, "--input", str(path), "--format", fmt,
        "--key-column", "sku", "--value-columns", "qty,price", "--delivery", "at-least-once"])
    spark_to_kafka.run(spark, args)

    records = read_topic_plainly(minibroker, topic_name, "read_committed")
    assert sorted((k, json.loads(v)) for _, k, v in records) == sorted(
        (f"sku-{i}", {"qty": i, "price": i * 1.5}) for i in range(300))
