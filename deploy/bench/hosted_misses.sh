#!/usr/bin/env bash
# Cache misses per Entity Configuration and cached fetch request, one entity against a random
# one of many (issue 38, acceptance 4), under callgrind's cache simulation: exact and
# repeatable where req/s on this shared 2-core machine moves by ±10 % from one run to the
# next. What separates the two is not instructions but misses: each hosted entity's answer
# lives in its own objects, and a random entity per request finds them out of cache.
#
# For each BINARY: a copy of one database with ENTITIES hosted entities (created through the
# Admin API once, by the first binary, each with a fetch endpoint and SUBORDINATES
# subordinates; the default entity has ENTITIES × SUBORDINATES), served under callgrind;
# BENCH_CG_SECONDS of requests to the default entity's Entity Configuration ("ec-one"), to a
# random hosted entity's ("ec-many"), to a cached statement about a random subordinate of the
# default entity ("fetch-one") and of a random hosted entity ("fetch-many"), each after a
# warm-up that signs every answer the case asks for. Printed per binary and case:
# instructions, first-level data misses and last-level data misses per request.
#
# The simulated caches: D1 48 KiB, last level 1 MiB (the size of this machine's L2). The
# kernel is not simulated, so real misses are more (its network stack shares the caches).
#
# With BENCH_CG_KEEP=DIR, each case's callgrind dump is kept as DIR/BINARY-CASE.out, for
# `callgrind_annotate --inclusive=no --show=Ir,DLmr,DLmw --sort=DLmr,DLmw` (misses by function).
#
# Usage: deploy/bench/hosted_misses.sh BINARY [BINARY ...]
# Environment: ENTITIES (1000), SUBORDINATES (10), BENCH_CG_SECONDS (15), BENCH_CG_KEEP.
# Needs valgrind, wrk, curl, python3, sqlite3.
set -euo pipefail
[ "$#" -ge 1 ] || { echo "usage: $0 BINARY [BINARY ...]" >&2; exit 2; }
ENTITIES=${ENTITIES:-1000}
SUBS=${SUBORDINATES:-10}
TOTAL=$((ENTITIES * SUBS))
SECS=${BENCH_CG_SECONDS:-15}
for tool in valgrind callgrind_control wrk curl python3 sqlite3; do
    command -v "$tool" >/dev/null || { echo "hosted_misses: $tool not found" >&2; exit 1; }
done
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
PORT=17791
PID=""
# The server under callgrind is this script's own (lib.sh's trap knows only its own servers).
cleanup() { [ -z "$PID" ] || kill "$PID" 2>/dev/null || true; bench_cleanup; }
trap cleanup EXIT

mkdir -p "$WORK/db"
cat >"$WORK/config.yaml" <<EOC
entity_id: http://127.0.0.1:$PORT
server: {ip_listen: 127.0.0.1, port: $PORT, rate_limits: {enabled: false}}
storage: {driver: sqlite, data_dir: $WORK/data}
logging: {internal: {level: warn}}
EOC
wait_up() {
    for _ in $(seq 1 3000); do
        curl -fs -o /dev/null "http://127.0.0.1:$PORT/readyz" && return 0
        kill -0 "$PID" 2>/dev/null || { echo "hosted_misses: the server exited" >&2; exit 1; }
        sleep 0.2
    done
    echo "hosted_misses: never ready" >&2; exit 1
}

# The database, once: the entities as an operator makes them.
"$1" serve --config "$WORK/config.yaml" >"$WORK/setup.log" 2>&1 &
PID=$!
wait_up
post() {
    curl -fsS -o /dev/null -X POST "http://127.0.0.1:$PORT/api/v1/admin$1" \
        -H 'content-type: application/json' -d "$2"
}
post /federation-endpoints '{"type":"fetch","path":"/fetch"}'
for e in $(seq 1 "$ENTITIES"); do
    post /entities "{\"entity_id\":\"http://127.0.0.1:$PORT/e$(printf %04d "$e")\"}"
    post "/entities/$((e + 1))/federation-endpoints" '{"type":"fetch","path":"/fetch"}'
done
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
subordinates_sql "$WORK/one.sql" "$TOTAL"
hosted_subordinates_sql "$WORK/many.sql" "$ENTITIES" "$SUBS"
sqlite3 "$WORK/data/pharos.db" <"$WORK/one.sql"
sqlite3 "$WORK/data/pharos.db" <"$WORK/many.sql"
cp -r "$WORK/data/." "$WORK/db/"

ec_scripts "$WORK/ec-one.lua" "$WORK/ec-many.lua" "$ENTITIES"
# The fetch pair does the same client work per request too (two random numbers, a path).
cat >"$WORK/fetch-one.lua" <<LUA
$(wrk_seeded)
request = function()
    local e, s = math.random($ENTITIES), math.random($SUBS)
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fs%07d.example.org",
        (e - 1) * $SUBS + s))
end
LUA
cat >"$WORK/fetch-many.lua" <<LUA
$(wrk_seeded)
request = function()
    local e, s = math.random($ENTITIES), math.random($SUBS)
    return wrk.format("GET", string.format("/e%04d/fetch?sub=https%%3A%%2F%%2Fs%07d.example.org",
        e, s))
end
LUA
# sign_all CASE: asks once for every answer CASE asks for (signing it), one request at a time.
sign_all() {
    python3 - "$PORT" "$1" "$ENTITIES" "$SUBS" <<'PY'
import http.client, sys
port, case, entities, subs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
def paths():
    for e in range(1, entities + 1):
        if case == "ec-many":
            yield f"/e{e:04d}/.well-known/openid-federation"
        for s in range(1, subs + 1):
            if case == "fetch-one":
                yield f"/fetch?sub=https%3A%2F%2Fs{(e - 1) * subs + s:07d}.example.org"
            elif case == "fetch-many":
                yield f"/e{e:04d}/fetch?sub=https%3A%2F%2Fs{s:07d}.example.org"
    if case == "ec-one":
        yield "/.well-known/openid-federation"
for p in paths():
    c.request("GET", p)
    r = c.getresponse()
    r.read()
    assert r.status == 200, (p, r.status)
PY
}

printf '%-10s %-10s %12s %10s %10s\n' binary case instr/req D1miss/req LLmiss/req
for bin in "$@"; do
    rm -rf "$WORK/data"; cp -r "$WORK/db" "$WORK/data"
    out=$WORK/cg
    rm -f "$out".*
    valgrind --tool=callgrind --instr-atstart=no --cache-sim=yes --D1=49152,12,64 \
        --I1=32768,8,64 --LL=1048576,16,64 --callgrind-out-file="$out.%p" \
        "$bin" serve --config "$WORK/config.yaml" >"$WORK/cg.log" 2>&1 &
    PID=$!
    wait_up
    for case in ec-one ec-many fetch-one fetch-many; do
        sign_all "$case"
        wrk -t1 -c4 -d5s -s "$WORK/$case.lua" "http://127.0.0.1:$PORT" >/dev/null
        callgrind_control -z "$PID" >/dev/null 2>&1
        callgrind_control -i on "$PID" >/dev/null 2>&1
        n=$(wrk -t1 -c4 -d"${SECS}s" -s "$WORK/$case.lua" "http://127.0.0.1:$PORT" | awk '/requests in/{print $1}')
        callgrind_control -i off "$PID" >/dev/null 2>&1
        callgrind_control -d "$PID" >/dev/null 2>&1
        sleep 1
        python3 - "$out" "$n" "$(basename "$bin")" "$case" <<'PY'
import glob, os, shutil, sys
out, n, label, case = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# The newest dump is this case's (counters were zeroed before it).
files = sorted((p for p in glob.glob(out + ".*") if not p.endswith(".log")), key=os.path.getmtime)
events, totals = None, None
for line in open(files[-1]):
    if line.startswith("events:"):
        events = line.split()[1:]
    elif line.startswith("totals:") or line.startswith("summary:"):
        v = [int(x) for x in line.split()[1:]]
        if len(v) > 1:
            totals = v
d = dict(zip(events, totals))
keep = os.environ.get("BENCH_CG_KEEP")
if keep:
    os.makedirs(keep, exist_ok=True)
    shutil.copy(files[-1], os.path.join(keep, f"{label}-{case}.out"))
print(f"{label:<10} {case:<10} {d['Ir'] / n:12.0f} {(d['D1mr'] + d['D1mw']) / n:10.1f} "
      f"{(d['DLmr'] + d['DLmw']) / n:10.1f}")
PY
    done
    kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; PID=""
done
