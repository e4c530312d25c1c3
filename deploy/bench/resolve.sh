#!/usr/bin/env bash
# Resolve benchmarks on loopback with the release binary:
#  - warm: wrk against a resolver answering one (sub, trust_anchor) from its caches, as a ratio
#    to nginx serving the identical response bytes from a static file;
#  - cold: a 3-level chain (trust anchor -> intermediate -> leaf, three Pharos processes)
#    resolved by a freshly started resolver process (empty caches: every statement is fetched
#    and verified), repeated SAMPLES times; median and p99 of the request's time_total.
#
# Usage: deploy/bench/resolve.sh [DURATION=10s] [CONNECTIONS=32] [SAMPLES=100]
# Needs: cargo, wrk, nginx, curl, python3.
set -euo pipefail

DURATION=${1:-10s}
CONNS=${2:-32}
SAMPLES=${3:-100}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$(mktemp -d)
NGINX_PORT=17690
PIDS=()
NGINX_PID=""

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

for tool in wrk nginx curl python3; do
    command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done

echo "== building release binary"
(cd "$ROOT" && cargo build --release -q -p pharos-controlplane)
BIN=$TARGET/release/pharos

# start NAME PORT: a Pharos with its own SQLite directory; sets LAST_PID.
start() {
    local name=$1 port=$2
    mkdir -p "$WORK/$name"
    cat >"$WORK/$name/config.yaml" <<EOF
entity_id: http://127.0.0.1:$port
server:
  ip_listen: 127.0.0.1
  port: $port
storage:
  driver: sqlite
  data_dir: $WORK/$name/data
logging:
  internal:
    level: warn
EOF
    "$BIN" serve --config "$WORK/$name/config.yaml" >"$WORK/$name/log" 2>&1 &
    LAST_PID=$!
    PIDS+=("$LAST_PID")
    for _ in $(seq 1 600); do
        curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "$name did not become ready" >&2
    cat "$WORK/$name/log" >&2
    exit 1
}

admin() { # PORT METHOD PATH BODY
    curl -fs -X "$2" "http://127.0.0.1:$1/api/v1/admin$3" -H 'content-type: application/json' -d "$4" >/dev/null
}
jwks_of() { # PORT -> the jwks of its Entity Configuration
    curl -fs "http://127.0.0.1:$1/.well-known/openid-federation" | python3 -c '
import sys, json, base64
p = sys.stdin.read().split(".")[1]
print(json.dumps(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))["jwks"]))'
}

TA=17681 IM=17682 LEAF=17683 R=17684
echo "== federation: trust anchor :$TA -> intermediate :$IM -> leaf :$LEAF"
start ta $TA; start im $IM; start leaf $LEAF
for p in $TA $IM; do admin $p POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'; done
admin $LEAF PUT /entity-configuration/metadata/openid_relying_party \
    '{"client_name":"leaf","client_registration_types":["automatic"]}'
admin $TA POST /subordinates "{\"entity_id\":\"http://127.0.0.1:$IM\",\"jwks\":$(jwks_of $IM)}"
admin $IM POST /entity-configuration/authority-hints "{\"entity_id\":\"http://127.0.0.1:$TA\"}"
admin $IM POST /subordinates "{\"entity_id\":\"http://127.0.0.1:$LEAF\",\"jwks\":$(jwks_of $LEAF)}"
admin $LEAF POST /entity-configuration/authority-hints "{\"entity_id\":\"http://127.0.0.1:$IM\"}"
admin $TA PUT "/subordinates/http%3A%2F%2F127.0.0.1%3A$IM/metadata-policies" \
    '{"openid_relying_party":{"contacts":{"add":["fed@ta.example"]}}}'

QUERY="/resolve?sub=http%3A%2F%2F127.0.0.1%3A$LEAF&trust_anchor=http%3A%2F%2F127.0.0.1%3A$TA"

echo "== cold: $SAMPLES fresh resolver processes, first request each"
: >"$WORK/cold.txt"
for i in $(seq 1 "$SAMPLES"); do
    rm -rf "$WORK/r"
    start r $R
    admin $R POST /federation-endpoints '{"type":"resolve","path":"/resolve"}'
    curl -fs -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$R$QUERY" >>"$WORK/cold.txt"
    kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
done
read -r COLD_MEDIAN COLD_P99 < <(python3 - "$WORK/cold.txt" <<'EOF'
import sys, statistics
xs = sorted(float(l) * 1000 for l in open(sys.argv[1]) if l.strip())
p99 = xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]
print(f"{statistics.median(xs):.2f} {p99:.2f}")
EOF
)

echo "== warm: wrk on one resolver vs nginx with the same bytes"
rm -rf "$WORK/r"
start r $R
admin $R POST /federation-endpoints '{"type":"resolve","path":"/resolve"}'
mkdir -p "$WORK/www"
curl -fs -D "$WORK/resolve.headers" "http://127.0.0.1:$R$QUERY" >"$WORK/www/resolve"
grep -qi '^content-type: application/resolve-response+jwt' "$WORK/resolve.headers"
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
        location = /resolve { default_type application/resolve-response+jwt; }
    }
}
EOF
nginx -c "$WORK/nginx.conf" -g 'daemon off;' &
NGINX_PID=$!
sleep 0.5
rps() { awk '/Requests\/sec/ {print $2}'; }
run() { wrk -t2 -c"$CONNS" -d"$DURATION" "$@" 2>&1 | tee -a "$WORK/wrk.log" | rps; }
P_WARM=$(run "http://127.0.0.1:$R$QUERY")
N_WARM=$(run "http://127.0.0.1:$NGINX_PORT/resolve")

echo
echo "| measurement | Pharos | nginx | ratio |"
echo "|---|---|---|---|"
echo "| warm resolve, req/s ($(wc -c <"$WORK/www/resolve") bytes, $CONNS connections) | $P_WARM | $N_WARM | $(python3 -c "print(f'{$P_WARM / $N_WARM:.3f}')") |"
echo "| cold 3-level resolve, median ms (n=$SAMPLES) | $COLD_MEDIAN | | |"
echo "| cold 3-level resolve, p99 ms (n=$SAMPLES) | $COLD_P99 | | |"
