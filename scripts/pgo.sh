#!/usr/bin/env bash
# Builds weir with profile-guided optimisation: an instrumented build runs each command's
# main jobs on generated events, and the final build lays out and inlines the code by what
# those runs did (docs/BENCHMARKS.md, "A profile-guided build", has what it is worth).
#
# Usage: scripts/pgo.sh                 the binary goes to target/pgo/weir
#        scripts/pgo.sh --install DIR   and is copied to DIR/weir (e.g. ~/.cargo/bin)
#
# Needs the toolchain's llvm-profdata (`rustup component add llvm-tools`; added when missing).
# Three release builds of weir, so about three times as long as `cargo install`. Code the
# training runs never reach (Kafka, Kinesis, the schema registries) is compiled as cold:
# correct as ever, laid out for size.
set -euo pipefail
cd "$(dirname "$0")/.."
INSTALL=
if [ "${1:-}" = "--install" ]; then
  INSTALL=${2:?"--install needs a directory"}
fi
HOST=$(rustc -vV | sed -n 's/^host: //p')
PROFDATA="$(rustc --print sysroot)/lib/rustlib/$HOST/bin/llvm-profdata"
if [ ! -x "$PROFDATA" ]; then
  rustup component add llvm-tools >&2
fi
TARGET_DIR=$(realpath -m "${CARGO_TARGET_DIR:-target}")
OUT="$TARGET_DIR/pgo"
RAW="$OUT/profiles"
rm -rf "$RAW"
mkdir -p "$RAW"

# `--target` keeps RUSTFLAGS off build scripts and proc macros: only weir and the crates in
# it are instrumented, then optimised. Both builds must share every profile setting: the
# profile is keyed by symbol names, which cargo derives from those settings too (a final build
# with `strip = "none"` or `--profile profiling` used the profile and gained nothing).
build() { # build RUSTFLAGS DIR
  RUSTFLAGS="$1" cargo build --release --locked --bin weir --target "$HOST" --target-dir "$2" >&2
}

build "-Cprofile-generate=$RAW" "$OUT/gen"
cargo build --release --locked --example gen_events >&2
EVENTS="$OUT/events.ndjson"
[ -s "$EVENTS" ] || "$TARGET_DIR/release/examples/gen_events" --events 300000 --seed 7 > "$EVENTS"

# The training runs: each command's common jobs, NDJSON in and out, one thread and two.
W="$OUT/gen/$HOST/release/weir"
train() { "$W" "$@" > /dev/null; taskset -c 0 "$W" "$@" > /dev/null 2>&1 || true; }
T=(--time occurred_at)
train consume -q "$EVENTS"
train consume -q "$EVENTS" --where 'status == "failed"' -n 100000
train window -q "$EVENTS" "${T[@]}" --key merchant_id --tumbling 1m --delay 10m --count --sum amount
train window -q "$EVENTS" "${T[@]}" --key merchant_id --tumbling 1m --delay 1h --count --sum amount
train window -q "$EVENTS" "${T[@]}" --key merchant_id --hop 5m --slide 1m --delay 1m --count --avg amount --percentile amount:50,99
train window -q "$EVENTS" "${T[@]}" --key merchant_id --session 30s --delay 10m --count --distinct client
train window -q "$EVENTS" "${T[@]}" --tumbling 10s --delay 5s --count --format csv
train dedupe -q "$EVENTS" --id event_id "${T[@]}" --horizon 1h
train dedupe -q "$EVENTS" --id event_id "${T[@]}" --horizon 10m --duplicates /dev/null
train watermark-profile -q "$EVENTS" "${T[@]}" --arrival arrived_at --format json
train watermark-profile -q "$EVENTS" "${T[@]}" --arrival arrived_at --tumbling 1m --by client
train replay -q "$EVENTS" "${T[@]}"
train replay -q "$EVENTS"

"$PROFDATA" merge -o "$OUT/weir.profdata" "$RAW"
build "-Cprofile-use=$OUT/weir.profdata" "$OUT/use"
cp "$OUT/use/$HOST/release/weir" "$OUT/weir"
if [ -n "$INSTALL" ]; then
  mkdir -p "$INSTALL"
  cp "$OUT/weir" "$INSTALL/weir"
fi
echo "$OUT/weir"
