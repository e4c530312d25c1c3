#!/usr/bin/env bash
# Acknowledged writes per second on the embedded SQLite (issue 33): one release Pharos, WRITERS
# concurrent clients (8) for WRITES_SECONDS (20) each, every request answered before the next
# one of that client is sent. Two runs:
#   - mixed: subordinate creations, status changes and metadata edits through the Admin API, and
#     fresh trust marks (a new entitled subject per request: signed, its jti recorded) at the
#     trust mark endpoint, in turn;
#   - fresh trust marks only.
# Every answer must be 2xx; afterwards, after a graceful stop, the database must hold every
# acknowledged creation and mark. Beside it, the disk's raw fsync rate in the same directory
# (a loop of 4 KB write + fdatasync, as SQLite syncs): one commit costs at least one of those
# without group commit.
#
# Usage: deploy/bench/writes.sh [--no-append]   (appends to BENCHMARKS.md, "Writes on SQLite (issue 33)")
# Environment: WRITERS (8), WRITES_SECONDS (20), BENCH_BIN, CARGO_TARGET_DIR.
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
WRITERS=${WRITERS:-8}
SECS=${WRITES_SECONDS:-20}
for tool in curl sqlite3 python3 cargo; do
    command -v "$tool" >/dev/null || { echo "writes: $tool not found" >&2; exit 1; }
done
# shellcheck source=deploy/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CMD="$({ env | grep -E '^(WRITERS|WRITES_SECONDS)=' || true; } | sort | tr '\n' ' ')deploy/bench/writes.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

[ -n "${BENCH_BIN:-}" ] || (cd "$ROOT" && cargo build --release -q -p pharos)
[ -x "$BIN" ] || die "no binary at $BIN"

P=17790
TM_TYPE=https://marks.example.org/writes
pharos_start w $P
admin $P POST /federation-endpoints '{"type":"trust_mark","path":"/trust-mark"}'
admin $P POST /trust-marks/issuance-spec \
    "{\"trust_mark_type\":\"$TM_TYPE\",\"lifetime\":\"24h\",\"cache_ttl\":\"1h\"}"
pharos_stop w
log "bulk-loading entitled trust mark subjects and $WRITERS subordinates per writer to edit"
sqlite3 "$WORK/w/data/pharos.db" <<SQL
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400000)
INSERT INTO trust_mark_subjects (spec_id, entity_id, status, additional_claims, description,
    created_at, updated_at)
SELECT s.id, printf('https://s%07d.marks.example.org', n.i), 'active', '{}', '',
    CAST(strftime('%s', 'now') AS INTEGER), CAST(strftime('%s', 'now') AS INTEGER)
FROM n, trust_mark_specs s WHERE s.trust_mark_type = '$TM_TYPE';
COMMIT;
SQL
pharos_start w $P
for t in $(seq 0 $((WRITERS - 1))); do
    admin $P POST /subordinates "{\"entity_id\":\"https://edit-$t.example\",\"jwks\":{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"e$t\",\"x\":\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\",\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\"}]}}"
done

# The disk: 4 KB write + fdatasync in a loop for 3 s, in the database's directory.
FSYNC=$(python3 - "$WORK/w/data" <<'PY'
import os, sys, time
path = os.path.join(sys.argv[1], "fsync-probe")
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
block, n, t0 = b"x" * 4096, 0, time.monotonic()
while time.monotonic() - t0 < 3:
    os.pwrite(fd, block, (n % 256) * 4096)
    os.fdatasync(fd)
    n += 1
dt = time.monotonic() - t0
os.close(fd); os.unlink(path)
print(f"{n / dt:.0f}")
PY
)
log "raw fsync rate of the disk: $FSYNC/s"

# The client: WRITERS threads, each with its own keep-alive connection, for SECS seconds.
# Prints one JSON object: acknowledged, refused (non-2xx, with a sample), created, marks.
cat >"$WORK/client.py" <<'PY'
import http.client, json, sys, threading, time, urllib.parse
port, writers, secs, mode, tm_type, first = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), \
    sys.argv[4], sys.argv[5], int(sys.argv[6])
key = {"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
tq = urllib.parse.quote(tm_type, safe="")
lock = threading.Lock()
res = {"ok": 0, "refused": 0, "samples": [], "created": [], "marks": [], "lat": []}
subject = [first]
def next_subject():
    with lock:
        subject[0] += 1
        return subject[0]
def worker(t):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    edit = urllib.parse.quote(f"https://edit-{t}.example", safe="")
    i, end = 0, time.monotonic() + secs
    while time.monotonic() < end:
        i += 1
        kind = "mark" if mode == "marks" else ("create", "status", "metadata", "mark")[i % 4]
        body, ctype, created, mark = None, "application/json", None, None
        if kind == "create":
            created = f"https://w{t}-{i:07d}.example"
            method, path = "POST", "/api/v1/admin/subordinates"
            body = json.dumps({"entity_id": created, "jwks": {"keys": [dict(key, kid=f"k{t}-{i}")]}})
        elif kind == "status":
            method, path = "PUT", f"/api/v1/admin/subordinates/{edit}/status"
            body, ctype = ("blocked", "active")[i // 4 % 2], "text/plain"
        elif kind == "metadata":
            method, path = "PUT", f"/api/v1/admin/subordinates/{edit}/metadata"
            body = json.dumps({"openid_relying_party": {"client_name": f"edit {t} {i}"}})
        else:
            n = next_subject()
            mark = f"https://s{n:07d}.marks.example.org"
            method, path = "GET", f"/trust-mark?trust_mark_type={tq}&sub={urllib.parse.quote(mark, safe='')}"
        t0 = time.perf_counter()
        c.request(method, path, body=body, headers={"content-type": ctype})
        r = c.getresponse()
        answer = r.read()
        dt = time.perf_counter() - t0
        with lock:
            if 200 <= r.status < 300:
                res["ok"] += 1
                res["lat"].append(dt)
                if created: res["created"].append(created)
                if mark: res["marks"].append(mark)
            else:
                res["refused"] += 1
                if len(res["samples"]) < 5:
                    res["samples"].append(f"{method} {path} -> {r.status} {answer[:200].decode(errors='replace')}")
threads = [threading.Thread(target=worker, args=(t,)) for t in range(writers)]
t0 = time.monotonic()
for th in threads: th.start()
for th in threads: th.join()
res["seconds"] = time.monotonic() - t0
lat = sorted(res.pop("lat")) or [0]
res["p50_ms"] = lat[len(lat) // 2] * 1000
res["p99_ms"] = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
print(json.dumps(res))
PY

log "mixed: $WRITERS writers for ${SECS}s"
python3 "$WORK/client.py" $P "$WRITERS" "$SECS" mixed "$TM_TYPE" 0 >"$WORK/mixed.json"
log "fresh trust marks: $WRITERS writers for ${SECS}s"
python3 "$WORK/client.py" $P "$WRITERS" "$SECS" marks "$TM_TYPE" 200000 >"$WORK/marks.json"
pharos_stop w
sqlite3 "$WORK/w/data/pharos.db" "SELECT entity_id FROM subordinates" >"$WORK/subs.txt"
sqlite3 "$WORK/w/data/pharos.db" "SELECT subject FROM issued_trust_marks" >"$WORK/issued.txt"
JOURNAL=$(sqlite3 "$WORK/w/data/pharos.db" "PRAGMA journal_mode")

REPORT=$WORK/writes.md
MACHINE="$(nproc) vCPU ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), Linux $(uname -r)"
python3 - "$WORK" "$WRITERS" "$SECS" "$FSYNC" "$MACHINE" "$LOAD_BEFORE" "$(cut -d' ' -f1-3 /proc/loadavg)" "$CMD" "$JOURNAL" >"$REPORT" <<'PY'
import datetime, json, sys
work, writers, secs, fsync, machine, load0, load1, cmd, journal = sys.argv[1:10]
subs = set(l.strip() for l in open(f"{work}/subs.txt"))
issued = set(l.strip() for l in open(f"{work}/issued.txt"))
print(f"### Writes, run of {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
print()
print(f"Machine: {machine}; load average before {load0}, after {load1}. Command: `{cmd}`. "
      f"Journal mode found afterwards: `{journal}`.")
print()
print("| run | acknowledged writes/s | acknowledged | refused (non-2xx) | p50 / p99 per write | missing after stop |")
print("|---|---|---|---|---|---|")
ok = True
for name, label in (("mixed", "mixed: creations, status changes, metadata edits, fresh trust marks"),
                    ("marks", "fresh trust marks only")):
    r = json.load(open(f"{work}/{name}.json"))
    missing = len(set(r["created"]) - subs) + len(set(r["marks"]) - issued)
    ok = ok and r["refused"] == 0 and missing == 0
    print(f"| {label}, {writers} writers, {secs} s | **{r['ok'] / r['seconds']:.0f}** | {r['ok']} | "
          f"{r['refused']} | {r['p50_ms']:.1f} / {r['p99_ms']:.1f} ms | {missing} |")
    for s in r["samples"]:
        print(f"|  refused: `{s}` | | | | | |")
print(f"| the disk: 4 KB write + fdatasync in a loop, same directory | {fsync} fsyncs/s | | | | |")
print()
print("Result: " + ("every write acknowledged and stored." if ok else "**EXPECTATIONS FAILED**."))
open(f"{work}/verdict", "w").write("ok" if ok else "failed")
PY
echo
cat "$REPORT"
if [ "$APPEND" = 1 ]; then
    python3 - "$ROOT/BENCHMARKS.md" "$REPORT" <<'PY'
import sys
path, report = sys.argv[1], open(sys.argv[2]).read().rstrip("\n") + "\n\n"
text = open(path).read()
head = "## Writes on SQLite (issue 33)"
mark = "## Runs (appended by `deploy/bench/run.sh`)"
if head not in text:
    text = text.replace(mark, head + "\n\n" + mark, 1) if mark in text else text.rstrip("\n") + "\n\n" + head + "\n\n"
i = text.index(head) + len(head) + 2
j = text.find("\n## ", i)
j = len(text) if j < 0 else j + 1
text = text[:j] + report + text[j:]
open(path, "w").write(text)
PY
    echo "(added to BENCHMARKS.md)" >&2
fi
[ "$(cat "$WORK/verdict")" = ok ] || die "writes expectations failed"
