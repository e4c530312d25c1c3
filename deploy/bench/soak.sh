#!/usr/bin/env bash
# Soak test (issue 22): a 3-level federation on loopback (trust anchor -> intermediate -> leaf,
# plus a resolver with the proactive resolver on), four release Pharos processes, under mixed
# federation traffic (Entity Configurations, fetch, list, resolve with Entity Type variations)
# for SOAK_SECONDS while a loop writes through the Admin API and the key refreshers poll
# (subordinate JWKS every 10 s at the anchor, trust anchor keys every 10 s at the resolver).
#
# At the end: requests, non-2xx and 5xx answers (federation and Admin API), RSS of every process
# at the start of the load and at its end (VmRSS from /proc, sampled every 10 s), and the
# Admin API writes acknowledged (2xx) against those found in the databases after a graceful
# stop. Expected: zero 5xx, flat memory, every acknowledged write stored. Exits non-zero when
# an expectation fails; the figures are appended to BENCHMARKS.md ("Soak") unless --no-append.
#
# Usage: deploy/bench/soak.sh [--no-append]
# Environment: SOAK_SECONDS (600), SOAK_CONNECTIONS (4 per load generator, three generators),
# CARGO_TARGET_DIR. Needs cargo, wrk, curl, sqlite3, python3 (see deploy/bench/run.sh).
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
SECONDS_TOTAL=${SOAK_SECONDS:-600}
SCONNS=${SOAK_CONNECTIONS:-4}

for tool in wrk curl sqlite3 python3 cargo; do
    command -v "$tool" >/dev/null || { echo "soak: $tool not found (deploy/bench/run.sh installs it)" >&2; exit 1; }
done

# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^SOAK_' || true; } | sort | tr '\n' ' ')deploy/bench/soak.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

log "building the release binary"
# BENCH_BIN: a prebuilt binary (as for run.sh); otherwise this checkout's release build.
[ -n "${BENCH_BIN:-}" ] || (cd "$ROOT" && cargo build --release -q -p pharos-controlplane)
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
# A subordinate whose status the write loop toggles.
admin $TA POST /subordinates '{"entity_id":"https://toggle.example","jwks":{"keys":[{"kty":"EC","crv":"P-256","kid":"t","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}}'

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

# Admin API writes for the same duration: new subordinates at the anchor (each acknowledged
# entity_id recorded), a status toggle and leaf metadata changes (the last acknowledged value
# recorded), one after another with a 50 ms pause (at most 20 per second).
python3 - "$TA" "$LEAF" "$SECONDS_TOTAL" "$WORK/writes" <<'PY' &
import http.client, json, sys, time
ta, leaf, duration, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
key = {"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
conns, failures = {}, []
def call(port, method, path, body):
    # The status endpoint takes text/plain (as lighthouse's); everything else JSON.
    text = isinstance(body, str)
    for attempt in (0, 1):
        c = conns.get(port) or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conns[port] = c
        try:
            c.request(method, "/api/v1/admin" + path, body=body if text else json.dumps(body),
                      headers={"content-type": "text/plain" if text else "application/json"})
            r = c.getresponse()
            answer = r.read()
            if not 200 <= r.status < 300:
                failures.append(f"{method} {path} -> {r.status} {answer[:200].decode(errors='replace')}")
            return r.status
        except (ConnectionError, http.client.HTTPException):
            conns.pop(port, None)
            if attempt:
                return 0
stats = {"writes": 0, "ok": 0, "non2xx": 0, "s5xx": 0, "failed": 0}
created, toggle, client_name = [], None, None
end, i = time.monotonic() + duration, 0
while time.monotonic() < end:
    i += 1
    if i % 10 == 0:
        status = ("blocked", "active")[i // 10 % 2]
        s = call(ta, "PUT", "/subordinates/" + "https%3A%2F%2Ftoggle.example" + "/status", status)
        if 200 <= s < 300: toggle = status
    elif i % 10 == 5:
        name = f"leaf-{i}"
        s = call(leaf, "PUT", "/entity-configuration/metadata/openid_relying_party",
                 {"client_name": name, "client_registration_types": ["automatic"]})
        if 200 <= s < 300: client_name = name
    else:
        eid = f"https://soak-{i:07d}.example"
        s = call(ta, "POST", "/subordinates", {"entity_id": eid, "jwks": {"keys": [dict(key, kid=f"k{i}")]}})
        if 200 <= s < 300: created.append(eid)
    stats["writes"] += 1
    if 200 <= s < 300: stats["ok"] += 1
    elif s == 0: stats["failed"] += 1
    else:
        stats["non2xx"] += 1
        if s >= 500: stats["s5xx"] += 1
    time.sleep(0.05)
json.dump({"stats": stats, "created": created, "toggle": toggle, "client_name": client_name,
           "failures": failures},
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
sqlite3 "$WORK/ta/data/pharos.db" "SELECT entity_id FROM subordinates WHERE entity_id LIKE 'https://soak-%'" \
    >"$WORK/stored.txt"
TOGGLE_DB=$(sqlite3 "$WORK/ta/data/pharos.db" "SELECT status FROM subordinates WHERE entity_id = 'https://toggle.example'")
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
python3 - "$WORK" "$SECONDS_TOTAL" "$MACHINE" "$LOAD_BEFORE" "$CMD" "$TOGGLE_DB" "$WORK/leaf.name" "$STORE_FILES" >"$REPORT" <<'PY'
import json, re, sys
work, secs, machine, load, cmd, toggle_db, leaf_file, store_files = sys.argv[1:9]
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
acked = set(w["created"])
missing = len(acked - stored)
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
print("| Admin API writes | sent | acknowledged (2xx) | non-2xx | 5xx | no answer |")
print("|---|---|---|---|---|---|")
print(f"| subordinate creations, status toggles, leaf metadata | {st['writes']} | {st['ok']} | {st['non2xx']} | **{st['s5xx']}** | {st['failed']} |")
print()
print(f"Acknowledged subordinate creations: {len(acked)}; found in the anchor's database after a graceful stop: "
      f"{len(acked & stored)} (**{missing} missing**). Last acknowledged toggle `{w['toggle']}`, stored `{toggle_db}`; "
      f"last acknowledged leaf `client_name` `{w['client_name']}`, published after a restart `{leaf_name}`. "
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
ok = fed["s5xx"] == 0 and st["s5xx"] == 0 and missing == 0 and toggle_db == (w["toggle"] or toggle_db) and leaf_ok
errors = open(f"{work}/errors.txt").read().strip()
if errors:
    print()
    print("Errors and warnings logged by the servers (last 5 of each):")
    print()
    print("```")
    print(errors[:3000])
    print("```")
print()
print("Result: " + ("zero 5xx and every acknowledged write stored." if ok else "**EXPECTATIONS FAILED** (see above)."))
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
