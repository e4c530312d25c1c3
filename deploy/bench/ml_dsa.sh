#!/usr/bin/env bash
# ML-DSA against ES256 (issue 35, acceptance 5): the same release Pharos five times on SQLite,
# signing with ES256, ML-DSA-44, ML-DSA-65, ML-DSA-87 and ML-DSA-65-ES256, each with SUBORDINATES (50,000)
# bulk-loaded subordinates and a fetch endpoint.
# Reported, as ratios to ES256 measured in the same run:
#   - first-signature throughput per algorithm: fetch of subjects in order, each for the first
#     time (every answer is signed on the request; a 3 s run stays within the subjects);
#   - the Entity Configuration and the cached fetch (ML-DSA-65 vs ES256, interleaved rounds);
#   - the answers' sizes, and what a million statements cost: the bytes the statement cache
#     would need to hold them all (`cache.statements_max_bytes`) and the time to sign them all
#     once on this machine.
#
# Usage: deploy/bench/ml_dsa.sh [--no-append]   (appends to BENCHMARKS.md, "ML-DSA")
# Environment: SUBORDINATES (50000), BENCH_DURATION, BENCH_CONNECTIONS, BENCH_THREADS,
# BENCH_REPEATS, BENCH_BIN, CARGO_TARGET_DIR.
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
SUBS=${SUBORDINATES:-50000}
for tool in curl sqlite3 python3 wrk; do
    command -v "$tool" >/dev/null || { echo "ml_dsa: $tool not found" >&2; exit 1; }
done
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^(SUBORDINATES|BENCH_[A-Z_]+)=' || true; } | sort | tr '\n' ' ')deploy/bench/ml_dsa.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
[ -n "${BENCH_BIN:-}" ] || (cd "$ROOT" && cargo build --release -q -p pharos)
[ -x "$BIN" ] || die "no binary at $BIN"

ALGS=(ES256 ML-DSA-44 ML-DSA-65 ML-DSA-87 ML-DSA-65-ES256)
declare -A PORT=([ES256]=17820 [ML-DSA-44]=17821 [ML-DSA-65]=17822 [ML-DSA-87]=17823 [ML-DSA-65-ES256]=17824)
name_of() { echo "${1//-/}" | tr '[:upper:]' '[:lower:]'; }

subordinates_sql "$WORK/subs.sql" "$SUBS"

for alg in "${ALGS[@]}"; do
    n=$(name_of "$alg")
    pharos_config "$n" "${PORT[$alg]}"
    printf 'signing:\n  alg: %s\n' "$alg" >>"$WORK/$n/config.yaml"
    pharos_start "$n" "${PORT[$alg]}"
    admin "${PORT[$alg]}" POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
    pharos_stop "$n"
    log "$alg: bulk-loading $SUBS subordinates"
    sqlite3 "$WORK/$n/data/pharos.db" <"$WORK/subs.sql"
    pharos_start "$n" "${PORT[$alg]}"
    curl -fsS "http://127.0.0.1:${PORT[$alg]}/.well-known/openid-federation" >"$WORK/$n.ec"
    hdr=$(cut -d. -f1 <"$WORK/$n.ec" | tr '_-' '/+')
    py "import base64,json,sys; h=json.loads(base64.b64decode('$hdr' + '=' * (-len('$hdr') % 4))); sys.exit(h['alg'] != '$alg')" \
        || die "$alg: the Entity Configuration is not signed with $alg"
done

# ---- first signatures: each subject once, in order -----------------------------------------
cat >"$WORK/seq.lua" <<LUA
local i = 0
request = function()
    i = i + 1
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fs%07d.example.org", i))
end
LUA
declare -A FIRST=() SIGNED=()
for alg in "${ALGS[@]}"; do
    n=$(name_of "$alg")
    out=$(DURATION=3s wrk_run "http://127.0.0.1:${PORT[$alg]}" "$WORK/seq.lua")
    FIRST[$alg]=$(rps_of <<<"$out")
    SIGNED[$alg]=$(awk '/requests in/ {print $1}' <<<"$out")
    [ "${SIGNED[$alg]}" -lt "$SUBS" ] || die "$alg: the first-signature run went past the $SUBS subjects"
    curl -fsS "http://127.0.0.1:${PORT[$alg]}/fetch?sub=https%3A%2F%2Fs0000001.example.org" >"$WORK/$n.fetch"
done

# ---- cached answers: ML-DSA-65 against ES256 ----------------------------------------------
cat >"$WORK/ec.lua" <<LUA
request = function() return wrk.format("GET", "/.well-known/openid-federation") end
LUA
cat >"$WORK/fetch.lua" <<LUA
$(wrk_seeded)
request = function()
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fs%07d.example.org", math.random(1000)))
end
LUA
ES=${PORT[ES256]}
ML=${PORT[ML-DSA-65]}
ratio() {
    local label=$1 kind=$2 r e m es=() ms=()
    for r in $(seq 1 "$REPEATS"); do
        e=$(wrk_run "http://127.0.0.1:$ES" "$WORK/$kind.lua" | rps_of)
        m=$(wrk_run "http://127.0.0.1:$ML" "$WORK/$kind.lua" | rps_of)
        echo "   round $r: ES256 $e ML-DSA-65 $m" >&2
        es+=("$e"); ms+=("$m")
    done
    row "| $label | $(py "
import statistics as s
e=[float(x) for x in '${es[*]}'.split()]; m=[float(x) for x in '${ms[*]}'.split()]
r=[b/a for a,b in zip(e,m)]
print(f'{s.median(e):.0f} ({min(e):.0f}–{max(e):.0f}) | {s.median(m):.0f} ({min(m):.0f}–{max(m):.0f}) | **{s.median(m)/s.median(e):.2f}** ({min(r):.2f}–{max(r):.2f})')
") |"
}
ratio "Entity Configuration, req/s ($(wc -c <"$WORK/es256.ec") / $(wc -c <"$WORK/mldsa65.ec") bytes)" ec
ratio "fetch, cached statement (1,000 random subjects), req/s ($(wc -c <"$WORK/es256.fetch") / $(wc -c <"$WORK/mldsa65.fetch") bytes)" fetch

{
    echo "### $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load before: $LOAD_BEFORE"
    echo
    echo "Command: \`$CMD\`"
    echo
    echo "| measurement | ES256 | ML-DSA-65 | ML-DSA-65 / ES256 |"
    echo "|---|---|---|---|"
    cat "$TABLE"
    echo
    echo "First signatures (fetch of $SUBS subjects in order, each signed on its request, 3 s, $CONNS connections):"
    echo
    echo "| algorithm | first signatures/s | / ES256 | statement, bytes | a million statements held, GB | a million first signatures, s |"
    echo "|---|---|---|---|---|---|"
    for alg in "${ALGS[@]}"; do
        n=$(name_of "$alg")
        py "
first, es = float('${FIRST[$alg]}'), float('${FIRST[ES256]}')
size = $(wc -c <"$WORK/$n.fetch")
print(f'| $alg | {first:.0f} | **{first / es:.2f}** | {size} | {size * 1e6 / 1e9:.1f} | {1e6 / first:.0f} |')
"
    done
    echo
} >"$WORK/report.md"
cat "$WORK/report.md"
if [ "$APPEND" = 1 ]; then
    cat "$WORK/report.md" >>"$ROOT/BENCHMARKS.md"
fi
