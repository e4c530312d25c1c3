#!/usr/bin/env bash
# Statement memory at a million subjects (issue 39, scope 4): what the compact ways of holding
# signed Subordinate Statements would buy a uniformly random fetch, measured before building
# any of them.
#
# A compact form only lets the same budget (`cache.statements_max_bytes`) hold more
# statements, so its effect on fetch is that of a larger budget: a form 20 % smaller holds
# what 1.25 × the budget holds. So the script measures
#   1. the statements themselves (a sample of STMT_SAMPLE fetched statements): their size, the
#      part every statement of one key shares (the protected header), and what compressing
#      each one alone (zlib, as a held statement would have to be) leaves;
#   2. warm fetch throughput of N random subjects (the registry bulk-loaded into SQLite) under
#      the default budget and under the budgets those forms would amount to, and with the
#      default budget under Ed25519 instead of ES256 (a cheaper signature for every miss),
#      each against the reference responder serving one statement (interleaved rounds), with
#      the share of fetches that found their statement held.
# The cost of decompressing a held statement on every hit is not in (2): a compressed form
# would do less well than its larger-budget stand-in, never better.
#
# Usage: deploy/bench/statement_memory.sh [--no-append]   (appends to BENCHMARKS.md)
# Environment: STMT_N (1,000,000), STMT_SAMPLE (2,000), STMT_WARM (warm-up seconds, 20),
# BENCH_DURATION, BENCH_CONNECTIONS, BENCH_THREADS, BENCH_REPEATS, BENCH_BIN, CARGO_TARGET_DIR.
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
for tool in curl python3 wrk nginx; do
    command -v "$tool" >/dev/null || { echo "statement_memory: $tool not found" >&2; exit 1; }
done
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
N=${STMT_N:-1000000}
SAMPLE=${STMT_SAMPLE:-2000}
WARM=${STMT_WARM:-20}
CMD="$({ env | grep -E '^(STMT_[A-Z]+|BENCH_[A-Z_]+)=' || true; } | sort | tr '\n' ' ')deploy/bench/statement_memory.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
build_all
PORT=17740
URL=http://127.0.0.1:$PORT
MIB=$((1024 * 1024))

# seed ALG: a database with the fetch endpoint, a key of ALG and N bulk-loaded subordinates.
seed() {
    local alg=$1
    pharos_config "seed-$alg" $PORT
    printf 'signing:\n  alg: %s\n' "$alg" >>"$WORK/seed-$alg/config.yaml"
    pharos_start "seed-$alg" $PORT
    admin $PORT POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
    pharos_stop "seed-$alg"
    log "bulk-loading $N subordinates ($alg)"
    python3 "$BENCH_DIR/gen_subordinates.py" "$N" sqlite "$WORK/seed-$alg/data/pharos.db" >/dev/null
}
seed ES256
seed Ed25519

# run NAME ALG BUDGET_BYTES: a copy of ALG's database served with that budget.
run() {
    local name=$1 alg=$2 budget=$3
    mkdir -p "$WORK/$name/data"
    cp "$WORK/seed-$alg/data/"pharos.db* "$WORK/$name/data/"
    sed -e "s#$WORK/seed-$alg/data#$WORK/$name/data#" "$WORK/seed-$alg/config.yaml" >"$WORK/$name/config.yaml"
    printf 'cache:\n  statements_max_bytes: %s\n' "$budget" >>"$WORK/$name/config.yaml"
    pharos_start "$name" $PORT
}

cat >"$WORK/rand.lua" <<LUA
$(wrk_seeded)
request = function()
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fsub%07d.example.org", math.random(1, $N)))
end
LUA

# ---- 1. the statements ---------------------------------------------------------------------
run sizes ES256 $((128 * MIB))
curl -fsS -o "$WORK/one.jwt" "$URL/fetch?sub=https%3A%2F%2Fsub0000001.example.org" \
    || die "the first subordinate is not served"
SIZES=$(python3 - "$PORT" "$N" "$SAMPLE" <<'PY'
import http.client, random, sys, zlib
port, n, sample = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
random.seed(3)
raw = headers = z1 = z6 = 0
for i in random.sample(range(1, n + 1), sample):
    c.request("GET", f"/fetch?sub=https%3A%2F%2Fsub{i:07d}.example.org")
    r = c.getresponse()
    body = r.read()
    assert r.status == 200, r.status
    raw += len(body)
    headers += len(body.split(b".")[0]) + 1
    z1 += len(zlib.compress(body, 1))
    z6 += len(zlib.compress(body, 9))
print(f"{raw / sample:.0f} {headers / sample:.0f} {z1 / sample:.0f} {z6 / sample:.0f}")
PY
)
read -r AVG HEADER Z1 Z9 <<<"$SIZES"
pharos_stop sizes
note "Statements (a sample of $SAMPLE, ES256): $AVG bytes on average; the protected header, the same for every statement of one key, is $HEADER of them ($(py "print(f'{$HEADER / $AVG:.0%}')")); each compressed alone with zlib: $Z1 bytes at level 1, $Z9 at level 9 ($(py "print(f'{$Z9 / $AVG:.0%}')") of the statement: base64url of JSON and of a signature leaves little to compress)."

# ---- 2. warm fetch under each budget ---------------------------------------------------------
ref_add fetch "$WORK/one.jwt" application/entity-statement+jwt
# fetch_counts: "HITS MISSES" of the fetch statement cache so far (/metrics).
fetch_counts() {
    curl -fsS "$URL/metrics" | awk '/^pharos_cache_requests_total\{cache="fetch",result="hit"\}/ {h=$2}
        /^pharos_cache_requests_total\{cache="fetch",result="miss"\}/ {m=$2} END {print h + 0, m + 0}'
}
# measure LABEL NAME ALG BUDGET
measure() {
    run "$2" "$3" "$4"
    log "$1: warming up for ${WARM}s"
    DURATION=${WARM}s wrk_run "$URL" "$WORK/rand.lua" >/dev/null
    local held h0 m0 h1 m1
    read -r h0 m0 <<<"$(fetch_counts)"
    compare "$1" "$URL" fetch "$WORK/rand.lua"
    read -r h1 m1 <<<"$(fetch_counts)"
    held=$(curl -fsS "$URL/metrics" | awk '/^pharos_statement_cache_bytes / {print $2}')
    note "$1: $(py "print(round(${held:-0} / $MIB))") MiB of statements held after the run; $(py "print(f'{($h1 - $h0) / max(1, $h1 - $h0 + $m1 - $m0):.0%}')") of the measured fetches found theirs held."
    pharos_stop "$2"
}
DEFAULT=$((128 * MIB))
HEADERLESS=$(py "print(int($DEFAULT * $AVG / ($AVG - $HEADER)))")
ZIPPED=$(py "print(int($DEFAULT * $AVG / $Z1))")
measure "fetch, $N random subjects, ES256, budget 128 MiB (today)" es-128 ES256 $DEFAULT
measure "… budget $((HEADERLESS / MIB)) MiB: what holding statements without their shared header would hold" es-header ES256 "$HEADERLESS"
measure "… budget $((ZIPPED / MIB)) MiB: what compressing each held statement (zlib 1) would hold" es-zip ES256 "$ZIPPED"
measure "… budget 512 MiB: four times as many held" es-512 ES256 $((512 * MIB))
measure "fetch, $N random subjects, Ed25519, budget 128 MiB" ed-128 Ed25519 $DEFAULT

{
    echo "### $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load before: $LOAD_BEFORE"
    echo
    echo "Command: \`$CMD\`"
    echo
    print_table
    echo
} >"$WORK/report.md"
cat "$WORK/report.md"
if [ "$APPEND" = 1 ]; then
    cat "$WORK/report.md" >>"$ROOT/BENCHMARKS.md"
fi
