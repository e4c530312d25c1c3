#!/usr/bin/env bash
# Hostile traffic (issue 31, "Safe to expose"): one Pharos instance with every public endpoint
# enabled (trust anchor, trust mark issuer with requests, enrollment, resolver, entity
# collection, lists) on its default configuration, a member leaf entitled to a trust mark, and
# two strangers (loopback HTTP servers that count what they are asked): one named as a trust
# anchor, one named as a subject. For HOSTILE_SECONDS, deploy/bench/hostile_client.py keeps
# HOSTILE_CONNECTIONS connections busy from HOSTILE_ADDRESSES distinct loopback source
# addresses (127.64.0.0/10) with valid, junk and random requests to every endpoint, while an
# operator writes through the Admin API once a second.
#
# Reported at start and end: database size, row counts of every table a public request could
# grow, RSS, the rate limiter's table, outbound fetches (Pharos's counter and each stranger's),
# Admin API write latency (p50/p99) and status, and the hostile answers by class and status.
# Expected, else a non-zero exit: issued-mark and pending-subject rows, database size and RSS end
# within a small constant of where they started; no fetch reaches the stranger anchor; the
# stranger subject is fetched only within the enrollment/request bound; Admin API writes p99 <=
# 50 ms and no 5xx; the Entity Configuration never answers 5xx. Figures are appended to
# BENCHMARKS.md ("Hostile traffic") unless --no-append.
#
# Usage: deploy/bench/hostile.sh [--no-append]
# Environment: HOSTILE_SECONDS (300), HOSTILE_CONNECTIONS (64), HOSTILE_ADDRESSES (1000),
# BENCH_BIN (a prebuilt binary), CARGO_TARGET_DIR. Needs curl, sqlite3, python3.
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
SECS=${HOSTILE_SECONDS:-300}
H_CONNS=${HOSTILE_CONNECTIONS:-64}
ADDRS=${HOSTILE_ADDRESSES:-1000}

for tool in curl sqlite3 python3; do
    command -v "$tool" >/dev/null || { echo "hostile: $tool not found" >&2; exit 1; }
done

# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^HOSTILE_' || true; } | sort | tr '\n' ' ')deploy/bench/hostile.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

log "building the release binary"
[ -n "${BENCH_BIN:-}" ] || (cd "$ROOT" && cargo build --release -q -p pharos)
[ -x "$BIN" ] || die "no binary at $BIN"

TA=17801 LEAF=17802 S_ANCHOR=17803 S_SUBJECT=17804
url() { echo "http://127.0.0.1:$1"; }
enc() { py "import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=''))" "$1"; }
jwks_of() {
    curl -fsS "$(url "$1")/.well-known/openid-federation" | py '
import sys, json, base64
p = sys.stdin.read().split(".")[1]
print(json.dumps(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))["jwks"]))'
}

# The strangers: answer 404 to everything and count the requests they get.
for p in $S_ANCHOR $S_SUBJECT; do
    port_free "$p"
    python3 - "$p" "$WORK/stranger-$p.count" <<'PY' &
import http.server, sys, threading
port, out = int(sys.argv[1]), sys.argv[2]
n, lock = [0], threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with lock:
            n[0] += 1
            open(out, "w").write(str(n[0]))
        self.send_response(404); self.send_header("content-length", "0"); self.end_headers()
    do_POST = do_GET
    def log_message(self, *a): pass
open(out, "w").write("0")
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
    STRANGER_PIDS+=("$!")
done
trap 'for p in "${STRANGER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; bench_cleanup' EXIT

# lib.sh's configuration turns the per-client rate limits off (benchmarks measure cost from one
# address); here they are what is measured, on their defaults.
export SVC_SERVER_RATE_LIMITS_ENABLED=true
for n in ta:$TA leaf:$LEAF; do
    pharos_config "${n%%:*}" "${n#*:}"
    # The federation lives on loopback, and so do the strangers: only Pharos's own rules keep
    # it from fetching them.
    printf 'federation:\n  block_private_addresses: false\n' >>"$WORK/${n%%:*}/config.yaml"
    pharos_start "${n%%:*}" "${n#*:}"
done

TYPE="$(url $TA)/marks/member"
log "anchor and trust mark issuer :$TA with every public endpoint; member leaf :$LEAF"
for t in fetch list resolve entity_collection enroll enroll_request trust_mark trust_mark_status \
    trust_mark_listing trust_mark_request historical_keys; do
    admin $TA POST /federation-endpoints "{\"type\":\"$t\",\"path\":\"/${t//_/-}\"}"
done
admin $TA POST /trust-anchors "{\"entity_id\":\"$(url $TA)\",\"jwks\":$(jwks_of $TA)}"
admin $TA POST /trust-marks/types "{\"trust_mark_type\":\"$TYPE\",\"trust_mark_issuers\":[{\"issuer\":\"$(url $TA)\"}]}"
admin $TA POST /trust-marks/issuance-spec "{\"trust_mark_type\":\"$TYPE\",\"lifetime\":\"24h\"}"
admin $TA POST /subordinates "{\"entity_id\":\"$(url $LEAF)\",\"jwks\":$(jwks_of $LEAF)}"
admin $LEAF POST /entity-configuration/authority-hints "{\"entity_id\":\"$(url $TA)\"}"
admin $TA POST "/trust-marks/issuance-spec/$(enc "$TYPE")/subjects" "{\"entity_id\":\"$(url $LEAF)\"}"
curl -fsS -o /dev/null "$(url $TA)/trust-mark?trust_mark_type=$(enc "$TYPE")&sub=$(enc "$(url $LEAF)")" \
    || die "the entitled leaf gets no trust mark"

# The request catalogue: every public endpoint, with valid, junk and random parameters.
T=$(enc "$TYPE") L=$(enc "$(url $LEAF)") A=$(enc "$(url $TA)")
SA=$(enc "$(url $S_ANCHOR)") SS="http%3A%2F%2F127.0.0.1%3A$S_SUBJECT"
cat >"$WORK/catalogue.json" <<EOF
{"classes": {
 "entity_configuration": [["GET", "/.well-known/openid-federation", null]],
 "trust_mark_valid": [["GET", "/trust-mark?trust_mark_type=$T&sub=$L", null]],
 "trust_mark_junk": [["GET", "/trust-mark?trust_mark_type=$T&sub=$SS%2F{r}", null],
                     ["GET", "/trust-mark?trust_mark_type={r}&sub={r}", null],
                     ["GET", "/trust-mark?sub=$L&sub=$L&trust_mark_type=$T&x={r}", null]],
 "trust_mark_request": [["GET", "/trust-mark-request?trust_mark_type=$T&sub=$SS%2F{r}", null],
                        ["GET", "/trust-mark-request?trust_mark_type=$T&sub=https%3A%2F%2F{r}.example", null],
                        ["POST", "/trust-mark-request", "trust_mark_type=$T&sub=$SS%2F{r}"]],
 "trust_mark_status": [["POST", "/trust-mark-status", "trust_mark={r}.{r}.{r}"]],
 "trust_mark_listing": [["GET", "/trust-mark-listing?trust_mark_type=$T", null],
                        ["GET", "/trust-mark-listing?trust_mark_type=$T&sub={r}", null],
                        ["GET", "/trust-mark-listing?trust_mark_type={r}&{r}={n}", null]],
 "collection_stranger": [["GET", "/entity-collection?trust_anchor=$SA", null],
                         ["GET", "/entity-collection?trust_anchor=$SA%2F{r}", null]],
 "collection_valid": [["GET", "/entity-collection?trust_anchor=$A", null],
                      ["GET", "/entity-collection?trust_anchor=$A&entity_type={r}&entity_type=openid_provider&{r}=1", null]],
 "resolve_stranger": [["GET", "/resolve?sub=$SS%2F{r}&trust_anchor=$SA", null],
                      ["GET", "/resolve?sub=$L&trust_anchor=$SA%2F{r}", null]],
 "resolve_valid": [["GET", "/resolve?sub=$L&trust_anchor=$A", null],
                   ["GET", "/resolve?sub=$L&trust_anchor=$A&entity_type={r}", null]],
 "enroll": [["GET", "/enroll?sub=$SS%2F{r}", null], ["GET", "/enroll-request?sub=$SS%2F{r}", null],
            ["GET", "/enroll?sub={r}", null]],
 "list": [["GET", "/list", null], ["GET", "/list?entity_type={r}&entity_type=openid_provider&intermediate=true", null],
          ["GET", "/list?trust_marked=true&trust_mark_type={r}&{r}={n}", null]],
 "fetch": [["GET", "/fetch?sub=$L", null], ["GET", "/fetch?sub=https%3A%2F%2F{r}.example", null]],
 "historical_keys": [["GET", "/historical-keys", null]],
 "unknown": [["GET", "/{r}", null], ["POST", "/fetch", "sub={r}"]]
}}
EOF

DB=$WORK/ta/data/pharos.db
metric() { # NAME-REGEX -> sum of matching /metrics samples (0 when absent)
    curl -fsS "$(url $TA)/metrics" 2>/dev/null | awk -v re="$1" '$1 ~ re && $1 !~ /^#/ {s += $NF} END {print s + 0}'
}
sample() { # LABEL -> one JSON line of figures
    python3 - "$1" "$DB" "$(rss_mb ta)" "$(metric '^pharos_outbound_fetches')" \
        "$(metric '^pharos_rate_limit[a-z_]*(clients|entries|keys)')" \
        "$(cat "$WORK/stranger-$S_ANCHOR.count")" "$(cat "$WORK/stranger-$S_SUBJECT.count")" <<'PY'
import json, os, sqlite3, sys
label, db, rss, fetches, limiter, s_anchor, s_subject = sys.argv[1:8]
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
tables = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%'")]
rows = {t: c.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in sorted(tables)}
pending = c.execute("SELECT COUNT(*) FROM trust_mark_subjects WHERE status = 'pending'").fetchone()[0]
# The database file proper, and the write-ahead log beside it: the log is reused after each
# checkpoint, so its size is bounded by the automatic checkpoint (1000 pages) rather than by
# what was stored, and is reported and judged apart from the file that holds the state.
size = lambda p: os.path.getsize(p) if os.path.exists(p) else 0
page = c.execute("PRAGMA page_size").fetchone()[0]
print(json.dumps({"label": label, "rss_mb": int(rss), "db_bytes": size(db), "wal_bytes": size(db + "-wal"),
                  "wal_bound": 32 + 1000 * (page + 24), "rows": rows, "pending": pending,
                  "outbound_fetches": float(fetches), "limiter": float(limiter),
                  "stranger_anchor": int(s_anchor), "stranger_subject": int(s_subject)}))
PY
}
sample start >"$WORK/samples.jsonl"

log "hostile traffic: $H_CONNS connections from $ADDRS addresses for $SECS s, an operator writing every second"
python3 "$BENCH_DIR/hostile_client.py" $TA "$SECS" "$H_CONNS" "$ADDRS" "$WORK/catalogue.json" >"$WORK/hostile.json" &
HOSTILE=$!

python3 - $TA "$SECS" "$WORK/operator.json" "$TYPE" <<'PY' &
# One Admin API write a second: a subordinate created, a metadata claim edited, a trust mark
# subject entitled and its status toggled. Each write's latency and status are recorded.
import http.client, json, sys, time, urllib.parse
port, secs, out, mtype = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
key = {"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
t_enc = urllib.parse.quote(mtype, safe="")
conn = None
def call(method, path, body, text=False):
    global conn
    for attempt in (0, 1):
        conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        t0 = time.monotonic()
        try:
            conn.request(method, "/api/v1/admin" + path, body=body if text else json.dumps(body),
                         headers={"content-type": "text/plain" if text else "application/json"})
            r = conn.getresponse(); r.read()
            return r.status, time.monotonic() - t0
        except (ConnectionError, http.client.HTTPException):
            conn = None
            if attempt:
                return 0, time.monotonic() - t0
writes, end, i = [], time.monotonic() + secs, 0
while time.monotonic() < end:
    i += 1
    sub = f"https://op-{i:05d}.example"
    step = i % 4
    if step == 0:
        s = call("POST", "/subordinates", {"entity_id": sub, "jwks": {"keys": [dict(key, kid=f"k{i}")]}})
    elif step == 1:
        s = call("PUT", "/entity-configuration/metadata/federation_entity/organization_name", f"Operator {i}")
    elif step == 2:
        s = call("POST", f"/trust-marks/issuance-spec/{t_enc}/subjects", {"entity_id": sub})
    else:
        prev = urllib.parse.quote(f"https://op-{i - 1:05d}.example", safe="")
        s = call("PUT", f"/trust-marks/issuance-spec/{t_enc}/subjects/{prev}/status", "blocked", text=True)
    writes.append({"step": step, "status": s[0], "ms": round(s[1] * 1000, 2)})
    time.sleep(max(0.0, 1.0 - s[1]))
json.dump(writes, open(out, "w"))
PY
OPERATOR=$!

wait "$HOSTILE" || die "the hostile client failed"
wait "$OPERATOR" || die "the operator loop failed"
sample end >>"$WORK/samples.jsonl"

REPORT=$WORK/hostile.md
MACHINE="$(nproc) vCPU ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), \
$(awk '/MemTotal/ {printf "%.0f GB RAM", $2 / 1048576}' /proc/meminfo), Linux $(uname -r)"
set +e
python3 - "$WORK" "$SECS" "$H_CONNS" "$ADDRS" "$MACHINE" "$LOAD_BEFORE" "$CMD" >"$REPORT" <<'PY'
import datetime, json, sys
work, secs, conns, addrs, machine, load, cmd = sys.argv[1:8]
start, end = (json.loads(l) for l in open(f"{work}/samples.jsonl"))
hostile = json.load(open(f"{work}/hostile.json"))
writes = json.load(open(f"{work}/operator.json"))
ms = sorted(w["ms"] for w in writes)
pct = lambda p: ms[min(len(ms) - 1, int(len(ms) * p / 100))] if ms else float("nan")
admin_5xx = sum(1 for w in writes if w["status"] >= 500 or w["status"] == 0)
admin_non2xx = sum(1 for w in writes if not 200 <= w["status"] < 300)
ec = hostile.get("entity_configuration", {})
ec_5xx = sum(n for s, n in ec.items() if not s.isdigit() or int(s) >= 500)
total = sum(sum(v.values()) for v in hostile.values())
now = datetime.datetime.now(datetime.timezone.utc)
print(f"### Hostile traffic, {secs} s, run of {now:%Y-%m-%d %H:%M} UTC\n")
print(f"Machine: {machine}; load average before the run: {load}. Command: `{cmd}`. "
      f"{conns} connections from {addrs} loopback source addresses; {total} hostile requests "
      f"({total / float(secs):.0f}/s); one Admin API write a second.\n")
print("| figure | start | end |")
print("|---|---|---|")
grow = {}
for key, label in [("db_bytes", "database size, bytes"), ("wal_bytes", "write-ahead log, bytes"), ("rss_mb", "RSS, MB"),
                   ("pending", "pending trust mark subjects"), ("limiter", "rate limiter table, clients"),
                   ("outbound_fetches", "outbound fetches (pharos_outbound_fetches)"),
                   ("stranger_anchor", "requests at the stranger named as trust anchor"),
                   ("stranger_subject", "requests at the stranger named as subject")]:
    print(f"| {label} | {start[key]} | {end[key]} |")
for t in sorted(set(start["rows"]) | set(end["rows"])):
    a, b = start["rows"].get(t, 0), end["rows"].get(t, 0)
    if a != b or t in ("issued_trust_marks", "trust_mark_subjects", "subordinates", "jtis_used"):
        print(f"| rows in `{t}` | {a} | {b} |")
print()
print(f"Admin API writes: {len(writes)}, non-2xx {admin_non2xx}, 5xx or no answer **{admin_5xx}**; "
      f"latency p50 {pct(50)} ms, **p99 {pct(99)} ms**, max {ms[-1] if ms else 'n/a'} ms.\n")
kinds = ["POST /subordinates", "PUT an Entity Configuration claim", "POST a trust mark subject",
         "PUT a subject's status"]
print("| write | count | p50 ms | p99 ms | max ms |")
print("|---|---|---|---|---|")
for step, kind in enumerate(kinds):
    k = sorted(w["ms"] for w in writes if w["step"] == step)
    if k:
        print(f"| {kind} | {len(k)} | {k[len(k) // 2]} | {k[min(len(k) - 1, len(k) * 99 // 100)]} | {k[-1]} |")
print()
print("| hostile class | answers by status |")
print("|---|---|")
for cls in sorted(hostile):
    print(f"| {cls} | {', '.join(f'{s}: {n}' for s, n in sorted(hostile[cls].items()))} |")
print()
# Operator writes add rows on purpose (a subordinate and a subject every four seconds, their
# events); everything else a public request could grow must stay put.
operator = len(writes)
checks = [
    ("issued trust marks stay within a constant", end["rows"].get("issued_trust_marks", 0) - start["rows"].get("issued_trust_marks", 0) <= 10),
    ("pending subjects stay within a constant", end["pending"] - start["pending"] <= 10),
    ("database size within 256 KiB + 4 KiB per operator write", end["db_bytes"] - start["db_bytes"] <= 262_144 + 4_096 * operator),
    # A log past its checkpoint bound by more than a few pages would mean checkpoints stall.
    ("write-ahead log within its checkpoint bound", end["wal_bytes"] <= end["wal_bound"] + 64 * 4_096),
    ("RSS within 64 MB of the start", end["rss_mb"] - start["rss_mb"] <= 64),
    ("no fetch reached the stranger named as trust anchor", end["stranger_anchor"] == start["stranger_anchor"]),
    ("Admin API writes: no 5xx, p99 <= 50 ms", admin_5xx == 0 and pct(99) <= 50),
    ("the Entity Configuration never answered 5xx", ec_5xx == 0),
]
for what, ok in checks:
    print(f"- {'met' if ok else '**not met**'}: {what}")
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
STATUS=$?
set -e
cat "$REPORT"
if [ "$APPEND" = 1 ]; then
    { echo; cat "$REPORT"; } >>"$ROOT/BENCHMARKS.md"
    log "appended to BENCHMARKS.md"
fi
exit "$STATUS"
