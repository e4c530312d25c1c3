#!/usr/bin/env bash
# A/B of two release binaries on the hosted Entity Configuration (issue 38, acceptance 4), in
# fresh instance pairs. Two instances of one binary on copies of one database differ by up to
# 8 % for as long as they run (BENCHMARKS.md, "twelfth session"), so `hosted.sh` with
# BENCH_OLD_BIN, whose instances live through the whole run, cannot resolve a change of a few
# percent. Here each trial starts the two binaries afresh on new copies of the "many" database
# (which starts first alternates), and the single entity on a copy of "one" (served by OLD),
# signs every entity's Entity Configuration once, then measures ROUNDS interleaved rounds (the
# order alternating), and stops them all.
#
# Printed per trial: the single entity's median req/s, the medians of OLD many / one and NEW
# many / one in the same rounds, the median of NEW / OLD, and each "many" instance's RSS once
# every answer was signed; then the median of each over all trials.
#
# Usage: BENCH_HOSTED_WORK=DIR deploy/bench/hosted_ab.sh OLD_BINARY NEW_BINARY
#   DIR: a work directory `hosted.sh` kept (BENCH_KEEP_WORK=1): its one/ and many/ databases.
# Environment: BENCH_TRIALS (6), BENCH_REPEATS (4 rounds a trial), BENCH_DURATION (4s),
# BENCH_CONNECTIONS, BENCH_THREADS, ENTITIES (1000, as the kept databases were made).
set -euo pipefail
[ "$#" = 2 ] || { echo "usage: BENCH_HOSTED_WORK=DIR $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
KEPT=${BENCH_HOSTED_WORK:?BENCH_HOSTED_WORK: a work directory hosted.sh kept}
OLD=$1 NEW=$2
TRIALS=${BENCH_TRIALS:-6}
ENTITIES=${ENTITIES:-1000}
export BENCH_REPEATS=${BENCH_REPEATS:-4} BENCH_DURATION=${BENCH_DURATION:-4s}
for tool in curl python3 wrk; do
    command -v "$tool" >/dev/null || { echo "hosted_ab: $tool not found" >&2; exit 1; }
done
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
for b in "$OLD" "$NEW"; do [ -x "$b" ] || die "no binary at $b"; done
for d in one many; do [ -f "$KEPT/$d/config.yaml" ] || die "no $d/config.yaml in $KEPT"; done
PORT_A=17831 PORT_B=17832 PORT_ONE=17833

# copy NAME SOURCE PORT: a fresh copy of SOURCE's database and configuration, on PORT.
copy() { kept_copy "$KEPT" "$@"; }
# start NAME BINARY PORT
start() { BIN=$2 pharos_start "$1" "$3"; }

kept_host_lua "$KEPT" >"$WORK/host.lua"
ec_scripts "$WORK/one_ec.lua" "$WORK/many_body.lua" "$ENTITIES"
cat "$WORK/host.lua" "$WORK/many_body.lua" >"$WORK/many_ec.lua"
rate() { rps_of <<<"$(wrk_run "http://127.0.0.1:$1" "$2")"; }

declare -a ALL_A=() ALL_B=() ALL_BA=() ALL_RSS_A=() ALL_RSS_B=()
for t in $(seq 1 "$TRIALS"); do
    copy a many $PORT_A
    copy b many $PORT_B
    copy one one $PORT_ONE
    if [ $((t % 2)) = 1 ]; then start a "$OLD" $PORT_A; start b "$NEW" $PORT_B
    else start b "$NEW" $PORT_B; start a "$OLD" $PORT_A; fi
    start one "$OLD" $PORT_ONE
    # Every entity's answer signed once (and the single entity's), before anything counts.
    DURATION=2s rate $PORT_A "$WORK/many_ec.lua" >/dev/null
    DURATION=2s rate $PORT_B "$WORK/many_ec.lua" >/dev/null
    DURATION=2s rate $PORT_ONE "$WORK/one_ec.lua" >/dev/null
    ALL_RSS_A+=("$(rss_mb a)"); ALL_RSS_B+=("$(rss_mb b)")
    as=() bs=() os=()
    for r in $(seq 1 "$REPEATS"); do
        if [ $((r % 2)) = 1 ]; then
            a=$(rate $PORT_A "$WORK/many_ec.lua"); o=$(rate $PORT_ONE "$WORK/one_ec.lua")
            b=$(rate $PORT_B "$WORK/many_ec.lua")
        else
            b=$(rate $PORT_B "$WORK/many_ec.lua"); o=$(rate $PORT_ONE "$WORK/one_ec.lua")
            a=$(rate $PORT_A "$WORK/many_ec.lua")
        fi
        as+=("$a"); bs+=("$b"); os+=("$o")
    done
    read -r one ra rb rba <<<"$(py "
import statistics as s
a, b, o = ([float(x) for x in v.split()] for v in ('${as[*]}', '${bs[*]}', '${os[*]}'))
m = lambda n, d: s.median(x / y for x, y in zip(n, d))
print(f'{s.median(o):.0f} {m(a, o):.3f} {m(b, o):.3f} {m(b, a):.3f}')
")"
    echo "trial $t: one $one req/s; old many/one $ra, new many/one $rb, new/old $rba;" \
        "RSS once every answer was signed: old ${ALL_RSS_A[-1]} MB, new ${ALL_RSS_B[-1]} MB"
    ALL_A+=("$ra"); ALL_B+=("$rb"); ALL_BA+=("$rba")
    for n in a b one; do pharos_stop "$n"; done
done
py "
import statistics as s
f = lambda v: [float(x) for x in v.split()]
a, b, ba = f('${ALL_A[*]}'), f('${ALL_B[*]}'), f('${ALL_BA[*]}')
print(f'$TRIALS trials of $REPEATS rounds, {\"$BENCH_DURATION\"} each: old many/one {s.median(a):.3f} ({min(a):.3f}–{max(a):.3f}), '
      f'new many/one {s.median(b):.3f} ({min(b):.3f}–{max(b):.3f}), new/old {s.median(ba):.3f} ({min(ba):.3f}–{max(ba):.3f}); '
      f'RSS once every answer was signed, median: old {s.median(f(\"${ALL_RSS_A[*]}\")):.0f} MB, new {s.median(f(\"${ALL_RSS_B[*]}\")):.0f} MB')
"
