# shellcheck shell=bash
# Shared library of the Pharos benchmark harness (sourced by deploy/bench/run.sh and by the
# scenario files under deploy/bench/scenarios/). Everything runs on 127.0.0.1 and every process
# started here is stopped by the EXIT trap.
#
# The three servers of a comparison:
#   - Pharos: the release binary, one instance per `pharos_start NAME PORT`;
#   - nginx: `worker_processes auto`, `access_log off`, serving the registered reference files;
#   - responder: deploy/bench/responder, a bare axum server returning the same bytes from memory.
# A reference is registered with `ref_add NAME FILE CONTENT_TYPE`; it is then served at
# `/NAME` by both nginx and the responder (query strings are ignored by both).
#
# A scenario measures with `compare LABEL PHAROS_URL REF [WRK_LUA]` (throughput, interleaved,
# REPEATS rounds) and `p99_at_half LABEL PHAROS_URL` (latency at half the measured maximum),
# and adds rows with `row` / notes with `note`.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
RESPONDER_TARGET=${BENCH_RESPONDER_TARGET:-$TARGET/bench-responder}
# BENCH_BIN: a prebuilt pharos binary to measure instead of building this checkout's.
BIN=${BENCH_BIN:-$TARGET/release/pharos}
RESPONDER_BIN=$RESPONDER_TARGET/release/bench-responder

# Client settings, identical for every server.
DURATION=${BENCH_DURATION:-10s}
CONNS=${BENCH_CONNECTIONS:-32}
THREADS=${BENCH_THREADS:-2}
REPEATS=${BENCH_REPEATS:-3}

NGINX_PORT=17700
RESPONDER_PORT=17701
NGINX_URL=http://127.0.0.1:$NGINX_PORT
RESPONDER_URL=http://127.0.0.1:$RESPONDER_PORT

WORK=$(mktemp -d)
TABLE=$WORK/table.md
NOTES=$WORK/notes.md
: >"$TABLE"
: >"$NOTES"
declare -A PHAROS_PIDS=()
declare -A REFS=()
NGINX_PID=""
RESPONDER_PID=""
# Other processes a script started, stopped with it.
BENCH_PIDS=()

bench_cleanup() {
    local p
    for p in "${PHAROS_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
    [ -n "$RESPONDER_PID" ] && kill "$RESPONDER_PID" 2>/dev/null || true
    for p in "${BENCH_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -n "${BENCH_KEEP_WORK:-}" ]; then echo "work directory kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap bench_cleanup EXIT

die() { echo "bench: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }

# Both binaries, built once per run (cargo is a no-op when nothing changed). With BENCH_BIN
# set, only the responder is built and the given binary is measured as it is.
build_all() {
    if [ -n "${BENCH_BIN:-}" ]; then
        log "using the prebuilt $BIN; building the reference responder"
    else
        log "building the release binary and the reference responder"
        (cd "$ROOT" && cargo build --release -q -p pharos)
    fi
    (cd "$BENCH_DIR/responder" && CARGO_TARGET_DIR=$RESPONDER_TARGET cargo build --release -q)
    [ -x "$BIN" ] || die "no binary at $BIN"
    [ -x "$RESPONDER_BIN" ] || die "no responder at $RESPONDER_BIN"
}

py() { python3 -c "$@"; }

# subordinates_sql FILE N: SQL that bulk-loads N active subordinates
# https://s0000001.example.org … of the default entity into SQLite, with ids 1 … N, each with
# one EC key (for `sqlite3 DB <FILE` while Pharos is stopped).
subordinates_sql() { subordinates_sql_of "$1" 1 1 "$2"; }

# hosted_subordinates_sql FILE ENTITIES SUBS: the same for each of hosted entities 2 …
# ENTITIES + 1 (row 1 is the default entity), SUBS subordinates https://s0000001.example.org …
# each, their ids left to the database.
hosted_subordinates_sql() { subordinates_sql_of "$1" 2 "$2" "$3"; }

# subordinates_sql_of FILE FIRST ENTITIES SUBS: SUBS subordinates for each of entities FIRST …
# FIRST + ENTITIES - 1; with FIRST 1 (the default entity alone) the ids are given.
subordinates_sql_of() {
    python3 - "$@" <<'PY'
import json, sys, time
path, first, entities, subs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
now = int(time.time())
key = {"kty": "EC", "crv": "P-256", "kid": "k",
       "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
with open(path, "w") as f:
    f.write("BEGIN;\n")
    i = 0
    for entity in range(first, first + entities):
        for s in range(1, subs + 1):
            i += 1
            key["kid"] = f"k{i}"
            jwks = json.dumps({"keys": [key]})
            id_col, id_val = ("id, ", f"{i}, ") if first == 1 else ("", "")
            f.write(f"INSERT INTO subordinates ({id_col}entity, entity_id, description, status, "
                    f"jwks, created_at, updated_at) VALUES ({id_val}{entity}, "
                    f"'https://s{s:07d}.example.org', '', 'active', '{jwks}', {now}, {now});\n")
    f.write("COMMIT;\n")
PY
}

# ---- Pharos -------------------------------------------------------------------------------

# pharos_config NAME PORT: writes $WORK/NAME/config.yaml (append scenario YAML to it freely).
pharos_config() {
    local name=$1 port=$2
    mkdir -p "$WORK/$name"
    cat >"$WORK/$name/config.yaml" <<EOF
entity_id: http://127.0.0.1:$port
server:
  ip_listen: 127.0.0.1
  port: $port
  # Benchmarks measure what requests cost, sent from one loopback address: the per-client rate
  # limits would refuse them (SVC_SERVER_RATE_LIMITS_ENABLED=true turns them on again).
  rate_limits: {enabled: false}
storage:
  driver: sqlite
  data_dir: $WORK/$name/data
logging:
  internal:
    level: warn
EOF
}

# port_free PORT: dies if something already listens on 127.0.0.1:PORT. The machine may be
# shared: another process's /readyz would otherwise pass for ours, and we would measure it.
port_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null || die "port $1 is in use by another process"
}

# pharos_start NAME PORT: starts (config written on first use) and waits for /readyz.
# Sets READY_S to the seconds from exec to the first 200 of /readyz (polled every 10 ms by one
# Python process: a `curl` started every 10 ms cost about a tenth of this 2-core machine's CPU,
# taken from the start-up it was timing).
pharos_start() {
    local name=$1 port=$2 t0
    [ -f "$WORK/$name/config.yaml" ] || pharos_config "$name" "$port"
    port_free "$port"
    t0=$(date +%s%N)
    "$BIN" serve --config "$WORK/$name/config.yaml" >>"$WORK/$name/log" 2>&1 &
    PHAROS_PIDS[$name]=$!
    if READY_S=$(ready_wait "$port" "${PHAROS_PIDS[$name]}" "$t0"); then
        return 0
    fi
    cat "$WORK/$name/log" >&2
    die "pharos $name did not become ready"
}

# ready_wait PORT PID T0_NS: polls /readyz every 10 ms for up to 60 s while PID lives; prints
# the seconds since T0_NS (date +%s%N) at the first 200.
ready_wait() {
    python3 - "$@" <<'PY'
import http.client, os, sys, time
port, pid, t0 = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
end = time.time() + 60
while time.time() < end:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        c.request("GET", "/readyz")
        if c.getresponse().status == 200:
            print(round((time.time_ns() - t0) / 1e9, 2))
            sys.exit(0)
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(1)
    time.sleep(0.01)
sys.exit(1)
PY
}

pharos_stop() {
    local name=$1
    kill "${PHAROS_PIDS[$name]}" 2>/dev/null || true
    wait "${PHAROS_PIDS[$name]}" 2>/dev/null || true
    unset "PHAROS_PIDS[$name]"
}

# ---- a kept hosted.sh run (BENCH_KEEP_WORK=1), for hosted_ab.sh and hosted_pairs.sh --------
# kept_copy KEPT NAME SOURCE PORT: a fresh copy of the kept run's SOURCE (one or many) database
# and configuration as $WORK/NAME, served on PORT.
kept_copy() {
    rm -rf "${WORK:?}/$2"
    mkdir -p "$WORK/$2/data"
    cp "$1/$3/data/"pharos.db* "$WORK/$2/data/"
    sed -e "s/^  port: .*/  port: $4/" -e "s#^  data_dir: .*#  data_dir: $WORK/$2/data#" \
        "$1/$3/config.yaml" >"$WORK/$2/config.yaml"
}
# kept_host KEPT: the kept run's "many" host, which its hosted entities' identifiers name.
kept_host() { sed -n 's#^entity_id: http://##p' "$1/many/config.yaml"; }
# kept_host_lua KEPT: the wrk line that sends that host from any port.
kept_host_lua() { echo "wrk.headers[\"Host\"] = \"$(kept_host "$1")\""; }

# rss_mb NAME: resident set size of a running Pharos, in MB.
rss_mb() { echo $(($(ps -o rss= -p "${PHAROS_PIDS[$1]}") / 1024)); }

# ab_binaries: OLD (BENCH_OLD_BIN, required) and NEW (BENCH_BIN, else this tree's release
# build, built now) for a script that compares two binaries; both must be executable.
ab_binaries() {
    OLD=${BENCH_OLD_BIN:?BENCH_OLD_BIN: the release binary to compare against}
    [ -n "${BENCH_BIN:-}" ] || (cd "$ROOT" && cargo build --release -q -p pharos)
    NEW=$BIN
    local b
    for b in "$OLD" "$NEW"; do [ -x "$b" ] || die "no binary at $b"; done
}

# append_section REPORT: appends REPORT to BENCHMARKS.md under a heading with the time, the
# cores and the load average before the run ($LOAD_BEFORE), and the command ($CMD).
append_section() {
    {
        echo
        echo "### $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load before: $LOAD_BEFORE"
        echo
        echo "Command: \`$CMD\`"
        echo
        echo "$1"
    } >>"$ROOT/BENCHMARKS.md"
}

# rss_peak_mb PID SECONDS: the highest RSS (MB) sampled every 20 ms for SECONDS.
rss_peak_mb() {
    python3 - "$1" "$2" <<'PY'
import sys, time
pid, secs, peak = sys.argv[1], float(sys.argv[2]), 0
end = time.time() + secs
while time.time() < end:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                peak = max(peak, int(line.split()[1]))
    except FileNotFoundError:
        break
    time.sleep(0.02)
print(peak // 1024)
PY
}

# admin PORT METHOD PATH [BODY [CONTENT_TYPE]]: an Admin API call that must succeed.
admin() {
    curl -fsS -o /dev/null -X "$2" "http://127.0.0.1:$1/api/v1/admin$3" \
        -H "content-type: ${5:-application/json}" ${4:+-d "$4"} \
        || die "admin $2 $3 failed"
}

# ---- references ---------------------------------------------------------------------------

# ref_add NAME FILE CONTENT_TYPE: serve FILE's bytes at /NAME from nginx and the responder.
ref_add() {
    local name=$1 file=$2 ctype=$3
    mkdir -p "$WORK/www"
    chmod 755 "$WORK" "$WORK/www"
    cp "$file" "$WORK/www/$name"
    chmod 644 "$WORK/www/$name"
    REFS[$name]=$ctype
    refs_start
}

refs_start() {
    local name routes=() locations="" i
    [ -n "$NGINX_PID" ] && { kill "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null || true; NGINX_PID=""; }
    [ -n "$RESPONDER_PID" ] && { kill "$RESPONDER_PID"; wait "$RESPONDER_PID" 2>/dev/null || true; RESPONDER_PID=""; }
    for name in "${!REFS[@]}"; do
        locations+="        location = /$name { default_type ${REFS[$name]}; }"$'\n'
        routes+=("/$name=$WORK/www/$name=${REFS[$name]}")
    done
    cat >"$WORK/nginx.conf" <<EOF
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err;
events { worker_connections 4096; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $WORK/www;
$locations    }
}
EOF
    nginx -c "$WORK/nginx.conf" -g 'daemon off;' &
    NGINX_PID=$!
    "$RESPONDER_BIN" "127.0.0.1:$RESPONDER_PORT" "${routes[@]}" &
    RESPONDER_PID=$!
    # Both must answer 200 with the identical bytes, or the comparison means nothing.
    for name in "${!REFS[@]}"; do
        for i in $(seq 1 100); do
            curl -fs "$NGINX_URL/$name" 2>/dev/null | cmp -s - "$WORK/www/$name" \
                && curl -fs "$RESPONDER_URL/$name" 2>/dev/null | cmp -s - "$WORK/www/$name" \
                && break
            [ "$i" = 100 ] && { cat "$WORK/nginx.err" >&2; die "references do not serve $name"; }
            sleep 0.05
        done
    done
}

# ---- measuring ----------------------------------------------------------------------------

# wrk_seeded: Lua that gives each wrk thread its own random sequence, for a script that
# draws with math.random (put it in the script's heredoc as `$(wrk_seeded)`). A script that
# calls math.randomseed(os.time()) in its body seeds every thread alike: with two threads
# each random subject was asked for twice in a row, which flattered the caches (58 % of a
# million random fetches found their statement held where the budget holds under a fifth).
wrk_seeded() {
    cat <<'LUA'
local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("thread_no", threads)
end
function init(args)
    math.randomseed(os.time() * 1000 + (thread_no or 0))
end
LUA
}

# ec_scripts ONE MANY ENTITIES: wrk scripts for the Entity Configuration of the default entity
# (ONE) and of a random one of ENTITIES hosted entities at /e0001 … (MANY). The load generator
# shares the cores with the server, so both do the same work per request (a random number, a
# formatted path): what differs is only the server's.
ec_scripts() {
    cat >"$1" <<LUA
$(wrk_seeded)
request = function()
    local _ = string.format("/e%04d/.well-known/openid-federation", math.random($3))
    return wrk.format("GET", "/.well-known/openid-federation")
end
LUA
    cat >"$2" <<LUA
$(wrk_seeded)
request = function()
    return wrk.format("GET", string.format("/e%04d/.well-known/openid-federation", math.random($3)))
end
LUA
}

# wrk_run URL [LUA] [extra wrk args...]: one wrk run; aborts on errors or non-2xx answers.
# Prints the whole wrk output.
wrk_run() {
    local url=$1 lua=${2:-} out
    shift 2 || shift $#
    out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" ${lua:+-s "$lua"} "$@" "$url" 2>&1)
    echo "$out" >>"$WORK/wrk.log"
    if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then
        echo "$out" >&2
        die "errors or non-2xx answers from $url"
    fi
    echo "$out"
}
rps_of() { awk '/Requests\/sec/ {print $2}'; }
# requests_of: the number of requests in a wrk output.
requests_of() { awk '/requests in/ {print $1}'; }
# cpu_ticks PID: the process's user + system CPU time so far, in clock ticks (getconf CLK_TCK).
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# compare LABEL PHAROS_URL REF [LUA]: REPEATS interleaved rounds of Pharos, nginx, responder
# with identical client settings. Adds a row with Pharos's median req/s (min–max), the
# references' medians, and the ratios of the medians (min–max of the per-round ratios).
# Sets MAX_RPS to Pharos's median.
compare() {
    local label=$1 url=$2 ref=$3 lua=${4:-} r p n a
    local ps=() ns=() as=()
    log "$label: $REPEATS rounds of $DURATION, $CONNS connections, $THREADS threads"
    for r in $(seq 1 "$REPEATS"); do
        p=$(wrk_run "$url" "$lua" | rps_of)
        n=$(wrk_run "$NGINX_URL/$ref" "$lua" | rps_of)
        a=$(wrk_run "$RESPONDER_URL/$ref" "$lua" | rps_of)
        echo "   round $r: pharos $p nginx $n responder $a" >&2
        ps+=("$p"); ns+=("$n"); as+=("$a")
    done
    local line
    line=$(py "
import statistics as s
p=[float(x) for x in '${ps[*]}'.split()]; n=[float(x) for x in '${ns[*]}'.split()]; a=[float(x) for x in '${as[*]}'.split()]
rn=[x/y for x,y in zip(p,n)]; ra=[x/y for x,y in zip(p,a)]
m=s.median
print(f'{m(p):.0f}|{m(p):.0f} ({min(p):.0f}–{max(p):.0f}) | {m(n):.0f} | {m(a):.0f} | **{m(p)/m(n):.2f}** ({min(rn):.2f}–{max(rn):.2f}) | **{m(p)/m(a):.2f}** ({min(ra):.2f}–{max(ra):.2f})')
")
    MAX_RPS=${line%%|*}
    row "| $label | ${line#*|} |"
}

# compare_responder LABEL PHAROS_URL REF LUA: like `compare`, for requests nginx cannot answer
# from a static file (a POST): REPEATS interleaved rounds of Pharos and the responder only.
compare_responder() {
    local label=$1 url=$2 ref=$3 lua=$4 r p a
    local ps=() as=()
    log "$label: $REPEATS rounds of $DURATION, $CONNS connections, $THREADS threads (no nginx)"
    for r in $(seq 1 "$REPEATS"); do
        p=$(wrk_run "$url" "$lua" | rps_of)
        a=$(wrk_run "$RESPONDER_URL/$ref" "$lua" | rps_of)
        echo "   round $r: pharos $p responder $a" >&2
        ps+=("$p"); as+=("$a")
    done
    row "| $label | $(py "
import statistics as s
p=[float(x) for x in '${ps[*]}'.split()]; a=[float(x) for x in '${as[*]}'.split()]
ra=[x/y for x,y in zip(p,a)]
m=s.median
print(f'{m(p):.0f} ({min(p):.0f}–{max(p):.0f}) | (POST: no static file) | {m(a):.0f} | | **{m(p)/m(a):.2f}** ({min(ra):.2f}–{max(ra):.2f})')
") |"
}

# p99_at_half LABEL URL [REF [RPS]]: p99 latency at a constant offered load of half of RPS
# (default MAX_RPS, Pharos's median from the last `compare`), for Pharos and, with REF, for
# nginx and the responder at the same offered load. Debian's wrk has no -R (wrk2), so every
# connection waits a fixed delay (wrk's `delay()` hook, 4 ms) before each request and the
# connection count sets the rate. Latency is wrk's (request sent → full response); the
# achieved rate is reported beside it.
p99_at_half() {
    local label=$1 url=$2 ref=${3:-} rps=${4:-$MAX_RPS} target conns p n="" a="" offered
    target=$(py "print(int($rps / 2))")
    conns=$(py "print(max(2, min(2000, round($target * 4 / 1000))))")
    echo 'function delay() return 4 end' >"$WORK/delay.lua"
    log "$label: p99 at $target req/s ($conns connections × 1 request / 4 ms)"
    p=$(p99_run "$url" "$conns")
    offered=${p#* }
    if [ -n "$ref" ]; then
        n="$(p99_run "$NGINX_URL/$ref" "$conns" | cut -d' ' -f1) ms"
        a="$(p99_run "$RESPONDER_URL/$ref" "$conns" | cut -d' ' -f1) ms"
    fi
    row "| $label: p99 latency at 50 % of max ($offered req/s offered, $conns connections) | ${p%% *} ms | $n | $a | | |"
}

# p99_run URL CONNS: "P99_MS ACHIEVED_RPS" of one constant-rate run (see p99_at_half).
p99_run() {
    local out v
    out=$(CONNS=$2 wrk_run "$1" "$WORK/delay.lua" --latency)
    v=$(awk '$1 == "99%" {print $2}' <<<"$out")
    py "
v='$v'
u={'us':0.001,'ms':1.0,'s':1000.0}
for k in ('us','ms','s'):
    if v.endswith(k): print(f'{float(v[:-len(k)])*u[k]:.2f}', '$(rps_of <<<"$out")'); break
"
}

# latency_ms LABEL URL N: N sequential requests with curl; median and p99 of time_total.
latency_ms() {
    local label=$1 url=$2 n=$3 i
    : >"$WORK/lat.txt"
    for i in $(seq 1 "$n"); do
        curl -fs -o /dev/null -w '%{time_total}\n' "$url" >>"$WORK/lat.txt" || die "$url failed"
    done
    row "| $label (n=$n, sequential) | median $(pct 50 "$WORK/lat.txt" 1000) ms, p99 $(pct 99 "$WORK/lat.txt" 1000) ms | | | | |"
}

# pct P FILE [SCALE]: the P-th percentile (nearest rank) of the numbers in FILE, times SCALE.
pct() {
    py "
import math
xs=sorted(float(l)*${3:-1} for l in open('$2') if l.strip())
print(f'{xs[max(0, math.ceil($1/100*len(xs))-1)]:.2f}')"
}

row() { echo "$*" >>"$TABLE"; echo "   $*" >&2; }
note() { echo "$*" >>"$NOTES"; echo "   $*" >&2; }

print_table() {
    if [ -s "$TABLE" ]; then
        echo "| measurement | Pharos | nginx | responder | Pharos / nginx | Pharos / responder |"
        echo "|---|---|---|---|---|---|"
        cat "$TABLE"
        echo
    fi
    cat "$NOTES"
}
