#!/usr/bin/env bash
# Acceptance 4's two ratios (issue 38) with an interval, from many short adjacent pairs of
# rounds. On a shared 2-core guest one run of `hosted.sh` moves its ratios by more than the
# 0.05 the clause allows (BENCHMARKS.md, "fourteenth session"), and a median alone cannot say
# whether 0.95 is met, missed or undecided there. This script says which, on this host at
# this time: for each path, BENCH_PAIRS pairs of adjacent rounds, one on the single entity and
# one on the hosted entities (which goes first alternating), the median of the per-pair ratios
# many / one, and its bootstrap 95 % interval. An interval below 0.95 is a miss, one above it
# a pass, one containing it no answer.
#
# The instances are fresh copies of the databases a `hosted.sh` run kept (BENCH_KEEP_WORK=1),
# served by one binary, with every statement and answer signed once before anything counts;
# the request scripts are that run's own.
#
# Each pair carries a reference pair beside it: the bare responder (deploy/bench/responder)
# serving the very answers Pharos gave, from one handler that differs only in which bytes it
# sends. For the Entity Configuration, the single entity's at the root and each hosted entity's
# at its path: its many / one is what serving a thousand different answers instead of one
# reused answer costs this stack on this host, with no hosting in it. For fetch, every
# statement either instance gave, at the path and query it gave it, from one hash table: its
# many / one is what the longer paths and the other bytes cost. Pharos's ratio over the
# reference's is what Pharos's hosting costs beyond that.
#
# With a second binary NEW, the pairs are BINARY's hosted entities against NEW's (each on its
# own copy of the "many" database), and the ratio is NEW / BINARY: an A/B of a change to the
# hosted request path, with an interval (above 1: faster; across it: no difference shown).
# Run it in both orders: the instance started second has an advantage of its own (about 1.5 %
# on the host of the fourteenth session), which only the two orders together take out.
#
# Usage: BENCH_HOSTED_WORK=DIR deploy/bench/hosted_pairs.sh BINARY [NEW]
# Environment: BENCH_PAIRS (40 a path), BENCH_DURATION (1s a round), BENCH_CONNECTIONS,
# BENCH_THREADS, ENTITIES and SUBORDINATES (1000 and 100, as the kept databases were made).
set -euo pipefail
[ "$#" = 1 ] || [ "$#" = 2 ] || { echo "usage: BENCH_HOSTED_WORK=DIR $0 BINARY [NEW]" >&2; exit 2; }
KEPT=${BENCH_HOSTED_WORK:?BENCH_HOSTED_WORK: a work directory hosted.sh kept}
PAIRS=${BENCH_PAIRS:-40}
ENTITIES=${ENTITIES:-1000}
SUBS=${SUBORDINATES:-100}
TOTAL=$((ENTITIES * SUBS))
export BENCH_DURATION=${BENCH_DURATION:-1s}
for tool in curl python3 wrk; do
    command -v "$tool" >/dev/null || { echo "hosted_pairs: $tool not found" >&2; exit 1; }
done
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
OLD=$1 NEW=${2:-}
for b in "$OLD" ${NEW:+"$NEW"}; do [ -x "$b" ] || die "no binary at $b"; done
for f in one/config.yaml many/config.yaml one_all.lua many_all.lua one_fetch.lua \
    many_fetch.lua one_ec.lua many_ec.lua; do
    [ -f "$KEPT/$f" ] || die "no $f in $KEPT"
done
# The two sides of each pair: NAME BINARY DATABASE PORT SCRIPTS (one_* or many_*).
if [ -z "$NEW" ]; then
    SIDES=("one $OLD one 17841 one" "many $OLD many 17842 many")
    LABEL="many / one"
else
    SIDES=("old $OLD many 17841 many" "new $NEW many 17842 many")
    LABEL="new / old"
fi
for s in all fetch ec; do
    cp "$KEPT/one_$s.lua" "$WORK/one_$s.lua"
    { kept_host_lua "$KEPT"; cat "$KEPT/many_$s.lua"; } >"$WORK/many_$s.lua"
done
SIGN=$((TOTAL / 3000 + 5))s
for side in "${SIDES[@]}"; do
    read -r n bin db port scripts <<<"$side"
    kept_copy "$KEPT" "$n" "$db" "$port"
    BIN=$bin pharos_start "$n" "$port"
    log "$n: signing every statement and answer once"
    THREADS=1 CONNS=8 DURATION=$SIGN wrk_run "http://127.0.0.1:$port" "$WORK/${scripts}_all.lua" >/dev/null
    DURATION=3s wrk_run "http://127.0.0.1:$port" "$WORK/${scripts}_ec.lua" >/dev/null
done
read -r _ _ _ PORT_A A _ <<<"${SIDES[0]}"
read -r _ _ _ PORT_B B _ <<<"${SIDES[1]}"

# The references: the answers Pharos gives, the Entity Configurations numbered as the
# responder's `*` form reads them, the statements in its `?` form's table.
REF_PORT=17843
REF_FETCH_PORT=17844
# ref_start PORT SPEC: a responder serving SPEC on PORT, stopped with the script.
ref_start() {
    port_free "$1"
    "$RESPONDER_BIN" "127.0.0.1:$1" "$2" >"$WORK/responder-$1.log" 2>&1 &
    BENCH_PIDS+=("$!")
}
# ref_wait PORT ONE_PATH MANY_PATH: waits until the reference on PORT serves at ONE_PATH the
# bytes the single entity's instance does, and at MANY_PATH those of the hosted entities'
# instance; it means nothing otherwise.
ref_wait() {
    local i host
    host=$(kept_host "$KEPT")
    for i in $(seq 1 600); do
        curl -fs "http://127.0.0.1:$1$2" 2>/dev/null | cmp -s - <(curl -fs "http://127.0.0.1:$PORT_A$2") \
            && curl -fs "http://127.0.0.1:$1$3" 2>/dev/null \
                | cmp -s - <(curl -fs -H "Host: $host" "http://127.0.0.1:$PORT_B$3") \
            && return 0
        sleep 0.1
    done
    cat "$WORK/responder-$1.log" >&2
    die "the reference on port $1 does not serve Pharos's answers"
}
if [ -z "$NEW" ]; then
    log "reference: the bare responder with the answers Pharos gave ($((ENTITIES + 1)) Entity Configurations, $((2 * TOTAL)) statements)"
    (cd "$BENCH_DIR/responder" && CARGO_TARGET_DIR=$RESPONDER_TARGET cargo build --release -q)
    mkdir -p "$WORK/answers"
    # The paths are those of hosted.sh's request scripts: an entity of 4 digits, a subject of 7.
    py "
import http.client, sys
conns = {}
def get(port, host, path):
    c = conns.setdefault(port, http.client.HTTPConnection('127.0.0.1', port))
    c.request('GET', path, headers={'Host': host} if host else {})
    r = c.getresponse()
    body = r.read()
    if r.status != 200: sys.exit(f'{path}: {r.status}')
    return body
host = '$(kept_host "$KEPT")'
ec = '/.well-known/openid-federation'
with open('$WORK/answers/0', 'wb') as out:
    out.write(get($PORT_A, None, ec))
for e in range(1, $ENTITIES + 1):
    with open(f'$WORK/answers/{e}', 'wb') as out:
        out.write(get($PORT_B, host, f'/e{e:04d}' + ec))
sub = 'sub=https%3A%2F%2Fs{:07d}.example.org'
statements = [($PORT_A, None, '/fetch?' + sub.format(n)) for n in range(1, $TOTAL + 1)]
statements += [($PORT_B, host, f'/e{e:04d}/fetch?' + sub.format(n))
               for e in range(1, $ENTITIES + 1) for n in range(1, $SUBS + 1)]
with open('$WORK/fetch_answers', 'wb') as out:
    for port, h, path in statements:
        body = get(port, h, path)
        out.write(f'{path}\n{len(body)}\n'.encode() + body)
"
    ref_start "$REF_PORT" "*=$WORK/answers=application/entity-statement+jwt"
    ref_start "$REF_FETCH_PORT" "?=$WORK/fetch_answers=application/entity-statement+jwt"
    many=/e$(printf %04d "$ENTITIES")
    ref_wait "$REF_PORT" /.well-known/openid-federation "$many/.well-known/openid-federation"
    ref_wait "$REF_FETCH_PORT" "/fetch?sub=https%3A%2F%2Fs0000001.example.org" \
        "$many/fetch?sub=https%3A%2F%2Fs$(printf %07d "$SUBS").example.org"
    DURATION=3s wrk_run "http://127.0.0.1:$REF_PORT" "$WORK/many_ec.lua" >/dev/null
    DURATION=3s wrk_run "http://127.0.0.1:$REF_FETCH_PORT" "$WORK/many_fetch.lua" >/dev/null
fi

rate() { rps_of <<<"$(wrk_run "http://127.0.0.1:$1" "$2")"; }
for path in fetch ec; do
    reference=
    if [ -z "$NEW" ]; then
        reference=$REF_PORT
        [ "$path" = ec ] || reference=$REF_FETCH_PORT
    fi
    log "$path: $PAIRS pairs of $BENCH_DURATION rounds${reference:+, each with a reference pair}"
    a_rates=() b_rates=() ra_rates=() rb_rates=()
    for p in $(seq 1 "$PAIRS"); do
        if [ $((p % 2)) = 1 ]; then
            a=$(rate "$PORT_A" "$WORK/${A}_$path.lua"); b=$(rate "$PORT_B" "$WORK/${B}_$path.lua")
            if [ -n "$reference" ]; then
                ra=$(rate "$reference" "$WORK/${A}_$path.lua"); rb=$(rate "$reference" "$WORK/${B}_$path.lua")
            fi
        else
            if [ -n "$reference" ]; then
                rb=$(rate "$reference" "$WORK/${B}_$path.lua"); ra=$(rate "$reference" "$WORK/${A}_$path.lua")
            fi
            b=$(rate "$PORT_B" "$WORK/${B}_$path.lua"); a=$(rate "$PORT_A" "$WORK/${A}_$path.lua")
        fi
        a_rates+=("$a"); b_rates+=("$b")
        [ -z "$reference" ] || { ra_rates+=("$ra"); rb_rates+=("$rb"); }
    done
    py "
import random, statistics as s
def floats(xs): return [float(x) for x in xs.split()]
a, b = floats('${a_rates[*]}'), floats('${b_rates[*]}')
ra, rb = floats('${ra_rates[*]}'), floats('${rb_rates[*]}')
def interval(r):
    rng = random.Random(38)
    boot = sorted(s.median(rng.choices(r, k=len(r))) for _ in range(4000))
    return boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]
r = [y / x for x, y in zip(a, b)]
lo, hi = interval(r)
at, words = (0.95, ('met', 'missed', 'undecided')) if '$NEW' == '' else (1.0, ('faster', 'slower', 'no difference shown'))
verdict = words[0] if lo >= at else words[1] if hi < at else words[2]
name = {'fetch': 'fetch', 'ec': 'Entity Configuration'}['$path']
print(f'{name}: $LABEL {s.median(r):.3f}, 95 % interval {lo:.3f}–{hi:.3f} ({verdict} at {at}); '
      f'pairs {min(r):.2f}–{max(r):.2f}; medians {s.median(a):.0f} and {s.median(b):.0f} req/s')
if ra:
    q = [y / x for x, y in zip(ra, rb)]
    lo, hi = interval(q)
    print(f'{name}, reference (the responder, the same answers): many / one {s.median(q):.3f}, '
          f'95 % interval {lo:.3f}–{hi:.3f}; pairs {min(q):.2f}–{max(q):.2f}; '
          f'medians {s.median(ra):.0f} and {s.median(rb):.0f} req/s')
    d = [x / y for x, y in zip(r, q)]
    lo, hi = interval(d)
    print(f'{name}, Pharos over the reference: {s.median(d):.3f}, 95 % interval {lo:.3f}–{hi:.3f}; '
          f'pairs {min(d):.2f}–{max(d):.2f}')
"
done
