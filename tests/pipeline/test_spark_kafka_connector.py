"""Spark's own Kafka connector (spark-sql-kafka-0-10, on the Java client) against minibroker: the streaming job
(jobs.kafka_stream_aggregate) reads the write job's topic read_committed, with a transaction aborted in it, and
writes totals per name through Spark's Kafka sink; stopped in the middle and started again from its checkpoint,
then fed more rows, its output is each time exactly the totals of the committed rows."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

from jobs import kafka_stream_aggregate, spark_to_kafka
from tests.pipeline.conftest import read_topic_plainly

pytestmark = pytest.mark.pipeline

ROWS = 2000
SPARK_PARTITIONS = 4
ABORTED = ROWS // SPARK_PARTITIONS // 2  # the killed attempt's half partition, left in an aborted transaction


def write(spark, bootstrap: str, topic: str, *extra: str) -> None:
    args = spark_to_kafka.build_parser().parse_args([
        "--bootstrap", bootstrap, "--topic", topic, "--generate", str(ROWS), "--partitions", "3",
        "--spark-partitions", str(SPARK_PARTITIONS), "--producer-option", "transaction_timeout_ms=600000", *extra])
    spark_to_kafka.run(spark, args)


def totals(batches: int) -> dict[str, tuple[int, int, int]]:
    """{name: (rows, cents, id_sum)} of `batches` runs of the write job's generated rows (jobs.inputs)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for _ in range(batches):
        for i in range(ROWS):
            entry = out[f"user-{i % 1000}"]
            entry[0] += 1
            entry[1] += (i * 7919) % 100_000
            entry[2] += i
    return {name: tuple(v) for name, v in out.items()}


def stream_args(bootstrap: str, topic: str, checkpoint: str, *extra: str):
    return kafka_stream_aggregate.build_parser().parse_args([
        "--bootstrap", bootstrap, "--topic", topic, "--output-topic", topic + "-totals", "--checkpoint", checkpoint,
        *extra])


def test_streaming_job_through_sparks_kafka_connector(spark_with_kafka_connector, minibroker, topic_name, tmp_path):
    spark = spark_with_kafka_connector
    checkpoint = str(tmp_path / "checkpoint")
    output = topic_name + "-totals"
    write(spark, minibroker, topic_name, "--fail-once-partition", "1", "--fail-point", "midway")
    assert len(read_topic_plainly(minibroker, topic_name, "read_uncommitted")) == ROWS + ABORTED

    # A micro-batch every 0.2 s of at most 300 offsets, stopped after two with rows: the job is midway.
    query = kafka_stream_aggregate.start(spark, stream_args(minibroker, topic_name, checkpoint, "--every", "0.2",
                                                            "--max-offsets-per-trigger", "300"))
    try:
        deadline = time.monotonic() + 120
        while sum(1 for p in query.recentProgress if p["numInputRows"] > 0) < 2:
            assert query.isActive and time.monotonic() < deadline, query.exception()
            time.sleep(0.1)
    finally:
        query.stop()
    partial, _ = kafka_stream_aggregate.output_totals(spark, minibroker, output)
    assert 0 < sum(rows for rows, _, _ in partial.values()) < ROWS

    # Started again from the checkpoint: it reads the rest, nothing twice, nothing aborted.
    query = kafka_stream_aggregate.start(spark, stream_args(minibroker, topic_name, checkpoint))
    query.awaitTermination(300)
    assert query.exception() is None
    complete, records = kafka_stream_aggregate.output_totals(spark, minibroker, output)
    assert complete == totals(1)
    assert records > len(complete)  # the stopped run's updates are there too, superseded

    # More rows, and the job once more from its checkpoint: only the new rows are added.
    write(spark, minibroker, topic_name, "--delivery", "exactly-once")
    query = kafka_stream_aggregate.start(spark, stream_args(minibroker, topic_name, checkpoint))
    query.awaitTermination(300)
    assert query.exception() is None
    assert kafka_stream_aggregate.output_totals(spark, minibroker, output)[0] == totals(2)
    verified = kafka_stream_aggregate.verify(spark, minibroker, topic_name, output)
    assert verified.ok and (verified.input_rows, verified.names) == (2 * ROWS, 1000), verified.wrong[:5]
