#!/usr/bin/env bash
# Runs every fuzz target for FUZZ_SECONDS (default 30) from the committed seed corpus, in a
# scratch copy so that CI never writes into the repository. Any crash fails the run, and its
# input is left under $FUZZ_OUT (default target/fuzz-artifacts) for a regression test.
#
# cargo fuzz needs nightly-only compiler flags (sanitizers); on this stable toolchain
# RUSTC_BOOTSTRAP=1 unlocks them for this build only.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${FUZZ_SECONDS:-30}"
out="${FUZZ_OUT:-$PWD/../../target/fuzz-artifacts}"
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/../../target/fuzz}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --version 0.13.2
cargo fuzz build --fuzz-dir . -O
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
status=0
for t in $(cargo fuzz list --fuzz-dir .); do
  mkdir -p "$work/$t"
  cp -r corpus/"$t"/. "$work/$t"/ 2>/dev/null || true
  printf '== fuzz %s (%ss)\n' "$t" "$seconds"
  if ! cargo fuzz run --fuzz-dir . -O "$t" "$work/$t" -- \
      -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$out/$t-" -print_final_stats=1 2>"$work/$t.log"; then
    echo "fuzz target $t FAILED; last lines:"; tail -n 40 "$work/$t.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/$t.log" | tr '\n' ' '; echo
  fi
done
exit $status
