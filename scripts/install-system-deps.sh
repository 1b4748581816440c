#!/bin/sh
# Debian packages the tests need: ZooKeeper and Java (the ZooKeeper tests; Java 17 also runs Spark for the
# pipeline tests), a JDK and Maven (the Java client, Streams and tool tests: Kafka's jars are fetched with Maven,
# the tests' Java sources compiled with javac), docker-compose (validates docker-compose.yml offline, no Docker
# daemon needed), and Chromium with its driver (the console's browser tests, through selenium).
set -e
if [ -f /usr/share/java/zookeeper.jar ] && command -v javac >/dev/null && command -v mvn >/dev/null \
        && command -v docker-compose >/dev/null && command -v chromium >/dev/null \
        && command -v chromedriver >/dev/null; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ZooKeeper, a JDK, Maven, docker-compose, Chromium and chromium-driver from apt..." >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        zookeeper default-jdk-headless maven docker-compose chromium chromium-driver >/dev/null
    exit 0
fi
echo "Missing: run as root, or 'sudo apt-get install zookeeper default-jdk-headless maven docker-compose" \
     "chromium chromium-driver', then rerun." >&2
exit 1
