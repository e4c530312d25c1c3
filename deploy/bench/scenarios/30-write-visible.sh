# shellcheck shell=bash
# Admin write → visible on the data plane, with 100,000 subordinates: set a subordinate's
# status through the Admin API and poll its fetch URL until the answer changes (blocked: 404,
# active again: 200). The time includes the Admin API call itself (SQLite commit).
SAMPLES=${BENCH_WRITE_SAMPLES:-200}
python3 - "$MAIN" "$N" "$SAMPLES" >"$WORK/visible.txt" <<'PY'
import http.client, random, sys, time
port, n, samples = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
admin = http.client.HTTPConnection("127.0.0.1", port)
data = http.client.HTTPConnection("127.0.0.1", port)
def call(conn, method, path, body=None, ctype="text/plain"):
    conn.request(method, path, body=body, headers={"content-type": ctype} if body else {})
    r = conn.getresponse()
    r.read()
    return r.status
random.seed(7)
for i in random.sample(range(1, n + 1), samples // 2):
    fetch = f"/fetch?sub=https%3A%2F%2Fsub{i:06d}.example.org"
    for status, expect in (("blocked", 404), ("active", 200)):
        t0 = time.perf_counter()
        s = call(admin, "PUT", f"/api/v1/admin/subordinates/{i}/status", status)
        if s != 200:
            sys.exit(f"admin PUT status answered {s}")
        for _ in range(100000):
            if call(data, "GET", fetch) == expect:
                break
        else:
            sys.exit(f"change never became visible for subordinate {i}")
        print(time.perf_counter() - t0)
PY
row "| admin write → visible on the data plane, $N subordinates (n=$SAMPLES) | p50 $(pct 50 "$WORK/visible.txt" 1000) ms, p99 $(pct 99 "$WORK/visible.txt" 1000) ms | | | | |"
