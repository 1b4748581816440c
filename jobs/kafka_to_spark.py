"""The read job: a Kafka topic -> a DataFrame (partition, offset, timestamp, key, value) through kafka-python,
read_committed by default, one Spark task per Kafka partition. Writes it (--output), prints it, or checks it
(--verify: row count and duplicate keys; with --expect-rows the exit status says whether it matched).

    python -m jobs.kafka_to_spark --bootstrap 127.0.0.1:9092 --topic events --verify --expect-rows 1000000
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jobs.kafka_reader import SCHEMA, ReaderSettings, read_partitions
from jobs.report import table
from jobs.spark_session import parse_conf, spark_session
from jobs.topics import partition_ranges

OUTPUT_FORMATS = ("parquet", "json", "csv")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m jobs.kafka_to_spark", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap", default="127.0.0.1:9092", help="Kafka bootstrap servers (default %(default)s)")
    p.add_argument("--topic", required=True)
    p.add_argument("--isolation-level", choices=("read_committed", "read_uncommitted"), default="read_committed",
                   help="default %(default)s")
    p.add_argument("--output", metavar="PATH", help="write the DataFrame here (else it is printed)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, default="parquet", help="default %(default)s")
    p.add_argument("--show", type=int, default=20, metavar="N", help="rows to print without --output")
    p.add_argument("--verify", action="store_true", help="report row count and duplicate keys instead")
    p.add_argument("--expect-rows", type=int, metavar="N",
                   help="with --verify: exit 1 unless there are exactly N rows and no duplicate keys")
    p.add_argument("--master", default="local[*]", help="Spark master (default %(default)s)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark config (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no Spark console progress bar")
    return p


def read_topic(spark: Any, bootstrap: str, topic: str, isolation_level: str = "read_committed") -> Any:
    """The topic as a DataFrame (SCHEMA), every Kafka partition read by its own Spark task."""
    ranges = partition_ranges(bootstrap, topic, isolation_level)
    settings = ReaderSettings(bootstrap, topic, isolation_level)
    rdd = spark.sparkContext.parallelize(ranges, max(1, len(ranges)))
    return spark.createDataFrame(rdd.mapPartitions(lambda rs: read_partitions(settings, rs)), SCHEMA)


@dataclass(frozen=True)
class Verification:
    rows: int
    distinct_keys: int
    duplicate_keys: int  # keys that occur more than once
    extra_rows: int  # rows beyond the first of each key: what a duplicate-free topic would not have
    per_partition: dict[int, int]

    def matches(self, expected_rows: int | None) -> bool:
        return self.duplicate_keys == 0 and (expected_rows is None or self.rows == expected_rows)


def verify(df: Any) -> Verification:
    from pyspark.sql import functions as F

    df = df.cache()
    try:
        per_partition = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
        counts = df.groupBy("key").count()
        stats = counts.agg(F.count("*").alias("keys"),
                           F.coalesce(F.sum(F.when(F.col("count") > 1, 1)), F.lit(0)).alias("dup_keys"),
                           F.coalesce(F.sum(F.col("count") - 1), F.lit(0)).alias("extra")).first()
        return Verification(sum(per_partition.values()), stats["keys"], stats["dup_keys"], stats["extra"],
                            per_partition)
    finally:
        df.unpersist()


def run(spark: Any, args: argparse.Namespace) -> int:
    spark.sparkContext.setJobDescription(f"{args.isolation_level} read of {args.topic}")
    df = read_topic(spark, args.bootstrap, args.topic, args.isolation_level)
    if args.verify:
        v = verify(df)
        print(f"\n{args.isolation_level} read of {args.topic}:", file=sys.stderr)
        print(table(["kafka partition", "rows"], sorted(v.per_partition.items())), file=sys.stderr)
        print(f"rows {v.rows}, distinct keys {v.distinct_keys}, duplicate keys {v.duplicate_keys} "
              f"({v.extra_rows} extra rows)", file=sys.stderr)
        if args.expect_rows is not None:
            ok = v.matches(args.expect_rows)
            print(f"{'OK' if ok else 'MISMATCH'}: expected {args.expect_rows} rows, no duplicate keys",
                  file=sys.stderr)
            return 0 if ok else 1
        return 0
    if args.output:
        df.write.mode("overwrite").format(args.output_format).save(args.output)
        print(f"wrote {args.topic} to {args.output} ({args.output_format})", file=sys.stderr)
    else:
        df.show(args.show, truncate=80)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with spark_session("kafka_to_spark", args.master, parse_conf(args.conf), progress=not args.no_progress) as spark:
        return run(spark, args)


if __name__ == "__main__":
    sys.exit(main())
