#!/usr/bin/env bash
# User-space instructions per request on the cached paths, under callgrind: exact and
# repeatable on a shared 2-core machine where req/s is not, so a change can be compared with
# the previous binary in a few minutes without a quiet machine (issue 34's guard).
#
#   ec       GET /.well-known/openid-federation
#   fetch    GET /fetch?sub=<one subordinate>, its signed statement cached
#   resolve  GET /resolve?sub=<leaf>&trust_anchor=<anchor>, the answer cached (warm)
#   hec      GET /h/.well-known/openid-federation of a hosted entity http://127.0.0.1:<port>/h
#   hfetch   GET /h/fetch?sub=<the same subordinate>, its statement cached
# (the hosted paths only for a binary that hosts entities; `n/a` otherwise). With the hosted
# entity present, the default entity's paths also pay for looking the request up among the
# hosted ones, as they do in a deployment that hosts several.
#
# Only the measured instance runs under callgrind; the anchor and the leaf it resolves through
# run natively. Each path gets BENCH_CG_REQUESTS requests from one wrk connection after a warm-up
# request, and the counters are zeroed just before them, so start-up and the first (signing)
# request are not counted.
#
# Usage: deploy/bench/callgrind_paths.sh [BINARY ...]
#   Each BINARY (default: this checkout's release build, built first) is measured in turn; one
#   line per binary and path: `BINARY PATH instructions_per_request`.
# Environment: BENCH_CG_SECONDS (10, wrk's duration per path), OUT (callgrind files, kept),
# BENCH_CG_HOSTED (1; 0: no hosted entity, the single-entity deployment's paths only).
# Needs valgrind, wrk, curl, python3.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
SECS=${BENCH_CG_SECONDS:-10}
OUT=${OUT:-$(mktemp -d)}
for tool in valgrind callgrind_control callgrind_annotate wrk curl python3; do
    command -v "$tool" >/dev/null || { echo "callgrind_paths: $tool not found" >&2; exit 1; }
done
if [ "$#" -eq 0 ]; then
    (cd "$ROOT" && cargo build --release -q -p pharos)
    set -- "$TARGET/release/pharos"
fi

TA=17781 LEAF=17782 M=17783
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

config() { # NAME PORT
    mkdir -p "$OUT/$1"
    cat >"$OUT/$1/config.yaml" <<EOC
entity_id: http://127.0.0.1:$2
server: {ip_listen: 127.0.0.1, port: $2}
storage: {driver: sqlite, data_dir: $OUT/$1/data}
logging: {internal: {level: warn}}
federation: {block_private_addresses: false}
EOC
}
wait_up() { for _ in $(seq 1 1200); do curl -fs -o /dev/null "http://127.0.0.1:$1/readyz" && return 0; sleep 0.1; done; echo "port $1 never ready" >&2; exit 1; }
admin() { curl -fsS -o /dev/null -X "$2" "http://127.0.0.1:$1/api/v1/admin$3" -H 'content-type: application/json' -d "$4"; }
jwks_of() {
    curl -fsS "http://127.0.0.1:$1/.well-known/openid-federation" | python3 -c '
import sys, json, base64
p = sys.stdin.read().split(".")[1]
print(json.dumps(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))["jwks"]))'
}
enc() { python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

for BIN in "$@"; do
    name=$(basename "$BIN")
    rm -rf "$OUT/ta" "$OUT/leaf" "$OUT/m"
    # The anchor and the leaf, natively (the same binary).
    for n in ta:$TA leaf:$LEAF; do
        config "${n%%:*}" "${n#*:}"
        "$BIN" serve --config "$OUT/${n%%:*}/config.yaml" >"$OUT/${n%%:*}.log" 2>&1 &
        PIDS+=("$!")
        wait_up "${n#*:}"
    done
    admin $TA POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
    admin $TA POST /subordinates "{\"entity_id\":\"http://127.0.0.1:$LEAF\",\"jwks\":$(jwks_of $LEAF)}"
    admin $LEAF POST /entity-configuration/authority-hints "{\"entity_id\":\"http://127.0.0.1:$TA\"}"
    # The measured instance: a resolver that also serves a fetch of one subordinate.
    config m $M
    valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$name.%p" "$BIN" serve \
        --config "$OUT/m/config.yaml" >"$OUT/m.log" 2>&1 &
    VP=$!
    PIDS+=("$VP")
    wait_up $M
    admin $M POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
    admin $M POST /federation-endpoints '{"type":"resolve","path":"/resolve"}'
    admin $M POST /trust-anchors "{\"entity_id\":\"http://127.0.0.1:$TA\",\"jwks\":$(jwks_of $TA)}"
    admin $M POST /subordinates "{\"entity_id\":\"http://127.0.0.1:$LEAF\",\"jwks\":$(jwks_of $LEAF)}"
    PATHS="ec fetch resolve"
    if [ "${BENCH_CG_HOSTED:-1}" = 1 ] && curl -fsS -o /dev/null -X POST "http://127.0.0.1:$M/api/v1/admin/entities" \
        -H 'content-type: application/json' -d "{\"entity_id\":\"http://127.0.0.1:$M/h\"}"; then
        admin $M POST /entities/2/federation-endpoints '{"type":"fetch","path":"/fetch"}'
        admin $M POST /entities/2/subordinates "{\"entity_id\":\"http://127.0.0.1:$LEAF\",\"jwks\":$(jwks_of $LEAF)}"
        PATHS="$PATHS hec hfetch"
    else
        echo "$name hec n/a"
        echo "$name hfetch n/a"
    fi
    declare -A URLS=(
        [ec]="http://127.0.0.1:$M/.well-known/openid-federation"
        [fetch]="http://127.0.0.1:$M/fetch?sub=$(enc "http://127.0.0.1:$LEAF")"
        [resolve]="http://127.0.0.1:$M/resolve?sub=$(enc "http://127.0.0.1:$LEAF")&trust_anchor=$(enc "http://127.0.0.1:$TA")"
        [hec]="http://127.0.0.1:$M/h/.well-known/openid-federation"
        [hfetch]="http://127.0.0.1:$M/h/fetch?sub=$(enc "http://127.0.0.1:$LEAF")"
    )
    for path in $PATHS; do
        curl -fsS -o /dev/null "${URLS[$path]}" || { echo "$name: $path does not answer" >&2; exit 1; }
        curl -fsS -o /dev/null "${URLS[$path]}"
        callgrind_control -z "$VP" >/dev/null 2>&1
        n=$(wrk -t1 -c1 -d"${SECS}s" "${URLS[$path]}" | awk '/requests in/ {print $1}')
        callgrind_control -d "$VP" >/dev/null 2>&1
        sleep 1
        f=$(ls -t "$OUT/cg.$name.$VP".* | head -n1)
        total=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
        mv "$f" "$OUT/cg.$name.$path"
        echo "$name $path $((total / n))"
    done
    cleanup
    PIDS=()
done
echo "callgrind files in $OUT (callgrind_annotate --inclusive=yes FILE)" >&2
