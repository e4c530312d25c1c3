#!/usr/bin/env bash
# Start-up at scale, two binaries against each other (issue 39, scope 2): BENCH_N subordinates
# (default 1,000,000) bulk-loaded once per backend (SQLite, and PostgreSQL when `psql` reaches
# BENCH_PG_DSN) into a database made by the old binary, and copied for the new one (which
# applies its own migrations on a first, unmeasured start). Then, in interleaved rounds, each
# binary is started and timed to its first 200 of /readyz: ready time, the snapshot build's own
# time (its log line) and RSS when ready.
#
# Usage: BENCH_OLD_BIN=<old release pharos> [BENCH_BIN=<new>] deploy/bench/startup_ab.sh [--no-append]
# Environment: BENCH_N, BENCH_REPEATS (rounds, default 3), BENCH_SCALE_BACKENDS ("sqlite" or
# "postgres" for one of them), BENCH_PG_DSN (default postgres://postgres@127.0.0.1:5432/postgres).
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^BENCH_[A-Z_]+=' || true; } | sort | tr '\n' ' ')deploy/bench/startup_ab.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
N=${BENCH_N:-1000000}
ROUNDS=${BENCH_REPEATS:-3}
PG_DSN=${BENCH_PG_DSN:-postgres://postgres@127.0.0.1:5432/postgres}
ab_binaries
BACKENDS=${BENCH_SCALE_BACKENDS:-sqlite postgres}
PORT=17770
PGDBS=()
trap 'bench_cleanup; for d in "${PGDBS[@]}"; do psql -q "$PG_DSN" -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true; done' EXIT

# config NAME STORAGE: the instance NAME's configuration with STORAGE (YAML lines).
config() {
    mkdir -p "$WORK/$1"
    cat >"$WORK/$1/config.yaml" <<YAML
entity_id: http://127.0.0.1:$PORT
server:
  ip_listen: 127.0.0.1
  port: $PORT
storage:
$2
logging:
  internal:
    level: info
    stderr_format: json
YAML
}

RESULTS=$WORK/results.txt
: >"$RESULTS"
# measure BACKEND LABEL BIN: one timed start of the instance BACKEND-LABEL.
measure() {
    local name=$1-$2 built
    : >"$WORK/$name/log"
    BIN=$3 pharos_start "$name" $PORT
    built=$(grep 'snapshot built from the database' "$WORK/$name/log" | tail -1 | sed -E 's/.*elapsed_ms[=":]+([0-9]+).*/\1/')
    echo "$1 $2 $READY_S $built $(rss_mb "$name")" >>"$RESULTS"
    log "$name: ready ${READY_S}s, build ${built} ms, RSS $(rss_mb "$name") MB"
    pharos_stop "$name"
}

for backend in $BACKENDS; do
    if [ "$backend" = sqlite ]; then
        config sqlite-old "  driver: sqlite
  data_dir: $WORK/sqlite-old/data"
        config sqlite-new "  driver: sqlite
  data_dir: $WORK/sqlite-new/data"
    else
        command -v psql >/dev/null || die "psql not found"
        for label in old new; do
            PGDBS+=("pharos_startup_${label}_$$")
            psql -q "$PG_DSN" -c "DROP DATABASE IF EXISTS pharos_startup_${label}_$$" >/dev/null
            config "postgres-$label" "  driver: postgres
  dsn: ${PG_DSN%/*}/pharos_startup_${label}_$$"
        done
        psql -q "$PG_DSN" -c "CREATE DATABASE pharos_startup_old_$$" >/dev/null
    fi
    # The old binary's schema and endpoints, then the rows, in bulk; the new binary's copy.
    BIN=$OLD pharos_start "$backend-old" $PORT
    for ep in fetch list; do admin $PORT POST /federation-endpoints "{\"type\":\"$ep\",\"path\":\"/$ep\"}"; done
    pharos_stop "$backend-old"
    log "startup_ab: bulk-loading $N subordinates into $backend"
    if [ "$backend" = sqlite ]; then
        python3 "$BENCH_DIR/gen_subordinates.py" "$N" sqlite "$WORK/sqlite-old/data/pharos.db" >/dev/null
        mkdir -p "$WORK/sqlite-new/data"
        cp -a "$WORK/sqlite-old/data/." "$WORK/sqlite-new/data/"
    else
        python3 "$BENCH_DIR/gen_subordinates.py" "$N" postgres "${PG_DSN%/*}/pharos_startup_old_$$" >/dev/null
        psql -q "$PG_DSN" -c "CREATE DATABASE pharos_startup_new_$$ TEMPLATE pharos_startup_old_$$" >/dev/null
    fi
    # Unmeasured: the new binary's migrations, and both databases' pages read once.
    BIN=$NEW pharos_start "$backend-new" $PORT
    pharos_stop "$backend-new"
    BIN=$OLD pharos_start "$backend-old" $PORT
    pharos_stop "$backend-old"
    for round in $(seq "$ROUNDS"); do
        if [ $((round % 2)) = 1 ]; then
            measure "$backend" old "$OLD"; measure "$backend" new "$NEW"
        else
            measure "$backend" new "$NEW"; measure "$backend" old "$OLD"
        fi
    done
done

REPORT=$(python3 - "$RESULTS" "$N" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
n = int(sys.argv[2])
print(f"| {n:,} subordinates | backend | old | new | new / old |")
print("|---|---|---|---|---|")
for backend in dict.fromkeys(r[0] for r in rows):
    def med(label, i):
        v = [float(r[i]) for r in rows if r[0] == backend and r[1] == label]
        return statistics.median(v), min(v), max(v)
    for name, i in (("ready after start, s", 2), ("snapshot build, ms", 3), ("RSS when ready, MB", 4)):
        (o, olo, ohi), (w, wlo, whi) = med("old", i), med("new", i)
        print(f"| {name} | {backend} | {o:g} ({olo:g}–{ohi:g}) | {w:g} ({wlo:g}–{whi:g}) | {w / o:.2f} |")
print()
print(f"Medians (and ranges) of {len(rows) // 2 // max(1, len(set(r[0] for r in rows)))} interleaved rounds per backend.")
PY
)
echo "$REPORT"
[ "$APPEND" = 0 ] || append_section "$REPORT"
