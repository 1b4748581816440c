#!/bin/sh
# ZooKeeper (Debian's package, with Java) for the tests that run a real ZooKeeper server.
set -e
if [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ZooKeeper and Java from apt..." >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zookeeper default-jre-headless >/dev/null
    exit 0
fi
echo "ZooKeeper is missing: run as root, or 'sudo apt-get install zookeeper default-jre-headless', then rerun." >&2
exit 1
