#!/usr/bin/env bash
# User-space instructions per Entity Configuration hit, Pharos against the bench responder
# serving the same bytes, both under callgrind (exact and repeatable where req/s on a shared
# 2-core machine is not). Needs valgrind and wrk; builds both binaries like run.sh does.
# Prints each process's instructions per request and leaves the callgrind files in $OUT for
# `callgrind_annotate --inclusive=yes`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PHAROS=${BENCH_BIN:-$TARGET/release/pharos}
RESPONDER=$TARGET/bench-responder/release/bench-responder
OUT=${OUT:-$(mktemp -d)}
P=17795 R=17796
(cd "$ROOT" && cargo build --release -q -p pharos)
(cd "$ROOT/deploy/bench/responder" && CARGO_TARGET_DIR=$TARGET/bench-responder cargo build --release -q)
mkdir -p "$OUT/pharos"
cat >"$OUT/pharos/config.yaml" <<EOC
entity_id: http://127.0.0.1:$P
server: {ip_listen: 127.0.0.1, port: $P}
storage: {driver: sqlite, data_dir: $OUT/pharos/data}
logging: {internal: {level: warn}}
EOC
valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.pharos" "$PHAROS" serve \
    --config "$OUT/pharos/config.yaml" >"$OUT/pharos.log" 2>&1 &
VP=$!
trap 'kill $VP ${VR:-} 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do curl -fs -o "$OUT/ec.jwt" "http://127.0.0.1:$P/.well-known/openid-federation" && break; sleep 0.1; done
valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.responder" "$RESPONDER" "127.0.0.1:$R" \
    "/.well-known/openid-federation=$OUT/ec.jwt=application/entity-statement+jwt" >"$OUT/responder.log" 2>&1 &
VR=$!
for _ in $(seq 1 600); do curl -fs -o /dev/null "http://127.0.0.1:$R/.well-known/openid-federation" && break; sleep 0.1; done
callgrind_control -z "$VP" >/dev/null
callgrind_control -z "$VR" >/dev/null
declare -A N
for pair in pharos:$P responder:$R; do
    N[${pair%%:*}]=$(wrk -t1 -c4 -d20s "http://127.0.0.1:${pair#*:}/.well-known/openid-federation" |
        awk '/requests in/ {print $1}')
done
callgrind_control -d "$VP" >/dev/null
callgrind_control -d "$VR" >/dev/null
sleep 2
for name in pharos responder; do
    total=$(callgrind_annotate "$OUT/cg.$name".* 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
    echo "$name: ${N[$name]} requests, $((total / N[$name])) instructions per request"
done
echo "callgrind files in $OUT"
