"""Fixtures for the Spark pipeline tests: one SparkSession (local mode, 2 threads, 4 attempts per task so an
injected failure is retried) shared by the in-process tests, and a plain kafka-python reader that checks the
topics independently of the jobs' own read job."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import topic_name  # noqa: F401 - a fixture these tests use

MASTER = "local[2,4]"
TEST_SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}


def spark_available() -> str | None:
    """Why Spark cannot run here, or None."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (make test installs it)"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is not installed (make test installs it)"
    return None


# Why Spark's Kafka connector is not on the session's classpath (None: it is).
_connector_missing: str | None = "the Spark session has not started"


def _with_connector(conf: dict[str, str]) -> dict[str, str]:
    """`conf` with Spark's Kafka connector (fetched with Maven) for the streaming job, when it can be had."""
    global _connector_missing
    from jobs.kafka_stream_aggregate import with_connector
    from tests.kafka_jars import Unavailable

    try:
        # Spark keeps its Kafka sink's producers for reuse: closed soon, they do not outlive a test's broker.
        conf = with_connector({**conf, "spark.kafka.producer.cache.timeout": "2s",
                               "spark.kafka.producer.cache.evictorThreadRunInterval": "1s"})
        _connector_missing = None
    except Unavailable as exc:
        _connector_missing = str(exc)
    return conf


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    reason = spark_available()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from jobs.spark_session import spark_session

    conf = _with_connector(TEST_SPARK_CONF)
    with spark_session("minibroker-pipeline-tests", MASTER, conf, progress=False) as session:
        yield session


@pytest.fixture
def spark_with_kafka_connector(spark: Any) -> Any:
    """The session, with Spark's own Kafka connector (spark-sql-kafka-0-10) on its classpath."""
    if _connector_missing:
        if os.environ.get("CI"):
            pytest.fail(f"Spark's Kafka connector: {_connector_missing}")
        pytest.skip(f"Spark's Kafka connector: {_connector_missing}")
    return spark


def read_topic_plainly(bootstrap: str, topic: str, isolation_level: str) -> list[tuple[int, str, str]]:
    """Every record of `topic` as (partition, key, value), read with one kafka-python consumer up to the end
    offsets it sees (the LSO under read_committed)."""
    from kafka import KafkaConsumer, TopicPartition

    from tests.integration.conftest import wait_until

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        def partitions() -> set[int] | None:
            consumer.topics()  # refreshes the metadata
            return consumer.partitions_for_topic(topic)

        tps = [TopicPartition(topic, p) for p in sorted(wait_until(partitions, message=f"metadata of {topic}"))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        records: list[tuple[int, str, str]] = []

        def caught_up() -> bool:
            for tp, batch in consumer.poll(timeout_ms=200).items():
                records.extend((tp.partition, r.key.decode(), r.value.decode()) for r in batch)
            return all(consumer.position(tp) >= ends[tp] for tp in tps)

        wait_until(caught_up, timeout=60, message=f"reading {topic} to its end offsets {ends}")
        return records
    finally:
        consumer.close(autocommit=False)
