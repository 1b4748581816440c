"""The tables the jobs print at the end: rows per Spark partition and per Kafka partition."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from jobs.kafka_writer import PartitionResult


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    rows = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def write_report(results: Sequence[PartitionResult], seconds: float) -> str:
    per_kafka: Counter[int] = Counter()
    for r in results:
        per_kafka.update(r.kafka_partitions)
    total = sum(r.rows for r in results)
    spark_rows = [(r.spark_partition, r.attempt, r.rows, f"{r.seconds:.1f}",
                   "committed by an earlier attempt" if r.already_committed else "") for r in results]
    parts = [
        table(["spark partition", "attempt", "rows", "seconds", "note"], sorted(spark_rows)),
        table(["kafka partition", "rows written"], sorted(per_kafka.items())),
        f"{total} rows in {seconds:.1f} s ({total / seconds if seconds else 0:,.0f} rows/s)",
    ]
    return "\n\n".join(parts)
