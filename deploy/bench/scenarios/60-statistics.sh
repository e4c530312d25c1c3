# shellcheck shell=bash
# Statistics (issue 17): Entity Configuration and cached fetch throughput with statistics off
# and on, interleaved in the same run (goal: on / off ≥ 0.95); then a CSV export of 1,000,000
# request records through the Admin API with the peak RSS above idle (goal: under 100 MB).
OFF=17760
ON=17761
SUB=https://sub-stats.example.org
KEY='{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}'
pharos_config statson $ON
printf 'stats:\n  enabled: true\n' >>"$WORK/statson/config.yaml"
for pair in statsoff:$OFF statson:$ON; do
    name=${pair%%:*}
    port=${pair#*:}
    pharos_start "$name" "$port"
    admin "$port" POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
    admin "$port" POST /subordinates "{\"entity_id\":\"$SUB\",\"status\":\"active\",\"jwks\":{\"keys\":[$KEY]}}"
done
FETCH_Q="/fetch?sub=$(py "import urllib.parse as u; print(u.quote('$SUB', safe=''))")"

# on_vs_off LABEL PATH: REPEATS interleaved rounds (off and on, alternating which goes first);
# medians and their ratio.
on_vs_off() {
    local label=$1 path=$2 r off on offs=() ons=()
    log "$label: statistics off vs on, $REPEATS rounds"
    for r in $(seq 1 "$REPEATS"); do
        # The order alternates, so that whatever the machine does over time falls on both.
        if [ $((r % 2)) = 1 ]; then
            off=$(wrk_run "http://127.0.0.1:$OFF$path" | rps_of)
            on=$(wrk_run "http://127.0.0.1:$ON$path" | rps_of)
        else
            on=$(wrk_run "http://127.0.0.1:$ON$path" | rps_of)
            off=$(wrk_run "http://127.0.0.1:$OFF$path" | rps_of)
        fi
        echo "   round $r: off $off on $on" >&2
        offs+=("$off"); ons+=("$on")
    done
    row "| $label, statistics on / off | $(py "
import statistics as s
f=[float(x) for x in '${offs[*]}'.split()]; o=[float(x) for x in '${ons[*]}'.split()]
r=[b/a for a,b in zip(f,o)]
m=s.median
print(f'on {m(o):.0f} ({min(o):.0f}–{max(o):.0f}), off {m(f):.0f} ({min(f):.0f}–{max(f):.0f}) req/s: **{m(o)/m(f):.2f}** ({min(r):.2f}–{max(r):.2f}) | | | |')
") |"
}
on_vs_off "Entity Configuration" /.well-known/openid-federation
on_vs_off "fetch (cached)" "$FETCH_Q"
sleep 6 # one flush interval: what the load left in the buffer is written
RECORDED=$(sqlite3 "$WORK/statson/data/pharos.db" 'SELECT COALESCE(SUM(records), 0) FROM stats_batches')
DROPPED=$(curl -fsS "http://127.0.0.1:$ON/metrics" | awk '/^pharos_stats_records_dropped_total/ {print $2}')
note "Statistics on: $RECORDED request records written during the on-rounds, $DROPPED dropped (the buffer drops the oldest when the flusher falls behind; \`pharos_stats_records_dropped_total\` in /metrics)."
pharos_stop statsoff

EXPORT_N=${BENCH_EXPORT_RECORDS:-1000000}
log "bulk-loading $EXPORT_N statistics records"
pharos_stop statson
sqlite3 "$WORK/statson/data/pharos.db" 'DELETE FROM stats_batches'
# Written as the flusher writes them: batches of 8,192 records, one JSON document of columns
# each, run-length encoded but for the durations (controlplane/src/stats/batch.rs).
python3 - "$WORK/statson/data/pharos.db" "$EXPORT_N" <<'PY'
import json, sqlite3, sys, time
path, n = sys.argv[1], int(sys.argv[2])
now = int(time.time()) - 3600
db = sqlite3.connect(path)
for start in range(0, n, 8192):
    ids = range(start, min(n, start + 8192))
    strings, index = [], {}
    def at(v):
        if v is None:
            return 0
        if v not in index:
            strings.append(v)
            index[v] = len(strings)
        return index[v]
    def runs(values):
        out = []
        for v in values:
            if out and out[-2] == v:
                out[-1] += 1
            else:
                out += [v, 1]
        return out
    ts = [now + i % 3600 for i in ids]
    t0 = min(ts)
    doc = {"v": 1, "t0": t0, "duration_us": [100 + i % 5000 for i in ids],
           "ts": runs(t - t0 for t in ts),
           "endpoint": runs(at(("fetch", "list", ".well-known/openid-federation")[i % 3]) for i in ids),
           "method": runs(at("GET") for i in ids), "status": runs(200 for i in ids),
           "client_ip": runs(at(f"192.0.2.{i % 250}") for i in ids), "country": runs(0 for i in ids),
           "user_agent": runs(at(f"bench/{i % 7}") for i in ids), "client_entity_id": runs(0 for i in ids),
           "query_params": runs(at(f'{{"sub":"https://sub{i % 1000:06d}.example.org"}}') for i in ids),
           "request_size": runs(0 for i in ids), "response_size": runs(1234 for i in ids),
           "error_type": runs(0 for i in ids)}
    doc["strings"] = strings
    db.execute("INSERT INTO stats_batches (ts_first, ts_last, records, body) VALUES (?, ?, ?, ?)",
               (t0, max(ts), len(ts), json.dumps(doc, separators=(",", ":"))))
db.commit()
PY
pharos_start statson $ON
sleep 1
IDLE=$(rss_mb statson)
PID=${PHAROS_PIDS[statson]}
echo 0 >"$WORK/export.peak"
(
    peak=0
    while kill -0 "$PID" 2>/dev/null && [ ! -f "$WORK/export.done" ]; do
        r=$(ps -o rss= -p "$PID" 2>/dev/null || echo 0)
        if [ "$r" -gt "$peak" ]; then peak=$r; echo "$peak" >"$WORK/export.peak"; fi
        sleep 0.05
    done
) &
SAMPLER=$!
T0=$(date +%s%N)
curl -fsS -o "$WORK/export.csv" \
    "http://127.0.0.1:$ON/api/v1/admin/stats/export?from=$(date -u -d '-1 day' +%Y-%m-%d)" \
    || die "export failed"
T1=$(date +%s%N)
touch "$WORK/export.done"
wait "$SAMPLER" 2>/dev/null || true
LINES=$(($(wc -l <"$WORK/export.csv") - 1))
[ "$LINES" = "$EXPORT_N" ] || die "export returned $LINES records, expected $EXPORT_N"
PEAK=$(($(cat "$WORK/export.peak") / 1024))
SECS=$(py "print(f'{($T1 - $T0) / 1e9:.1f}')")
MB=$(($(wc -c <"$WORK/export.csv") / 1048576))
rm -f "$WORK/export.csv"
row "| CSV export of $EXPORT_N records ($MB MB) through the Admin API | $SECS s; peak RSS $PEAK MB, idle $IDLE MB: **+$((PEAK - IDLE)) MB** | | | | |"
pharos_stop statson
