#!/usr/bin/env bash
# Replica propagation (issue 33, acceptance 4): two replicas of the release binary on one
# PostgreSQL or MariaDB database holding N subordinates (default 100,000); WRITES subordinates
# (default 200) are added one after the other through replica A's Admin API, and after each
# acknowledgement replica B's fetch endpoint is polled (every millisecond) until it serves the
# new subordinate. Prints p50, p99 and max of acknowledgement -> visible on B, per database.
#
#   deploy/bench/propagation.sh [postgres] [mysql]     (both by default)
#
# Needs the DSNs of a server where databases may be created: PROPAGATION_POSTGRES_DSN
# (default postgres://postgres@127.0.0.1:5432/test) and PROPAGATION_MYSQL_DSN (default
# mysql://root@127.0.0.1:3306/test), psql and the mysql client. BENCH_BIN: a prebuilt binary.
set -euo pipefail
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"

N=${PROPAGATION_SUBORDINATES:-100000}
WRITES=${PROPAGATION_WRITES:-200}
PG_BASE=${PROPAGATION_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/test}
MY_BASE=${PROPAGATION_MYSQL_DSN:-mysql://root@127.0.0.1:3306/test}
PORT_A=17810
PORT_B=17811
BACKENDS=("$@")
[ ${#BACKENDS[@]} -gt 0 ] || BACKENDS=(postgres mysql)

if [ -z "${BENCH_BIN:-}" ]; then
    log "building the release binary"
    (cd "$ROOT" && cargo build --release -p pharos >&2)
fi
[ -x "$BIN" ] || die "no binary at $BIN"

# replica NAME PORT DRIVER DSN: starts one replica, returns once it is ready.
replica() {
    local name=$1 port=$2 driver=$3 dsn=$4
    env -i PATH="$PATH" HOME="$WORK" RUST_LOG=warn \
        SVC_ENTITY_ID=https://federation.example.org \
        SVC_SERVER_IP_LISTEN=127.0.0.1 SVC_SERVER_PORT="$port" \
        SVC_SERVER_RATE_LIMITS_ENABLED=false \
        SVC_STORAGE_DRIVER="$driver" SVC_STORAGE_DSN="$dsn" SVC_STORAGE_DATA_DIR="$WORK/$name" \
        SVC_STORAGE_ENDPOINT_AUTH_JTI_BACKEND=db \
        SVC_CLUSTER_ENABLED=true SVC_CLUSTER_INSTANCE_ID="$name" \
        "$BIN" serve >"$WORK/$name.log" 2>&1 &
    PHAROS_PIDS[$name]=$!
    for _ in $(seq 1 1200); do
        curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
        kill -0 "${PHAROS_PIDS[$name]}" 2>/dev/null || { cat "$WORK/$name.log" >&2; die "$name exited"; }
        sleep 0.1
    done
    die "$name never became ready"
}

stop() {
    local name=$1
    kill "${PHAROS_PIDS[$name]}" 2>/dev/null || true
    wait "${PHAROS_PIDS[$name]}" 2>/dev/null || true
    unset "PHAROS_PIDS[$name]"
}

for backend in "${BACKENDS[@]}"; do
    name=pharos_prop_$$
    case $backend in
        postgres)
            psql "$PG_BASE" -qc "CREATE DATABASE $name" >/dev/null
            dsn="${PG_BASE%/*}/$name"
            drop() { psql "$PG_BASE" -qc "DROP DATABASE IF EXISTS $name" >/dev/null; }
            ;;
        mysql)
            mysql -h 127.0.0.1 -uroot -e "CREATE DATABASE $name"
            dsn="${MY_BASE%/*}/$name"
            drop() { mysql -h 127.0.0.1 -uroot -e "DROP DATABASE IF EXISTS $name"; }
            ;;
        *) die "unknown database $backend (postgres or mysql)" ;;
    esac
    log "$backend: migrating, then loading $N subordinates"
    replica a "$PORT_A" "$backend" "$dsn"
    stop a
    python3 "$BENCH_DIR/gen_subordinates.py" "$N" "$backend" "$dsn" >/dev/null
    replica a "$PORT_A" "$backend" "$dsn"
    replica b "$PORT_B" "$backend" "$dsn"
    curl -fs -X POST -H 'content-type: application/json' \
        -d '{"type":"fetch","path":"/fetch","config":{}}' \
        "http://127.0.0.1:$PORT_A/api/v1/admin/federation-endpoints" >/dev/null
    log "$backend: $WRITES writes on A, each polled on B"
    python3 - "$backend" "$N" "$WRITES" "$PORT_A" "$PORT_B" <<'PY'
import http.client, json, sys, time
backend, n, writes, pa, pb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
key = {"kty": "EC", "crv": "P-256", "kid": "k1",
       "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
a = http.client.HTTPConnection("127.0.0.1", int(pa))
b = http.client.HTTPConnection("127.0.0.1", int(pb))
def get(c, path):
    c.request("GET", path)
    r = c.getresponse(); r.read()
    return r.status
# The fetch endpoint reaches B first.
deadline = time.time() + 30
while get(b, "/fetch?sub=https%3A%2F%2Fsub0000001.example.org") != 200:
    if time.time() > deadline: sys.exit("fetch endpoint never served on B")
    time.sleep(0.01)
lat = []
for i in range(writes):
    sub = f"https://prop-{i}.example.net"
    body = json.dumps({"entity_id": sub, "jwks": {"keys": [key]}})
    a.request("POST", "/api/v1/admin/subordinates", body, {"content-type": "application/json"})
    r = a.getresponse(); r.read()
    if r.status != 201: sys.exit(f"write {i}: {r.status}")
    acked = time.perf_counter()
    path = "/fetch?sub=" + sub.replace(":", "%3A").replace("/", "%2F")
    while get(b, path) != 200:
        if time.perf_counter() - acked > 30: sys.exit(f"write {i} never visible on B")
        time.sleep(0.001)
    lat.append((time.perf_counter() - acked) * 1000)
lat.sort()
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
print(f"{backend}: {n} subordinates, {writes} writes: acknowledged on A -> served on B "
      f"p50 {pick(0.50):.1f} ms, p99 {pick(0.99):.1f} ms, max {lat[-1]:.1f} ms")
PY
    stop a
    stop b
    drop
done
