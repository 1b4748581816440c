#!/usr/bin/env bash
# librdkafka's own regression test suite (tests/0nnn-*.c of librdkafka v2.12.0) against a running
# Kafka-compatible broker: `make conformance CONFORMANCE=librdkafka` runs it (docs/compatibility/tested.md).
# The source comes from the npm registry (node-rdkafka's tarball bundles librdkafka under deps/), is built
# once under the cache (gcc, make and the -dev packages of OpenSSL, zlib, zstd, lz4 and RapidJSON; installed
# from apt when missing and running as root) and its test-runner runs each test number in a process of its own.
#
# Usage:
#   BOOTSTRAP=127.0.0.1:9092 scripts/conformance/librdkafka.sh          # every broker test (81)
#   BOOTSTRAP=127.0.0.1:9092 RDK_TESTS="0001 0012 0103" scripts/conformance/librdkafka.sh
#   RDK_RESUMMARIZE=<results dir> scripts/conformance/librdkafka.sh     # re-print a past run
#
# Environment (all optional):
#   BOOTSTRAP            broker address                    [127.0.0.1:9092]
#   CONFORMANCE_CACHE    build/cache dir                   [~/.cache/minibroker/conformance]
#   LIBRDKAFKA_SRC       existing librdkafka source tree to build from
#                        (copied into the cache). If unset, the source bundled
#                        in the npm package $RDK_NPM_PKG is used.
#   RDK_NPM_PKG          npm package carrying deps/librdkafka  [node-rdkafka@3.6.1 = librdkafka v2.12.0]
#   RDK_BROKER_VERSION   broker version the test-runner assumes; gates tests
#                        via TEST_BRKVER()                 [3.9.0]
#   RDK_SET              all | core (all but the sockem tests)  [all]
#   RDK_TESTS            space/comma separated test numbers; overrides RDK_SET
#   RDK_TEST_TIMEOUT     outer wall-clock limit per test number, seconds (a
#                        number can hold several tests, e.g. 0045)     [600]
#   RDK_LONG_TESTS       test:seconds pairs with a longer outer limit  [0113:1500]
#   RDK_TIMEOUT_MULT     test.timeout.multiplier in test.conf         [2]
#   RDK_QUICK            1 = pass -Q (quick mode: fewer msgs, and every
#                        non-"quick" SUB_TEST is silently skipped yet counted PASS) [0]
#   RDK_EXTRA_CONF       extra "key=value" lines (newline separated) for test.conf
#   RESULTS_DIR          where per-test logs + summary go  [$CONFORMANCE_CACHE/results/librdkafka-<ts>]
#   RDK_RESUMMARIZE      a previous RESULTS_DIR: only re-print its summary from the saved logs
#
# Each test number runs in its own test-runner process (a librdkafka test
# timeout SIGKILLs the whole runner, so isolation is required).
# Exit status: 0 if no test failed, 1 otherwise, 2 on build/setup error.
set -u

BOOTSTRAP=${BOOTSTRAP:-127.0.0.1:9092}
CACHE=${CONFORMANCE_CACHE:-$HOME/.cache/minibroker/conformance}
RDK_NPM_PKG=${RDK_NPM_PKG:-node-rdkafka@3.6.1}
RDK_BROKER_VERSION=${RDK_BROKER_VERSION:-3.9.0}
RDK_SET=${RDK_SET:-all}
RDK_TEST_TIMEOUT=${RDK_TEST_TIMEOUT:-600}
# 0113_cooperative_rebalance runs some thirty sub-tests with fixed waits (six subscription playbooks of 15 s,
# each followed by at least 20 s of settling and two 5 s checks): longer than the default limit on two cores,
# against Apache Kafka too.
RDK_LONG_TESTS=${RDK_LONG_TESTS:-0113:1500}
RDK_TIMEOUT_MULT=${RDK_TIMEOUT_MULT:-2}
RDK_QUICK=${RDK_QUICK:-0}
RDK_EXTRA_CONF=${RDK_EXTRA_CONF:-}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

# Core subset: plain-TCP single-broker tests covering produce, consume,
# consumer groups, offsets, metadata, admin, headers, compression,
# idempotence and transactions. Excluded (need things an external
# single-node PLAINTEXT broker can't provide): SSL/SASL/OAUTH (0097 0115 0119
# 0126 0135 0142), Java helper (0098), multi-broker/rack (0101), trivup
# "noautocreate" scenario (0107 0111), broker-side config (0123), mock-cluster
# tests (0139 0150), KIP-932 share groups (0170+), known-flaky (0028 0047),
# long perf (0038), and tests that shell out to Kafka's own CLI scripts
# (kafka-topics.sh/kafka-configs.sh via KAFKA_PATH): 0052 0077 0109.
CORE_TESTS="0001 0002 0003 0005 0007 0008 0011 0012 0013 0014 0015 0017 \
0018 0019 0020 0021 0022 0026 0029 0030 0031 0033 0034 0035 0036 0039 0040 \
0041 0042 0044 0045 0048 0050 0051 0053 0054 0056 0057 0059 0060 0061 \
0063 0064 0065 0067 0069 0070 0073 0081 0082 0083 0084 0085 0086 0089 \
0090 0091 0092 0093 0099 0102 0103 0110 0112 0113 0114 0118 0122 0125 \
0127 0129 0130 0132 0137 0140"
# sockem tests: client-side socket emulator, work against any broker.
SOCKEM_TESTS="0049 0068 0075 0076 0088 0094"
# Need KAFKA_PATH (+ BROKERS) pointing at an Apache Kafka install for its CLI
# tools; only meaningful with RDK_TESTS=... and such an install.
CLI_TESTS="0052 0077 0109"

if [ -n "${RDK_TESTS:-}" ]; then
    TESTS_LIST=$(echo "$RDK_TESTS" | tr ',' ' ')
elif [ "$RDK_SET" = all ]; then
    TESTS_LIST="$CORE_TESTS $SOCKEM_TESTS"
else
    TESTS_LIST="$CORE_TESTS"
fi

log() { echo "[librdkafka.sh] $*" >&2; }

mkdir -p "$CACHE" || exit 2
SRC="$CACHE/librdkafka"

# ---------------------------------------------------------------- source
# (re-printing a past run needs neither the source nor the build)
[ -n "${RDK_RESUMMARIZE:-}" ] && BOOTSTRAP=$(sed -n "s/^bootstrap.servers=//p" "$RDK_RESUMMARIZE/test.conf")
if [ -z "${RDK_RESUMMARIZE:-}" ] && [ ! -f "$SRC/configure" ]; then
    if [ -n "${LIBRDKAFKA_SRC:-}" ]; then
        log "copying librdkafka source from $LIBRDKAFKA_SRC"
        cp -a "$LIBRDKAFKA_SRC" "$SRC" || exit 2
    else
        log "fetching librdkafka source via npm pack $RDK_NPM_PKG"
        tmp=$(mktemp -d "$CACHE/npm.XXXXXX")
        (cd "$tmp" && npm pack --silent "$RDK_NPM_PKG" >/dev/null) || { log "npm pack failed"; exit 2; }
        tar xzf "$tmp"/*.tgz -C "$tmp" package/deps/librdkafka || { log "tarball has no deps/librdkafka"; exit 2; }
        mv "$tmp/package/deps/librdkafka" "$SRC" && rm -rf "$tmp"
    fi
fi

# ---------------------------------------------------------------- build
if [ -z "${RDK_RESUMMARIZE:-}" ] && [ ! -x "$SRC/tests/test-runner" ]; then
    log "building librdkafka + test-runner in $SRC (a few minutes)"
    missing=""
    for pkg in libssl-dev zlib1g-dev libzstd-dev liblz4-dev rapidjson-dev; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
    done
    if [ -n "$missing" ] && [ "$(id -u)" = 0 ]; then
        log "installing$missing (apt)"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing) >"$CACHE/rdk-apt.log" 2>&1 \
            || log "apt install failed (see $CACHE/rdk-apt.log); building with what is there"
    fi
    t0=$(date +%s)
    if ! (cd "$SRC" && ./configure --disable-gssapi >"$CACHE/rdk-configure.log" 2>&1); then
        log "configure failed, see $CACHE/rdk-configure.log"
        log "hint: apt-get install -y libssl-dev zlib1g-dev libzstd-dev liblz4-dev"
        exit 2
    fi
    (cd "$SRC" && make -j"$JOBS" libs >"$CACHE/rdk-build.log" 2>&1) || { log "make libs failed, see $CACHE/rdk-build.log"; exit 2; }
    (cd "$SRC/tests" && make -j"$JOBS" test-runner >>"$CACHE/rdk-build.log" 2>&1) || { log "make test-runner failed, see $CACHE/rdk-build.log"; exit 2; }
    log "build took $(( $(date +%s) - t0 ))s"
fi

# ---------------------------------------------------------------- run
RESULTS_DIR=${RDK_RESUMMARIZE:-${RESULTS_DIR:-$CACHE/results/librdkafka-$(date +%Y%m%d-%H%M%S)}}
mkdir -p "$RESULTS_DIR" || exit 2
CONF="$RESULTS_DIR/test.conf"
[ -n "${RDK_RESUMMARIZE:-}" ] || {
    echo "bootstrap.servers=$BOOTSTRAP"
    echo "test.timeout.multiplier=$RDK_TIMEOUT_MULT"
    echo "test.topic.random=true"
    [ -n "$RDK_EXTRA_CONF" ] && printf '%s\n' "$RDK_EXTRA_CONF"
} >"$CONF"

ARGS="-p1 -L"   # -L: skip TEST_F_LOCAL (mock-cluster) sub-tests sharing the number
[ "$RDK_QUICK" = 1 ] && ARGS="$ARGS -Q"

SUMMARY="$RESULTS_DIR/summary.tsv"
: >"$SUMMARY"
npass=0; nfail=0; nskip=0
log "running $(echo $TESTS_LIST | wc -w) tests against $BOOTSTRAP (assumed broker version $RDK_BROKER_VERSION); logs in $RESULTS_DIR"

strip_ansi() { sed -e 's/\x1b\[[0-9;]*[mK]//g' -e 's/\x1b(B//g'; }

# classify <test-number> <log> <rc>  -> sets status, reason, names
classify() {
    local t=$1 tlog=$2 rc=$3 rows failmsg
    # summary rows look like: "| 0012_produce_consume   |     PASSED |   3.2s |"
    rows=$(grep -E "^\| +${t}_[A-Za-z0-9_]+ +\| +[A-Z]+ " "$tlog" | awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); print $2" "$3}' | sort -u)
    # librdkafka prints: ### Test "NAME (subtest)" failed at FILE:LINE:FUNC() at TIME: ###\n<message>
    failmsg=$(grep -m1 -A1 -E '^### Test "'"$t"'.* failed at' "$tlog" | tr '\n' ' ' \
              | sed -E 's/^### Test "([^"]*)" failed at ([^:]*:[0-9]+):[^#]*### */\1 @\2: /' | cut -c1-200)
    reason=""
    if echo "$rows" | grep -qw FAILED || [ -n "$failmsg" ]; then
        status=FAIL; reason=$failmsg
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        status=FAIL; reason="outer timeout ${limit}s (rc=$rc)"
    elif [ -z "$rows" ]; then
        status=FAIL; reason="no summary (rc=$rc, crash?)"
    elif echo "$rows" | grep -qw PASSED; then
        if [ "$rc" = 0 ]; then status=PASS; else status=FAIL; reason="rc=$rc after PASSED: $(grep -m1 -A1 '^### Test' "$tlog" | tail -1 | cut -c1-120)"; fi
    elif echo "$rows" | grep -qw SKIPPED; then
        status=SKIP
        reason=$(grep -m1 -iE "skipping" "$tlog" | sed 's/^\[[^]]*\] *//' | cut -c1-120)
    else
        status=FAIL; reason="rc=$rc"
    fi
    [ "$status" = FAIL ] && [ -z "$reason" ] && reason="rc=$rc"
    # (a number's mock-cluster twin, NAME_local, is skipped by -L: name the test that ran)
    names=$(echo "$rows" | awk 'NF && $1 !~ /_local$/ {print $1}' | head -1)
    [ -z "$names" ] && names=$(echo "$rows" | awk 'NF{print $1}' | head -1)
    [ -z "$names" ] && names=$(grep -oE "\[${t}_[A-Za-z0-9_]+" "$tlog" | tr -d '[' | grep -v '_local$' | head -1)
    [ -z "$names" ] && names="$t"
}

limit_for() {  # the outer limit of test number $1
    local pair
    for pair in $RDK_LONG_TESTS; do
        [ "${pair%%:*}" = "$1" ] && { echo "${pair#*:}"; return; }
    done
    echo "$RDK_TEST_TIMEOUT"
}

t_sum=0
for t in $TESTS_LIST; do
    tlog="$RESULTS_DIR/$t.log"
    t0=$(date +%s)
    limit=$(limit_for "$t")
    if [ -n "${RDK_RESUMMARIZE:-}" ]; then
        [ -f "$tlog" ] || continue
        rc=$(cat "$RESULTS_DIR/$t.rc" 2>/dev/null || echo 0)
        dt=$(cat "$RESULTS_DIR/$t.time" 2>/dev/null || echo 0)
        limit=$(cat "$RESULTS_DIR/$t.limit" 2>/dev/null || echo "$limit")
    else
        (cd "$SRC/tests" && \
            LD_LIBRARY_PATH="../src:../src-cpp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            RDKAFKA_TEST_CONF="$CONF" TEST_KAFKA_VERSION="$RDK_BROKER_VERSION" \
            TESTS="$t" timeout -k 10 "$limit" ./test-runner $ARGS) 2>&1 | strip_ansi >"$tlog"
        rc=${PIPESTATUS[0]}
        dt=$(( $(date +%s) - t0 ))
        echo "$rc" >"$RESULTS_DIR/$t.rc"; echo "$dt" >"$RESULTS_DIR/$t.time"; echo "$limit" >"$RESULTS_DIR/$t.limit"
    fi
    t_sum=$((t_sum + dt))
    classify "$t" "$tlog" "$rc"
    case $status in
        PASS) npass=$((npass + 1)) ;;
        FAIL) nfail=$((nfail + 1)) ;;
        SKIP) nskip=$((nskip + 1)) ;;
    esac
    printf '%s\t%s\t%s\t%ss\t%s\n' "$t" "$names" "$status" "$dt" "$reason" >>"$SUMMARY"
    printf '  %-6s %-4s %4ss  %s\n' "$t" "$status" "$dt" "$reason" >&2
done

echo
echo "librdkafka test suite vs $BOOTSTRAP  (broker version assumed: $RDK_BROKER_VERSION, $t_sum s of tests)"
printf '%-6s %-45s %-5s %6s  %s\n' TEST NAME RESULT TIME REASON
printf '%s\n' "-------------------------------------------------------------------------------------------"
while IFS=$'\t' read -r t name st dt reason; do
    printf '%-6s %-45s %-5s %6s  %s\n' "$t" "$name" "$st" "$dt" "$reason"
done <"$SUMMARY"
echo "(logs: $RESULTS_DIR)"
echo "$npass passed, $nfail failed, $nskip skipped"
[ "$nfail" = 0 ]
