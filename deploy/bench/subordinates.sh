#!/usr/bin/env bash
# Loads 100,000 subordinates into a release Pharos and measures the fetch (random subjects) and
# list endpoints with wrk, against nginx serving the identical response bytes from static files
# on the same machine (the practical ceiling of an HTTP responder here). Prints ratios.
#
# Loading goes straight into Pharos's SQLite file (the Admin API would take minutes for 100,000
# POSTs); Pharos is then restarted, which loads the snapshot from the database, and the result
# is verified through the HTTP API before anything is measured.
#
# Usage: deploy/bench/subordinates.sh [N=100000] [DURATION=10s] [CONNECTIONS=32]
# Needs: cargo, sqlite3, wrk, nginx, curl, python3 (apt-get install -y wrk nginx sqlite3 curl).
set -euo pipefail

N=${1:-100000}
DURATION=${2:-10s}
CONNS=${3:-32}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$(mktemp -d)
PORT=17672
NGINX_PORT=17673
BASE=http://127.0.0.1:$PORT
PHAROS_PID=""
NGINX_PID=""

cleanup() {
    [ -n "$PHAROS_PID" ] && kill "$PHAROS_PID" 2>/dev/null || true
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

for tool in sqlite3 wrk nginx curl python3; do
    command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done

echo "== building release binary"
(cd "$ROOT" && cargo build --release -q -p pharos-controlplane)
BIN=$TARGET/release/pharos

cat >"$WORK/config.yaml" <<EOF
entity_id: $BASE
server:
  ip_listen: 127.0.0.1
  port: $PORT
storage:
  driver: sqlite
  data_dir: $WORK/data
EOF

start_pharos() {
    "$BIN" serve --config "$WORK/config.yaml" >"$WORK/pharos.log" 2>&1 &
    PHAROS_PID=$!
    for _ in $(seq 1 600); do
        curl -fs "$BASE/readyz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "pharos did not become ready" >&2
    cat "$WORK/pharos.log" >&2
    exit 1
}

stop_pharos() {
    kill "$PHAROS_PID"
    wait "$PHAROS_PID" 2>/dev/null || true
    PHAROS_PID=""
}

echo "== first start: schema, keys, endpoints"
start_pharos
for ep in fetch list; do
    curl -fs -X POST "$BASE/api/v1/admin/federation-endpoints" \
        -d "{\"type\":\"$ep\",\"path\":\"/$ep\"}" >/dev/null
done
stop_pharos

echo "== bulk-loading $N subordinates into SQLite"
python3 - "$WORK/load.sql" "$N" <<'EOF'
import json, sys, time
path, n = sys.argv[1], int(sys.argv[2])
now = int(time.time())
key = {"kty": "EC", "crv": "P-256", "kid": "k1",
       "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
with open(path, "w") as f:
    f.write("BEGIN;\n")
    for i in range(1, n + 1):
        eid = f"https://sub{i:06d}.example.org"
        key["kid"] = f"k{i}"
        jwks = json.dumps({"keys": [key]}).replace("'", "''")
        f.write(f"INSERT INTO subordinates (id, entity_id, description, status, jwks, created_at, updated_at) "
                f"VALUES ({i}, '{eid}', '', 'active', '{jwks}', {now}, {now});\n")
        t = "openid_provider" if i % 2 else "openid_relying_party"
        f.write(f"INSERT INTO subordinate_entity_types (subordinate_id, entity_type) VALUES ({i}, '{t}');\n")
    f.write("COMMIT;\n")
EOF
sqlite3 "$WORK/data/pharos.db" <"$WORK/load.sql"

echo "== restart (loads the snapshot) and verify through the API"
T0=$(date +%s.%N)
start_pharos
STARTUP=$(python3 -c "print(round($(date +%s.%N) - $T0, 2))")
curl -fs "$BASE/list" >"$WORK/list.json"
COUNT=$(python3 -c "import json;print(len(json.load(open('$WORK/list.json'))))")
[ "$COUNT" = "$N" ] || { echo "list returned $COUNT entries, expected $N" >&2; exit 1; }
SUB=https%3A%2F%2Fsub000042.example.org
curl -fs -D "$WORK/fetch.headers" "$BASE/fetch?sub=$SUB" >"$WORK/fetch.jwt"
grep -qi '^content-type: application/entity-statement+jwt' "$WORK/fetch.headers"
curl -fs "$BASE/api/v1/admin/subordinates/42" | grep -q 'sub000042' || { echo "admin GET failed" >&2; exit 1; }
echo "verified: list has $N entries, fetch and admin GET answer"
RSS_MB=$(( $(ps -o rss= -p "$PHAROS_PID") / 1024 ))
LIST_MS=$(curl -fs -o /dev/null -w '%{time_total}' "$BASE/list?entity_type=openid_provider" | python3 -c "import sys;print(round(float(sys.stdin.read())*1000,1))")

echo "== nginx with the same bytes"
mkdir -p "$WORK/www"
cp "$WORK/list.json" "$WORK/www/list"
cp "$WORK/fetch.jwt" "$WORK/www/fetch"
cat >"$WORK/nginx.conf" <<EOF
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err;
events { worker_connections 1024; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $WORK/www;
        location = /list  { default_type application/json; }
        location = /fetch { default_type application/entity-statement+jwt; }
    }
}
EOF
# nginx workers run unprivileged: the files must be world-readable.
chmod 755 "$WORK" "$WORK/www"
chmod 644 "$WORK/www/list" "$WORK/www/fetch"
nginx -c "$WORK/nginx.conf" -g 'daemon off;' &
NGINX_PID=$!
sleep 0.5
# The reference must answer 200 with the identical bytes, or the comparison means nothing.
for f in list fetch; do
    curl -fs "http://127.0.0.1:$NGINX_PORT/$f" | cmp -s - "$WORK/www/$f" \
        || { echo "nginx does not serve $f correctly" >&2; cat "$WORK/nginx.err" >&2; exit 1; }
done

cat >"$WORK/random_sub.lua" <<EOF
math.randomseed(os.time())
request = function()
    local i = math.random(1, $N)
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fsub%06d.example.org", i))
end
EOF

rps() { awk '/Requests\/sec/ {print $2}'; }
run() {
    local out
    out=$(wrk -t2 -c"$CONNS" -d"$DURATION" "$@" 2>&1)
    echo "$out" >>"$WORK/wrk.log"
    if grep -q 'Non-2xx' <<<"$out"; then
        echo "non-2xx answers in: $*" >&2
        echo "$out" >&2
        exit 1
    fi
    rps <<<"$out"
}

echo "== measuring ($DURATION, $CONNS connections, 2 threads each)"
P_FETCH=$(run -s "$WORK/random_sub.lua" "$BASE")
N_FETCH=$(run "http://127.0.0.1:$NGINX_PORT/fetch")
P_ONE=$(run "$BASE/fetch?sub=$SUB")
P_LIST=$(run "$BASE/list")
N_LIST=$(run "http://127.0.0.1:$NGINX_PORT/list")

ratio() { python3 -c "print(f'{$1 / $2:.3f}')"; }
echo
echo "| endpoint | Pharos req/s | nginx req/s | ratio |"
echo "|---|---|---|---|"
echo "| fetch (random of $N subjects, first requests sign) | $P_FETCH | $N_FETCH | $(ratio "$P_FETCH" "$N_FETCH") |"
echo "| fetch (one subject, signed statement cached) | $P_ONE | $N_FETCH | $(ratio "$P_ONE" "$N_FETCH") |"
echo "| list (unfiltered, $(wc -c <"$WORK/list.json") bytes) | $P_LIST | $N_LIST | $(ratio "$P_LIST" "$N_LIST") |"
echo
echo "- ready after start with $N subordinates (SQLite): $STARTUP s"
echo "- RSS with $N subordinates after the load check: $RSS_MB MB"
echo "- one filtered list request (entity_type, $((N / 2)) matches, uncached): $LIST_MS ms"
