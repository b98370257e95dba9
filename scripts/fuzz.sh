#!/usr/bin/env bash
# Runs every cargo-fuzz target in turn, SECONDS in total split evenly between them (default
# 600), starting from the committed seeds (fuzz/seeds/, made by scripts/fuzz-seeds.py) and
# what earlier runs found (target/fuzz-corpus/). Prints the executions per target; exits
# non-zero when a target crashes, leaving the input in fuzz/artifacts/TARGET/. Each crash
# then becomes a regression test in the normal suite.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]       (nightly toolchain; installs cargo-fuzz)
#
# Built without a sanitizer (-s none): the targets find panics and failed checks, and the
# reader's 1 MiB buffers made AddressSanitizer runs 4-14 times slower. For the project's
# few unsafe blocks, run a target with the default sanitizer:
#   cargo +nightly fuzz run chunk target/fuzz-corpus/chunk fuzz/seeds/chunk
set -euo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(chunk time envelope commands kpl)
PER=$(( TOTAL / ${#TARGETS[@]} ))

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
cargo +nightly fuzz build -s none >&2

status=0
for t in "${TARGETS[@]}"; do
  corpus=target/fuzz-corpus/$t
  mkdir -p "$corpus" "fuzz/artifacts/$t"
  log=target/fuzz-corpus/$t.log
  # -rss_limit_mb: a 2-core, 24 GiB machine; -timeout: an input that takes 10 s is a hang.
  if cargo +nightly fuzz run -s none "$t" "$corpus" "fuzz/seeds/$t" -- \
      -max_total_time="$PER" -print_final_stats=1 -timeout=10 -rss_limit_mb=4096 \
      > "$log" 2>&1; then
    result=ok
  else
    result=CRASH
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  printf '%-9s %-5s %12s executions in %s s (log: %s)\n' "$t" "$result" "$execs" "$PER" "$log"
done
exit $status
