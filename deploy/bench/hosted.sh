#!/usr/bin/env bash
# Many hosted entities against one big entity (issue 38, acceptance 4): the same release
# Pharos twice, on SQLite,
#   - "one":  the default entity with ENTITIES × SUBORDINATES subordinates (100,000);
#   - "many": ENTITIES hosted entities (1,000, created through the Admin API) with
#             SUBORDINATES subordinates each (100).
# Reported: ready time after a restart (3 starts each), RSS after start, Entity Configuration
# and fetch throughput (random entity, random subject; every statement signed once before, so
# both measure cached answers) in interleaved rounds, and how long an Admin API write takes to
# be served (POST a subordinate, then poll its fetch until 200; 100 writes, p50 and p99). The
# figures that matter are ratios many/one measured in the same run.
#
# With BENCH_OLD_BIN (another release binary) a third instance of that binary serves a copy of
# the "many" database beside the others, measured in the same interleaved rounds: the A/B of a
# change to the hosted request path, in the same run as the ratio it is meant to move.
#
# With BENCH_SPREAD (entity counts, e.g. "1 10 100 300"), the Entity Configuration is measured
# again for each count N, its requests spread over the first N hosted entities only.
#
# Usage: deploy/bench/hosted.sh [--no-append]   (appends to BENCHMARKS.md, "Hosted entities")
# Environment: ENTITIES (1000), SUBORDINATES (100), BENCH_DURATION, BENCH_CONNECTIONS,
# BENCH_THREADS, BENCH_REPEATS, BENCH_BIN, BENCH_OLD_BIN, BENCH_SPREAD, CARGO_TARGET_DIR.
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
ENTITIES=${ENTITIES:-1000}
SUBS=${SUBORDINATES:-100}
for tool in curl sqlite3 python3 wrk; do
    command -v "$tool" >/dev/null || { echo "hosted: $tool not found" >&2; exit 1; }
done
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^(ENTITIES|SUBORDINATES|BENCH_[A-Z_]+)=' || true; } | sort | tr '\n' ' ')deploy/bench/hosted.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
[ -n "${BENCH_BIN:-}" ] || (cd "$ROOT" && cargo build --release -q -p pharos)
[ -x "$BIN" ] || die "no binary at $BIN"

ONE=17810
MANY=17811
OLD_PORT=17812
OLD_BIN=${BENCH_OLD_BIN:-}
[ -z "$OLD_BIN" ] || [ -x "$OLD_BIN" ] || die "no binary at $OLD_BIN"
TOTAL=$((ENTITIES * SUBS))

# ---- one entity, TOTAL subordinates -------------------------------------------------------
pharos_start one $ONE
admin $ONE POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
pharos_stop one
log "one: bulk-loading $TOTAL subordinates"
subordinates_sql "$WORK/one.sql" "$TOTAL"
sqlite3 "$WORK/one/data/pharos.db" <"$WORK/one.sql"

# ---- many entities, SUBS subordinates each ------------------------------------------------
pharos_start many $MANY
log "many: creating $ENTITIES hosted entities through the Admin API"
T0=$(date +%s%N)
for e in $(seq 1 "$ENTITIES"); do
    id=$(printf 'http://127.0.0.1:%d/e%04d' "$MANY" "$e")
    admin $MANY POST /entities "{\"entity_id\":\"$id\"}"
done
CREATE_S=$(py "print(round(($(date +%s%N) - $T0) / 1e9, 1))")
RSS_CREATED=$(rss_mb many)
for e in $(seq 1 "$ENTITIES"); do
    admin $MANY POST "/entities/$((e + 1))/federation-endpoints" '{"type":"fetch","path":"/fetch"}'
done
pharos_stop many
log "many: bulk-loading $SUBS subordinates for each of the $ENTITIES entities"
hosted_subordinates_sql "$WORK/many.sql" "$ENTITIES" "$SUBS"
sqlite3 "$WORK/many/data/pharos.db" <"$WORK/many.sql"
if [ -n "$OLD_BIN" ]; then
    # The same entities, served by the old binary on another port: requests name the "many"
    # instance's host, as its entities' identifiers do.
    mkdir -p "$WORK/old/data"
    cp "$WORK/many/data/"pharos.db* "$WORK/old/data/"
    sed -e "s/port: $MANY/port: $OLD_PORT/" -e "s#$WORK/many/data#$WORK/old/data#" \
        "$WORK/many/config.yaml" >"$WORK/old/config.yaml"
fi

# ---- start-up, memory ---------------------------------------------------------------------
for name in one many; do
    : >"$WORK/ready-$name.txt"
    port=$ONE
    [ "$name" = many ] && port=$MANY
    for i in 1 2 3; do
        pharos_start "$name" "$port"
        echo "$READY_S" >>"$WORK/ready-$name.txt"
        [ "$i" = 3 ] || pharos_stop "$name"
    done
done
RSS_ONE=$(rss_mb one)
RSS_MANY=$(rss_mb many)
if [ -n "$OLD_BIN" ]; then
    NEW_BIN=$BIN
    BIN=$OLD_BIN
    pharos_start old $OLD_PORT
    BIN=$NEW_BIN
fi
curl -fsS -o /dev/null "http://127.0.0.1:$MANY/e0001/.well-known/openid-federation" || die "e0001 not served"
curl -fsS -o /dev/null "http://127.0.0.1:$MANY/e$(printf %04d "$ENTITIES")/fetch?sub=https%3A%2F%2Fs0000001.example.org" \
    || die "the last entity's fetch is not served"
curl -fsS -o /dev/null "http://127.0.0.1:$ONE/fetch?sub=https%3A%2F%2Fs$(printf %07d "$TOTAL").example.org" \
    || die "one: the last subordinate is not served"

# ---- throughput: every statement signed once, then random requests -------------------------
cat >"$WORK/one_all.lua" <<LUA
local i = 0
request = function()
    i = i % $TOTAL + 1
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fs%07d.example.org", i))
end
LUA
cat >"$WORK/many_all.lua" <<LUA
local i = 0
request = function()
    i = i % $TOTAL
    local e, s = math.floor(i / $SUBS) + 1, i % $SUBS + 1
    i = i + 1
    return wrk.format("GET", string.format("/e%04d/fetch?sub=https%%3A%%2F%%2Fs%07d.example.org", e, s))
end
LUA
log "signing every statement once"
SIGN_S=$(( TOTAL / 3000 + 5 ))s
THREADS=1 CONNS=8 DURATION=$SIGN_S wrk_run "http://127.0.0.1:$ONE" "$WORK/one_all.lua" >/dev/null
THREADS=1 CONNS=8 DURATION=$SIGN_S wrk_run "http://127.0.0.1:$MANY" "$WORK/many_all.lua" >/dev/null
# old_lua KIND: many's script for the old instance (the host of the entities' identifiers).
old_lua() {
    { echo "wrk.headers[\"Host\"] = \"127.0.0.1:$MANY\""; cat "$WORK/many_$1.lua"; } >"$WORK/old_$1.lua"
}
if [ -n "$OLD_BIN" ]; then
    old_lua all
    THREADS=1 CONNS=8 DURATION=$SIGN_S wrk_run "http://127.0.0.1:$OLD_PORT" "$WORK/old_all.lua" >/dev/null
fi
RSS_ONE_SIGNED=$(rss_mb one)
RSS_MANY_SIGNED=$(rss_mb many)

# Each pair of scripts does the same work per request in the load generator (see ec_scripts).
ec_scripts "$WORK/one_ec.lua" "$WORK/many_ec.lua" "$ENTITIES"
cat >"$WORK/one_fetch.lua" <<LUA
$(wrk_seeded)
request = function()
    -- The second number is many_fetch.lua's entity, drawn here too and not used.
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fs%07d.example.org",
        math.random($TOTAL), math.random($ENTITIES)))
end
LUA
cat >"$WORK/many_fetch.lua" <<LUA
$(wrk_seeded)
request = function()
    return wrk.format("GET", string.format("/e%04d/fetch?sub=https%%3A%%2F%%2Fs%07d.example.org",
        math.random($ENTITIES), math.random($SUBS)))
end
LUA
[ -z "$OLD_BIN" ] || { old_lua ec; old_lua fetch; }
# served NAME PORT LUA: one wrk run against instance NAME; prints its req/s and the instance's
# own CPU time (user + system) per request in µs. The load generator shares the cores, so req/s
# counts its work too; the CPU time per request is the server's alone.
served() {
    local pid=${PHAROS_PIDS[$1]} c0 c1 out
    c0=$(cpu_ticks "$pid")
    out=$(wrk_run "http://127.0.0.1:$2" "$3")
    c1=$(cpu_ticks "$pid")
    py "print($(rps_of <<<"$out"), ($c1 - $c0) * 1e6 / $(getconf CLK_TCK) / $(requests_of <<<"$out"))"
}
# ratio LABEL KIND: REPEATS rounds of one, many (and the old binary's many); a row with the
# medians of req/s and the median of the per-round ratios to one's (min–max), and a row of the
# same for the server's CPU time per request.
ratio() {
    local label=$1 kind=$2 r o m x os=() ms=() xs=() oc=() mc=() xc=()
    for r in $(seq 1 "$REPEATS"); do
        x="0 0"
        # "one" runs in the middle of each round, beside each "many", which takes turns going
        # first: this shared machine drifts within seconds, and a ratio is taken within a round.
        if [ $((r % 2)) = 1 ]; then
            m=$(served many $MANY "$WORK/many_$kind.lua")
        elif [ -n "$OLD_BIN" ]; then
            x=$(served old $OLD_PORT "$WORK/old_$kind.lua")
        fi
        o=$(served one $ONE "$WORK/one_$kind.lua")
        if [ $((r % 2)) = 0 ]; then
            m=$(served many $MANY "$WORK/many_$kind.lua")
        elif [ -n "$OLD_BIN" ]; then
            x=$(served old $OLD_PORT "$WORK/old_$kind.lua")
        fi
        echo "   round $r (req/s, µs CPU per request): one $o many $m old $x" >&2
        os+=("${o% *}"); ms+=("${m% *}"); xs+=("${x% *}")
        oc+=("${o#* }"); mc+=("${m#* }"); xc+=("${x#* }")
    done
    ratio_row "$label, req/s" 0 "${os[*]}" "${ms[*]}" "${xs[*]}"
    ratio_row "$label, the server's CPU time per request, µs" 2 "${oc[*]}" "${mc[*]}" "${xc[*]}"
}
# ratio_row LABEL DIGITS ONES MANYS OLDS: a table row of the medians (min–max), and of many's and
# old's ratios to one's in the same round, their median (min–max).
ratio_row() {
    row "| $1 | $(py "
import statistics as s
d = $2
def fmt(v): return f'{v:.{d}f}'
o = [float(x) for x in '$3'.split()]
def col(v):
    r = [b / a for a, b in zip(o, v)]
    return f'{fmt(s.median(v))} ({fmt(min(v))}–{fmt(max(v))}) | **{s.median(r):.2f}** ({min(r):.2f}–{max(r):.2f})'
m = [float(x) for x in '$4'.split()]
x = [float(v) for v in '$5'.split()]
print(f'{fmt(s.median(o))} ({fmt(min(o))}–{fmt(max(o))}) | ' + col(m) + ((' | ' + col(x)) if '$OLD_BIN' else ''))
") |"
}
ratio "Entity Configuration (many: a random entity each request)" ec
ratio "fetch, cached statement (random subject; many: random entity too)" fetch
# With BENCH_SPREAD: the Entity Configuration again, its requests spread over the first N
# hosted entities only, against "one" in the same rounds. One hosted entity shows what being
# hosted costs a request; where the ratio falls as N grows is where the entities' own answers
# stop fitting the caches.
for n in ${BENCH_SPREAD:-}; do
    [ "$n" -ge 1 ] && [ "$n" -le "$ENTITIES" ] || die "BENCH_SPREAD: $n is not within 1..$ENTITIES"
    ec_scripts "$WORK/one_ec$n.lua" "$WORK/many_ec$n.lua" "$n"
    [ -z "$OLD_BIN" ] || old_lua "ec$n"
    ratio "Entity Configuration, requests spread over $n of the $ENTITIES entities" "ec$n"
done

# ---- write visibility ---------------------------------------------------------------------
visible() {
    python3 - "$1" "$2" "$3" "$SUBS" <<'PY'
import http.client, json, random, sys, time
port, prefix, entities, subs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
key = {"kty": "EC", "crv": "P-256", "kid": "w",
       "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
c = http.client.HTTPConnection("127.0.0.1", port)
times = []
for i in range(100):
    e = random.randint(1, entities)
    sub = f"https://w{i:04d}.example.org"
    admin = f"/api/v1/admin/entities/{e + 1}/subordinates" if prefix else "/api/v1/admin/subordinates"
    path = (f"/e{e:04d}" if prefix else "") + "/fetch?sub=" + sub.replace(":", "%3A").replace("/", "%2F")
    body = json.dumps({"entity_id": sub, "jwks": {"keys": [key]}})
    t0 = time.perf_counter()
    c.request("POST", admin, body, {"content-type": "application/json"})
    r = c.getresponse(); r.read()
    assert r.status == 201, (r.status, admin)
    while True:
        c.request("GET", path)
        r = c.getresponse(); r.read()
        if r.status == 200:
            break
    times.append((time.perf_counter() - t0) * 1000)
times.sort()
print(f"{times[49]:.1f} {times[98]:.1f}")
PY
}
read -r ONE_P50 ONE_P99 <<<"$(visible $ONE "" 1)"
read -r MANY_P50 MANY_P99 <<<"$(visible $MANY e "$ENTITIES")"

row "| ready after start (3 starts), s | $(pct 50 "$WORK/ready-one.txt") ($(sort -n "$WORK/ready-one.txt" | head -1)–$(sort -n "$WORK/ready-one.txt" | tail -1)) | $(pct 50 "$WORK/ready-many.txt") ($(sort -n "$WORK/ready-many.txt" | head -1)–$(sort -n "$WORK/ready-many.txt" | tail -1)) | |"
row "| RSS after start, MB | $RSS_ONE | $RSS_MANY | $(py "print(f'{$RSS_MANY / $RSS_ONE:.2f}')") (budget: 1.05 × one + 100 kB × $ENTITIES = $(py "print(round(1.05 * $RSS_ONE + $ENTITIES * 0.1))") MB) |"
row "| RSS with every statement signed, MB | $RSS_ONE_SIGNED | $RSS_MANY_SIGNED | $(py "print(f'{$RSS_MANY_SIGNED / $RSS_ONE_SIGNED:.2f}')") |"
row "| a write visible (POST subordinate → fetch 200), ms p50 / p99 (100 writes) | $ONE_P50 / $ONE_P99 | $MANY_P50 / $MANY_P99 | |"
note "Creating the $ENTITIES entities through the Admin API took $CREATE_S s (keys generated, each started and served at once); RSS then $RSS_CREATED MB."

{
    echo "### $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load before: $LOAD_BEFORE"
    echo
    echo "Command: \`$CMD\`"
    echo
    if [ -n "$OLD_BIN" ]; then
        echo "Old binary: \`BENCH_OLD_BIN\` (its \"many\" instance on a copy of the same database)."
        echo
        echo "| measurement | one entity, $TOTAL subordinates | $ENTITIES entities × $SUBS | many / one (per round) | many, old binary | old many / one (per round) |"
        echo "|---|---|---|---|---|---|"
        sed -e '/^| \(Entity Configuration\|fetch\)/!s/|$/| | |/' "$TABLE"
    else
        echo "| measurement | one entity, $TOTAL subordinates | $ENTITIES entities × $SUBS | many / one (per round) |"
        echo "|---|---|---|---|"
        cat "$TABLE"
    fi
    echo
    cat "$NOTES"
    echo
} >"$WORK/report.md"
cat "$WORK/report.md"
if [ "$APPEND" = 1 ]; then
    cat "$WORK/report.md" >>"$ROOT/BENCHMARKS.md"
fi
