#!/usr/bin/env bash
# Throughput with OpenTelemetry traces on at 1 % sampling against the same binary with traces
# off (issue 41, acceptance 4), on the cached paths of deploy/bench/ab.sh, interleaved round by
# round. The traced instance exports over OTLP/HTTP to a loopback sink that accepts every batch
# (a collector that keeps up); the sink's count of batches and bytes is printed after the table,
# to show that spans were exported during the run.
#
# Usage: deploy/bench/traces.sh [BINARY]   (default: this checkout's release build, built first)
# Environment: as ab.sh (BENCH_DURATION, BENCH_REPEATS, BENCH_CONNECTIONS, BENCH_THREADS),
# BENCH_SAMPLE_RATIO (0.01).
# Needs wrk, curl, python3.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ "$#" -eq 0 ]; then
    (cd "$ROOT" && cargo build --release -q -p pharos)
    set -- "$TARGET/release/pharos"
fi
BIN=$1 RATIO=${BENCH_SAMPLE_RATIO:-0.01} SINK=17797
STATS=$(mktemp)
python3 - "$SINK" "$STATS" <<'PY' &
import http.server, sys
port, stats = int(sys.argv[1]), sys.argv[2]
seen = {"batches": 0, "bytes": 0}
class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        self.rfile.read(n)
        seen["batches"] += 1
        seen["bytes"] += n
        with open(stats, "w") as f:
            f.write(f"{seen['batches']} batches, {seen['bytes']} bytes of spans exported\n")
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), Sink).serve_forever()
PY
SINK_PID=$!
trap 'kill $SINK_PID 2>/dev/null || true; rm -f "$STATS"' EXIT
echo "traces: old = $BIN with traces off, new = $BIN exporting at sample ratio $RATIO" >&2
BENCH_NEW_ENV="OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$SINK OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=$RATIO" \
    "$ROOT/deploy/bench/ab.sh" "$BIN" "$BIN"
echo
cat "$STATS" 2>/dev/null || echo "no spans exported"
