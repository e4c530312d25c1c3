# shellcheck shell=bash
# How Pharos grows with its registry (issue 24), sourced by `deploy/bench/run.sh --scale N`:
# for each size of 10,000, 100,000 … up to N subordinates, on SQLite and (when `psql` reaches
# BENCH_PG_DSN, default postgres://postgres@127.0.0.1:5432/postgres) on PostgreSQL:
#   - bulk load (deploy/bench/gen_subordinates.py: batched inserts / COPY, not the Admin API);
#   - start → ready, RSS, and how long the start-up snapshot build took (its log line);
#   - list: unfiltered, by entity type, `intermediate=true` (first request after a change,
#     computed, and repeated, cached), and the Entity Configuration's worst latency while a
#     list of the whole registry is being computed (a stall would show there);
#   - fetch: first request per subject (signs), random subjects with the statement cache cold
#     and warm (warm: against nginx and the responder serving one statement), RSS when every
#     statement is held;
#   - one Admin API write → visible on the data plane, p50 / p99;
#   - PostgreSQL, then as a replica (`cluster.enabled`, restarted on the same database): its
#     start, and a full snapshot rebuild while serving (its change listener is cut, so it
#     reloads everything), its time and peak RSS.
# PostgreSQL runs on this host, so Pharos connects as docs/scaling.md tells same-host operators
# to: without TLS on loopback (BENCH_PG_DSN_PARAMS, default `?sslmode=disable`, appended to the
# instance's DSN). One more start per size is timed with TLS on loopback (`sslmode=prefer`, the
# default of a DSN that names no mode, against a server that offers TLS as Debian's does).
# BENCH_SCALE_BACKENDS limits the run to "sqlite" or "postgres".
# Writes $WORK/scale.csv (one line per backend, size and figure), a table per backend and
# deploy/bench/scale.svg (ready time and RSS against the size) from that CSV.

SCALE_MAX=$1
SCALE_SIZES=()
for n in 10000 100000 1000000; do [ "$n" -le "$SCALE_MAX" ] && SCALE_SIZES+=("$n"); done
[ "${SCALE_SIZES[-1]:-0}" = "$SCALE_MAX" ] || SCALE_SIZES+=("$SCALE_MAX")
PG_DSN=${BENCH_PG_DSN:-postgres://postgres@127.0.0.1:5432/postgres}
PG_DSN_PARAMS=${BENCH_PG_DSN_PARAMS-?sslmode=disable}
SCALE_CSV=$WORK/scale.csv
echo "backend,subordinates,figure,value" >"$SCALE_CSV"
SCALE_PORT=17720

csv() { echo "$SCALE_BACKEND,$SCALE_N,$1,$2" >>"$SCALE_CSV"; echo "   $SCALE_BACKEND $SCALE_N $1 = $2" >&2; }

# The longest Entity Configuration answer (ms) while the first list of a new snapshot is
# computed, the list's own time (ms), and the list's size; the write that makes the new
# snapshot is a status toggle of subordinate 2.
list_probe() {
    python3 - "$SCALE_PORT" "$1" <<'PY'
import http.client, sys, threading, time
port, query = int(sys.argv[1]), sys.argv[2]
def conn():
    return http.client.HTTPConnection("127.0.0.1", port, timeout=60)
def call(c, method, path, body=None):
    c.request(method, path, body=body, headers={"content-type": "application/json"} if body else {})
    r = c.getresponse()
    data = r.read()
    if r.status != 200:
        sys.exit(f"{method} {path} answered {r.status}")
    return data
admin = conn()
for status in ("blocked", "active"):
    call(admin, "PUT", "/api/v1/admin/subordinates/2/status", f'"{status}"')
stop, worst = threading.Event(), [0.0]
def probe():
    c = conn()
    while not stop.is_set():
        t0 = time.perf_counter()
        call(c, "GET", "/.well-known/openid-federation")
        worst[0] = max(worst[0], time.perf_counter() - t0)
t = threading.Thread(target=probe)
t.start()
time.sleep(0.05)
t0 = time.perf_counter()
body = call(conn(), "GET", "/list" + query)
took = time.perf_counter() - t0
stop.set()
t.join()
print(f"{worst[0] * 1000:.1f} {took * 1000:.1f} {len(body)}")
PY
}

# repeat_ms URL: median of 20 sequential requests, ms.
repeat_ms() {
    local i
    : >"$WORK/lat.txt"
    for i in $(seq 1 20); do curl -fs -o /dev/null -w '%{time_total}\n' "$1" >>"$WORK/lat.txt" || die "$1"; done
    pct 50 "$WORK/lat.txt" 1000
}

# built_ms: the elapsed_ms of the last "snapshot built from the database" log line.
built_ms() {
    grep 'snapshot built from the database' "$WORK/scale/log" | tail -1 \
        | sed -E 's/.*elapsed_ms[=":]+([0-9]+).*/\1/'
}

scale_instance() {
    local backend=$1 n=$2 db
    SCALE_BACKEND=$backend SCALE_N=$n
    if [ -n "${PHAROS_PIDS[scale]:-}" ]; then pharos_stop scale; fi
    rm -rf "$WORK/scale"
    mkdir -p "$WORK/scale"
    if [ "$backend" = sqlite ]; then
        db="storage:
  driver: sqlite
  data_dir: $WORK/scale/data"
    else
        SCALE_PGDB=pharos_scale_$$
        psql -q "$PG_DSN" -c "DROP DATABASE IF EXISTS $SCALE_PGDB" -c "CREATE DATABASE $SCALE_PGDB" >/dev/null
        db="storage:
  driver: postgres
  dsn: ${PG_DSN%/*}/$SCALE_PGDB$PG_DSN_PARAMS
  endpoint_auth:
    jti_backend: db"
    fi
    cat >"$WORK/scale/config.yaml" <<EOF
entity_id: http://127.0.0.1:$SCALE_PORT
server:
  ip_listen: 127.0.0.1
  port: $SCALE_PORT
$db
logging:
  internal:
    level: info
    stderr_format: json
EOF
    pharos_start scale $SCALE_PORT
    for ep in fetch list; do
        admin $SCALE_PORT POST /federation-endpoints "{\"type\":\"$ep\",\"path\":\"/$ep\"}"
    done
    pharos_stop scale
    log "scale: bulk-loading $n subordinates into $backend"
    if [ "$backend" = sqlite ]; then
        csv load_s "$(python3 "$BENCH_DIR/gen_subordinates.py" "$n" sqlite "$WORK/scale/data/pharos.db")"
    else
        csv load_s "$(python3 "$BENCH_DIR/gen_subordinates.py" "$n" postgres "${PG_DSN%/*}/$SCALE_PGDB")"
    fi
}

scale_measure() {
    local n=$SCALE_N i out lua sent url=http://127.0.0.1:$SCALE_PORT
    : >"$WORK/ready.txt"
    for i in 1 2; do
        pharos_start scale $SCALE_PORT
        echo "$READY_S" >>"$WORK/ready.txt"
        csv "snapshot_build_ms_start$i" "$(built_ms)"
        [ "$i" = 2 ] || pharos_stop scale
    done
    csv ready_s "$(pct 50 "$WORK/ready.txt")"
    csv rss_ready_mb "$(rss_mb scale)"
    if [ "$SCALE_BACKEND" = postgres ] && [ "$PG_DSN_PARAMS" = "?sslmode=disable" ]; then
        # The same start with TLS on loopback (`prefer`, what a DSN naming no mode gets).
        pharos_stop scale
        sed -i "s|^  dsn: .*|  dsn: ${PG_DSN%/*}/$SCALE_PGDB?sslmode=prefer|" "$WORK/scale/config.yaml"
        pharos_start scale $SCALE_PORT
        csv ready_tls_s "$READY_S"
        pharos_stop scale
        sed -i "s|^  dsn: .*|  dsn: ${PG_DSN%/*}/$SCALE_PGDB$PG_DSN_PARAMS|" "$WORK/scale/config.yaml"
        pharos_start scale $SCALE_PORT
    fi

    read -r worst took bytes <<<"$(list_probe "")"
    csv list_bytes "$bytes"
    csv list_first_ms "$took"
    csv ec_worst_during_list_ms "$worst"
    csv list_repeat_ms "$(repeat_ms "$url/list")"
    read -r worst took bytes <<<"$(list_probe "?entity_type=openid_provider")"
    csv list_type_first_ms "$took"
    csv list_type_repeat_ms "$(repeat_ms "$url/list?entity_type=openid_provider")"
    read -r worst took bytes <<<"$(list_probe "?intermediate=true")"
    csv list_intermediate_first_ms "$took"
    csv list_intermediate_repeat_ms "$(repeat_ms "$url/list?intermediate=true")"
    csv rss_after_lists_mb "$(rss_mb scale)"

    # Random subjects, nothing signed yet: most requests sign.
    cat >"$WORK/rand.lua" <<LUA
$(wrk_seeded)
request = function()
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fsub%07d.example.org", math.random(1, $n)))
end
LUA
    csv fetch_random_cold_rps "$(DURATION=3s wrk_run "$url" "$WORK/rand.lua" | rps_of)"
    # Subjects in order, each for the first time: every request signs (cache miss); the run
    # stays within the N subjects, or the figure is not given.
    cat >"$WORK/seq.lua" <<LUA
local i = 0
request = function()
    i = i + 1
    if i > $n then i = 1 end
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fsub%07d.example.org", i))
end
LUA
    out=$(THREADS=1 DURATION=2s wrk_run "$url" "$WORK/seq.lua")
    sent=$(awk '/requests in/ {print $1}' <<<"$out")
    if [ "$sent" -lt "$n" ]; then
        csv fetch_first_per_subject_rps "$(rps_of <<<"$out")"
        # Then the rest, so that every statement is held.
        cat >"$WORK/rest.lua" <<LUA
local i = $sent
request = function()
    i = i + 1
    if i > $n then i = 1 end
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fsub%07d.example.org", i))
end
LUA
        THREADS=1 DURATION=$(((n - sent) / 10000 + 2))s wrk_run "$url" "$WORK/rest.lua" >/dev/null
    fi
    csv rss_all_signed_mb "$(rss_mb scale)"
    csv statements_held_mb "$(curl -fsS "$url/metrics" | awk '/^pharos_statement_cache_bytes / {printf "%.0f", $2 / 1048576}')"
    curl -fsS "$url/fetch?sub=https%3A%2F%2Fsub0000042.example.org" >"$WORK/scale-fetch.jwt"
    # Registered as `fetch`: nginx and the responder answer the script's /fetch?sub=… paths.
    ref_add fetch "$WORK/scale-fetch.jwt" application/entity-statement+jwt
    local before_rows
    before_rows=$(wc -l <"$TABLE")
    compare "fetch, random of $n, warm ($SCALE_BACKEND)" "$url" fetch "$WORK/rand.lua"
    csv fetch_random_warm_rps "$MAX_RPS"
    csv fetch_random_warm_vs_responder "$(tail -1 "$TABLE" | awk -F'|' '{print $7}' | tr -d ' *' | cut -d'(' -f1)"
    # The compare row belongs in the scale table, not the main one.
    head -n "$before_rows" "$TABLE" >"$WORK/table.tmp" && mv "$WORK/table.tmp" "$TABLE"

    python3 - "$SCALE_PORT" "$n" 100 >"$WORK/visible.txt" <<'PY'
import http.client, random, sys, time
port, n, samples = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
admin = http.client.HTTPConnection("127.0.0.1", port)
data = http.client.HTTPConnection("127.0.0.1", port)
def call(conn, method, path, body=None):
    conn.request(method, path, body=body, headers={"content-type": "application/json"} if body else {})
    r = conn.getresponse()
    r.read()
    return r.status
random.seed(7)
for i in random.sample(range(1, n + 1), samples // 2):
    fetch = f"/fetch?sub=https%3A%2F%2Fsub{i:07d}.example.org"
    for status, expect in (("blocked", 404), ("active", 200)):
        t0 = time.perf_counter()
        if call(admin, "PUT", f"/api/v1/admin/subordinates/{i}/status", f'"{status}"') != 200:
            sys.exit("admin PUT status failed")
        for _ in range(100000):
            if call(data, "GET", fetch) == expect:
                break
        else:
            sys.exit(f"change never became visible for subordinate {i}")
        print(time.perf_counter() - t0)
PY
    csv write_visible_p50_ms "$(pct 50 "$WORK/visible.txt" 1000)"
    csv write_visible_p99_ms "$(pct 99 "$WORK/visible.txt" 1000)"

    if [ "$SCALE_BACKEND" = postgres ]; then
        # The same database served by a replica (`cluster.enabled`): its start, and a full
        # reload while it serves (its change listener is cut, so it reloads everything).
        pharos_stop scale
        printf 'cluster:\n  enabled: true\n' >>"$WORK/scale/config.yaml"
        pharos_start scale $SCALE_PORT
        csv replica_ready_s "$READY_S"
        csv replica_rss_ready_mb "$(rss_mb scale)"
        local pid=${PHAROS_PIDS[scale]} lines
        lines=$(grep -c 'snapshot built from the database' "$WORK/scale/log" || true)
        rss_peak_mb "$pid" $((n / 40000 + 8)) >"$WORK/peak.txt" &
        local sampler=$!
        sleep 0.5
        psql -q "$PG_DSN" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$SCALE_PGDB' AND application_name LIKE 'pharos-listener-%'" >/dev/null
        for i in $(seq 1 3000); do
            [ "$(grep -c 'snapshot built from the database' "$WORK/scale/log")" -gt "$lines" ] && break
            sleep 0.02
        done
        wait "$sampler"
        csv full_rebuild_ms "$(built_ms)"
        csv full_rebuild_peak_rss_mb "$(cat "$WORK/peak.txt")"
    fi
    pharos_stop scale
    [ "$SCALE_BACKEND" = postgres ] && psql -q "$PG_DSN" -c "DROP DATABASE IF EXISTS $SCALE_PGDB" >/dev/null
    return 0
}

# BENCH_SCALE_BACKENDS: "sqlite postgres" (default) or one of them.
read -r -a SCALE_BACKENDS <<<"${BENCH_SCALE_BACKENDS:-sqlite postgres}"
if [[ " ${SCALE_BACKENDS[*]} " == *" postgres "* ]] \
    && ! { command -v psql >/dev/null && psql -q "$PG_DSN" -c 'SELECT 1' >/dev/null 2>&1; }; then
    SCALE_BACKENDS=("${SCALE_BACKENDS[@]/postgres/}")
    note "PostgreSQL not reachable at $PG_DSN: the scale run did not measure it."
fi
for backend in "${SCALE_BACKENDS[@]}"; do
    [ -n "$backend" ] || continue
    for n in "${SCALE_SIZES[@]}"; do
        scale_instance "$backend" "$n"
        scale_measure
    done
done

# The tables (one per backend: a row per figure, a column per size); this run's figures
# replace its backends' rows in deploy/bench/scale.csv, and the plot is drawn from that file.
python3 "$BENCH_DIR/scale_report.py" "$SCALE_CSV" "$BENCH_DIR/scale.csv" "$BENCH_DIR/scale.svg" >>"$NOTES"
