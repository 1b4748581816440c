"""The write job's input: a CSV, JSON lines or Parquet path, or N generated rows; and the projection of each
row onto a record, a string key and a JSON value (built by Spark SQL in the JVM, not row by row in Python)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FORMATS = ("csv", "json", "parquet")
_SUFFIXES = {".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json", ".parquet": "parquet"}


def detect_format(path: str) -> str:
    """The input format from the path's suffix (a directory of part files needs --format)."""
    for suffix, fmt in _SUFFIXES.items():
        if path.lower().rstrip("/").endswith(suffix):
            return fmt
    raise ValueError(f"cannot tell the format of {path!r} from its name: pass --format csv|json|parquet")


def read_input(spark: Any, path: str, fmt: str | None = None) -> Any:
    fmt = fmt or detect_format(path)
    if fmt == "csv":
        return spark.read.option("header", "true").option("inferSchema", "true").csv(path)
    if fmt == "json":
        return spark.read.json(path)  # JSON lines: one object per line
    if fmt == "parquet":
        return spark.read.parquet(path)
    raise ValueError(f"unknown input format {fmt!r} (one of {', '.join(FORMATS)})")


def generate(spark: Any, rows: int, partitions: int | None = None) -> Any:
    """`rows` deterministic rows: id (unique, the default key), name, amount, a timestamp."""
    from pyspark.sql import functions as F

    df = spark.range(0, rows, numPartitions=partitions) if partitions else spark.range(0, rows)
    return df.select(
        F.col("id"),
        F.concat(F.lit("user-"), (F.col("id") % 1000).cast("string")).alias("name"),
        ((F.col("id") * 7919) % 100_000 / 100).alias("amount"),
        F.timestamp_seconds(F.lit(1_700_000_000) + F.col("id")).alias("created_at"),
    )


def to_records(df: Any, key_column: str | None, value_columns: Sequence[str] | None = None) -> Any:
    """A DataFrame of (key string or null, value JSON string): the value is the chosen columns (default: all)
    as one JSON object."""
    from pyspark.sql import functions as F

    missing = [c for c in [key_column, *(value_columns or [])] if c and c not in df.columns]
    if missing:
        raise ValueError(f"no such column(s) {missing}; the input has {df.columns}")
    value = F.to_json(F.struct(*(value_columns or df.columns)))
    key = F.col(key_column).cast("string") if key_column else F.lit(None).cast("string")
    return df.select(key.alias("key"), value.alias("value"))
