#!/usr/bin/env bash
# A Kafka-protocol broker for tests and benchmarks: Tansu 0.6.0 with its SQLite engine on
# 127.0.0.1, and kcat (the peer client) wired to a librdkafka new enough to talk to it.
#
#   scripts/kafka-broker.sh start [PORT]   installs what is missing, starts the broker, prints
#                                          the lines to eval: WEIR_TEST_KAFKA, WEIR_TEST_KCAT
#   scripts/kafka-broker.sh stop           stops it by PID
#
# State lives in target/kafka-broker/ (the database is taken relative to the working directory).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=$ROOT/target/kafka-broker
PORT=${2:-19092}
TANSU_VERSION=0.6.0
CONFLUENT_KAFKA_VERSION=2.16.1

log() { echo "kafka-broker: $*" >&2; }

install_tools() {
  if ! command -v tansu >/dev/null; then
    log "installing tansu $TANSU_VERSION (cargo install, about 15 minutes on 2 cores)"
    cargo install tansu --version "$TANSU_VERSION" --locked --no-default-features \
      --features libsql,dynostore >&2
  fi
  if ! command -v kcat >/dev/null; then
    log "installing kcat (Debian package)"
    (apt-get update -qq && apt-get install -y -qq kcat) >&2
  fi
  # Debian's kcat links librdkafka 2.0.2, which fails the ApiVersions handshake with Tansu;
  # the confluent-kafka wheel ships a current librdkafka that kcat can load instead.
  if ! python3 -c "import confluent_kafka" 2>/dev/null; then
    log "installing confluent-kafka $CONFLUENT_KAFKA_VERSION (PyPI) for its librdkafka"
    python3 -m pip install -q "confluent-kafka==$CONFLUENT_KAFKA_VERSION" >&2
  fi
  # The schema tests take their golden records from confluent-kafka's own serializers.
  # grpcio-tools compiles their .proto files to Python classes (protoc, from PyPI).
  if ! python3 -c "import confluent_kafka.schema_registry.avro, confluent_kafka.schema_registry.protobuf, fastavro, jsonschema, grpc_tools" 2>/dev/null; then
    log "installing confluent-kafka[avro,json,protobuf] $CONFLUENT_KAFKA_VERSION and grpcio-tools (PyPI)"
    python3 -m pip install -q "confluent-kafka[avro,json,protobuf]==$CONFLUENT_KAFKA_VERSION" "grpcio-tools==1.85.1" >&2
  fi
  # The MSK IAM tests: the test front checks tokens with botocore; the reference signer made
  # the tokens the unit tests compare with (scripts/peers/msk_token.py).
  if ! python3 -c "import botocore, aws_msk_iam_sasl_signer" 2>/dev/null; then
    python3 -m pip install -q "boto3==1.43.11" "aws-msk-iam-sasl-signer-python==1.0.2" >&2
  fi
  # The lag tests check the Prometheus output with the official client's parser.
  if ! python3 -c "import prometheus_client" 2>/dev/null; then
    python3 -m pip install -q "prometheus-client==0.21.1" >&2
  fi
  local libs
  libs=$(python3 -c "import confluent_kafka, os; print(os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), 'confluent_kafka.libs'))")
  mkdir -p "$DIR/lib"
  ln -sf "$(ls "$libs"/librdkafka-*.so.1 | head -1)" "$DIR/lib/librdkafka.so.1"
  cat > "$DIR/kcat" <<KCAT
#!/bin/sh
LD_LIBRARY_PATH="$DIR/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec kcat "\$@"
KCAT
  chmod +x "$DIR/kcat"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

start() {
  mkdir -p "$DIR"
  install_tools
  if [ -f "$DIR/pid" ] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
    log "already running (pid $(cat "$DIR/pid"))"
  else
    if port_open; then
      log "port $PORT is taken by another process; give another: $0 start PORT"
      exit 1
    fi
    rm -f "$DIR"/kafka.db*
    (cd "$DIR" && exec tansu broker --listener-url "tcp://127.0.0.1:$PORT" \
        --advertised-listener-url "tcp://127.0.0.1:$PORT" \
        --storage-engine sqlite://kafka.db >"$DIR/broker.log" 2>&1) &
    echo $! > "$DIR/pid"
    for _ in $(seq 100); do
      port_open && break
      sleep 0.1
    done
    if ! port_open || ! kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
      log "broker did not start; see $DIR/broker.log"
      exit 1
    fi
    log "tansu on 127.0.0.1:$PORT (pid $(cat "$DIR/pid"))"
  fi
  echo "export WEIR_TEST_KAFKA=127.0.0.1:$PORT"
  echo "export WEIR_TEST_KCAT=$DIR/kcat"
  echo "export WEIR_TEST_KAFKA_DIR=$DIR"
}

stop() {
  if [ -f "$DIR/pid" ]; then
    kill "$(cat "$DIR/pid")" 2>/dev/null || true
    rm -f "$DIR/pid"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start [PORT] | stop" >&2; exit 2 ;;
esac
