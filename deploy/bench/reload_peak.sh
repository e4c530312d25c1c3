#!/usr/bin/env bash
# A replica's full snapshot rebuild at scale (issue 39, scope 1): BENCH_N subordinates
# (default 1,000,000) bulk-loaded into PostgreSQL once, then each binary in turn started as a
# cluster replica on that database; when ready, its change listener is cut (as a network cut
# would), so it reloads everything while serving. Reported per binary, in interleaved rounds:
# ready time, steady RSS when ready, peak RSS during the rebuild (sampled every 20 ms), the
# rebuild's own time (its log line), and peak / steady.
#
# Usage: BENCH_OLD_BIN=<old release pharos> [BENCH_BIN=<new>] deploy/bench/reload_peak.sh [--no-append]
# Environment: BENCH_N, BENCH_REPEATS (rounds, default 2), BENCH_PG_DSN (default
# postgres://postgres@127.0.0.1:5432/postgres).
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^BENCH_[A-Z_]+=' || true; } | sort | tr '\n' ' ')deploy/bench/reload_peak.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
N=${BENCH_N:-1000000}
ROUNDS=${BENCH_REPEATS:-2}
PG_DSN=${BENCH_PG_DSN:-postgres://postgres@127.0.0.1:5432/postgres}
ab_binaries
command -v psql >/dev/null || die "psql not found"
PORT=17760
DB=pharos_reload_$$
trap 'bench_cleanup; psql -q "$PG_DSN" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true' EXIT

psql -q "$PG_DSN" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
mkdir -p "$WORK/r"
cat >"$WORK/r/config.yaml" <<YAML
entity_id: http://127.0.0.1:$PORT
server:
  ip_listen: 127.0.0.1
  port: $PORT
storage:
  driver: postgres
  dsn: ${PG_DSN%/*}/$DB
  endpoint_auth:
    jti_backend: db
cluster:
  enabled: true
logging:
  internal:
    level: info
    stderr_format: json
YAML
# The schema and the endpoints, by the new binary; then the rows, in bulk.
BIN=$NEW pharos_start r $PORT
for ep in fetch list; do admin $PORT POST /federation-endpoints "{\"type\":\"$ep\",\"path\":\"/$ep\"}"; done
pharos_stop r
log "reload_peak: bulk-loading $N subordinates"
python3 "$BENCH_DIR/gen_subordinates.py" "$N" postgres "${PG_DSN%/*}/$DB" >/dev/null

RESULTS=$WORK/results.txt
: >"$RESULTS"
measure() {
    local label=$1 bin=$2 lines pid steady peak built
    : >"$WORK/r/log"
    BIN=$bin pharos_start r $PORT
    sleep 2
    steady=$(rss_mb r)
    pid=${PHAROS_PIDS[r]}
    lines=$(grep -c 'snapshot built from the database' "$WORK/r/log" || true)
    rss_peak_mb "$pid" $((N / 40000 + 10)) >"$WORK/peak.txt" &
    local sampler=$!
    sleep 0.5
    psql -q "${PG_DSN%/*}/$DB" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$DB' AND application_name LIKE 'pharos-listener-%'" >/dev/null
    for _ in $(seq 1 3000); do
        [ "$(grep -c 'snapshot built from the database' "$WORK/r/log")" -gt "$lines" ] && break
        sleep 0.02
    done
    wait "$sampler"
    peak=$(cat "$WORK/peak.txt")
    built=$(grep 'snapshot built from the database' "$WORK/r/log" | tail -1 | sed -E 's/.*elapsed_ms[=":]+([0-9]+).*/\1/')
    pharos_stop r
    echo "$label $READY_S $steady $peak $built" >>"$RESULTS"
    log "$label: ready ${READY_S}s, steady ${steady} MB, peak ${peak} MB, rebuild ${built} ms"
}
for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then measure old "$OLD"; measure new "$NEW"; else measure new "$NEW"; measure old "$OLD"; fi
done

REPORT=$(python3 - "$RESULTS" "$N" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
n = int(sys.argv[2])
def med(label, i):
    return statistics.median(float(r[i]) for r in rows if r[0] == label)
print(f"| {n:,} subordinates, PostgreSQL replica | old | new | new / old |")
print("|---|---|---|---|")
for name, i in (("ready after start, s", 1), ("RSS when ready (steady), MB", 2), ("peak RSS during the full rebuild, MB", 3), ("rebuild time, ms", 4)):
    o, w = med("old", i), med("new", i)
    print(f"| {name} | {o:g} | {w:g} | {w / o:.2f} |")
print(f"| peak / steady | {med('old', 3) / med('old', 2):.2f} | {med('new', 3) / med('new', 2):.2f} | |")
print()
print(f"Medians of {len(rows) // 2} interleaved rounds.")
PY
)
echo "$REPORT"
[ "$APPEND" = 0 ] || append_section "$REPORT"
