#!/usr/bin/env bash
# kafka-python's own integration tests (test/integration of kafka-python 3.0.12) against a running
# Kafka-compatible broker: `make conformance CONFORMANCE=kafka-python` runs it (docs/compatibility/tested.md).
# The tests come from PyPI's source distribution of kafka-python (it carries test/integration and the `kafka`
# package they import, which is the one tested, not the project's); they run in a virtualenv of their own under
# the cache. The suite takes an external broker through KAFKA_URI=tcp://host:port and KAFKA_VERSION; it still
# insists that $KAFKA_ROOT exists, so an empty folder is given.
# Not run: test_ssl_integration.py (starts a Kafka of its own with SSL), test_sasl_integration.py (skips
# itself against an external broker).
#
# Usage: BOOTSTRAP=127.0.0.1:9092 scripts/conformance/kafka-python.sh [more pytest arguments]
#
# Environment (all optional):
#   BOOTSTRAP           broker host:port                           [127.0.0.1:9092]
#   CONFORMANCE_CACHE   sdist, virtualenv and work folder          [~/.cache/minibroker/conformance]
#   KAFKA_PYTHON_SDIST  pip requirement of the tested release      [kafka-python==3.0.12]
#   KP_BROKER_VERSION   KAFKA_VERSION given to the tests: gates tests and caps
#                       the clients' api_version                   [3.9]
#   TEST_TIMEOUT        per-test timeout, seconds                  [90]
#                       (test_kafka_consumer_offsets_for_times_errors waits out the client's 60 s
#                       default_api_timeout_ms by design)
#   PYTHON              interpreter of the virtualenv              [python3]
#   RESULTS_DIR         where the pytest log and JUnit XML go      [$CONFORMANCE_CACHE/results/kafka-python-<time>]
# Exit status: 0 if nothing failed, 1 otherwise, 2 on setup error.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BOOTSTRAP=${BOOTSTRAP:-127.0.0.1:9092}
CACHE=${CONFORMANCE_CACHE:-$HOME/.cache/minibroker/conformance}
KAFKA_PYTHON_SDIST=${KAFKA_PYTHON_SDIST:-kafka-python==3.0.12}
KP_BROKER_VERSION=${KP_BROKER_VERSION:-3.9}
TEST_TIMEOUT=${TEST_TIMEOUT:-90}
PYTHON=${PYTHON:-python3}
VENV="$CACHE/kafka-python-venv"
WORK="$CACHE/kafka-python-work"
SDIST_DIR="$CACHE/kafka-python-sdist/${KAFKA_PYTHON_SDIST//[^A-Za-z0-9._-]/_}"
log() { echo "[kafka-python.sh] $*" >&2; }

mkdir -p "$CACHE" || exit 2
if [ ! -x "$VENV/bin/pytest" ]; then
    log "creating virtualenv $VENV"
    "$PYTHON" -m venv "$VENV" || exit 2
    "$VENV/bin/pip" install -q pytest pytest-mock pytest-timeout py lz4 zstandard python-snappy crc32c xxhash \
        >"$CACHE/kafka-python-pip.log" 2>&1 || { log "pip failed, see $CACHE/kafka-python-pip.log"; exit 2; }
fi

if ! ls "$SDIST_DIR"/*.tar.gz >/dev/null 2>&1; then
    log "fetching the source distribution of $KAFKA_PYTHON_SDIST from PyPI"
    mkdir -p "$SDIST_DIR" || exit 2
    "$VENV/bin/pip" download -q --no-deps --no-binary :all: -d "$SDIST_DIR" "$KAFKA_PYTHON_SDIST" \
        >"$CACHE/kafka-python-sdist.log" 2>&1 || { log "pip download failed, see $CACHE/kafka-python-sdist.log"; exit 2; }
fi

rm -rf "$WORK" && mkdir -p "$WORK/empty-kafka-root" || exit 2
tar xzf "$SDIST_DIR"/*.tar.gz -C "$WORK" --strip-components=1 || exit 2
[ -d "$WORK/test/integration" ] || { log "the source distribution has no test/integration"; exit 2; }
# The sdist leaves out test/__init__.py (without it `test` is the standard library's package) and
# test/service.py, which the fixtures import: the repository's own versions of both.
cp "$HERE/kafka_python_test/__init__.py" "$HERE/kafka_python_test/service.py" "$WORK/test/" || exit 2

RESULTS_DIR=${RESULTS_DIR:-$CACHE/results/kafka-python-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RESULTS_DIR" || exit 2
XML="$RESULTS_DIR/results.xml"
log "running against $BOOTSTRAP (KAFKA_VERSION=$KP_BROKER_VERSION)"
t0=$(date +%s)
# --timeout-method=signal: the project's default (thread) ends the whole run at the first timeout.
(cd "$WORK" && KAFKA_ROOT="$WORK/empty-kafka-root" KAFKA_URI="tcp://$BOOTSTRAP" KAFKA_VERSION="$KP_BROKER_VERSION" \
    "$VENV/bin/python" -m pytest test/integration \
    --ignore=test/integration/test_ssl_integration.py --ignore=test/integration/test_sasl_integration.py \
    -p no:cacheprovider --timeout="$TEST_TIMEOUT" --timeout-method=signal -q -rN --tb=short \
    -o log_level=WARNING -W ignore --junitxml="$XML" "$@" >"$RESULTS_DIR/pytest.log" 2>&1)
log "pytest finished in $(( $(date +%s) - t0 ))s (log: $RESULTS_DIR/pytest.log)"
[ -f "$XML" ] || { log "no JUnit XML was written"; tail -20 "$RESULTS_DIR/pytest.log"; exit 2; }
"$VENV/bin/python" "$HERE/junit_summary.py" "kafka-python integration tests vs $BOOTSTRAP" "$XML"
