#!/usr/bin/env bash
# The extended subordinate listing at a million subordinates (issue 36, acceptance 2): the
# release Pharos on SQLite with SUBORDINATES (1,000,000) bulk-loaded subordinates whose
# `updated_at` is spread over 35 days, and an `extended_list` endpoint (pages of 1,000).
# Reported:
#   - pages of 1,000 at a random cursor with a random time filter (a random window of one to
#     ten days, a cursor at a random time inside it), so no page cache can answer: median and
#     p99 latency of N (400) sequential requests, ids with their audit timestamps
#     (`claims=updated`) and with a statement claim (`claims=jwks`, each entry's statement
#     claims built);
#   - the reference measured in the same run: nginx serving a static file of a page's size;
#   - RSS after start, and after the requests (growth in percent).
#
# Usage: deploy/bench/extended_list.sh [--no-append]   (appends to BENCHMARKS.md)
# Environment: SUBORDINATES (1000000), BENCH_REQUESTS (400), BENCH_BIN, CARGO_TARGET_DIR.
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
SUBS=${SUBORDINATES:-1000000}
N=${BENCH_REQUESTS:-400}
for tool in curl sqlite3 python3 nginx; do
    command -v "$tool" >/dev/null || { echo "extended_list: $tool not found" >&2; exit 1; }
done
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^(SUBORDINATES|BENCH_[A-Z_]+)=' || true; } | sort | tr '\n' ' ')deploy/bench/extended_list.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
[ -n "${BENCH_BIN:-}" ] || (cd "$ROOT" && cargo build --release -q -p pharos)
[ -x "$BIN" ] || die "no binary at $BIN"

PORT=17830
T0=1900000000
SPREAD=$((35 * 86400))
pharos_config el "$PORT"
pharos_start el "$PORT"
admin "$PORT" POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
admin "$PORT" POST /federation-endpoints '{"type":"extended_list","path":"/list_extended","config":{"max_page_size":1000}}'
pharos_stop el
log "bulk-loading $SUBS subordinates"
python3 "$BENCH_DIR/gen_subordinates.py" "$SUBS" sqlite "$WORK/el/data/pharos.db" >&2
# Spread the change times over SPREAD seconds before T0 (a multiplicative hash of the id, so
# neighbours in identifier order are far apart in time).
sqlite3 "$WORK/el/data/pharos.db" \
    "UPDATE subordinates SET created_at = $T0 - $SPREAD, updated_at = $T0 - ((id * 2654435761) % $SPREAD);"
pharos_start el "$PORT"
READY=$READY_S
RSS0=$(rss_mb el)

# One page of the kind measured, for its size (the static reference serves as many bytes).
curl -fsS "http://127.0.0.1:$PORT/list_extended?updated_after=$((T0 - 86400))&claims=updated" >"$WORK/page.json"
python3 - "$WORK/page.json" <<'PY' || die "the sample page does not hold 1,000 entries"
import json, sys
page = json.load(open(sys.argv[1]))
sys.exit(len(page["immediate_subordinate_entities"]) != 1000 or "next" not in page)
PY
ref_add page "$WORK/page.json" application/json

measure() {
    python3 - "$PORT" "$N" "$T0" "$SPREAD" "$1" <<'PY'
import base64, http.client, random, statistics, sys, time
port, n, t0, spread, claims = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
random.seed(36)
c = http.client.HTTPConnection("127.0.0.1", port)
lat, sizes = [], []
for _ in range(n):
    after = t0 - random.randrange(spread)
    before = after + random.randrange(86400, 10 * 86400)
    at = random.randrange(after, min(before, t0))
    sub = f"https://sub{random.randrange(1, 1_000_000):07d}.example.org"
    cursor = base64.urlsafe_b64encode(f"t\n{at}\n{sub}".encode()).decode().rstrip("=")
    path = f"/list_extended?updated_after={after}&updated_before={before}&from={cursor}&claims={claims}"
    s = time.perf_counter()
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    lat.append((time.perf_counter() - s) * 1000)
    assert r.status == 200, (r.status, body[:200])
    sizes.append(body.count(b'"id"'))
lat.sort()
print(f"{statistics.median(lat):.2f} {lat[int(0.99 * len(lat)) - 1]:.2f} {statistics.median(sizes):.0f}")
PY
}
static_ms() {
    python3 - "$NGINX_PORT" "$N" <<'PY'
import http.client, statistics, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
lat = []
for _ in range(int(sys.argv[2])):
    s = time.perf_counter()
    c.request("GET", "/page")
    r = c.getresponse()
    r.read()
    lat.append((time.perf_counter() - s) * 1000)
print(f"{statistics.median(lat):.2f}")
PY
}

log "random pages: ids and audit timestamps"
read -r TS_MED TS_P99 TS_N < <(measure updated)
log "random pages: with a statement claim (jwks)"
read -r JW_MED JW_P99 JW_N < <(measure jwks)
REF=$(static_ms)
RSS1=$(rss_mb el)

{
    echo "### $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load before: $LOAD_BEFORE"
    echo
    echo "Command: \`$CMD\`"
    echo
    echo "$SUBS subordinates on SQLite, ready after ${READY} s. $N sequential requests per row, each"
    echo "a page at a random cursor inside a random window of one to ten days (\`updated_after\`,"
    echo "\`updated_before\`) of the 35 days the change times span; page size 1,000."
    echo
    echo "| measurement | median, ms | p99, ms | entries per page (median) | median / static file |"
    echo "|---|---|---|---|---|"
    py "
ref = float('$REF')
print(f'| ids and audit timestamps (\`claims=updated\`) | $TS_MED | $TS_P99 | $TS_N | **{float(\"$TS_MED\") / ref:.1f}** |')
print(f'| with a statement claim (\`claims=jwks\`) | $JW_MED | $JW_P99 | $JW_N | **{float(\"$JW_MED\") / ref:.1f}** |')
print(f'| reference: nginx, a static page of the same size ($(wc -c <"$WORK/page.json") bytes) | {ref:.2f} | | | 1 |')
"
    echo
    echo "RSS after start $RSS0 MB, after the $((2 * N)) requests $RSS1 MB ($(py "print(f'{($RSS1 - $RSS0) / $RSS0 * 100:+.1f}')") %)."
    echo
} >"$WORK/report.md"
cat "$WORK/report.md"
if [ "$APPEND" = 1 ]; then
    cat "$WORK/report.md" >>"$ROOT/BENCHMARKS.md"
fi
