#!/usr/bin/env bash
# The federation map in a real browser with 10,000 collected entities (issue 40, acceptance 3):
# runs its browser test (`tests/federation_map.rs`) BENCH_REPEATS times and
# reports the medians of what it measured (Debian Chromium, headless): the map page's render
# (navigation → drawn), opening a 499-member branch, a search among 10,000, and the overview
# page's render in the same run as the reference (ratio map / overview).
#
# Usage: deploy/bench/console_map.sh [--no-append]   (appends to BENCHMARKS.md)
# Environment: BENCH_REPEATS (default 5), BENCH_PROFILE (`release` builds the test binary with
# --release; default: the debug build the test suite uses).
set -euo pipefail

APPEND=1
[ "${1:-}" = "--no-append" ] && APPEND=0
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REPEATS=${BENCH_REPEATS:-5}
PROFILE=()
[ "${BENCH_PROFILE:-}" = "release" ] && PROFILE=(--release)
CMD="$({ env | grep -E '^BENCH_[A-Z_]+=' || true; } | sort | tr '\n' ' ')deploy/bench/console_map.sh${*:+ $*}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
cd "$ROOT"
for i in $(seq "$REPEATS"); do
    PHAROS_REQUIRE_BROWSER=1 cargo test -q "${PROFILE[@]}" -p pharos --test integration \
        federation_map::the_map_stays_navigable_with_ten_thousand_collected_entities_in_a_real_browser \
        -- --exact --nocapture 2>/dev/null \
        | grep '^MAP_RENDER ' | cut -d' ' -f2- >>"$OUT" || { echo "console_map: run $i failed" >&2; exit 1; }
done
[ "$(wc -l <"$OUT")" -eq "$REPEATS" ] || { echo "console_map: expected $REPEATS figures" >&2; exit 1; }
REPORT=$(python3 - "$OUT" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
med = {k: statistics.median(r[k] for r in runs) for k in ("overview", "render", "expand", "search")}
rng = {k: (min(r[k] for r in runs), max(r[k] for r in runs)) for k in med}
print("| measurement | median ms (min–max) |")
print("|---|---|")
names = {"overview": "overview page (reference)", "render": "federation map, 10,002 entities: navigation → drawn",
         "expand": "open a branch of 499 members (first page of 100)", "search": "search one entity among 10,002"}
for k in ("overview", "render", "expand", "search"):
    print(f"| {names[k]} | {med[k]:.0f} ({rng[k][0]}–{rng[k][1]}) |")
print()
print(f"Map render / overview render: **{med['render'] / max(med['overview'], 1):.2f}** ({len(runs)} runs).")
PY
)
echo "$REPORT"
if [ "$APPEND" = 1 ]; then
    {
        echo
        echo "### $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load before: $LOAD_BEFORE"
        echo
        echo "Command: \`$CMD\`"
        echo
        echo "$REPORT"
    } >>BENCHMARKS.md
fi
