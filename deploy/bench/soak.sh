#!/usr/bin/env bash
# Soak test (issue 22): a 3-level federation on loopback (trust anchor -> intermediate -> leaf,
# plus a resolver with the proactive resolver on), four release Pharos processes, under mixed
# federation traffic (Entity Configurations, fetch, list, resolve with Entity Type variations)
# for SOAK_SECONDS while SOAK_WRITERS (8) clients write through the Admin API at once, one client
# asks the anchor for fresh trust marks (a new entitled subject each), one enrolls new entities
# at the anchor's enroll endpoint, and the key refreshers poll (subordinate JWKS every 10 s at
# the anchor, trust anchor keys every 10 s at the resolver).
#
# At the end: requests, non-2xx and 5xx answers (federation and Admin API), RSS of every process
# at the start of the load and at its end (VmRSS from /proc, sampled every 10 s), and the
# Admin API writes acknowledged (2xx) against those found in the databases after a graceful
# stop. Expected: zero 5xx, flat memory, every acknowledged write stored. Exits non-zero when
# an expectation fails; the figures are appended to BENCHMARKS.md ("Soak") unless --no-append.
#
# Usage: deploy/bench/soak.sh [--no-append]
# Environment: SOAK_SECONDS (600), SOAK_CONNECTIONS (4 per load generator, three generators),
# SOAK_WRITERS (8 Admin API writers), CARGO_TARGET_DIR. Needs cargo, wrk, curl, sqlite3, python3 (see deploy/bench/run.sh).
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
SECONDS_TOTAL=${SOAK_SECONDS:-600}
SCONNS=${SOAK_CONNECTIONS:-4}
WRITERS=${SOAK_WRITERS:-8}

for tool in wrk curl sqlite3 python3 cargo nginx; do
    command -v "$tool" >/dev/null || { echo "soak: $tool not found (deploy/bench/run.sh installs it)" >&2; exit 1; }
done

# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^SOAK_' || true; } | sort | tr '\n' ' ')deploy/bench/soak.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

log "building the release binary"
# BENCH_BIN: a prebuilt binary (as for run.sh); otherwise this checkout's release build.
[ -n "${BENCH_BIN:-}" ] || (cd "$ROOT" && cargo build --release -q -p pharos)
[ -x "$BIN" ] || die "no binary at $BIN"

TA=17761 IM=17762 LEAF=17763 R=17764
url() { echo "http://127.0.0.1:$1"; }
enc() { py "import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=''))" "$1"; }
for n in ta:$TA im:$IM leaf:$LEAF r:$R; do
    pharos_config "${n%%:*}" "${n#*:}"
    # The federation lives on loopback: outbound fetches to it must be allowed.
    printf 'federation:\n  block_private_addresses: false\n' >>"$WORK/${n%%:*}/config.yaml"
    pharos_start "${n%%:*}" "${n#*:}"
done

jwks_of() { # PORT -> the jwks of its Entity Configuration
    curl -fsS "$(url "$1")/.well-known/openid-federation" | py '
import sys, json, base64
p = sys.stdin.read().split(".")[1]
print(json.dumps(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))["jwks"]))'
}

# The anchor issues trust marks (entitled subjects bulk-loaded while it is stopped) and enrolls.
TM_TYPE=https://marks.example.org/soak
admin $TA POST /federation-endpoints '{"type":"trust_mark","path":"/trust-mark"}'
admin $TA POST /federation-endpoints '{"type":"enroll","path":"/enroll"}'
admin $TA POST /trust-marks/issuance-spec \
    "{\"trust_mark_type\":\"$TM_TYPE\",\"lifetime\":\"24h\",\"cache_ttl\":\"1h\"}"
pharos_stop ta
sqlite3 "$WORK/ta/data/pharos.db" <<SQL
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
INSERT INTO trust_mark_subjects (spec_id, entity_id, status, additional_claims, description,
    created_at, updated_at)
SELECT s.id, printf('https://s%07d.marks.example.org', n.i), 'active', '{}', '',
    CAST(strftime('%s', 'now') AS INTEGER), CAST(strftime('%s', 'now') AS INTEGER)
FROM n, trust_mark_specs s WHERE s.trust_mark_type = '$TM_TYPE';
COMMIT;
SQL
pharos_start ta $TA
# Entities to enroll: each with its own key and a self-signed Entity Configuration naming the
# anchor in authority_hints, served by an nginx of their own (one enrollment every 200 ms).
ENTS=17765 N_ENTS=$((SECONDS_TOTAL * 5 + 50))
log "generating $N_ENTS entities to enroll"
mkdir -p "$WORK/ents"
python3 - "$WORK/ents" "$N_ENTS" "$(url $ENTS)" "$(url $TA)" <<'PY'
import base64, json, os, sys, time
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
root, n, base, anchor = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
now = int(time.time())
for i in range(1, n + 1):
    name = f"e{i:05d}"
    eid = f"{base}/{name}"
    key = ec.generate_private_key(ec.SECP256R1())
    pub = key.public_key().public_numbers()
    jwk = {"kty": "EC", "crv": "P-256", "kid": name, "alg": "ES256",
           "x": b64(pub.x.to_bytes(32, "big")), "y": b64(pub.y.to_bytes(32, "big"))}
    header = b64(json.dumps({"alg": "ES256", "kid": name, "typ": "entity-statement+jwt"}).encode())
    claims = {"iss": eid, "sub": eid, "iat": now, "exp": now + 86400 * 2, "jwks": {"keys": [jwk]},
              "authority_hints": [anchor],
              "metadata": {"federation_entity": {"organization_name": f"Org {name}"}}}
    signing_input = header + "." + b64(json.dumps(claims).encode())
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    d = os.path.join(root, name, ".well-known")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "openid-federation"), "w") as out:
        out.write(signing_input + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big")))
PY
chmod -R a+rX "$WORK/ents"
chmod 755 "$WORK"
cat >"$WORK/ents.conf" <<EOF
worker_processes 1;
pid $WORK/ents.pid;
error_log $WORK/ents.err;
events { worker_connections 1024; }
http {
    access_log off;
    default_type application/entity-statement+jwt;
    server { listen 127.0.0.1:$ENTS; root $WORK/ents; }
}
EOF
port_free "$ENTS"
nginx -c "$WORK/ents.conf" -g 'daemon off;' &
ENTS_PID=$!
trap 'kill $ENTS_PID 2>/dev/null || true; bench_cleanup' EXIT
for _ in $(seq 1 100); do
    curl -fs -o /dev/null "$(url $ENTS)/e00001/.well-known/openid-federation" && break
    sleep 0.05
done

log "federation :$TA -> :$IM -> :$LEAF, resolver :$R"
for p in $TA $IM; do
    admin $p POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
    admin $p POST /federation-endpoints '{"type":"list","path":"/list"}'
done
admin $LEAF PUT /entity-configuration/metadata/openid_relying_party \
    '{"client_name":"leaf","client_registration_types":["automatic"]}'
# The anchor polls the intermediate's keys every 10 s (a refresher running all along).
admin $TA POST /subordinates "{\"entity_id\":\"$(url $IM)\",\"jwks\":$(jwks_of $IM),\"enable_jwks_update\":true,\"jwks_poll_interval\":10}"
admin $IM POST /entity-configuration/authority-hints "{\"entity_id\":\"$(url $TA)\"}"
admin $IM POST /subordinates "{\"entity_id\":\"$(url $LEAF)\",\"jwks\":$(jwks_of $LEAF)}"
admin $LEAF POST /entity-configuration/authority-hints "{\"entity_id\":\"$(url $IM)\"}"
admin $TA PUT "/subordinates/$(enc "$(url $IM)")/metadata-policies" \
    '{"openid_relying_party":{"contacts":{"add":["fed@ta.example"]}}}'
# The resolver: a pinned anchor whose keys it polls every 10 s, and the proactive resolver.
admin $R POST /trust-anchors "{\"entity_id\":\"$(url $TA)\",\"jwks\":$(jwks_of $TA),\"enable_jwks_update\":true,\"key_poll_interval\":10}"
admin $R POST /federation-endpoints "{\"type\":\"resolve\",\"path\":\"/resolve\",\"config\":{\"allowed_trust_anchors\":[\"$(url $TA)\"],\"proactive_resolver\":{\"enabled\":true,\"response_storage\":{\"dir\":\"$WORK/r/responses\",\"store_jwt\":true,\"store_json\":true}}}}"
# Per writer, a subordinate whose status and metadata it changes.
for t in $(seq 0 $((WRITERS - 1))); do
    admin $TA POST /subordinates "{\"entity_id\":\"https://toggle-$t.example\",\"jwks\":{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"t\",\"x\":\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\",\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\"}]}}"
done

SUB_LEAF=$(enc "$(url $LEAF)") SUB_IM=$(enc "$(url $IM)") ANCHOR=$(enc "$(url $TA)")
RESOLVE="/resolve?sub=$SUB_LEAF&trust_anchor=$ANCHOR"
curl -fsS -o /dev/null "$(url $R)$RESOLVE" || die "resolve does not answer"
curl -fsS -o /dev/null "$(url $TA)/fetch?sub=$SUB_IM" || die "fetch does not answer"

# wrk script: cycles through PATHS, counts 5xx and other non-2xx per thread, prints totals.
wrk_script() { # FILE PATH...
    local f=$1 p
    shift
    {
        echo "local paths = {"
        for p in "$@"; do echo "  \"$p\","; done
        cat <<'LUA'
}
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) n5xx = 0; nother = 0; i = 0 end
function request()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end
function response(status, headers, body)
  if status >= 500 then n5xx = n5xx + 1 elseif status >= 300 then nother = nother + 1 end
end
function done(summary, latency, requests)
  local s5, so = 0, 0
  for _, t in ipairs(threads) do s5 = s5 + t:get("n5xx"); so = so + t:get("nother") end
  local e = summary.errors
  io.write(string.format("SOAK requests=%d socket_errors=%d non2xx=%d s5xx=%d\n",
    summary.requests, e.connect + e.read + e.write + e.timeout, so + s5, s5))
end
LUA
    } >"$f"
}
wrk_script "$WORK/ta.lua" /.well-known/openid-federation "/fetch?sub=$SUB_IM" /list \
    "/list?entity_type=openid_relying_party"
wrk_script "$WORK/im.lua" /.well-known/openid-federation "/fetch?sub=$SUB_LEAF" /list
wrk_script "$WORK/r.lua" "$RESOLVE" "$RESOLVE&entity_type=openid_relying_party" \
    "$RESOLVE&entity_type=federation_entity" "$RESOLVE&entity_type=openid_relying_party&entity_type=federation_entity" \
    /.well-known/openid-federation

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/${PHAROS_PIDS[$1]}/status"; }
: >"$WORK/rss.txt"
sample_rss() { # one line: seconds ta im leaf r (kB)
    echo "$1 $(rss_kb ta) $(rss_kb im) $(rss_kb leaf) $(rss_kb r)" >>"$WORK/rss.txt"
}

log "soak: ${SECONDS_TOTAL}s of mixed traffic ($SCONNS connections per generator, 3 generators) and Admin API writes"
sample_rss 0
WRK_PIDS=()
for t in ta:$TA im:$IM r:$R; do
    wrk -t1 -c"$SCONNS" -d"${SECONDS_TOTAL}s" --timeout 10s -s "$WORK/${t%%:*}.lua" "$(url "${t#*:}")" \
        >"$WORK/wrk-${t%%:*}.out" 2>&1 &
    WRK_PIDS+=($!)
done

# Admin API writes for the same duration, from WRITERS clients at once, each one after another
# with a 50 ms pause: new subordinates at the anchor (each acknowledged entity_id recorded),
# status toggles and metadata edits of the writer's own subordinate (the last acknowledged
# values recorded), and leaf metadata changes (writer 0; published after a restart). Beside
# them one client asks for fresh trust marks (a new entitled subject every 20 ms) and one
# enrolls a new entity every 200 ms; each acknowledged one is recorded.
python3 - "$TA" "$LEAF" "$SECONDS_TOTAL" "$WORK/writes" "$WRITERS" "$TM_TYPE" "$(url $ENTS)" <<'PY' &
import http.client, json, sys, threading, time, urllib.parse
ta, leaf, duration, out, writers = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], int(sys.argv[5])
tm_type, ents = sys.argv[6], sys.argv[7]
key = {"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
lock = threading.Lock()
failures = []
kinds = ("admin", "marks", "enroll")
stats = {k: {"writes": 0, "ok": 0, "non2xx": 0, "s5xx": 0, "failed": 0} for k in kinds}
created, marks, enrolled, toggles, edits = [], [], [], {}, {}
client_name = None
def caller():
    conns = {}
    def call(kind, port, method, path, body=None):
        # The status endpoint takes text/plain (as lighthouse's); everything else JSON.
        text = isinstance(body, str)
        s = 0
        for attempt in (0, 1):
            c = conns.get(port) or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conns[port] = c
            try:
                c.request(method, path, body=body if text or body is None else json.dumps(body),
                          headers={"content-type": "text/plain" if text else "application/json"})
                r = c.getresponse()
                answer = r.read()
                s = r.status
                if not 200 <= s < 300:
                    with lock:
                        failures.append(f"{method} {path} -> {s} {answer[:200].decode(errors='replace')}")
                break
            except (ConnectionError, OSError, http.client.HTTPException):
                conns.pop(port, None)
                if attempt:
                    s = 0
        with lock:
            st = stats[kind]
            st["writes"] += 1
            if 200 <= s < 300: st["ok"] += 1
            elif s == 0: st["failed"] += 1
            else:
                st["non2xx"] += 1
                if s >= 500: st["s5xx"] += 1
        return s
    return call
end = time.monotonic() + duration
def admin_writer(t):
    global client_name
    call = caller()
    mine = urllib.parse.quote(f"https://toggle-{t}.example", safe="")
    i = 0
    while time.monotonic() < end:
        i += 1
        if i % 10 == 0:
            status = ("blocked", "active")[i // 10 % 2]
            if 200 <= call("admin", ta, "PUT", f"/api/v1/admin/subordinates/{mine}/status", status) < 300:
                toggles[t] = status
        elif i % 10 == 5 and t == 0:
            name = f"leaf-{i}"
            s = call("admin", leaf, "PUT", "/api/v1/admin/entity-configuration/metadata/openid_relying_party",
                     {"client_name": name, "client_registration_types": ["automatic"]})
            if 200 <= s < 300: client_name = name
        elif i % 10 == 5:
            name = f"edit-{t}-{i}"
            s = call("admin", ta, "PUT", f"/api/v1/admin/subordinates/{mine}/metadata",
                     {"openid_relying_party": {"client_name": name}})
            if 200 <= s < 300: edits[t] = name
        else:
            eid = f"https://soak-{t}-{i:07d}.example"
            s = call("admin", ta, "POST", "/api/v1/admin/subordinates",
                     {"entity_id": eid, "jwks": {"keys": [dict(key, kid=f"k{i}")]}})
            if 200 <= s < 300:
                with lock: created.append(eid)
        time.sleep(0.05)
def mark_client():
    call = caller()
    tq = urllib.parse.quote(tm_type, safe="")
    i = 0
    while time.monotonic() < end and i < 199_000:
        i += 1
        sub = f"https://s{i:07d}.marks.example.org"
        if 200 <= call("marks", ta, "GET", f"/trust-mark?trust_mark_type={tq}&sub={urllib.parse.quote(sub, safe='')}") < 300:
            with lock: marks.append(sub)
        time.sleep(0.02)
def enroller():
    call = caller()
    i = 0
    while time.monotonic() < end:
        i += 1
        sub = f"{ents}/e{i:05d}"
        if 200 <= call("enroll", ta, "GET", "/enroll?" + urllib.parse.urlencode({"sub": sub})) < 300:
            with lock: enrolled.append(sub)
        time.sleep(0.2)
threads = [threading.Thread(target=admin_writer, args=(t,)) for t in range(writers)]
threads += [threading.Thread(target=mark_client), threading.Thread(target=enroller)]
for th in threads: th.start()
for th in threads: th.join()
json.dump({"writers": writers, "stats": stats, "created": created, "marks": marks, "enrolled": enrolled,
           "toggles": toggles, "edits": edits, "client_name": client_name, "failures": failures},
          open(out, "w"))
PY
WRITER=$!

elapsed=0
while [ "$elapsed" -lt "$SECONDS_TOTAL" ]; do
    sleep 10
    elapsed=$((elapsed + 10))
    sample_rss "$elapsed"
done
for p in "${WRK_PIDS[@]}"; do wait "$p"; done
wait "$WRITER" || die "the write loop failed"
sample_rss end
STORE_FILES=$(find "$WORK/r/responses" -type f | wc -l)

# Server-side errors during the soak, for the report.
for n in ta im leaf r; do grep -hiE '"level":"(ERROR|WARN)"| ERROR | WARN ' "$WORK/$n/log" | grep -v 'no admin user exists' | sed "s/^/$n: /" | tail -n 5; done >"$WORK/errors.txt" || true
log "graceful stop, then the databases are read"
for n in ta im leaf r; do pharos_stop $n; done
sqlite3 "$WORK/ta/data/pharos.db" "SELECT entity_id FROM subordinates" >"$WORK/stored.txt"
sqlite3 "$WORK/ta/data/pharos.db" "SELECT DISTINCT subject FROM issued_trust_marks" >"$WORK/marks.txt"
sqlite3 -json "$WORK/ta/data/pharos.db" \
    "SELECT entity_id, status, metadata FROM subordinates WHERE entity_id LIKE 'https://toggle-%'" \
    >"$WORK/toggles.json"
# The leaf's metadata as its restarted Entity Configuration publishes it.
pharos_start leaf $LEAF
curl -fsS "$(url $LEAF)/.well-known/openid-federation" | py '
import sys, json, base64
p = sys.stdin.read().split(".")[1]
c = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
print(c["metadata"]["openid_relying_party"].get("client_name", ""))' >"$WORK/leaf.name"
pharos_stop leaf

REPORT=$WORK/soak.md
MACHINE="$(nproc) vCPU ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), \
$(awk '/MemTotal/ {printf "%.0f GB RAM", $2 / 1048576}' /proc/meminfo), Linux $(uname -r)"
python3 - "$WORK" "$SECONDS_TOTAL" "$MACHINE" "$LOAD_BEFORE" "$CMD" "$WORK/toggles.json" "$WORK/leaf.name" "$STORE_FILES" >"$REPORT" <<'PY'
import json, re, sys
work, secs, machine, load, cmd, toggles_file, leaf_file, store_files = sys.argv[1:9]
leaf_name = open(leaf_file).read().strip()
rows, fed = [], {"requests": 0, "socket_errors": 0, "non2xx": 0, "s5xx": 0}
names = {"ta": "trust anchor (EC, fetch, list)", "im": "intermediate (EC, fetch, list)",
         "r": "resolver (resolve ×4 Entity Type variants, EC)"}
for n, label in names.items():
    text = open(f"{work}/wrk-{n}.out").read()
    m = re.search(r"SOAK requests=(\d+) socket_errors=(\d+) non2xx=(\d+) s5xx=(\d+)", text)
    if not m:
        sys.exit(f"no wrk summary for {n}:\n{text}")
    v = dict(zip(fed, map(int, m.groups())))
    for k in fed: fed[k] += v[k]
    rows.append(f"| {label} | {v['requests']} | {v['requests'] / float(secs):.0f} | {v['non2xx']} | {v['s5xx']} | {v['socket_errors']} |")
w = json.load(open(f"{work}/writes"))
st = w["stats"]
stored = set(l.strip() for l in open(f"{work}/stored.txt") if l.strip())
stored_marks = set(l.strip() for l in open(f"{work}/marks.txt") if l.strip())
rows_t = {r["entity_id"]: r for r in json.loads(open(toggles_file).read() or "[]")}
acked = set(w["created"])
missing = len(acked - stored)
missing_marks = len(set(w["marks"]) - stored_marks)
missing_enrolled = len(set(w["enrolled"]) - stored)
wrong = []
for t, status in w["toggles"].items():
    got = rows_t.get(f"https://toggle-{t}.example", {}).get("status")
    if got != status: wrong.append(f"toggle-{t}: acknowledged status {status}, stored {got}")
for t, name in w["edits"].items():
    md = json.loads(rows_t.get(f"https://toggle-{t}.example", {}).get("metadata") or "{}")
    got = md.get("openid_relying_party", {}).get("client_name")
    if got != name: wrong.append(f"toggle-{t}: acknowledged client_name {name}, stored {got}")
leaf_ok = w["client_name"] is None or w["client_name"] == leaf_name
rss = [l.split() for l in open(f"{work}/rss.txt")]
start = next(r for r in rss if r[0] == "10") if any(r[0] == "10" for r in rss) else rss[0]
end = rss[-1]
procs = ["ta", "im", "leaf", "r"]
mb = lambda kb: f"{int(kb) / 1024:.1f}"
print(f"### Soak of {secs} s, run of {__import__('datetime').datetime.now(__import__('datetime').timezone.utc):%Y-%m-%d %H:%M} UTC")
print()
print(f"Machine: {machine}; load average before the run: {load}. Command: `{cmd}`.")
print()
print("| federation traffic | requests | req/s | non-2xx | 5xx | socket errors |")
print("|---|---|---|---|---|---|")
print("\n".join(rows))
print(f"| **total** | {fed['requests']} | {fed['requests'] / float(secs):.0f} | {fed['non2xx']} | **{fed['s5xx']}** | {fed['socket_errors']} |")
print()
print("| writes | sent | acknowledged (2xx) | non-2xx | 5xx | no answer | acknowledged but not stored |")
print("|---|---|---|---|---|---|---|")
labels = {"admin": f"Admin API, {w['writers']} writers at once (subordinate creations, status toggles, metadata edits, leaf metadata)",
          "marks": "fresh trust marks (a new entitled subject each)", "enroll": "enrollments (a new entity each)"}
lost = {"admin": missing + len(wrong), "marks": missing_marks, "enroll": missing_enrolled}
for k, label in labels.items():
    s = st[k]
    print(f"| {label} | {s['writes']} | {s['ok']} | {s['non2xx']} | **{s['s5xx']}** | {s['failed']} | **{lost[k]}** |")
print()
print(f"Acknowledged subordinate creations: {len(acked)}; found in the anchor's database after a graceful stop: "
      f"{len(acked & stored)} (**{missing} missing**). Fresh trust marks acknowledged {len(w['marks'])}, "
      f"recorded {len(set(w['marks']) & stored_marks)}; enrollments acknowledged {len(w['enrolled'])}, stored "
      f"{len(set(w['enrolled']) & stored)}. Per-writer last acknowledged status and metadata: "
      f"{'all stored' if not wrong else '; '.join(wrong[:5])}. "
      f"Last acknowledged leaf `client_name` `{w['client_name']}`, published after a restart `{leaf_name}`. "
      f"Proactive resolver files at the end: {store_files}.")
print()
if w.get("failures"):
    print("Admin API writes not acknowledged (status, body):")
    print()
    for f in w["failures"][:10]:
        print(f"- `{f}`")
    print()
print(f"| RSS, MB | " + " | ".join(procs) + " |")
print("|---|" + "---|" * len(procs))
print(f"| after setup | " + " | ".join(mb(x) for x in rss[0][1:]) + " |")
print(f"| after {start[0]} s of load | " + " | ".join(mb(x) for x in start[1:]) + " |")
print(f"| end ({secs} s) | " + " | ".join(mb(x) for x in end[1:]) + " |")
print(f"| maximum sampled (every 10 s) | " + " | ".join(mb(max(int(r[i]) for r in rss)) for i in range(1, 5)) + " |")
refused = sum(st[k]["non2xx"] + st[k]["failed"] for k in st)
ok = (fed["s5xx"] == 0 and refused == 0 and sum(lost.values()) == 0
      and leaf_ok)
errors = open(f"{work}/errors.txt").read().strip()
if errors:
    print()
    print("Errors and warnings logged by the servers (last 5 of each):")
    print()
    print("```")
    print(errors[:3000])
    print("```")
print()
print("Result: " + ("zero refused writes, zero 5xx, every acknowledged write stored." if ok else "**EXPECTATIONS FAILED** (see above)."))
open(f"{work}/verdict", "w").write("ok" if ok else "failed")
PY
echo
cat "$REPORT"
if [ "$APPEND" = 1 ]; then
    # Into the "Soak" section (before the runs that run.sh appends), else at the end.
    python3 - "$ROOT/BENCHMARKS.md" "$REPORT" <<'PY'
import sys
path, report = sys.argv[1], open(sys.argv[2]).read().rstrip("\n") + "\n\n"
text = open(path).read()
mark = "## Runs (appended by `deploy/bench/run.sh`)"
if "## Soak" in text and mark in text:
    text = text.replace(mark, report + mark, 1)
else:
    text = text.rstrip("\n") + "\n\n" + report
open(path, "w").write(text)
PY
    echo "(added to BENCHMARKS.md)" >&2
fi
[ "$(cat "$WORK/verdict")" = ok ] || die "soak expectations failed"
