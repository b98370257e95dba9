#!/usr/bin/env bash
# Every check CI runs: formatting, lints, and the whole test suite in one cargo invocation.
# Usage: scripts/test.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --locked --all-targets -- -D warnings

# Tests that need a broker (Kafka/Kinesis) arrive with their issues; this script will start
# those servers on 127.0.0.1 before the test run and stop them after.

echo "== cargo test"
cargo test --locked "$@"
