#!/usr/bin/env bash
# Whole-command benchmarks on generated data, each against peer tools in the same run.
# The machine is shared and noisy: read the ratios, not the absolute times.
#
# Usage: scripts/bench.sh [EVENTS]        (default 1000000)
#        WEIR=target/pgo/weir scripts/bench.sh    (another build: scripts/pgo.sh's)
set -euo pipefail
cd "$(dirname "$0")/.."

EVENTS=${1:-1000000}
WINDOW_EVENTS=${2:-5000000}
WHAT=${WHAT:-consume window dedupe profile}
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
need gawk gawk
[ -x /usr/bin/time ] || need /usr/bin/time time
python3 -c "import duckdb" 2>/dev/null || pip install -q duckdb

# The generator is an example, built with the dev-dependencies' features; weir itself is built
# alone, as `cargo install` builds it, so the binary measured is the one users run.
cargo build --release --locked --example gen_events >&2
if [ -z "${WEIR:-}" ]; then
  cargo build --release --locked --bin weir >&2
  WEIR=target/release/weir
fi

# data N: a generated file of N events (seeded, so every run measures the same bytes).
data() {
  local f="$DATA/events-$1.ndjson"
  if [ ! -s "$f" ]; then
    echo "generating $f" >&2
    target/release/examples/gen_events --events "$1" --seed 1 > "$f.tmp" && mv "$f.tmp" "$f"
  fi
  FILE=$f; BYTES=$(stat -c %s "$f"); LINES=$(wc -l < "$f")
}

# warm: reads the input file once more just before a timed run. This virtual machine's host
# takes back page cache even with gigabytes free (about 15 MB of the 3M-event file in 20 idle
# seconds), so a run after a pause reads part of its file from disk: one-core profile runs
# took 0.70-2.35 s after 20 idle seconds against 0.51-0.72 s right after a read, in the same
# minutes. Timing weir, not the disk, needs the file in cache at the start of every run.
warm() { if [ -n "${FILE:-}" ]; then cat "$FILE" > /dev/null; fi; }

# run NAME REPEATS COMMAND...: best wall time of REPEATS runs, with the peak RSS and the CPU
# time (user + system) of that run.
declare -A SECS RSS CPU BEST
run() {
  local name=$1 repeats=$2; shift 2
  local best="" best_rss="" best_cpu=""
  local rss_file
  rss_file=$(mktemp)
  for _ in $(seq "$repeats"); do
    local start end secs rss cpu
    warm
    start=$(date +%s.%N)
    /usr/bin/time -f "%M %U %S" -o "$rss_file" "$@" > /dev/null 2>/dev/null
    end=$(date +%s.%N)
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN{ printf "%.4f", b - a }')
    rss=$(tail -1 "$rss_file" | awk '{print $1}')
    cpu=$(tail -1 "$rss_file" | awk '{printf "%.2f", $2 + $3}')
    if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best=$secs; best_rss=$rss; best_cpu=$cpu; fi
  done
  rm -f "$rss_file"
  SECS[$name]=$best; RSS[$name]=$best_rss; CPU[$name]=$best_cpu
  awk -v n="$name" -v s="$best" -v l="$LINES" -v b="$BYTES" -v r="$best_rss" -v c="$best_cpu" \
    'BEGIN{ s = (s < 0.005 ? 0.005 : s); printf "%-28s %8.3f s %12.0f events/s %9.1f MB/s %8.0f MB peak RSS %8.2f s CPU\n", n, s, l/s, b/s/1e6, r/1024, c }'
}

ratio() { awk -v a="${SECS[$1]}" -v b="${SECS[$2]}" 'BEGIN{ a = (a < 0.005 ? 0.005 : a); printf "%.1f", b/a }'; }

# paired ROUNDS A B: the median over ROUNDS of B's wall time over A's (A and B name arrays
# holding command lines), each pair run back to back so that both meet the same load; the
# best-of ratios above can compare runs minutes apart on a host whose load moves by 30%.
paired() {
  local rounds=$1
  local -n first=$2 second=$3
  local t0 t1 t2 t3
  for _ in $(seq "$rounds"); do
    warm; t0=$(date +%s.%N); "${first[@]}" > /dev/null 2>&1; t1=$(date +%s.%N)
    warm; t2=$(date +%s.%N); "${second[@]}" > /dev/null 2>&1; t3=$(date +%s.%N)
    awk -v w="$t0" -v x="$t1" -v y="$t2" -v z="$t3" 'BEGIN{ printf "%.4f\n", (z - y) / (x - w) }'
  done | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

check() { # check LABEL VALUE OP TARGET
  if awk "BEGIN{exit !($2 $3 $4)}"; then echo "  PASS  $1: $2 (target $3 $4)"; else echo "  MISS  $1: $2 (target $3 $4)"; fi
}

# Kafka (WHAT=kafka, not in the default set: it starts the test broker). Producing a 1M-line
# file of ~150-byte records with weir replay vs kcat -P, then reading the topic to /dev/null as
# envelopes with weir consume -J -e vs kcat -C -J -e.
if [[ " $WHAT " == *" kafka "* ]]; then
  trap 'scripts/kafka-broker.sh stop' EXIT
  broker_env=$(scripts/kafka-broker.sh start)
  eval "$broker_env"
  KCAT=$WEIR_TEST_KCAT
  RECORDS=${KAFKA_RECORDS:-1000000}
  FILE=$DATA/records-$RECORDS.ndjson
  if [ ! -s "$FILE" ]; then
    awk -v n="$RECORDS" 'BEGIN{ for (i = 0; i < n; i++) printf "{\"id\":%d,\"merchant_id\":\"m-%05d\",\"amount\":%d.%02d,\"currency\":\"EUR\",\"status\":\"paid\",\"note\":\"%s\"}\n", i, i % 10000, i % 997, i % 100, substr("abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz", 1, 40 + i % 12) }' > "$FILE"
  fi
  BYTES=$(stat -c %s "$FILE"); LINES=$(wc -l < "$FILE")
  echo "== kafka: $LINES records, $((BYTES / LINES)) bytes each, Tansu on $WEIR_TEST_KAFKA"
  topic() { local t="bench-$1-$$-$RANDOM"; tansu topic create --broker "tcp://$WEIR_TEST_KAFKA" --partitions 4 "$t" >/dev/null; echo "$t"; }
  T_WEIR=$(topic weir); T_KCAT=$(topic kcat)
  run "weir replay -o kafka" 1 $WEIR replay "$FILE" -o "kafka://$WEIR_TEST_KAFKA/$T_WEIR" -q
  run "kcat -P" 1 sh -c "$KCAT -b $WEIR_TEST_KAFKA -P -t $T_KCAT < $FILE"
  # weir's producer is idempotent by default; librdkafka then spends CPU waiting on in-flight
  # requests (kcat shows the same with the same setting).
  run "kcat -P (idempotent)" 1 sh -c "$KCAT -b $WEIR_TEST_KAFKA -P -t $T_KCAT -X enable.idempotence=true < $FILE"
  run "weir consume -J -e" 1 $WEIR consume "kafka://$WEIR_TEST_KAFKA/$T_WEIR" -J -e -q
  run "kcat -C -J -e" 1 $KCAT -b "$WEIR_TEST_KAFKA" -C -J -e -q -t "$T_WEIR"
  check "weir replay vs kcat -P (x)" "$(ratio 'weir replay -o kafka' 'kcat -P')" ">=" 1.0
  check "weir consume -J vs kcat -C -J (x)" "$(ratio 'weir consume -J -e' 'kcat -C -J -e')" ">=" 1.0
  # Both clients wait on the broker (Tansu's SQLite engine); their own CPU time tells them apart.
  echo "  info  CPU time, kcat -P (idempotent) / weir replay: $(awk -v a="${CPU['weir replay -o kafka']}" -v b="${CPU['kcat -P (idempotent)']}" 'BEGIN{printf "%.1f", b/(a<0.01?0.01:a)}')x"
  echo "  info  CPU time, kcat -C -J / weir consume -J: $(awk -v a="${CPU['weir consume -J -e']}" -v b="${CPU['kcat -C -J -e']}" 'BEGIN{printf "%.1f", b/(a<0.01?0.01:a)}')x"
fi

# weir lag (WHAT=lag, starts the test broker): 100 groups with committed offsets on a
# 100-partition topic, 20,000 keyed records; one report of every group. Target: under 2
# seconds. The peer is the same report through confluent-kafka's Python client
# (list_consumer_group_offsets, get_watermark_offsets; messages only, it has no time lag), so
# the ratio is taken with --time-mode none. The exact time lag reads one record per partition:
# its cost is the broker's fetch, shown by kcat reading the same 100 partitions.
if [[ " $WHAT " == *" lag "* ]]; then
  trap 'scripts/kafka-broker.sh stop' EXIT
  broker_env=$(scripts/kafka-broker.sh start)
  eval "$broker_env"
  T="bench-lag-$$-$RANDOM"
  tansu topic create --broker "tcp://$WEIR_TEST_KAFKA" --partitions 100 "$T" >/dev/null
  data 100000
  head -20000 "$FILE" | $WEIR replay -q --key event_id -o "kafka://$WEIR_TEST_KAFKA/$T"
  python3 scripts/peers/kafka_groups.py commit "$WEIR_TEST_KAFKA" "$T" 100
  LINES=10000; BYTES=1 # rows: 100 groups x 100 partitions
  run "weir lag --time-mode none" 3 $WEIR lag "kafka://$WEIR_TEST_KAFKA/$T" --group-pattern "^$T-" --format ndjson --time-mode none
  run "confluent-kafka (messages)" 3 python3 scripts/peers/kafka_groups.py lag "$WEIR_TEST_KAFKA" "$T" 100
  run "weir lag (exact time lag)" 1 $WEIR lag "kafka://$WEIR_TEST_KAFKA/$T" --group-pattern "^$T-" --format ndjson
  run "kcat -C -e (100 partitions)" 1 "$WEIR_TEST_KCAT" -b "$WEIR_TEST_KAFKA" -C -e -q -t "$T"
  check "weir lag 100 groups x 100 partitions, messages (s)" "${SECS['weir lag --time-mode none']}" "<" 2
  check "weir lag vs confluent-kafka Python (x)" "$(ratio 'weir lag --time-mode none' 'confluent-kafka (messages)')" ">=" 1.0
  echo "  info  exact time lag: ${SECS['weir lag (exact time lag)']} s; one fetch of every partition by kcat: ${SECS['kcat -C -e (100 partitions)']} s"
fi

# Kinesis (WHAT=kinesis, not in the default set: it starts the Kinesis test servers). On
# kinesalite, a 4-shard stream of 200,000 records (written by weir replay, timed against a
# boto3 PutRecords writer for information), read to its end with weir consume -e against a
# boto3 reader of the same shards in the same run, one shard after another and one thread a
# shard. It also prints the server's floor: its main thread's CPU time for one read.
if [[ " $WHAT " == *" kinesis "* ]]; then
  trap 'scripts/kinesis-servers.sh stop' EXIT
  kinesis_env=$(scripts/kinesis-servers.sh start)
  eval "$kinesis_env"
  export AWS_ACCESS_KEY_ID=weir-bench AWS_SECRET_ACCESS_KEY=weir-bench AWS_REGION=us-east-1
  K=$WEIR_TEST_KINESALITE
  data 200000
  S=bench-$$-$RANDOM
  python3 scripts/peers/kinesis.py "$K" create "$S" 4
  python3 scripts/peers/kinesis.py "$K" create "$S-boto3" 4
  echo "== kinesis: $LINES records, $((BYTES / LINES)) bytes each, kinesalite on $K"
  run "weir replay -o kinesis" 1 $WEIR replay "$FILE" -o "kinesis://$S" --key merchant_id --endpoint-url "$K" -q
  run "boto3 put_records" 1 sh -c "python3 scripts/peers/kinesis.py '$K' put '$S-boto3' merchant_id < '$FILE'"
  # kinesalite's own CPU time per read, from /proc: the whole process, and its main thread
  # alone. Node answers every request on that one thread, so its busy time for one read is the
  # floor no client can beat; a reader at the floor keeps it busy all the time it reads.
  kpid=$(cat target/kinesis-servers/kinesalite.pid)
  server_cpu() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$kpid/stat"; }
  server_main_cpu() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$kpid/task/$kpid/stat"; }
  declare -A FLOOR
  for reader in "weir consume -e" "boto3 reader (4 threads)" "boto3 reader (sequential)"; do
    before=$(server_cpu); before_main=$(server_main_cpu)
    case $reader in
      weir*) run "$reader" 3 $WEIR consume "kinesis://$S" -e -q --endpoint-url "$K" ;;
      *4*) run "$reader" 3 python3 scripts/peers/kinesis_reader.py "$K" "$S" ;;
      *) run "$reader" 3 python3 scripts/peers/kinesis_reader.py "$K" "$S" --sequential ;;
    esac
    FLOOR[$reader]=$(awk -v a="$before_main" -v b="$(server_main_cpu)" 'BEGIN{printf "%.2f", (b - a) / 3}')
    echo "  info  kinesalite CPU per read of $reader: $(awk -v a="$before" -v b="$(server_cpu)" 'BEGIN{printf "%.2f", (b - a) / 3}') s, main thread ${FLOOR[$reader]} s"
  done
  floor=${FLOOR['weir consume -e']}
  echo "  info  kinesalite's main thread was busy $(awk -v f="$floor" -v w="${SECS['weir consume -e']}" 'BEGIN{printf "%.0f", 100 * f / w}')% of weir's read: the server bounds it"
  for reader in "boto3 reader (sequential)" "boto3 reader (4 threads)"; do
    echo "  info  the most any client could gain on $reader (its time / the server's main-thread time for one read): $(awk -v f="$floor" -v w="${SECS[$reader]}" 'BEGIN{printf "%.1f", w / f}')x"
  done
  got=$($WEIR consume "kinesis://$S" -e -q --endpoint-url "$K" | wc -l)
  check "weir consume -e read every record" "$got" "==" "$LINES"
  check "weir consume -e vs boto3 reader, sequential (x)" "$(ratio 'weir consume -e' 'boto3 reader (sequential)')" ">=" 2.0
  check "weir consume -e vs boto3 reader, 4 threads (x)" "$(ratio 'weir consume -e' 'boto3 reader (4 threads)')" ">=" 2.0
  echo "  info  client CPU, boto3 reader (4 threads) / weir consume -e: $(awk -v a="${CPU['weir consume -e']}" -v b="${CPU['boto3 reader (4 threads)']}" 'BEGIN{printf "%.1f", b/(a<0.01?0.01:a)}')x"
  echo "  info  weir replay vs boto3 put_records: $(ratio 'weir replay -o kinesis' 'boto3 put_records')x"
fi

# Kinesis members (WHAT=members, starts the Kinesis test servers): the 200,000 records of the
# kinesis section on a 4-shard stream in kinesalite, read by one `consume -G` member of a new
# application, then by two started together (the lease table in dynalite): seconds until
# every record was written, and what the second member adds; then the same for `dedupe -G`
# members keeping state per shard, until every shard's checkpoint is at its last record.
# kinesalite answers every call on one thread, so on one machine the server bounds both.
if [[ " $WHAT " == *" members "* ]]; then
  trap 'scripts/kinesis-servers.sh stop' EXIT
  kinesis_env=$(scripts/kinesis-servers.sh start)
  eval "$kinesis_env"
  export AWS_ACCESS_KEY_ID=weir-bench AWS_SECRET_ACCESS_KEY=weir-bench AWS_REGION=us-east-1
  export AWS_ENDPOINT_URL_DYNAMODB=$WEIR_TEST_DYNAMODB
  K=$WEIR_TEST_KINESALITE
  data 200000
  S=bench-members-$$-$RANDOM
  python3 scripts/peers/kinesis.py "$K" create "$S" 4
  $WEIR replay "$FILE" -o "kinesis://$S" --key merchant_id --endpoint-url "$K" -q
  out=$(mktemp -d)
  # members_read N: seconds until N members of a new application have written every record.
  members_read() {
    local app=bench-app-$$-$RANDOM pids=() start end
    start=$(date +%s.%N)
    for i in $(seq 1 "$1"); do
      $WEIR consume "kinesis://$S" -G "$app" -q --endpoint-url "$K" -o "$out/$app-$i" &
      pids+=($!)
    done
    while [ "$(cat "$out/$app"-* 2>/dev/null | wc -l)" -lt "$LINES" ]; do sleep 0.2; done
    end=$(date +%s.%N)
    kill -TERM "${pids[@]}"
    wait "${pids[@]}" 2>/dev/null || true
    awk -v a="$start" -v b="$end" 'BEGIN{printf "%.2f", b - a}'
  }
  # members_caught_up N: seconds until N `dedupe -G` members (state per shard in a
  # directory) of a new application have committed every shard's checkpoint at its last
  # record, as `weir lag --kcl-app` reads the lease table.
  members_caught_up() {
    local app=bench-app-$$-$RANDOM pids=() start end
    start=$(date +%s.%N)
    for i in $(seq 1 "$1"); do
      $WEIR dedupe --id value.merchant_id "kinesis://$S" -G "$app" -q --endpoint-url "$K" \
        --state-store "$out/states" --checkpoint-interval 1s -o "$out/$app-$i" &
      pids+=($!)
    done
    until $WEIR lag "kinesis://$S" --kcl-app "$app" --endpoint-url "$K" \
      --dynamodb-endpoint-url "$WEIR_TEST_DYNAMODB" --format json 2>/dev/null |
      grep -o '"time_lag":"caught_up"' | wc -l | grep -qx 4; do sleep 0.2; done
    end=$(date +%s.%N)
    kill -TERM "${pids[@]}"
    wait "${pids[@]}" 2>/dev/null || true
    awk -v a="$start" -v b="$end" 'BEGIN{printf "%.2f", b - a}'
  }
  rate() { awk -v t="$1" -v n="$LINES" 'BEGIN{printf "%.0f", n / t}'; }
  echo "== kinesis members: $LINES records on 4 shards, kinesalite on $K"
  one=$(members_read 1)
  two=$(members_read 2)
  echo "  consume, one member:  $one s, $(rate "$one") records/s"
  echo "  consume, two members: $two s, $(rate "$two") records/s ($(awk -v a="$one" -v b="$two" 'BEGIN{printf "%.2f", a / b}')x one)"
  one=$(members_caught_up 1)
  two=$(members_caught_up 2)
  echo "  dedupe, one member:  $one s, $(rate "$one") records/s"
  echo "  dedupe, two members: $two s, $(rate "$two") records/s ($(awk -v a="$one" -v b="$two" 'BEGIN{printf "%.2f", a / b}')x one)"
  rm -rf "$out"
fi

# Scale-out (WHAT=scale, starts the test broker). weir window -G -e over a 4-partition topic of
# 1M events keyed by merchant_id: one member against two members started together, in events
# per second (each run a new group and changelog), and one member with --repartition (the
# same topic shuffled through GROUP-window-repartition). Then the takeover after a SIGKILL:
# scripts/scale_takeover.py has two dedupe members share a topic that records keep coming to,
# kills one, and times how long the survivor takes to pass a record of the dead member's
# partitions, with -X session.timeout.ms=6000 (librdkafka's default is 45 s); it also counts
# the records both passed, against one checkpoint interval's worth. Targets: takeover under 10
# s, at most one interval re-read.
if [[ " $WHAT " == *" scale "* ]]; then
  trap 'scripts/kafka-broker.sh stop' EXIT
  broker_env=$(scripts/kafka-broker.sh start)
  eval "$broker_env"
  B=$WEIR_TEST_KAFKA
  data "${SCALE_EVENTS:-1000000}"
  T="bench-scale-$$-$RANDOM"
  tansu topic create --broker "tcp://$B" --partitions 4 "$T" >/dev/null
  $WEIR replay -q --key merchant_id "$FILE" -o "kafka://$B/$T"
  echo "== scale: $LINES events on 4 partitions, Tansu on $B"
  win=(window "kafka://$B/$T" --from beginning -e -q --time value.occurred_at --key value.merchant_id --tumbling 1m --count)
  run "window -G, 1 member" 1 $WEIR "${win[@]}" -G "one-$T"
  run "window -G, 2 members" 1 sh -c "$WEIR ${win[*]} -G two-$T & $WEIR ${win[*]} -G two-$T & wait"
  echo "  info  2 members vs 1: $(ratio 'window -G, 2 members' 'window -G, 1 member')x (2 cores, the broker on the same machine)"
  # The shuffle's cost on the same keyed topic: one more write and read of every record.
  run "window -G --repartition, 1 member" 1 $WEIR "${win[@]}" -G "rp-$T" --repartition
  echo "  info  --repartition vs -G alone: $(ratio 'window -G --repartition, 1 member' 'window -G, 1 member')x the events/s"
  data 200000
  takeovers=(); rereads=()
  for _ in 1 2 3; do
    T2="bench-takeover-$$-$RANDOM"
    tansu topic create --broker "tcp://$B" --partitions 4 "$T2" >/dev/null
    result=$(python3 scripts/scale_takeover.py "$WEIR" "$B" "$T2" "$FILE" 5000 1000 6000 2>/dev/null)
    echo "  info  $result"
    takeovers+=("$(echo "$result" | python3 -c 'import json,sys; print(json.load(sys.stdin)["takeover_s"] or 999)')")
    rereads+=("$(echo "$result" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["reread_records"] / r["one_interval_records"])')")
  done
  median=$(printf '%s\n' "${takeovers[@]}" | sort -g | sed -n 2p)
  worst=$(printf '%s\n' "${rereads[@]}" | sort -g | tail -1)
  check "takeover after a SIGKILL, median of 3 (s)" "$median" "<" 10
  check "work re-read after a SIGKILL, worst of 3 (intervals)" "$worst" "<=" 1
fi

if [[ " $WHAT " == *" consume "* ]]; then
data "$EVENTS"
echo "# weir consume: $LINES lines, $((BYTES / 1000000)) MB ($FILE), every line checked to be JSON"
run "cat" 3 cat "$FILE"
run "weir consume" 3 "$WEIR" consume -q "$FILE"
run "weir consume (one core)" 3 taskset -c 0 "$WEIR" consume -q "$FILE"
run "weir consume --time (filter)" 3 "$WEIR" consume -q "$FILE" --time occurred_at --from 2026-11-28T12:05:00Z
run "jq -c ." 1 jq -c . "$FILE"
run "mlr --ijsonl --ojsonl cat" 1 mlr --ijsonl --ojsonl cat "$FILE"
MBS=$(awk -v s="${SECS[weir consume]}" -v b="$BYTES" 'BEGIN{ printf "%.0f", b/s/1e6 }')
check "weir consume MB/s" "$MBS" ">=" 400
check "weir consume vs jq -c . (x)" "$(ratio 'weir consume' 'jq -c .')" ">=" 30
# --where keeping about 12% of the records, against jq's select and Miller's filter.
WHERE='client == "ios" and amount >= 250'
run "weir consume --where" 3 "$WEIR" consume -q "$FILE" --where "$WHERE"
run "jq select" 1 jq -c 'select(.client == "ios" and .amount >= 250)' "$FILE"
run "mlr filter" 1 mlr --ijsonl --ojsonl filter '$client == "ios" && $amount >= 250' "$FILE"
check "weir consume --where vs jq select (x)" "$(ratio 'weir consume --where' 'jq select')" ">=" 40
echo "  info  weir consume --where vs mlr filter (x): $(ratio 'weir consume --where' 'mlr filter')"
echo "  info  weir consume vs mlr (x): $(ratio 'weir consume' 'mlr --ijsonl --ojsonl cat')"
# Compressed output (-o FILE.gz / .zst) against piping into gzip and zstd at their default levels.
need zstd zstd
run "weir consume -o .gz" 3 "$WEIR" consume -q "$FILE" -o "$DATA/out.ndjson.gz"
run "weir consume | gzip" 3 sh -c "\"\$0\" consume -q \"\$1\" | gzip > \"\$2\"" "$WEIR" "$FILE" "$DATA/piped.gz"
run "weir consume -o .zst" 3 "$WEIR" consume -q "$FILE" -o "$DATA/out.ndjson.zst"
run "weir consume | zstd" 3 sh -c "\"\$0\" consume -q \"\$1\" | zstd -q > \"\$2\"" "$WEIR" "$FILE" "$DATA/piped.zst"
echo "  info  -o .gz vs | gzip (x): $(ratio 'weir consume -o .gz' 'weir consume | gzip'), sizes $(stat -c %s "$DATA/out.ndjson.gz") and $(stat -c %s "$DATA/piped.gz") bytes"
echo "  info  -o .zst vs | zstd (x): $(ratio 'weir consume -o .zst' 'weir consume | zstd'), sizes $(stat -c %s "$DATA/out.ndjson.zst") and $(stat -c %s "$DATA/piped.zst") bytes"
fi

if [[ " $WHAT " == *" window "* ]]; then
data "$WINDOW_EVENTS"
echo
echo "# weir window: tumbling 1m count + sum(amount) per merchant_id (10k Zipf keys), $LINES events, $((BYTES / 1000000)) MB"
run "weir window" 3 "$WEIR" window -q "$FILE" --time occurred_at --key merchant_id --tumbling 1m --delay 10m --count --sum amount
# weir reads on one thread and computes on another; pinned to one core for the per-core rate.
run "weir window (one core)" 3 taskset -c 0 "$WEIR" window -q "$FILE" --time occurred_at --key merchant_id --tumbling 1m --delay 10m --count --sum amount
# --where that keeps every record: the cost of testing each one.
run "weir window --where (all kept)" 3 "$WEIR" window -q "$FILE" --time occurred_at --key merchant_id --tumbling 1m --delay 10m --count --sum amount --where 'exists(amount)'
check "weir window --where over window (x)" "$(ratio 'weir window' 'weir window --where (all kept)')" "<=" 1.10
run "weir window --where" 3 "$WEIR" window -q "$FILE" --time occurred_at --key merchant_id --tumbling 1m --delay 10m --count --sum amount --where 'client == "ios" and amount >= 250'
run "jq select | weir window" 1 sh -c "jq -c 'select(.client == \"ios\" and .amount >= 250)' \"\$1\" | \"\$0\" window -q --time occurred_at --key merchant_id --tumbling 1m --delay 10m --count --sum amount" "$WEIR" "$FILE"
echo "  info  window --where vs jq | weir window (x): $(ratio 'weir window --where' 'jq select | weir window')"
run "duckdb time_bucket GROUP BY" 3 python3 scripts/peers/duckdb_window.py "$FILE"
run "mlr stats1 -g" 1 mlr --ijsonl --ojsonl put '$w = substr($occurred_at, 0, 15)' then stats1 -a count,sum -f amount -g merchant_id,w "$FILE"
EPS=$(awk -v s="${SECS[weir window (one core)]}" -v l="$LINES" 'BEGIN{ printf "%.0f", l/s }')
check "weir window events/s on one core" "$EPS" ">=" 3000000
check "weir window vs mlr (x)" "$(ratio 'weir window' 'mlr stats1 -g')" ">=" 40
check "weir window vs duckdb (x)" "$(ratio 'weir window' 'duckdb time_bucket GROUP BY')" ">=" 1.0
echo "  info  weir window peak RSS: ${RSS[weir window]} KB"
fi

# Large state (WHAT=state): 3M events over 50 minutes (10k Zipf merchants), each command
# holding everything it has seen: windows under a 1 h delay never fire before the end, dedupe
# keeps every id for its 1 h horizon. Against DuckDB (2 threads) in the same run, and per core.
if [[ " $WHAT " == *" state "* ]]; then
data 3000000
echo
echo "# large state: $LINES events, $((BYTES / 1000000)) MB, every window open until the end"
LARGE=(--time occurred_at --key merchant_id --tumbling 1m --delay 1h --count --sum amount)
WEIR_WINDOW=("$WEIR" window -q "$FILE" "${LARGE[@]}")
DUCK_WINDOW=(python3 scripts/peers/duckdb_window.py "$FILE")
WEIR_DEDUPE=("$WEIR" dedupe -q "$FILE" --id event_id --time occurred_at --horizon 1h)
DUCK_DEDUPE=(python3 scripts/peers/duckdb_dedupe.py "$FILE")
WEIR_PROFILE=("$WEIR" watermark-profile -q "$FILE" --time occurred_at --arrival arrived_at --format json)
DUCK_PROFILE=(python3 scripts/peers/duckdb_profile.py "$FILE")
run "weir window, 1h delay" 5 "${WEIR_WINDOW[@]}"
run "weir window, 1h delay (one core)" 5 taskset -c 0 "${WEIR_WINDOW[@]}"
run "duckdb window" 5 "${DUCK_WINDOW[@]}"
run "weir dedupe, 1h" 5 "${WEIR_DEDUPE[@]}"
run "weir dedupe, 1h (one core)" 5 taskset -c 0 "${WEIR_DEDUPE[@]}"
run "duckdb dedupe" 5 "${DUCK_DEDUPE[@]}"
run "weir profile" 5 "${WEIR_PROFILE[@]}"
run "weir profile (one core)" 5 taskset -c 0 "${WEIR_PROFILE[@]}"
run "duckdb profile" 5 "${DUCK_PROFILE[@]}"
# By merchant: 10,000 groups, each with its own distribution.
run "weir profile --by" 5 "${WEIR_PROFILE[@]}" --by merchant_id
run "duckdb profile by" 5 "${DUCK_PROFILE[@]}" merchant_id
for pair in "window, 1h delay:window" "dedupe, 1h:dedupe" "profile:profile" "profile --by:profile by"; do
  echo "  info  weir ${pair%%:*} vs duckdb, best of 5 each: $(ratio "weir ${pair%%:*}" "duckdb ${pair##*:}")x"
done
check "weir window, 1h delay vs duckdb, paired (x)" "$(paired 7 WEIR_WINDOW DUCK_WINDOW)" ">=" 2
check "weir dedupe, 1h vs duckdb, paired (x)" "$(paired 7 WEIR_DEDUPE DUCK_DEDUPE)" ">=" 3
check "weir profile vs duckdb, paired (x)" "$(paired 7 WEIR_PROFILE DUCK_PROFILE)" ">=" 3
for c in "weir window, 1h delay" "weir dedupe, 1h" "weir profile"; do
  echo "  info  $c on one core: $(awk -v s="${SECS[$c (one core)]}" -v l="$LINES" 'BEGIN{ printf "%.2fM events/s", l/s/1e6 }')"
done
fi

# --metrics (WHAT=metrics): the window above with and without the endpoint, scraped every
# 100 ms (far more often than Prometheus does), alternating so that both see the same noise.
if [[ " $WHAT " == *" metrics "* ]]; then
data "$WINDOW_EVENTS"
echo
echo "# weir window with --metrics, scraped every 100 ms, against without: $LINES events"
PORT=19466
WIN=(window -q "$FILE" --time occurred_at --key merchant_id --tumbling 1m --delay 10m --count --sum amount)
scraped() { # scraped COMMAND...: runs it, scraping its endpoint until it ends
  "$@" & local pid=$!
  (while :; do curl -s "127.0.0.1:$PORT/metrics" > /dev/null || true; sleep 0.1; done) &
  local scraper=$!
  wait $pid; local rc=$?
  kill $scraper; return $rc
}
for i in 1 2 3; do
  run "weir window #$i" 1 "$WEIR" "${WIN[@]}"
  run "weir window --metrics #$i" 1 bash -c "$(declare -f scraped); PORT=$PORT; scraped \"\$@\"" _ "$WEIR" "${WIN[@]}" --metrics "127.0.0.1:$PORT"
  run "weir window, one core #$i" 1 taskset -c 0 "$WEIR" "${WIN[@]}"
  run "weir window --metrics, one core #$i" 1 bash -c "$(declare -f scraped); PORT=$PORT; scraped taskset -c 0 \"\$@\"" _ "$WEIR" "${WIN[@]}" --metrics "127.0.0.1:$PORT"
done
best() { local b=""; for i in 1 2 3; do local v=${SECS[$1 #$i]}; if [ -z "$b" ] || awk "BEGIN{exit !($v < $b)}"; then b=$v; fi; done; echo "$b"; }
for core in "" ", one core"; do
  SECS[without$core]=$(best "weir window$core"); SECS[with$core]=$(best "weir window --metrics$core")
  check "weir window --metrics over without$core, best of 3 (x)" "$(ratio "without$core" "with$core")" "<=" 1.05
done
fi

if [[ " $WHAT " == *" dedupe "* ]]; then
data "$WINDOW_EVENTS"
echo
echo "# weir dedupe: first of each event_id within 1h of event time, $LINES events (2% redelivered), $((BYTES / 1000000)) MB"
run "weir dedupe" 3 "$WEIR" dedupe -q "$FILE" --id event_id --time occurred_at --horizon 1h
# The same with a horizon that holds fewer ids (memory-latency bound: fewer cache misses).
run "weir dedupe --horizon 10m" 3 "$WEIR" dedupe -q "$FILE" --id event_id --time occurred_at --horizon 10m
run "weir dedupe (one core)" 3 taskset -c 0 "$WEIR" dedupe -q "$FILE" --id event_id --time occurred_at --horizon 1h
AWK_DEDUPE='{ split($2, id, "\""); if (!seen[id[1]]++) print }'
run "gawk !seen[id]++" 1 gawk -F'"event_id":"' "$AWK_DEDUPE" "$FILE"
run "mawk !seen[id]++" 1 mawk -F'"event_id":"' "$AWK_DEDUPE" "$FILE"
run "duckdb DISTINCT ON" 3 python3 scripts/peers/duckdb_dedupe.py "$FILE"
EPS=$(awk -v s="${SECS[weir dedupe (one core)]}" -v l="$LINES" 'BEGIN{ printf "%.0f", l/s }')
check "weir dedupe events/s on one core" "$EPS" ">=" 2500000
check "weir dedupe vs gawk (x)" "$(ratio 'weir dedupe' 'gawk !seen[id]++')" ">=" 15
echo "  info  weir dedupe vs mawk (Debian's default awk, x): $(ratio 'weir dedupe' 'mawk !seen[id]++')"
check "weir dedupe vs duckdb (x)" "$(ratio 'weir dedupe' 'duckdb DISTINCT ON')" ">=" 2

# Memory per remembered id, and the --max-keys bound, on 10M distinct ids.
IDS="$DATA/ids-10000000.ndjson"
[ -s "$IDS" ] || awk 'BEGIN { for (i = 0; i < 10000000; i++) printf "{\"id\":\"u-%d\"}\n", i }' > "$IDS"
FILE=$IDS; BYTES=$(stat -c %s "$IDS"); LINES=10000000
echo
echo "# weir dedupe memory: 10M distinct ids"
run "consume (baseline RSS)" 1 "$WEIR" consume -q "$IDS"
run "dedupe, all 10M remembered" 1 "$WEIR" dedupe -q "$IDS" --id id
run "dedupe --max-keys 1000000" 1 "$WEIR" dedupe -q "$IDS" --id id --max-keys 1000000
PER_ID=$(awk -v a="${RSS[dedupe, all 10M remembered]}" -v b="${RSS[consume (baseline RSS)]}" 'BEGIN{ printf "%.1f", (a - b) * 1024 / 10000000 }')
check "bytes per remembered id" "$PER_ID" "<=" 48
BOUND=$(awk -v a="${RSS[dedupe --max-keys 1000000]}" -v b="${RSS[consume (baseline RSS)]}" 'BEGIN{ printf "%.0f", (a - b) / 1024 }')
check "extra RSS with --max-keys 1M (MB; documented bound 1M x 72 B + 1 MiB Bloom)" "$BOUND" "<=" 73
fi

if [[ " $WHAT " == *" profile "* ]]; then
data "$WINDOW_EVENTS"
echo
echo "# weir watermark-profile: lateness quantiles, $LINES events, $((BYTES / 1000000)) MB"
run "weir watermark-profile" 3 "$WEIR" watermark-profile -q "$FILE" --time occurred_at --arrival arrived_at --format json
run "weir watermark-profile (one core)" 3 taskset -c 0 "$WEIR" watermark-profile -q "$FILE" --time occurred_at --arrival arrived_at --format json
run "duckdb quantile_cont" 3 python3 scripts/peers/duckdb_profile.py "$FILE"
EPS=$(awk -v s="${SECS[weir watermark-profile (one core)]}" -v l="$LINES" 'BEGIN{ printf "%.0f", l/s }')
check "weir watermark-profile events/s on one core" "$EPS" ">=" 3000000
check "weir watermark-profile vs duckdb (x)" "$(ratio 'weir watermark-profile' 'duckdb quantile_cont')" ">=" 1.2
fi

# Schema decoding (WHAT=schemas, not in the default set): 1M 10-field records to JSON lines,
# weir's decoders against apache-avro (target: 2M records/s) and prost-reflect (target: 1M).
if [[ " $WHAT " == *" schemas "* ]]; then
echo
echo "# avro decode"
cargo bench --locked --bench avro 2>/dev/null
echo
echo "# protobuf decode"
cargo bench --locked --bench protobuf 2>/dev/null
fi

# Checkpoints (WHAT=checkpoint, not in the default set). Writing and restoring a checkpoint of
# 1M open windows and of 10M remembered ids (benches/checkpoint.rs; target 2 s each, 32 B per
# id), then the throughput cost of --checkpoint on the 5M-event window and dedupe runs, each
# writing to a file with and without it (target: at most 5% at the default 10s interval; 1s
# shown too, where a run of a few seconds takes several).
if [[ " $WHAT " == *" checkpoint "* ]]; then
echo
echo "# checkpoint write and restore"
cargo bench --locked --bench checkpoint 2>/dev/null
data "$WINDOW_EVENTS"
# Output and checkpoint on tmpfs where there is one: a gigabyte written to a shared disk makes
# the disk's noise (and its fsync) the measurement, where the checkpoint's own work (state,
# encoding, CRC, the writes) is what is asked.
SCRATCH=$DATA
[ -d /dev/shm ] && [ -w /dev/shm ] && SCRATCH=/dev/shm
OUT="$SCRATCH/weir-checkpoint-bench.out"
CK="$SCRATCH/weir-checkpoint-bench.ckpt"
echo "(output and checkpoints in $SCRATCH)"
WINDOW_ARGS=(window -q "$FILE" --time occurred_at --key merchant_id --tumbling 1m --delay 10m --count --sum amount -o "$OUT")
DEDUPE_ARGS=(dedupe -q "$FILE" --id event_id --time occurred_at --horizon 1h -o "$OUT")
echo
echo "# checkpoint cost: $LINES events, $((BYTES / 1000000)) MB"
# Alternating, so that a busy spell of the machine falls on both sides alike.
for _ in 1 2 3; do
  for cmd in window dedupe; do
    if [ "$cmd" = window ]; then ARGS=("${WINDOW_ARGS[@]}"); else ARGS=("${DEDUPE_ARGS[@]}"); fi
    run "weir $cmd -o" 3 "$WEIR" "${ARGS[@]}"
    # A checkpoint covers only output that is on disk: the fair baseline syncs it too.
    run "weir $cmd -o, synced" 3 sh -c 'out=$1; shift; "$@" && sync "$out"' _ "$OUT" "$WEIR" "${ARGS[@]}"
    run "weir $cmd --checkpoint 10s" 3 sh -c 'rm -f "$1"*; shift; exec "$@"' _ "$CK" "$WEIR" "${ARGS[@]}" --checkpoint "$CK" --reset
    run "weir $cmd --checkpoint 1s" 3 sh -c 'rm -f "$1"*; shift; exec "$@"' _ "$CK" "$WEIR" "${ARGS[@]}" --checkpoint "$CK" --checkpoint-interval 1s --reset
    # The best of both rounds.
    for k in "weir $cmd -o" "weir $cmd -o, synced" "weir $cmd --checkpoint 10s" "weir $cmd --checkpoint 1s"; do
      if [ -z "${BEST[$k]:-}" ] || awk "BEGIN{exit !(${SECS[$k]} < ${BEST[$k]})}"; then BEST[$k]=${SECS[$k]}; fi
    done
  done
done
for cmd in window dedupe; do
  for interval in 10s 1s; do
    COST=$(awk -v a="${BEST[weir $cmd -o, synced]}" -v b="${BEST[weir $cmd --checkpoint $interval]}" 'BEGIN{ printf "%.1f", (b / a - 1) * 100 }')
    RAW=$(awk -v a="${BEST[weir $cmd -o]}" -v b="${BEST[weir $cmd --checkpoint $interval]}" 'BEGIN{ printf "%.1f", (b / a - 1) * 100 }')
    if [ "$interval" = 10s ]; then check "weir $cmd --checkpoint-interval 10s cost vs synced output (%)" "$COST" "<=" 5
    else echo "  info  weir $cmd --checkpoint-interval 1s cost vs synced output (%): $COST"; fi
    echo "  info  weir $cmd --checkpoint-interval $interval cost vs unsynced output (%): $RAW"
  done
done
rm -f "$OUT" "$CK"*
fi
