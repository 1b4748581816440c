#!/bin/sh
# What the Apache Kafka reference brokers need besides Python (tests/reference/, the benchmark's Kafka):
# Java to run Kafka and ZooKeeper, Maven to fetch Kafka's jars (tests/kafka_jars.py), Debian's ZooKeeper for
# the 3.x (ZooKeeper-mode) releases.
set -e
if command -v mvn >/dev/null && command -v java >/dev/null && [ -f /usr/share/java/zookeeper.jar ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Maven, Java and ZooKeeper from apt..." >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        maven default-jre-headless zookeeper >/dev/null
    exit 0
fi
echo "Missing: run as root, or 'sudo apt-get install maven default-jre-headless zookeeper', then rerun." >&2
exit 1
