#!/usr/bin/env bash
# Whole-command benchmarks on generated data, each against peer tools in the same run.
# The machine is shared and noisy: read the ratios, not the absolute times.
#
# Usage: scripts/bench.sh [EVENTS]        (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."

EVENTS=${1:-1000000}
DATA=bench-data
mkdir -p "$DATA"

need() { # need COMMAND DEBIAN-PACKAGE
  command -v "$1" >/dev/null 2>&1 && return
  echo "installing $2 (for $1)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "$2" >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq "$2" >/dev/null; fi
}
need jq jq
need mlr miller
[ -x /usr/bin/time ] || need /usr/bin/time time

cargo build --release --locked --bin weir --example gen_events >&2
WEIR=target/release/weir
FILE="$DATA/events-$EVENTS.ndjson"
if [ ! -s "$FILE" ]; then
  echo "generating $FILE" >&2
  target/release/examples/gen_events --events "$EVENTS" --seed 1 > "$FILE.tmp" && mv "$FILE.tmp" "$FILE"
fi
BYTES=$(stat -c %s "$FILE")
LINES=$(wc -l < "$FILE")

# run NAME REPEATS COMMAND...: best wall time of REPEATS runs, and the peak RSS of that run.
declare -A SECS RSS
run() {
  local name=$1 repeats=$2; shift 2
  local best="" best_rss=""
  local rss_file
  rss_file=$(mktemp)
  for _ in $(seq "$repeats"); do
    local start end secs rss
    start=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$rss_file" "$@" > /dev/null 2>/dev/null
    end=$(date +%s.%N)
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN{ printf "%.4f", b - a }')
    rss=$(tail -1 "$rss_file")
    if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best=$secs; best_rss=$rss; fi
  done
  rm -f "$rss_file"
  SECS[$name]=$best; RSS[$name]=$best_rss
  awk -v n="$name" -v s="$best" -v l="$LINES" -v b="$BYTES" -v r="$best_rss" \
    'BEGIN{ s = (s < 0.005 ? 0.005 : s); printf "%-28s %8.3f s %12.0f events/s %9.1f MB/s %8.0f MB peak RSS\n", n, s, l/s, b/s/1e6, r/1024 }'
}

ratio() { awk -v a="${SECS[$1]}" -v b="${SECS[$2]}" 'BEGIN{ a = (a < 0.005 ? 0.005 : a); printf "%.1f", b/a }'; }

check() { # check LABEL VALUE OP TARGET
  if awk "BEGIN{exit !($2 $3 $4)}"; then echo "  PASS  $1: $2 (target $3 $4)"; else echo "  MISS  $1: $2 (target $3 $4)"; fi
}

echo "# weir consume: $LINES lines, $((BYTES / 1000000)) MB ($FILE), every line checked to be JSON"
run "cat" 3 cat "$FILE"
run "weir consume" 3 "$WEIR" consume -q "$FILE"
run "weir consume --time (filter)" 3 "$WEIR" consume -q "$FILE" --time occurred_at --from 2026-11-28T12:05:00Z
run "jq -c ." 1 jq -c . "$FILE"
run "mlr --ijsonl --ojsonl cat" 1 mlr --ijsonl --ojsonl cat "$FILE"
MBS=$(awk -v s="${SECS[weir consume]}" -v b="$BYTES" 'BEGIN{ printf "%.0f", b/s/1e6 }')
check "weir consume MB/s" "$MBS" ">=" 400
check "weir consume vs jq -c . (x)" "$(ratio 'weir consume' 'jq -c .')" ">=" 30
echo "  info  weir consume vs mlr (x): $(ratio 'weir consume' 'mlr --ijsonl --ojsonl cat')"
