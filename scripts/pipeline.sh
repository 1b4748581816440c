#!/bin/sh
# `make pipeline`: the Spark write job on ROWS generated rows (exactly once) to a fresh topic, then the read job's
# verification (read_committed: row count, duplicate keys), then the streaming job (Spark's own Kafka connector:
# totals per name, read_committed, written back through Spark's Kafka sink) and the check of its output. Starts a
# broker with its defaults on BOOTSTRAP if nothing answers there (data in a temporary directory, stopped and
# removed at the end).
set -eu
PY=${PY:-.venv/bin/python}
ROWS=${ROWS:-100000}
BOOTSTRAP=${BOOTSTRAP:-127.0.0.1:9092}
MASTER=${MASTER:-local[*]}
DELIVERY=${DELIVERY:-exactly-once}
PARTITIONS=${PARTITIONS:-4}
TOPIC=${TOPIC:-pipeline-$(date +%Y%m%d-%H%M%S)}

answers() {
    "$PY" -c "import socket, sys; h, p = sys.argv[1].rsplit(':', 1); socket.create_connection((h, int(p)), 1).close()" \
        "$BOOTSTRAP" 2>/dev/null
}

broker_pid=
data_dir=
checkpoint=$(mktemp -d)
cleanup() {
    rm -rf "$checkpoint"
    if [ -n "$broker_pid" ]; then
        kill -TERM "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null || true
        rm -rf "$data_dir"
    fi
}
trap cleanup EXIT INT TERM

if answers; then
    echo "pipeline: using the broker at $BOOTSTRAP" >&2
else
    data_dir=$(mktemp -d)
    echo "pipeline: no broker at $BOOTSTRAP, starting one (data in $data_dir)" >&2
    "$PY" -m broker --listen "$BOOTSTRAP" --data-dir "$data_dir" --log-level WARNING &
    broker_pid=$!
    i=0
    until answers; do
        i=$((i + 1))
        if [ $i -gt 300 ] || ! kill -0 "$broker_pid" 2>/dev/null; then echo "pipeline: the broker did not start" >&2; exit 1; fi
        sleep 0.1
    done
fi

start=$(date +%s)
"$PY" -m jobs.spark_to_kafka --bootstrap "$BOOTSTRAP" --topic "$TOPIC" --generate "$ROWS" \
    --partitions "$PARTITIONS" --delivery "$DELIVERY" --master "$MASTER"
written=$(date +%s)
"$PY" -m jobs.kafka_to_spark --bootstrap "$BOOTSTRAP" --topic "$TOPIC" --master "$MASTER" \
    --verify --expect-rows "$ROWS"
verified=$(date +%s)
"$PY" -m jobs.kafka_stream_aggregate --bootstrap "$BOOTSTRAP" --topic "$TOPIC" --output-topic "$TOPIC-totals" \
    --checkpoint "$checkpoint/totals" --master "$MASTER"
"$PY" -m jobs.kafka_stream_aggregate --bootstrap "$BOOTSTRAP" --topic "$TOPIC" --output-topic "$TOPIC-totals" \
    --master "$MASTER" --verify
streamed=$(date +%s)
echo "pipeline: $ROWS rows to $TOPIC ($DELIVERY): write job $((written - start)) s, verification $((verified - written)) s," \
    "streaming totals and their check $((streamed - verified)) s" >&2
