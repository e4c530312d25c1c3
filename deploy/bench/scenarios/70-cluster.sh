# shellcheck shell=bash
# Three replicas on one PostgreSQL (issue 19): write on one replica → visible on another
# (p50/p99), leader failover time after `kill -9`, and Entity Configuration throughput of 1, 2
# and 3 replicas behind an nginx upstream (as a ratio to one replica: replicas, nginx and wrk
# share this machine's cores). Needs BENCH_PG_DSN (a database to create the bench database
# from, e.g. postgres://postgres@127.0.0.1:5432/postgres) and psql; skipped otherwise.
if [ -z "${BENCH_PG_DSN:-}" ] || ! command -v psql >/dev/null; then
    note "cluster scenario skipped: set BENCH_PG_DSN and install psql (postgresql-client)"
else
CL_DB=pharos_bench_$$
psql -q "$BENCH_PG_DSN" -c "CREATE DATABASE $CL_DB" >/dev/null || die "cannot create $CL_DB"
CL_DSN=$(python3 -c "import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path='/' + sys.argv[2])))" "$BENCH_PG_DSN" "$CL_DB")
CL_PORTS=(17760 17761 17762)
CL_SUBS=${BENCH_CLUSTER_SUBORDINATES:-1000}
for i in 0 1 2; do
    mkdir -p "$WORK/r$i"
    cat >"$WORK/r$i/config.yaml" <<YAML
entity_id: http://127.0.0.1:17769
server:
  ip_listen: 127.0.0.1
  port: ${CL_PORTS[$i]}
storage:
  driver: postgres
  dsn: $CL_DSN
  endpoint_auth:
    jti_backend: db
cluster:
  enabled: true
  instance_id: r$i
  leader_lease: 10s
logging:
  internal:
    level: info
YAML
    pharos_start "r$i" "${CL_PORTS[$i]}"
done
A=${CL_PORTS[0]}
admin "$A" POST /federation-endpoints '{"type":"fetch","path":"/fetch","config":{}}'
python3 - "$A" "$CL_SUBS" <<'PY'
import http.client, json, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port)
key = {"kty": "EC", "crv": "P-256", "kid": "k1",
       "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
for i in range(1, n + 1):
    body = json.dumps({"entity_id": f"https://sub{i:06d}.example.org", "jwks": {"keys": [key]}})
    c.request("POST", "/api/v1/admin/subordinates", body=body, headers={"content-type": "application/json"})
    r = c.getresponse(); r.read()
    if r.status != 201:
        sys.exit(f"adding subordinate {i}: {r.status}")
PY

# Write on r0, poll the fetch URL on r1 until the change shows.
SAMPLES=${BENCH_WRITE_SAMPLES:-200}
python3 - "$A" "${CL_PORTS[1]}" "$CL_SUBS" "$SAMPLES" >"$WORK/cluster-visible.txt" <<'PY'
import http.client, random, sys, time
pa, pb, n, samples = (int(x) for x in sys.argv[1:5])
admin = http.client.HTTPConnection("127.0.0.1", pa)
other = http.client.HTTPConnection("127.0.0.1", pb)
def call(conn, method, path, body=None):
    conn.request(method, path, body=body, headers={"content-type": "text/plain"} if body else {})
    r = conn.getresponse(); r.read()
    return r.status
random.seed(7)
for i in random.sample(range(1, n + 1), samples // 2):
    fetch = f"/fetch?sub=https%3A%2F%2Fsub{i:06d}.example.org"
    for status, expect in (("blocked", 404), ("active", 200)):
        t0 = time.perf_counter()
        if call(admin, "PUT", f"/api/v1/admin/subordinates/{i}/status", status) != 200:
            sys.exit("admin PUT status failed")
        for _ in range(1000000):
            if call(other, "GET", fetch) == expect:
                break
        else:
            sys.exit(f"change never visible on the other replica for subordinate {i}")
        print(time.perf_counter() - t0)
PY
row "| cluster: write on replica 1 → visible on replica 2, PostgreSQL NOTIFY (n=$SAMPLES) | p50 $(pct 50 "$WORK/cluster-visible.txt" 1000) ms, p99 $(pct 99 "$WORK/cluster-visible.txt" 1000) ms (goal p99 ≤ 100 ms) | | | | |"

# Throughput of 1, 2, 3 replicas behind nginx (Entity Configuration).
cl_nginx() {
    local n=$1 servers="" i
    for i in $(seq 0 $((n - 1))); do servers+="        server 127.0.0.1:${CL_PORTS[$i]};"$'\n'; done
    cat >"$WORK/cluster-nginx.conf" <<NGX
worker_processes auto;
pid $WORK/cluster-nginx.pid;
error_log $WORK/cluster-nginx.err;
events { worker_connections 4096; }
http {
    access_log off;
    upstream pharos {
$servers        keepalive 128;
    }
    server {
        listen 127.0.0.1:17768;
        location / { proxy_pass http://pharos; proxy_http_version 1.1; proxy_set_header Connection ""; }
    }
}
NGX
    nginx -c "$WORK/cluster-nginx.conf" -g 'daemon off;' &
    CL_NGINX=$!
    for i in $(seq 1 100); do
        curl -fs -o /dev/null http://127.0.0.1:17768/.well-known/openid-federation && break
        sleep 0.05
    done
}
declare -A CL_RPS=()
for n in 1 2 3; do
    cl_nginx "$n"
    rs=()
    for r in $(seq 1 "$REPEATS"); do
        rs+=("$(wrk_run http://127.0.0.1:17768/.well-known/openid-federation | rps_of)")
    done
    kill "$CL_NGINX"; wait "$CL_NGINX" 2>/dev/null || true
    CL_RPS[$n]=$(py "import statistics as s; print(round(s.median([float(x) for x in '${rs[*]}'.split()])))")
done
row "| cluster: Entity Configuration via nginx, 1 / 2 / 3 replicas, req/s | ${CL_RPS[1]} / ${CL_RPS[2]} / ${CL_RPS[3]} (**$(py "print(f'{${CL_RPS[2]}/${CL_RPS[1]}:.2f}')")** / **$(py "print(f'{${CL_RPS[3]}/${CL_RPS[1]}:.2f}')")** of one) | | | | |"
note "Cluster throughput: replicas, nginx and wrk share this machine's $(nproc) cores, so adding replicas cannot add CPU; the ratio shows the cost of the proxy hop and of sharing, not the gain of adding hosts."

# Failover: kill -9 the leader, time until another replica logs that it leads.
leader=""
for i in 0 1 2; do
    grep -q 'leader=true' "$WORK/r$i/log" 2>/dev/null && leader=$i
done
[ -n "$leader" ] || die "no replica reports leadership"
marks=()
for i in 0 1 2; do marks[$i]=$(grep -c 'leader=true' "$WORK/r$i/log" || true); done
t0=$(date +%s%N)
kill -9 "${PHAROS_PIDS[r$leader]}"; wait "${PHAROS_PIDS[r$leader]}" 2>/dev/null || true
unset "PHAROS_PIDS[r$leader]"
took=""
for _ in $(seq 1 3000); do
    for i in 0 1 2; do
        [ "$i" = "$leader" ] && continue
        if [ "$(grep -c 'leader=true' "$WORK/r$i/log" || true)" -gt "${marks[$i]}" ]; then
            took=$(py "print(round(($(date +%s%N) - $t0) / 1e9, 2))")
            break 2
        fi
    done
    sleep 0.01
done
[ -n "$took" ] || die "no replica took over after the leader was killed"
row "| cluster: leader killed (kill -9) → another replica leads (leader_lease 10 s) | $took s | | | | |"
for i in 0 1 2; do [ "$i" = "$leader" ] || pharos_stop "r$i"; done
psql -q "$BENCH_PG_DSN" -c "DROP DATABASE $CL_DB" >/dev/null || true
fi
