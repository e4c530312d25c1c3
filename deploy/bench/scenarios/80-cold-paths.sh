# shellcheck shell=bash
# Cold paths (issue 24): the requests that cannot be answered from a cache.
#  - Trust mark issuance: a fresh mark per request. Many entitled subjects (bulk-loaded into
#    SQLite) are each asked once, so every answer is signed (ES256) and its jti recorded through
#    the control plane (one write) before it is handed out. The spec has a cache_ttl as in
#    50-trust-marks.sh, whose cached figure this is the miss side of. REPEATS rounds of DURATION
#    with CONNS connections, each round on subjects not asked before.
#  - Enrollment at the enroll endpoint (no entity check): 1,000 entities one after another on
#    one keep-alive connection, then 100 at once (one connection each). Every entity has its own
#    ES256 key and a self-signed Entity Configuration naming Pharos in authority_hints, served
#    by an nginx of its own on loopback; each enrollment fetches and verifies it, stores the
#    entity and answers 201 with the signed subordinate statement. Afterwards the Admin API must
#    list all 1,100 as active.
# First fetch per subject and cold resolve are in 20-subordinates.sh and 40-resolve.sh.
TMC=17780 ENR=17781 LEAVES=17782
TMC_URL=http://127.0.0.1:$TMC ENR_URL=http://127.0.0.1:$ENR LEAVES_URL=http://127.0.0.1:$LEAVES
TM_SUBJECTS=${BENCH_TM_SUBJECTS:-200000}
ENROLL_SEQ=${BENCH_ENROLL_SEQUENTIAL:-1000}
ENROLL_PAR=${BENCH_ENROLL_PARALLEL:-100}

# ---- trust mark issuance ------------------------------------------------------------------
TM_TYPE=https://marks.example.org/cold
pharos_start tmc $TMC
admin $TMC POST /federation-endpoints '{"type":"trust_mark","path":"/trust-mark"}'
admin $TMC POST /trust-marks/issuance-spec \
    "{\"trust_mark_type\":\"$TM_TYPE\",\"lifetime\":\"24h\",\"cache_ttl\":\"1h\"}"
pharos_stop tmc
log "trust marks: bulk-loading $TM_SUBJECTS entitled subjects into SQLite"
sqlite3 "$WORK/tmc/data/pharos.db" <<SQL
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $TM_SUBJECTS)
INSERT INTO trust_mark_subjects (spec_id, entity_id, status, additional_claims, description,
    created_at, updated_at)
SELECT s.id, printf('https://s%07d.marks.example.org', n.i), 'active', '{}', '',
    CAST(strftime('%s', 'now') AS INTEGER), CAST(strftime('%s', 'now') AS INTEGER)
FROM n, trust_mark_specs s WHERE s.trust_mark_type = '$TM_TYPE';
COMMIT;
SQL
pharos_start tmc $TMC
TM_Q="trust_mark_type=$(py "import urllib.parse as u; print(u.quote('$TM_TYPE', safe=''))")"
TM_Q_LUA=${TM_Q//%/%%} # a format string in the Lua below
# Subject 1 by hand: the right media type, a mark about it; the rounds start at subject 2.
curl -fsS -D "$WORK/tmc.headers" "$TMC_URL/trust-mark?$TM_Q&sub=https%3A%2F%2Fs0000001.marks.example.org" \
    >"$WORK/tmc.jwt"
grep -qi '^content-type: application/trust-mark+jwt' "$WORK/tmc.headers" || die "trust mark type"
py "
import base64, json
p = open('$WORK/tmc.jwt').read().split('.')[1]
c = json.loads(base64.urlsafe_b64decode(p + '=' * (-len(p) % 4)))
assert c['sub'] == 'https://s0000001.marks.example.org' and c['trust_mark_type'] == '$TM_TYPE', c
" || die "trust mark claims"

NEXT=2 TM_RATES=() TM_P50=() TM_P99=() TM_SENT=1
log "trust marks: $REPEATS rounds of $DURATION, $CONNS connections, a new subject per request"
for r in $(seq 1 "$REPEATS"); do
    # One wrk thread: one counter, so no subject is asked twice. A request past the loaded
    # subjects asks for one that is not entitled: 404, and wrk_run stops the benchmark.
    cat >"$WORK/tm_cold.lua" <<LUA
local i = $((NEXT - 1))
request = function()
    i = i + 1
    return wrk.format("GET", string.format("/trust-mark?$TM_Q_LUA&sub=https%%3A%%2F%%2Fs%07d.marks.example.org", i))
end
LUA
    OUT=$(THREADS=1 wrk_run "$TMC_URL" "$WORK/tm_cold.lua" --latency)
    SENT=$(awk '/requests in/ {print $1}' <<<"$OUT")
    TM_RATES+=("$(rps_of <<<"$OUT")")
    TM_P50+=("$(awk '$1 == "50%" {print $2}' <<<"$OUT")")
    TM_P99+=("$(awk '$1 == "99%" {print $2}' <<<"$OUT")")
    echo "   round $r: ${TM_RATES[-1]} marks/s, p50 ${TM_P50[-1]}, p99 ${TM_P99[-1]} ($SENT requests)" >&2
    # wrk stops with requests in flight: skip past them (the connections' worth) to stay fresh.
    NEXT=$((NEXT + SENT + CONNS))
    TM_SENT=$((TM_SENT + SENT))
done
# One at a time (one keep-alive connection): the latency of a fresh mark without queueing.
TM_SEQ=${BENCH_TM_SEQUENTIAL:-200}
py "
import http.client, time
c = http.client.HTTPConnection('127.0.0.1', $TMC, timeout=60)
for i in range($NEXT, $NEXT + $TM_SEQ):
    t0 = time.perf_counter()
    c.request('GET', f'/trust-mark?$TM_Q&sub=https%3A%2F%2Fs{i:07d}.marks.example.org')
    r = c.getresponse(); r.read()
    assert r.status == 200, (i, r.status)
    print(time.perf_counter() - t0)
" >"$WORK/tm_seq.txt" || die "trust marks: sequential requests failed"
NEXT=$((NEXT + TM_SEQ))
TM_SENT=$((TM_SENT + TM_SEQ))
[ "$NEXT" -le "$TM_SUBJECTS" ] || die "trust marks: ran past the $TM_SUBJECTS subjects"
row "| trust_mark, a fresh mark per request (a new entitled subject each: signs ES256, records the jti), marks/s | $(py "
import statistics as s
p = [float(x) for x in '${TM_RATES[*]}'.split()]
print(f'{s.median(p):.0f} ({min(p):.0f}–{max(p):.0f})')") | | | | |"
row "| trust_mark, fresh mark: latency under that load ($CONNS connections), p50 / p99 per round | $(py "
print(', '.join(f'{a} / {b}' for a, b in zip('${TM_P50[*]}'.split(), '${TM_P99[*]}'.split())))") | | | | |"
row "| trust_mark, fresh mark, one request at a time (n=$TM_SEQ) | median $(pct 50 "$WORK/tm_seq.txt" 1000) ms, p99 $(pct 99 "$WORK/tm_seq.txt" 1000) ms | | | | |"
TM_RSS=$(rss_mb tmc)
pharos_stop tmc
ISSUED=$(sqlite3 "$WORK/tmc/data/pharos.db" 'SELECT COUNT(*) FROM issued_trust_marks')
[ "$ISSUED" -ge "$TM_SENT" ] || die "trust marks: $ISSUED recorded for $TM_SENT answered"
note "Trust mark issuance: $TM_SENT fresh marks answered, $ISSUED jti recorded in issued_trust_marks (wrk's unfinished requests at the end of each round count there too); RSS after: $TM_RSS MB with $TM_SUBJECTS subjects loaded."

# ---- enrollment ---------------------------------------------------------------------------
N_LEAVES=$((ENROLL_SEQ + ENROLL_PAR))
log "enrollment: generating $N_LEAVES entities, each with its own key"
mkdir -p "$WORK/leaves"
chmod 755 "$WORK" "$WORK/leaves"
python3 - "$WORK/leaves" "$ENROLL_SEQ" "$ENROLL_PAR" "$LEAVES_URL" "$ENR_URL" <<'PY'
import base64, json, os, sys, time
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
root, nseq, npar, base, pharos = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
now = int(time.time())
names = [f"s{i:04d}" for i in range(1, nseq + 1)] + [f"p{i:04d}" for i in range(1, npar + 1)]
for name in names:
    eid = f"{base}/{name}"
    key = ec.generate_private_key(ec.SECP256R1())
    pub = key.public_key().public_numbers()
    jwk = {"kty": "EC", "crv": "P-256", "kid": name, "alg": "ES256",
           "x": b64(pub.x.to_bytes(32, "big")), "y": b64(pub.y.to_bytes(32, "big"))}
    header = b64(json.dumps({"alg": "ES256", "kid": name, "typ": "entity-statement+jwt"}).encode())
    claims = {"iss": eid, "sub": eid, "iat": now, "exp": now + 86400, "jwks": {"keys": [jwk]},
              "authority_hints": [pharos],
              "metadata": {"openid_relying_party": {"client_name": f"Service {name}",
                                                    "client_registration_types": ["automatic"]},
                           "federation_entity": {"organization_name": f"Org {name}"}}}
    signing_input = header + "." + b64(json.dumps(claims).encode())
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    d = os.path.join(root, name, ".well-known")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "openid-federation"), "w") as out:
        out.write(signing_input + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big")))
PY
chmod -R a+rX "$WORK/leaves"
cat >"$WORK/leaves.conf" <<EOF
worker_processes auto;
pid $WORK/leaves.pid;
error_log $WORK/leaves.err;
events { worker_connections 4096; }
http {
    access_log off;
    default_type application/entity-statement+jwt;
    server { listen 127.0.0.1:$LEAVES; root $WORK/leaves; }
}
EOF
port_free "$LEAVES"
nginx -c "$WORK/leaves.conf" -g 'daemon off;' &
LEAVES_PID=$!
for _ in $(seq 1 100); do
    curl -fs -o /dev/null "$LEAVES_URL/s0001/.well-known/openid-federation" && break
    sleep 0.05
done
curl -fs -o /dev/null "$LEAVES_URL/s0001/.well-known/openid-federation" || die "leaves not served"

pharos_config enr $ENR
cat >>"$WORK/enr/config.yaml" <<YAML
federation:
  block_private_addresses: false
YAML
pharos_start enr $ENR
admin $ENR POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'
admin $ENR POST /federation-endpoints '{"type":"enroll","path":"/enroll"}'

# The client: one enrollment = GET /enroll?sub=..., which must answer 201 with a subordinate
# statement by Pharos about the entity. In the parallel run every entity has its own thread
# and connection, all released at once; a 503 (more enrollments at once than Pharos runs, it
# refuses the rest at once and sends no Retry-After) is retried after 10 ms and counted.
# Per-enrollment time: first attempt sent → 201 received. Prints one JSON object.
cat >"$WORK/enroll_client.py" <<'PY'
import base64, http.client, json, statistics, sys, threading, time, urllib.parse
host, port, base, pharos, prefix, n, parallel = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
    sys.argv[4], sys.argv[5], int(sys.argv[6]), sys.argv[7] == "parallel"
busy = 0
lock = threading.Lock()

def enroll(conn, name):
    global busy
    sub = f"{base}/{name}"
    path = "/enroll?" + urllib.parse.urlencode({"sub": sub})
    t0 = time.perf_counter()
    while True:
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        if r.status == 503:
            with lock:
                busy += 1
            time.sleep(0.01)
            continue
        break
    dt = time.perf_counter() - t0
    if r.status != 201 or r.getheader("content-type") != "application/entity-statement+jwt":
        sys.exit(f"enroll {sub}: {r.status} {r.getheader('content-type')} {body[:300]!r}")
    p = body.decode().split(".")[1]
    c = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
    if c.get("iss") != pharos or c.get("sub") != sub or "jwks" not in c:
        sys.exit(f"enroll {sub}: unexpected statement {c}")
    return dt

names = [f"{prefix}{i:04d}" for i in range(1, n + 1)]
times = [None] * n
if parallel:
    conns = [http.client.HTTPConnection(host, port, timeout=60) for _ in names]
    for c in conns:
        c.connect()
    gate = threading.Barrier(n + 1)
    errors = []
    def worker(k):
        gate.wait()
        try:
            times[k] = enroll(conns[k], names[k])
        except BaseException as e:
            errors.append(repr(e))
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    gate.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    total = time.perf_counter() - t0
    if errors:
        sys.exit(f"{len(errors)} enrollments failed, first: {errors[0]}")
else:
    conn = http.client.HTTPConnection(host, port, timeout=60)
    t0 = time.perf_counter()
    for k, name in enumerate(names):
        times[k] = enroll(conn, name)
    total = time.perf_counter() - t0
xs = sorted(times)
pct = lambda q: xs[max(0, -(-q * len(xs) // 100) - 1)] * 1000
print(json.dumps({"n": n, "total_s": round(total, 2), "rate": round(n / total, 1),
                  "p50_ms": round(pct(50), 2), "p99_ms": round(pct(99), 2), "busy": busy}))
PY

enroll_run() { # MODE PREFIX N -> sets E_* from the client's JSON
    local out
    out=$(python3 "$WORK/enroll_client.py" 127.0.0.1 "$ENR" "$LEAVES_URL" "$ENR_URL" "$2" "$3" "$1") \
        || die "enrollment ($1) failed"
    echo "   $1: $out" >&2
    read -r E_TOTAL E_RATE E_P50 E_P99 E_BUSY < <(py "
import json; v = json.loads('''$out''')
print(v['total_s'], v['rate'], v['p50_ms'], v['p99_ms'], v['busy'])")
}
log "enrollment: $ENROLL_SEQ in sequence"
enroll_run sequential s "$ENROLL_SEQ"
row "| enroll, $ENROLL_SEQ entities in sequence (fetch + verify EC, store, sign statement): total; enrollments/s; p50 / p99 per enrollment | $E_TOTAL s; $E_RATE/s; $E_P50 / $E_P99 ms | | | | |"
log "enrollment: $ENROLL_PAR at once"
enroll_run parallel p "$ENROLL_PAR"
row "| enroll, $ENROLL_PAR entities at once: total; enrollments/s; p50 / p99 per enrollment (incl. retries) | $E_TOTAL s; $E_RATE/s; $E_P50 / $E_P99 ms ($E_BUSY answers 503 busy, retried) | | | | |"
STORED=$(curl -fsS "$ENR_URL/api/v1/admin/subordinates?status=active" | py "import json, sys; print(len(json.load(sys.stdin)))")
[ "$STORED" = "$N_LEAVES" ] || die "enrollment: the Admin API lists $STORED active subordinates, expected $N_LEAVES"
note "Enrollment: all $STORED enrolled entities listed as active by the Admin API afterwards; RSS after: $(rss_mb enr) MB. Client: Python http.client (keep-alive), on the same 2 cores."
pharos_stop enr
kill "$LEAVES_PID" 2>/dev/null || true
wait "$LEAVES_PID" 2>/dev/null || true
