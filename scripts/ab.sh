#!/usr/bin/env bash
# Alternating A/B timing of two weir binaries on one core, for judging a change on this
# shared, noisy machine: each round runs A then B (then B then A on the next round) on the
# same file, and the minimum and median wall time of each are reported per command.
#
# Usage: scripts/ab.sh WEIR_A WEIR_B [ROUNDS] [EVENTS]     (defaults: 8 rounds, 5000000 events)
#        WHAT="window dedupe" scripts/ab.sh ...            (a subset of: consume window dedupe profile replay, or session)
#        COUNTS=1 scripts/ab.sh WEIR_A WEIR_B 1 300000    (no timing: each run once under cachegrind)
#
# COUNTS=1 reports what the host's noise cannot move: instructions, and the data reads that
# miss a simulated 64 KiB L1 and 1 MiB L2 (this machine's per-core caches), for both threads
# together, pinned to one core as the timed runs are. Valgrind runs each about 50 times
# slower: use a few hundred thousand events.
set -euo pipefail
cd "$(dirname "$0")/.."
A=$1 B=$2 ROUNDS=${3:-8} EVENTS=${4:-5000000}
WHAT=${WHAT:-consume window dedupe profile replay}
DATA=bench-data
mkdir -p "$DATA"
FILE="$DATA/events-$EVENTS.ndjson"
if [ ! -s "$FILE" ]; then
  cargo build --release --locked --example gen_events >&2
  target/release/examples/gen_events --events "$EVENTS" --seed 1 > "$FILE.tmp" && mv "$FILE.tmp" "$FILE"
fi

args() { # the command line of each benchmark, as scripts/bench.sh runs it
  case $1 in
    consume) echo "consume -q $FILE" ;;
    window) echo "window -q $FILE --time occurred_at --key merchant_id --tumbling 1m --delay 10m --count --sum amount" ;;
    dedupe) echo "dedupe -q $FILE --id event_id --time occurred_at --horizon 1h" ;;
    profile) echo "watermark-profile -q $FILE --time occurred_at --arrival arrived_at --format json" ;;
    replay) echo "replay -q $FILE --time occurred_at" ;;
    session) echo "window -q $FILE --time occurred_at --key merchant_id --session 30s --delay 10m --count" ;;
  esac
}

once() { # once BINARY ARGS...: wall seconds of one pinned run, its file read just before
  local start end
  cat "$FILE" > /dev/null # the host takes back page cache even when memory is free
  start=$(date +%s.%N)
  taskset -c 0 "$@" > /dev/null
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN{ printf "%.4f\n", b - a }'
}

stats() { sort -n | awk '{ v[NR] = $1 } END { printf "min %.3f s  median %.3f s", v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

counts() { # counts BINARY ARGS...: "instructions L1-misses L2-misses" of one run under cachegrind
  local log=/tmp/ab.cachegrind
  taskset -c 0 valgrind --tool=cachegrind --cache-sim=yes --D1=65536,8,64 --LL=1048576,8,64 \
    --cachegrind-out-file=/dev/null "$@" > /dev/null 2> "$log"
  awk '/I *refs:/ { i = $4 } /D1 *misses:/ { d = $4 } /LLd misses:/ { l = $4 }
       END { gsub(",", "", i); gsub(",", "", d); gsub(",", "", l); print i, d, l }' "$log"
}

if [ -n "${COUNTS:-}" ]; then
  command -v valgrind > /dev/null || { echo "COUNTS=1 needs valgrind (apt-get install valgrind)" >&2; exit 2; }
  for what in $WHAT; do
    # shellcheck disable=SC2046
    read -r -a cmd <<< "$(args "$what")"
    read -r ia da la <<< "$(counts "$A" "${cmd[@]}")"
    read -r ib db lb <<< "$(counts "$B" "${cmd[@]}")"
    awk -v w="$what" -v ia="$ia" -v ib="$ib" -v da="$da" -v db="$db" -v la="$la" -v lb="$lb" 'BEGIN {
      printf "%-9s instructions %.1fM -> %.1fM (%+.1f%%)   L1 misses %.2fM -> %.2fM (%+.1f%%)   L2 misses %.2fM -> %.2fM (%+.1f%%)\n",
        w, ia / 1e6, ib / 1e6, 100 * (ib - ia) / ia, da / 1e6, db / 1e6, 100 * (db - da) / da, la / 1e6, lb / 1e6, 100 * (lb - la) / la }'
  done
  exit 0
fi
for what in $WHAT; do
  # shellcheck disable=SC2046
  read -r -a cmd <<< "$(args "$what")"
  : > /tmp/ab.a; : > /tmp/ab.b
  for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then
      once "$A" "${cmd[@]}" >> /tmp/ab.a; once "$B" "${cmd[@]}" >> /tmp/ab.b
    else
      once "$B" "${cmd[@]}" >> /tmp/ab.b; once "$A" "${cmd[@]}" >> /tmp/ab.a
    fi
  done
  lines=$(wc -l < "$FILE")
  printf '%-9s A: %s   B: %s   (%d rounds, %d events)\n' "$what" "$(stats < /tmp/ab.a)" "$(stats < /tmp/ab.b)" "$ROUNDS" "$lines"
done
