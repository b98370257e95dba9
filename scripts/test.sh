#!/usr/bin/env bash
# Every check CI runs: formatting, lints, and the whole test suite in one cargo invocation.
# Usage: scripts/test.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --locked --all-targets -- -D warnings

# The Kafka tests need a broker (Tansu), the Kinesis tests their servers (kinesis-local,
# kinesalite, dynalite), all on 127.0.0.1, installed on first use (see the scripts), stopped
# by PID when this script exits.
# The profile's plot test renders its SVG with librsvg's rsvg-convert.
if ! command -v rsvg-convert >/dev/null 2>&1; then
  echo "== installing librsvg2-bin (rsvg-convert)"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq librsvg2-bin >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq librsvg2-bin >/dev/null; fi
fi

# The metrics tests scrape weir with a real Prometheus server (Debian's package).
if ! command -v prometheus >/dev/null 2>&1; then
  echo "== installing prometheus"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq prometheus >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq prometheus >/dev/null; fi
fi

echo "== starting the test servers"
trap 'scripts/kafka-broker.sh stop; scripts/kinesis-servers.sh stop' EXIT
# Assignments, so that a failed start stops this script (set -e) before any test runs.
broker_env=$(scripts/kafka-broker.sh start)
eval "$broker_env"
kinesis_env=$(scripts/kinesis-servers.sh start)
eval "$kinesis_env"

echo "== cargo test"
cargo test --locked "$@"
