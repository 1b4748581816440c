"""The streaming job: Spark's own Kafka connector (spark-sql-kafka-0-10, on Apache Kafka's Java client) reads
the write job's topic as a stream with kafka.isolation.level=read_committed, totals it per name, and writes the
totals back to a topic through Spark's Kafka sink, with a checkpoint: stopped and started again, it goes on
from where it stopped.

    python -m jobs.kafka_stream_aggregate --bootstrap 127.0.0.1:9092 --topic events --output-topic events-by-name \\
        --checkpoint ./events-by-name.checkpoint       # what the topic holds now, then stops (Trigger.AvailableNow)
    python -m jobs.kafka_stream_aggregate ... --every 5  # a micro-batch every 5 s until interrupted
    python -m jobs.kafka_stream_aggregate --bootstrap ... --topic events --output-topic events-by-name --verify

The output topic holds one record per name and update (output mode "update": each micro-batch writes the
names it changed), key the name, value {"name", "rows", "cents", "id_sum"}; the latest record of a name is its
total. --verify reads both topics with kafka-python, computes the totals from the input's committed rows and
compares them with the latest output of each name (exit 1 on a difference).

The connector is the spark-sql-kafka-0-10 release of the installed pyspark, fetched with Maven into the cache
(broker.testkit.jars) unless --conf spark.jars.packages or spark.jars names it already.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.spark_session import parse_conf, spark_session

# The write job's record value (jobs.inputs.generate): what the aggregate reads.
VALUE_SCHEMA = "id LONG, name STRING, amount DOUBLE, created_at STRING"
CONNECTOR = "spark-sql-kafka-0-10"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m jobs.kafka_stream_aggregate", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap", default="127.0.0.1:9092", help="Kafka bootstrap servers (default %(default)s)")
    p.add_argument("--topic", required=True, help="the topic to read (the write job's)")
    p.add_argument("--output-topic", required=True, help="where the totals go")
    p.add_argument("--output-partitions", type=int, default=3, help="partitions of the output topic if created")
    p.add_argument("--checkpoint", help="the query's checkpoint directory (required unless --verify)")
    p.add_argument("--every", type=float, metavar="SECONDS",
                   help="a micro-batch every SECONDS until interrupted (default: what is there now, then stop)")
    p.add_argument("--max-offsets-per-trigger", type=int, metavar="N", help="at most N records per micro-batch")
    p.add_argument("--verify", action="store_true", help="compare the output topic with the input's totals")
    p.add_argument("--master", default="local[*]", help="Spark master (default %(default)s)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark config (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no Spark console progress bar")
    return p


def connector_jars() -> list[str]:
    """The Kafka connector of the installed pyspark's release and what it needs that pyspark lacks (the Kafka
    client, commons-pool2, the token provider), fetched with Maven."""
    import pyspark

    from broker.testkit import jars as maven

    version = pyspark.__version__
    scala = next((Path(pyspark.__file__).parent / "jars").glob("scala-library-2.*.jar")).name.split("-")[2][:4]
    jars = maven.fetch([f"org.apache.spark:{CONNECTOR}_{scala}:{version}"], f"kafka-spark-{version}")
    present = {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return [str(j) for j in jars if _artifact(j.name) not in present]


def _artifact(jar_name: str) -> str:
    """'kafka-clients-3.9.2.jar' -> 'kafka-clients'."""
    match = re.match(r"^(.*?)-\d[^-]*(-.*)?\.jar$", jar_name)
    return match.group(1) if match else jar_name


def with_connector(conf: dict[str, str]) -> dict[str, str]:
    """`conf` plus spark.jars naming the connector, unless it is named already."""
    named = conf.get("spark.jars.packages", "") + conf.get("spark.jars", "")
    if CONNECTOR in named:
        return conf
    jars = ",".join(filter(None, [conf.get("spark.jars", ""), *connector_jars()]))
    return {**conf, "spark.jars": jars}


def start(spark: Any, args: argparse.Namespace) -> Any:
    """Starts the streaming query (its StreamingQuery)."""
    from pyspark.sql import functions as F

    from jobs.topics import ensure_topic

    ensure_topic(args.bootstrap, args.output_topic, args.output_partitions)
    source = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.topic)
              .option("startingOffsets", "earliest")
              .option("kafka.isolation.level", "read_committed"))
    if args.max_offsets_per_trigger:
        source = source.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    rows = source.load().select(F.from_json(F.col("value").cast("string"), VALUE_SCHEMA).alias("v")).select("v.*")
    totals = rows.groupBy("name").agg(F.count(F.lit(1)).alias("rows"),
                                      F.sum(F.round(F.col("amount") * 100).cast("long")).alias("cents"),
                                      F.sum("id").alias("id_sum"))
    records = totals.select(F.col("name").alias("key"),
                            F.to_json(F.struct("name", "rows", "cents", "id_sum")).alias("value"))
    writer = (records.writeStream.format("kafka")
              .option("kafka.bootstrap.servers", args.bootstrap)
              .option("topic", args.output_topic)
              .option("checkpointLocation", args.checkpoint)
              .outputMode("update")
              .queryName(f"totals of {args.topic}"))
    writer = writer.trigger(processingTime=f"{args.every} seconds") if args.every else writer.trigger(availableNow=True)
    return writer.start()


@dataclass(frozen=True)
class Verification:
    input_rows: int  # committed rows of the input topic
    names: int  # names among them
    output_records: int  # records of the output topic (updates)
    output_names: int
    wrong: list[str]  # names whose latest output differs from the input's totals (or is missing, or extra)

    @property
    def ok(self) -> bool:
        return not self.wrong


def expected_totals(spark: Any, bootstrap: str, topic: str) -> dict[str, tuple[int, int, int]]:
    """{name: (rows, cents, id_sum)} of the committed rows of `topic`, read with kafka-python."""
    from pyspark.sql import functions as F

    from jobs.kafka_to_spark import read_topic

    rows = read_topic(spark, bootstrap, topic, "read_committed").select(
        F.from_json("value", VALUE_SCHEMA).alias("v")).select("v.*")
    totals = rows.groupBy("name").agg(F.count(F.lit(1)).alias("rows"),
                                      F.sum(F.round(F.col("amount") * 100).cast("long")).alias("cents"),
                                      F.sum("id").alias("id_sum")).collect()
    return {r["name"]: (r["rows"], r["cents"], r["id_sum"]) for r in totals}


def output_totals(spark: Any, bootstrap: str, output_topic: str) -> tuple[dict[str, tuple[int, int, int]], int]:
    """The latest total of each name in the output topic (a name's updates share a partition, in offset
    order), and how many records the topic holds."""
    import json

    from jobs.kafka_to_spark import read_topic

    latest: dict[str, tuple[int, int, tuple[int, int, int]]] = {}
    records = read_topic(spark, bootstrap, output_topic, "read_uncommitted").select(
        "partition", "offset", "key", "value").collect()
    for r in records:
        value = json.loads(r["value"])
        position = (r["partition"], r["offset"])
        if r["key"] not in latest or latest[r["key"]][:2] < position:
            latest[r["key"]] = (*position, (value["rows"], value["cents"], value["id_sum"]))
    return {name: entry[2] for name, entry in latest.items()}, len(records)


def verify(spark: Any, bootstrap: str, topic: str, output_topic: str) -> Verification:
    expected = expected_totals(spark, bootstrap, topic)
    actual, records = output_totals(spark, bootstrap, output_topic)
    wrong = [f"{name}: expected {expected.get(name)}, output {actual.get(name)}"
             for name in sorted(set(expected) | set(actual)) if expected.get(name) != actual.get(name)]
    return Verification(sum(t[0] for t in expected.values()), len(expected), records, len(actual), wrong)


def run(spark: Any, args: argparse.Namespace) -> int:
    if args.verify:
        v = verify(spark, args.bootstrap, args.topic, args.output_topic)
        print(f"{args.topic}: {v.input_rows} committed rows, {v.names} names; {args.output_topic}: "
              f"{v.output_records} records, {v.output_names} names", file=sys.stderr)
        for line in v.wrong[:20]:
            print("  " + line, file=sys.stderr)
        print(("OK: every name's latest total matches" if v.ok else f"MISMATCH: {len(v.wrong)} names differ"),
              file=sys.stderr)
        return 0 if v.ok else 1
    if not args.checkpoint:
        raise SystemExit("--checkpoint is required (the query's progress lives there)")
    started = time.monotonic()
    query = start(spark, args)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    print(f"{args.topic} -> {args.output_topic}: {len(query.recentProgress)} micro-batches, {rows} rows in "
          f"{time.monotonic() - started:.1f} s (checkpoint {args.checkpoint})", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    conf = {"spark.sql.shuffle.partitions": "8", **parse_conf(args.conf)}
    if not args.verify:
        conf = with_connector(conf)
    with spark_session("kafka_stream_aggregate", args.master, conf, progress=not args.no_progress) as spark:
        return run(spark, args)


if __name__ == "__main__":
    sys.exit(main())
