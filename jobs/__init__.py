"""Spark jobs that move data between DataFrames and a Kafka topic through kafka-python.

    python -m jobs.spark_to_kafka --bootstrap HOST:PORT --topic T --generate 100000 --delivery exactly-once
    python -m jobs.kafka_to_spark --bootstrap HOST:PORT --topic T --verify --expect-rows 100000

They run on PySpark in local mode (`--master local[*]`, the default) or unchanged on a Spark cluster
(`--master spark://...`; the executors need kafka-python, and this package, which the jobs ship with
`addPyFile` when the master is not local).

Modules:
    spark_to_kafka   the write job: input (CSV, JSON lines, Parquet or `--generate N`) -> records on a topic
    kafka_to_spark   the read job: a topic (read_committed, one Spark task per Kafka partition) -> DataFrame,
                     written, printed, or checked with `--verify` (row count and duplicate keys)
    kafka_stream_aggregate  the streaming job on Spark's own Kafka connector: a topic (read_committed) ->
                     totals per name -> a topic, through Spark's Kafka sink, with a checkpoint
    inputs           reading or generating the input DataFrame, and turning rows into (key, JSON value)
    kafka_writer     what runs in each Spark task of the write job: one kafka-python producer per partition
    kafka_reader     what runs in each Spark task of the read job: one kafka-python consumer per partition
    topics           creating the topic and listing its partitions' offsets (driver side)
    spark_session    a SparkSession for these jobs: loopback binding in local mode, progress bar, --conf
    report           the per-partition tables printed at the end

Delivery modes of the write job:
    at-least-once   an idempotent producer per Spark partition. Broker-side retries never duplicate, but a
                    Spark task that fails after sending some rows and is retried sends them again: the
                    topic then holds duplicates of those rows.
    exactly-once    a transactional producer per Spark partition with the transactional id
                    "<job id>-<partition id>" (never the attempt number), all its rows in one transaction.
                    A retried attempt's init_transactions() bumps the epoch, which fences the failed attempt
                    (a zombie, if it still lives) and makes the broker abort its open transaction; the retry
                    then writes the partition again. With the rows the transaction also commits an offset
                    for the group "<job id>-<partition id>" (Kafka's sendOffsetsToTransaction), so an attempt
                    that committed but was still retried (its success was lost, or a speculative copy)
                    finds the commit and writes nothing. A read_committed consumer sees each row once.
"""
