"""Apache Kafka as the oracle (issue 28): real Kafka brokers started on demand (kafka.py, the
`kafka_reference` fixture in plugin.py), and the differential harness (harness.py, scenarios/) that runs
one scenario against Kafka and against minibroker and compares the answers field by field. Kafka's answers
are recorded in recorded/<release>/<scenario>.json, so `make test` replays them against minibroker without
a JVM; `make reference-record` refreshes them and `make reference-diff` runs both brokers live."""
