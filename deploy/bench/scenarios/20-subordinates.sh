# shellcheck shell=bash
# 100,000 subordinates (bulk-loaded into SQLite, then Pharos restarts and builds its snapshot
# from the database): start-up time, RSS, fetch (signing on first request, then cached), list.
N=${BENCH_SUBORDINATES:-100000}
for ep in fetch list; do
    admin $MAIN POST /federation-endpoints "{\"type\":\"$ep\",\"path\":\"/$ep\"}"
done
pharos_stop main

log "bulk-loading $N subordinates into SQLite"
python3 - "$WORK/load.sql" "$N" <<'PY'
import json, sys, time
path, n = sys.argv[1], int(sys.argv[2])
now = int(time.time())
key = {"kty": "EC", "crv": "P-256", "kid": "k1",
       "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
with open(path, "w") as f:
    f.write("BEGIN;\n")
    for i in range(1, n + 1):
        key["kid"] = f"k{i}"
        jwks = json.dumps({"keys": [key]}).replace("'", "''")
        f.write("INSERT INTO subordinates (id, entity, entity_id, description, status, jwks, created_at, "
                f"updated_at) VALUES ({i}, 1, 'https://sub{i:06d}.example.org', '', 'active', "
                f"'{jwks}', {now}, {now});\n")
        t = "openid_provider" if i % 2 else "openid_relying_party"
        f.write("INSERT INTO subordinate_entity_types (subordinate_id, entity_type) "
                f"VALUES ({i}, '{t}');\n")
    f.write("COMMIT;\n")
PY
sqlite3 "$WORK/main/data/pharos.db" <"$WORK/load.sql"

: >"$WORK/ready.txt"
for i in 1 2 3; do
    pharos_start main $MAIN
    echo "$READY_S" >>"$WORK/ready.txt"
    [ "$i" = 3 ] || pharos_stop main
done
row "| ready after start with $N subordinates (SQLite), s (3 starts) | $(pct 50 "$WORK/ready.txt") ($(sort -n "$WORK/ready.txt" | head -1)–$(sort -n "$WORK/ready.txt" | tail -1)) | | | | |"

curl -fsS "$MAIN_URL/list" >"$WORK/list.json"
COUNT=$(py "import json;print(len(json.load(open('$WORK/list.json'))))")
[ "$COUNT" = "$N" ] || die "list returned $COUNT entries, expected $N"
SUB=https%3A%2F%2Fsub000042.example.org
curl -fsS -D "$WORK/fetch.headers" "$MAIN_URL/fetch?sub=$SUB" >"$WORK/fetch.jwt"
grep -qi '^content-type: application/entity-statement+jwt' "$WORK/fetch.headers" || die "fetch type"
row "| RSS with $N subordinates (after start and one list) | $(rss_mb main) MB | | | | |"
ref_add fetch "$WORK/fetch.jwt" application/entity-statement+jwt
ref_add list "$WORK/list.json" application/json

# Subjects in order, each for the first time: every request signs (cache miss). A short run
# (3 s) stays within the N distinct subjects, so no cached answer inflates the rate.
cat >"$WORK/seq_sub.lua" <<LUA
local i = 0
request = function()
    i = i + 1
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fsub%06d.example.org", i))
end
LUA
log "fetch: first request per subject (cache miss path, signs)"
OUT=$(THREADS=1 DURATION=3s wrk_run "$MAIN_URL" "$WORK/seq_sub.lua")
FIRST=$(rps_of <<<"$OUT")
SENT=$(awk '/requests in/ {print $1}' <<<"$OUT")
[ "$SENT" -lt "$N" ] || die "the signing pass reached $SENT requests: use more subordinates"
row "| fetch, first request per subject (signs ES256), req/s | $FIRST | | | | |"
# Sign the rest too, so that the random-subject run below measures cached answers only.
cat >"$WORK/rest_sub.lua" <<LUA
local i = $SENT
request = function()
    i = i + 1
    if i > $N then i = 1 end
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fsub%06d.example.org", i))
end
LUA
THREADS=1 DURATION=$(( (N - SENT) / 10000 + 2 ))s wrk_run "$MAIN_URL" "$WORK/rest_sub.lua" >/dev/null
row "| RSS with $N subordinates and $N signed statements cached | $(rss_mb main) MB | | | | |"

cat >"$WORK/random_sub.lua" <<LUA
$(wrk_seeded)
request = function()
    return wrk.format("GET", string.format("/fetch?sub=https%%3A%%2F%%2Fsub%06d.example.org",
        math.random(1, $N)))
end
LUA
compare "fetch, random subject of $N (cached), req/s" "$MAIN_URL" fetch "$WORK/random_sub.lua"
p99_at_half "fetch (cached)" "$MAIN_URL/fetch?sub=$SUB" fetch
compare "list, $N entries ($(wc -c <"$WORK/list.json") bytes), req/s" "$MAIN_URL/list" list
latency_ms "list of $N, latency" "$MAIN_URL/list" 50
latency_ms "list filtered by entity_type ($((N / 2)) matches), repeated (cached), latency" \
    "$MAIN_URL/list?entity_type=openid_provider" 50
# The first filtered request after a change computes the list: every sample follows an Admin API
# write (a new snapshot), and only the list request is timed.
python3 - "$MAIN" >"$WORK/filtered.txt" <<'PY'
import http.client, sys, time
port = int(sys.argv[1])
conn = http.client.HTTPConnection("127.0.0.1", port)
def call(method, path, body=None):
    conn.request(method, path, body=body, headers={"content-type": "text/plain"} if body else {})
    r = conn.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"{method} {path} answered {r.status}")
for i in range(50):
    call("PUT", "/api/v1/admin/subordinates/2/status", ("blocked", "active")[i % 2])
    t0 = time.perf_counter()
    call("GET", "/list?entity_type=openid_provider")
    print(time.perf_counter() - t0)
PY
row "| list filtered by entity_type ($((N / 2)) matches), first request after a change (computed), latency (n=50) | median $(pct 50 "$WORK/filtered.txt" 1000) ms, p99 $(pct 99 "$WORK/filtered.txt" 1000) ms | | | | |"
