#!/usr/bin/env bash
# Throughput of two pharos binaries on the cached paths, interleaved round by round in one run
# (issue 34, acceptance 2): the figure that says whether a change won or lost, on a machine
# whose absolute speed moves between runs.
#
#   ec       GET /.well-known/openid-federation
#   fetch    GET /fetch?sub=<one subordinate>, its signed statement cached
#   resolve  GET /resolve?sub=<leaf>&trust_anchor=<anchor>, the answer cached (warm)
#
# Both measured instances run side by side, each with the same trust anchor and leaf (served by
# the NEW binary), and are idle while the other is measured. Each round measures every path on
# OLD, then on NEW, with the same wrk settings; the table gives the median req/s of each and the
# median of the per-round ratios NEW/OLD (min–max in parentheses).
#
# Usage: deploy/bench/ab.sh OLD_BINARY NEW_BINARY
# Environment: BENCH_DURATION (5s), BENCH_REPEATS (5), BENCH_CONNECTIONS (32), BENCH_THREADS (1),
# BENCH_NEW_ENV (space-separated VAR=value pairs for the measured NEW instance only, e.g. to
# compare one binary with a setting on and off: deploy/bench/traces.sh).
# Rounds alternate which side goes first, so a machine that speeds up or slows down during a
# round does not favour one side.
# Rate limits are turned off on a binary that has them (an old one may not know the setting).
# Needs wrk, curl, python3.
set -euo pipefail
[ "$#" -eq 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
OLD=$1 NEW=$2
DURATION=${BENCH_DURATION:-5s} REPEATS=${BENCH_REPEATS:-5}
CONNS=${BENCH_CONNECTIONS:-32} THREADS=${BENCH_THREADS:-1}
for tool in wrk curl python3; do
    command -v "$tool" >/dev/null || { echo "ab: $tool not found" >&2; exit 1; }
done
WORK=$(mktemp -d)
TA=17791 LEAF=17792 PORT_OLD=17793 PORT_NEW=17794
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

config() { # NAME PORT BINARY
    mkdir -p "$WORK/$1"
    local limits=""
    # An unknown key is a configuration error, so the setting is offered only to a binary that
    # knows it.
    if grep -q rate_limits "$3" 2>/dev/null; then limits=", rate_limits: {enabled: false}"; fi
    cat >"$WORK/$1/config.yaml" <<EOC
entity_id: http://127.0.0.1:$2
server: {ip_listen: 127.0.0.1, port: $2$limits}
storage: {driver: sqlite, data_dir: $WORK/$1/data}
logging: {internal: {level: warn}}
federation: {block_private_addresses: false}
EOC
}
start() { # NAME PORT BINARY [VAR=value ...]
    config "$1" "$2" "$3"
    env "${@:4}" "$3" serve --config "$WORK/$1/config.yaml" >"$WORK/$1.log" 2>&1 &
    PIDS+=("$!")
    for _ in $(seq 1 600); do curl -fs -o /dev/null "http://127.0.0.1:$2/readyz" && return 0; sleep 0.1; done
    cat "$WORK/$1.log" >&2; echo "ab: $1 never ready" >&2; exit 1
}
admin() { curl -fsS -o /dev/null -X "$2" "http://127.0.0.1:$1/api/v1/admin$3" -H 'content-type: application/json' -d "$4"; }
jwks_of() {
    curl -fsS "http://127.0.0.1:$1/.well-known/openid-federation" | python3 -c '
import sys, json, base64
p = sys.stdin.read().split(".")[1]
print(json.dumps(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))["jwks"]))'
}
enc() { python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

start ta $TA "$NEW"; start leaf $LEAF "$NEW"
admin $TA POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
admin $TA POST /subordinates "{\"entity_id\":\"http://127.0.0.1:$LEAF\",\"jwks\":$(jwks_of $LEAF)}"
admin $LEAF POST /entity-configuration/authority-hints "{\"entity_id\":\"http://127.0.0.1:$TA\"}"
for side in old:$PORT_OLD:$OLD new:$PORT_NEW:$NEW; do
    IFS=: read -r name port bin <<<"$side"
    extra=()
    # shellcheck disable=SC2206 # word splitting of the pairs is the point
    if [ "$name" = new ]; then extra=(${BENCH_NEW_ENV:-}); fi
    start "$name" "$port" "$bin" "${extra[@]}"
    admin "$port" POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
    admin "$port" POST /federation-endpoints '{"type":"resolve","path":"/resolve"}'
    admin "$port" POST /trust-anchors "{\"entity_id\":\"http://127.0.0.1:$TA\",\"jwks\":$(jwks_of $TA)}"
    admin "$port" POST /subordinates "{\"entity_id\":\"http://127.0.0.1:$LEAF\",\"jwks\":$(jwks_of $LEAF)}"
done
url() { # PORT PATH
    case $2 in
    ec) echo "http://127.0.0.1:$1/.well-known/openid-federation" ;;
    fetch) echo "http://127.0.0.1:$1/fetch?sub=$(enc "http://127.0.0.1:$LEAF")" ;;
    resolve) echo "http://127.0.0.1:$1/resolve?sub=$(enc "http://127.0.0.1:$LEAF")&trust_anchor=$(enc "http://127.0.0.1:$TA")" ;;
    esac
}
for path in ec fetch resolve; do
    for port in $PORT_OLD $PORT_NEW; do
        # Twice: the first answer is computed (and signed), the second must come from the cache.
        for _ in 1 2; do curl -fsS -o /dev/null "$(url $port $path)" || { echo "ab: $path on :$port fails" >&2; exit 1; }; done
    done
done
: >"$WORK/rps"
for round in $(seq 1 "$REPEATS"); do
    order="old:$PORT_OLD new:$PORT_NEW"
    if [ $((round % 2)) -eq 0 ]; then order="new:$PORT_NEW old:$PORT_OLD"; fi
    for path in ec fetch resolve; do
        for side in $order; do
            rps=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" "$(url "${side#*:}" $path)" | awk '/Requests\/sec/ {print $2}')
            echo "$round $path ${side%%:*} $rps" >>"$WORK/rps"
        done
    done
    echo "ab: round $round of $REPEATS done" >&2
done
python3 - "$WORK/rps" "$OLD" "$NEW" "$DURATION" "$REPEATS" "$CONNS" "$THREADS" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
old, new, dur, rep, conns, threads = sys.argv[2:]
print(f"`deploy/bench/ab.sh {old} {new}` (wrk -t{threads} -c{conns} -d{dur}, {rep} interleaved rounds; medians, min–max of the per-round ratios)\n")
print("| path | old req/s | new req/s | new / old |")
print("|---|---|---|---|")
for path in ["ec", "fetch", "resolve"]:
    o = {r[0]: float(r[3]) for r in rows if r[1] == path and r[2] == "old"}
    n = {r[0]: float(r[3]) for r in rows if r[1] == path and r[2] == "new"}
    ratios = [n[k] / o[k] for k in o if k in n and o[k] > 0]
    print(f"| {path} | {statistics.median(o.values()):.0f} | {statistics.median(n.values()):.0f} | "
          f"**{statistics.median(ratios):.2f}** ({min(ratios):.2f}–{max(ratios):.2f}) |")
PY
