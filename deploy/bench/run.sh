#!/usr/bin/env bash
# The whole Pharos benchmark in one command: installs the tools it needs from Debian (when
# missing), builds the release binary and the reference responder, runs every scenario under
# deploy/bench/scenarios/ in order, prints the table and appends it to BENCHMARKS.md with the
# date, machine and command.
#
# Usage: deploy/bench/run.sh [--no-append] [--scale N]
#   --scale N: instead of the scenarios, how Pharos grows with its registry (deploy/bench/scale.sh):
#   every figure at 10,000, 100,000 … N subordinates on SQLite and PostgreSQL, one table per
#   backend, and deploy/bench/scale.svg. `--scale 1000000` takes about 25 minutes on 2 cores.
# Environment: BENCH_DURATION (10s), BENCH_CONNECTIONS (32), BENCH_THREADS (2), BENCH_REPEATS (3),
# BENCH_SUBORDINATES (100000), BENCH_SCENARIOS (glob of scenario files, default all),
# BENCH_KEEP_WORK (keep the work directory), CARGO_TARGET_DIR, BENCH_BIN (path of a prebuilt
# pharos binary to measure: nothing of this checkout is built then but the reference responder).
# Needs cargo (rustup) on PATH; everything else comes from apt.
set -euo pipefail

APPEND=1
SCALE=""
while [ $# -gt 0 ]; do
    case $1 in
        --no-append) APPEND=0 ;;
        --scale) SCALE=${2:-}; shift ;;
        *) echo "usage: deploy/bench/run.sh [--no-append] [--scale N]" >&2; exit 64 ;;
    esac
    shift
done
case $SCALE in
    "" | *[!0-9]*) [ -z "$SCALE" ] || { echo "--scale needs a number of subordinates" >&2; exit 64; } ;;
esac
if [ -n "$SCALE" ]; then
    # Many figures per size: shorter throughput rounds than the scenarios' default.
    : "${BENCH_DURATION:=5s}" "${BENCH_REPEATS:=2}"
    export BENCH_DURATION BENCH_REPEATS
fi

need=()
for pair in wrk:wrk nginx:nginx sqlite3:sqlite3 curl:curl python3:python3 pkg-config:pkg-config; do
    command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
[ -f /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
# The entity collection scenario signs its generated federation with Python's cryptography.
python3 -c 'import cryptography' 2>/dev/null || need+=(python3-cryptography)
if [ ${#need[@]} -gt 0 ]; then
    echo "== installing from Debian: ${need[*]}" >&2
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO=sudo
    # apt's progress goes to stderr: stdout carries only the report.
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >&2
fi
command -v cargo >/dev/null || { echo "cargo not found: install Rust with rustup first" >&2; exit 1; }

# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^BENCH_' || true; } | sort | tr '\n' ' ')deploy/bench/run.sh${SCALE:+ --scale $SCALE}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
build_all

if [ -n "$SCALE" ]; then
    # shellcheck source=deploy/bench/scale.sh
    source "$BENCH_DIR/scale.sh" "$SCALE"
else
    for scenario in "$BENCH_DIR"/scenarios/${BENCH_SCENARIOS:-*}.sh; do
        # shellcheck source=/dev/null
        source "$scenario"
    done
fi

MACHINE="$(nproc) vCPU ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), \
$(awk '/MemTotal/ {printf "%.0f GB RAM", $2 / 1048576}' /proc/meminfo), Linux $(uname -r)"
REPORT=$WORK/report.md
{
    echo "### Run of $(date -u +%Y-%m-%d\ %H:%M) UTC"
    echo
    echo "Machine: $MACHINE; load average before the run: $LOAD_BEFORE."
    echo "Command: \`$CMD\` (wrk -t$THREADS -c$CONNS -d$DURATION, $REPEATS interleaved rounds;"
    echo "medians, min–max in parentheses)."
    echo
    print_table
} >"$REPORT"
echo
cat "$REPORT"
if [ "$APPEND" = 1 ]; then
    { echo; cat "$REPORT"; } >>"$ROOT/BENCHMARKS.md"
    echo "(appended to BENCHMARKS.md)" >&2
fi
