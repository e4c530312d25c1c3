#!/usr/bin/env bash
# Fetch under a skewed load with a statement budget smaller than the registry (issue 24): which
# statements `cache.statements_max_bytes` keeps decides how many requests sign.
#
# Usage: deploy/bench/skewed_fetch.sh BASELINE_BIN CANDIDATE_BIN
#
# N subordinates (SKEW_N, default 100,000) are bulk-loaded into SQLite once
# (gen_subordinates.py) and the budget is set to hold SKEW_HELD_PERCENT (10) % of their
# statements. Each round starts each binary in turn (alternating, SKEW_ROUNDS rounds, default
# 3) on a copy of that database and
#   1. fetches every subject once, in order (a crawler walking the list: every request signs);
#      (for N / SKEW_CRAWL_RATE + 2 seconds, default rate 5,000/s; it checks every subject was
#      reached);
#   2. runs wrk for SKEW_WARMUP (5s), then measured for BENCH_DURATION (10s), with subjects drawn from a Zipf distribution
#      (exponent 1, ranks spread over the registry by a fixed permutation, so the popular
#      subjects are not the first ones loaded); the top 10 % of ranks draw ~80 % of requests.
# Printed per round and binary: req/s of step 2 and the fetch statement cache's hit ratio
# during it (`pharos_cache_requests` in /metrics).
set -euo pipefail
[ $# = 2 ] || { echo "usage: $0 BASELINE_BIN CANDIDATE_BIN" >&2; exit 64; }
BASE_BIN=$(realpath "$1")
CAND_BIN=$(realpath "$2")
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
N=${SKEW_N:-100000}
HELD_PERCENT=${SKEW_HELD_PERCENT:-10}
ROUNDS=${SKEW_ROUNDS:-3}
PORT=17730
URL=http://127.0.0.1:$PORT

# The database, loaded once: migrated by a first start, with the fetch endpoint registered.
BIN=$BASE_BIN
pharos_config seed $PORT
pharos_start seed $PORT
admin $PORT POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
pharos_stop seed
log "bulk-loading $N subordinates"
python3 "$BENCH_DIR/gen_subordinates.py" "$N" sqlite "$WORK/seed/data/pharos.db" >/dev/null

# The bytes one statement is charged: from a first fetch, unbounded budget.
pharos_start seed $PORT
curl -fsS -o /dev/null "$URL/fetch?sub=https%3A%2F%2Fsub0000001.example.org"
ONE=$(curl -fsS "$URL/metrics" | awk '/^pharos_statement_cache_bytes / {print $2}')
pharos_stop seed
BUDGET=$((ONE * N * HELD_PERCENT / 100))
log "one statement is charged $ONE bytes; budget $BUDGET bytes ($HELD_PERCENT % of $N)"

# Each subject once, then the Entity Configuration until the run ends (wrk runs for a time,
# not a count; SKEW_CRAWL_RATE, default 5,000 signatures a second, sets that time).
cat >"$WORK/crawl.lua" <<LUA
local i = 0
request = function()
    i = i + 1
    if i > $N then return wrk.format("GET", "/.well-known/openid-federation") end
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fsub%07d.example.org", i))
end
LUA
cat >"$WORK/zipf.lua" <<LUA
local n = $N
local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("id", threads)
end
local cdf = {}
function init(args)
    math.randomseed(1000 * (id or 0) + os.time())
    local sum = 0
    for r = 1, n do sum = sum + 1 / r end
    local acc = 0
    for r = 1, n do
        acc = acc + 1 / r / sum
        cdf[r] = acc
    end
end
request = function()
    local u, lo, hi = math.random(), 1, n
    while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        if cdf[mid] < u then lo = mid + 1 else hi = mid end
    end
    -- Rank to subject: 7919 is prime to 10^k, so this is a permutation for n = 10^k.
    local s = (lo * 7919) % n + 1
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fsub%07d.example.org", s))
end
LUA

fetch_counts() {
    curl -fsS "$URL/metrics" | awk '/^pharos_cache_requests_total\{cache="fetch",result="hit"\}/ {h=$2}
        /^pharos_cache_requests_total\{cache="fetch",result="miss"\}/ {m=$2} END {print h + 0, m + 0}'
}

run_one() {
    local label=$1 out h0 m0 h1 m1
    BIN=$2
    rm -rf "$WORK/skew"
    pharos_config skew $PORT
    printf 'cache:\n  statements_max_bytes: %s\n' "$BUDGET" >>"$WORK/skew/config.yaml"
    mkdir -p "$WORK/skew/data"
    cp "$WORK/seed/data/pharos.db" "$WORK/skew/data/pharos.db"
    pharos_start skew $PORT
    THREADS=1 DURATION=$((N / ${SKEW_CRAWL_RATE:-5000} + 2))s wrk_run "$URL" "$WORK/crawl.lua" >/dev/null
    read -r h0 m0 <<<"$(fetch_counts)"
    py "import sys; sys.exit($m0 < $N - 64)" || { curl -fsS "$URL/metrics" | grep -i cache >&2; die "the crawl did not reach every subject ($m0)"; }
    # A few seconds of the skewed load before the measured run.
    DURATION=${SKEW_WARMUP:-5s} wrk_run "$URL" "$WORK/zipf.lua" >/dev/null
    read -r h0 m0 <<<"$(fetch_counts)"
    out=$(wrk_run "$URL" "$WORK/zipf.lua")
    read -r h1 m1 <<<"$(fetch_counts)"
    echo "$label $(rps_of <<<"$out") $(py "print(round(($h1 - $h0) / max(1, $h1 - $h0 + $m1 - $m0), 3))") $(rss_mb skew)"
    pharos_stop skew
}

echo "round binary req/s hit_ratio rss_mb"
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
        run_one "$r baseline" "$BASE_BIN"
        run_one "$r candidate" "$CAND_BIN"
    else
        run_one "$r candidate" "$CAND_BIN"
        run_one "$r baseline" "$BASE_BIN"
    fi
done
