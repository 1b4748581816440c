"""The write job: an input DataFrame -> one record per row on a Kafka topic, through kafka-python, one
producer per Spark partition, at least once or exactly once (see the `jobs` package docs).

    python -m jobs.spark_to_kafka --bootstrap 127.0.0.1:9092 --topic events --generate 1000000 \\
        --delivery exactly-once --partitions 4 --master 'local[*]'
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

from jobs.inputs import FORMATS, generate, read_input, to_records
from jobs.kafka_writer import (
    AT_LEAST_ONCE,
    DELIVERY_MODES,
    EXACTLY_ONCE,
    FAIL_POINTS,
    MIDWAY,
    FailurePlan,
    PartitionResult,
    WriterSettings,
    write_partition,
)
from jobs.report import write_report
from jobs.spark_session import parse_conf, spark_session


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m jobs.spark_to_kafka", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", metavar="PATH", help="CSV (with a header), JSON lines or Parquet file or directory")
    source.add_argument("--generate", type=int, metavar="N", help="generate N rows (id, name, amount, created_at)")
    p.add_argument("--format", choices=FORMATS, help="input format (default: from the path's suffix)")
    p.add_argument("--bootstrap", default="127.0.0.1:9092", help="Kafka bootstrap servers (default %(default)s)")
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, default=4,
                   help="partitions of the topic when the job creates it (default %(default)s)")
    p.add_argument("--spark-partitions", type=int,
                   help="repartition the input into this many Spark partitions, i.e. producers (default: as read)")
    p.add_argument("--key-column", default="id",
                   help="column whose value (as a string) is the record key; '' for no key (default %(default)s)")
    p.add_argument("--value-columns", help="comma-separated columns of the JSON value (default: all)")
    p.add_argument("--delivery", choices=DELIVERY_MODES, default=EXACTLY_ONCE, help="default %(default)s")
    p.add_argument("--job-id", help="prefix of the transactional ids (default: spark_to_kafka-TOPIC-RANDOM); "
                                    "deterministic per run, never per attempt")
    p.add_argument("--producer-option", action="append", default=[], metavar="NAME=VALUE",
                   help="kafka-python KafkaProducer option, e.g. linger_ms=50 (repeatable)")
    p.add_argument("--master", default="local[*]", help="Spark master (default %(default)s)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark config (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no Spark console progress bar")
    p.add_argument("--fail-once-partition", type=int, metavar="P",
                   help="TEST HOOK: kill the Python worker of attempt 0 of Spark partition P (needs a master that "
                        "retries tasks, e.g. local[2,4])")
    p.add_argument("--fail-point", choices=FAIL_POINTS, default=MIDWAY,
                   help="TEST HOOK: where --fail-once-partition kills it: midway (half the rows sent, flushed, "
                        "not committed) or after-commit (default %(default)s)")
    return p


def producer_options(items: Sequence[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--producer-option takes NAME=VALUE, not {item!r}")
        try:
            options[name.strip()] = int(value)
        except ValueError:
            options[name.strip()] = value
    return options


def run(spark: Any, args: argparse.Namespace) -> list[PartitionResult]:
    """Run the write job on `spark`; return each Spark partition's result (and print the report)."""
    started = time.monotonic()
    df = generate(spark, args.generate) if args.generate is not None else read_input(spark, args.input, args.format)
    if args.spark_partitions:
        df = df.repartition(args.spark_partitions)
    value_columns = [c.strip() for c in args.value_columns.split(",")] if args.value_columns else None
    records = to_records(df, args.key_column or None, value_columns)

    from jobs.topics import ensure_topic

    ensure_topic(args.bootstrap, args.topic, args.partitions)
    settings = WriterSettings(
        bootstrap=args.bootstrap, topic=args.topic, delivery=args.delivery,
        job_id=args.job_id or f"spark_to_kafka-{args.topic}-{uuid.uuid4().hex[:12]}",
        producer_config=producer_options(args.producer_option),
        fail=FailurePlan(args.fail_once_partition, args.fail_point) if args.fail_once_partition is not None else None,
    )
    spark.sparkContext.setJobDescription(f"{args.delivery} write to {args.topic}")
    results = records.rdd.mapPartitions(lambda rows: write_partition(settings, rows)).collect()
    print(f"\n{args.delivery} write of {args.topic} (job id {settings.job_id}):", file=sys.stderr)
    print(write_report(results, time.monotonic() - started), file=sys.stderr)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.delivery == AT_LEAST_ONCE and args.job_id:
        print("note: --job-id only names transactions, which at-least-once does not use", file=sys.stderr)
    with spark_session("spark_to_kafka", args.master, parse_conf(args.conf), progress=not args.no_progress) as spark:
        run(spark, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
