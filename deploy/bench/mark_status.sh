#!/usr/bin/env bash
# Trust mark status during resolution with a hanging status endpoint (issue 36, acceptance 3):
# two release Pharos on SQLite. The anchor issues a trust mark to itself and holds it (so its
# own Entity Configuration carries it) and publishes a `federation_trust_mark_status_endpoint`
# that points at a blackhole (a TCP server that accepts and never answers). The resolver has
# the anchor in its repository and resolves the anchor's own configuration, in interleaved
# rounds with the anchor record's `trust_mark_status` `off` (the reference: nobody asked) and
# `fail_closed` (every status request hangs until the 3 s timeout). Reported: the resolve
# endpoint's p50/p99/max latency under load (wrk) per mode, and p99 ratio fail_closed / off.
#
# Each round starts with the mode switched, which makes a new resolution: its first request
# pays the timeout once, the rest are answered from the resolver's caches.
#
# Usage: deploy/bench/mark_status.sh [--no-append]   (appends to BENCHMARKS.md)
# Environment: BENCH_DURATION, BENCH_CONNECTIONS, BENCH_THREADS, BENCH_REPEATS, BENCH_BIN.
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
for tool in curl python3 wrk; do
    command -v "$tool" >/dev/null || { echo "mark_status: $tool not found" >&2; exit 1; }
done
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^BENCH_[A-Z_]+=' || true; } | sort | tr '\n' ' ')deploy/bench/mark_status.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
[ -n "${BENCH_BIN:-}" ] || (cd "$ROOT" && cargo build --release -q -p pharos)
[ -x "$BIN" ] || die "no binary at $BIN"

TA_PORT=17840
R_PORT=17842
HOLE_PORT=17849
TA=http://127.0.0.1:$TA_PORT
TM=https://marks.example.org/member
enc() { py "import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=''))" "$1"; }

# The blackhole: accepts, reads, never answers.
python3 - "$HOLE_PORT" >"$WORK/hole.log" 2>&1 <<'PY' &
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1024)
held = []
def hold(c):
    held.append(c)
    while c.recv(65536):
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=hold, args=(c,), daemon=True).start()
PY
HOLE_PID=$!
trap 'kill $HOLE_PID 2>/dev/null || true; bench_cleanup' EXIT

# Everything runs on loopback: outbound fetches to it must be allowed.
for n in ta r; do
    port=$TA_PORT; [ $n = r ] && port=$R_PORT
    pharos_config "$n" "$port"
    printf 'federation:\n  block_private_addresses: false\n' >>"$WORK/$n/config.yaml"
done
pharos_start ta "$TA_PORT"
admin "$TA_PORT" POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
admin "$TA_PORT" POST /federation-endpoints '{"type":"trust_mark","path":"/trust-mark"}'
admin "$TA_PORT" POST /federation-endpoints "{\"type\":\"trust_mark_status\",\"path\":\"/trust-mark-status\",\"url\":\"http://127.0.0.1:$HOLE_PORT/status\"}"
admin "$TA_PORT" POST /trust-marks/types "{\"trust_mark_type\":\"$TM\",\"trust_mark_issuers\":[{\"issuer\":\"$TA\"}]}"
admin "$TA_PORT" POST /trust-marks/issuance-spec "{\"trust_mark_type\":\"$TM\",\"lifetime\":\"24h\"}"
admin "$TA_PORT" POST "/trust-marks/issuance-spec/$(enc "$TM")/subjects" "{\"entity_id\":\"$TA\"}"
admin "$TA_PORT" POST /entity-configuration/trust-marks "{\"trust_mark_type\":\"$TM\",\"trust_mark_issuer\":\"$TA\"}"
for i in $(seq 1 300); do
    curl -fsS "$TA/.well-known/openid-federation" | cut -d. -f2 | tr '_-' '/+' >"$WORK/ec.b64"
    py "import base64,json,sys; t=open('$WORK/ec.b64').read().strip(); c=json.loads(base64.b64decode(t+'='*(-len(t)%4))); sys.exit(0 if c.get('trust_marks') else 1)" && break
    if [ "$i" = 300 ]; then tail -20 "$WORK/ta/log" >&2; curl -s "$TA/api/v1/admin/entity-configuration/trust-marks" >&2; die "the anchor never published its trust mark"; fi
    sleep 0.1
done
JWKS=$(curl -fsS "$TA/.well-known/openid-federation" | cut -d. -f2 | py "import base64,json,sys; t=sys.stdin.read().strip(); print(json.dumps(json.loads(base64.b64decode(t+'='*(-len(t)%4)))['jwks']))")

pharos_start r "$R_PORT"
admin "$R_PORT" POST /trust-anchors "{\"entity_id\":\"$TA\",\"jwks\":$JWKS}"
admin "$R_PORT" POST /federation-endpoints "{\"type\":\"resolve\",\"path\":\"/resolve\",\"config\":{\"allowed_trust_anchors\":[\"$TA\"]}}"
URL="http://127.0.0.1:$R_PORT/resolve?sub=$(enc "$TA")&trust_anchor=$(enc "$TA")"

mode() {
    admin "$R_PORT" PUT "/trust-anchors/$(enc "$TA")" "{\"jwks\":$JWKS,\"trust_mark_status\":\"$1\"}"
}
marks_in() { curl -fsS "$URL" | cut -d. -f2 | py "import base64,json,sys; t=sys.stdin.read().strip(); print(len(json.loads(base64.b64decode(t+'='*(-len(t)%4))).get('trust_marks', [])))"; }
mode off
[ "$(marks_in)" = 1 ] || die "off: the resolve answer does not carry the mark"
mode fail_closed
[ "$(marks_in)" = 0 ] || die "fail_closed: a mark whose issuer hangs is still returned"

# wrk --latency percentiles, in ms: p50 p99 max.
lat() {
    awk '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        $1 == "50%" { p50 = ms($2) } $1 == "99%" { p99 = ms($2) } $1 == "Latency" && !max { max = ms($4) }
        END { printf "%.2f %.2f %.2f\n", p50, p99, max }'
}
declare -A P50=() P99=() MAX=()
for r in $(seq 1 "$REPEATS"); do
    # The order alternates, so that neither mode always follows the other.
    order="off fail_closed"
    [ $((r % 2)) = 0 ] && order="fail_closed off"
    for m in $order; do
        mode "$m"
        read -r a b c < <(wrk_run "$URL" "" --latency | lat)
        P50[$m]+="$a "; P99[$m]+="$b "; MAX[$m]+="$c "
        log "round $r $m: p50 $a ms, p99 $b ms, max $c ms"
    done
done

{
    echo "### $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load before: $LOAD_BEFORE"
    echo
    echo "Command: \`$CMD\`"
    echo
    echo "Resolve of the anchor's own configuration (one trust mark), $REPEATS interleaved rounds of $DURATION (alternating order),"
    echo "$CONNS connections; each round begins by switching the mode (a new resolution). Medians over rounds:"
    echo
    echo "| anchor's \`trust_mark_status\` | p50, ms | p99, ms | max, ms |"
    echo "|---|---|---|---|"
    py "
import statistics as s
d = {m: [[float(x) for x in v.split()] for v in vs] for m, vs in {
    'off': ('${P50[off]}', '${P99[off]}', '${MAX[off]}'),
    'fail_closed': ('${P50[fail_closed]}', '${P99[fail_closed]}', '${MAX[fail_closed]}')}.items()}
for m, label in (('off', '\`off\` (reference)'), ('fail_closed', '\`fail_closed\`, status endpoint hanging')):
    p50, p99, mx = (s.median(x) for x in d[m])
    print(f'| {label} | {p50:.2f} | {p99:.2f} | {mx:.0f} |')
r = s.median(d['fail_closed'][1]) / s.median(d['off'][1])
print()
print(f'p99 fail_closed / off: **{r:.2f}**')
"
    echo
} >"$WORK/report.md"
cat "$WORK/report.md"
if [ "$APPEND" = 1 ]; then
    cat "$WORK/report.md" >>"$ROOT/BENCHMARKS.md"
fi
