#!/usr/bin/env bash
# The Kinesis test servers, all on 127.0.0.1, and the independent Python clients the tests
# check weir against:
#   kinesis-local 0.6.2 (npm): the full API (ChildShards, UpdateShardCount, SubscribeToShard);
#   kinesalite 3.3.3 (npm): faster, for volume tests and benchmarks;
#   dynalite (npm): DynamoDB, for KCL lease tables and weir's own;
#   s3rver 3.7.1 (npm): S3, for the shard states of -G members (bucket weir-test);
#   moto 5.1.18 in server mode (PyPI): the AWS Glue Schema Registry's API;
#   boto3, aws-kinesis-agg and aws-glue-schema-registry (PyPI).
#
#   scripts/kinesis-servers.sh start   installs what is missing, starts the servers, prints
#                                      the lines to eval: WEIR_TEST_KINESIS,
#                                      WEIR_TEST_KINESALITE, WEIR_TEST_DYNAMODB, WEIR_TEST_S3,
#                                      WEIR_TEST_GLUE
#   scripts/kinesis-servers.sh stop    stops them by PID
#
# Packages live in target/kinesis-servers/ (node_modules), logs and PIDs beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=$ROOT/target/kinesis-servers
KINESIS_LOCAL_PORT=${WEIR_KINESIS_LOCAL_PORT:-14568}
KINESIS_LOCAL_TLS_PORT=${WEIR_KINESIS_LOCAL_TLS_PORT:-14566}
KINESALITE_PORT=${WEIR_KINESALITE_PORT:-14567}
DYNALITE_PORT=${WEIR_DYNALITE_PORT:-14569}
S3RVER_PORT=${WEIR_S3RVER_PORT:-14570}
MOTO_PORT=${WEIR_MOTO_PORT:-14571}
NPM_PACKAGES="kinesis-local@0.6.2 kinesalite@3.3.3 dynalite@4.0.0 s3rver@3.7.1"
PIP_PACKAGES="boto3==1.43.11 aws-kinesis-agg==1.2.3 moto[server]==5.1.18 aws-glue-schema-registry==1.1.3"

log() { echo "kinesis-servers: $*" >&2; }

install_tools() {
  mkdir -p "$DIR"
  if [ ! -f "$DIR/node_modules/kinesis-local/main.js" ] || [ ! -d "$DIR/node_modules/kinesalite" ] \
      || [ ! -d "$DIR/node_modules/dynalite" ] || [ ! -f "$DIR/node_modules/s3rver/bin/s3rver.js" ]; then
    log "installing $NPM_PACKAGES (npm)"
    (cd "$DIR" && npm install --no-audit --no-fund --loglevel=error $NPM_PACKAGES) >&2
  fi
  if ! python3 -c "import boto3, aws_kinesis_agg, moto.server, aws_schema_registry" 2>/dev/null; then
    log "installing $PIP_PACKAGES (PyPI)"
    python3 -m pip install -q $PIP_PACKAGES >&2
  fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_server NAME PORT COMMAND...: starts one server in the background unless it runs.
start_server() {
  local name=$1 port=$2
  shift 2
  if [ -f "$DIR/$name.pid" ] && kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null; then
    log "$name already running (pid $(cat "$DIR/$name.pid"))"
    return
  fi
  if port_open "$port"; then
    log "port $port is taken by another process; set WEIR_${name^^}_PORT"
    exit 1
  fi
  (cd "$DIR" && exec "$@" >"$DIR/$name.log" 2>&1) &
  echo $! > "$DIR/$name.pid"
  for _ in $(seq 200); do
    port_open "$port" && break
    sleep 0.1
  done
  if ! port_open "$port" || ! kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null; then
    log "$name did not start; see $DIR/$name.log"
    exit 1
  fi
  log "$name on 127.0.0.1:$port (pid $(cat "$DIR/$name.pid"))"
}

start() {
  install_tools
  local modules=$DIR/node_modules
  # kinesis-local: streams, splits, merges and consumers ready at once.
  start_server kinesis_local "$KINESIS_LOCAL_PORT" env \
    KINESIS_MOCK_PLAIN_PORT="$KINESIS_LOCAL_PORT" KINESIS_MOCK_TLS_PORT="$KINESIS_LOCAL_TLS_PORT" \
    KINESIS_MOCK_CERT_PATH="$modules/kinesis-local/server.json" \
    CREATE_STREAM_DURATION=0ms DELETE_STREAM_DURATION=0ms SPLIT_SHARD_DURATION=0ms \
    MERGE_SHARDS_DURATION=0ms UPDATE_SHARD_COUNT_DURATION=0ms \
    REGISTER_STREAM_CONSUMER_DURATION=0ms DEREGISTER_STREAM_CONSUMER_DURATION=0ms \
    START_STREAM_ENCRYPTION_DURATION=0ms STOP_STREAM_ENCRYPTION_DURATION=0ms \
    UPDATE_STREAM_MODE_DURATION=0ms SHARD_LIMIT=1000 SHOULD_PERSIST_DATA=false \
    node -r "$ROOT/scripts/kinesis/loopback.js" "$modules/kinesis-local/main.js"
  start_server kinesalite "$KINESALITE_PORT" env NODE_PATH="$modules" \
    node "$ROOT/scripts/kinesis/kinesalite.js" "$KINESALITE_PORT"
  start_server dynalite "$DYNALITE_PORT" env NODE_PATH="$modules" \
    node "$ROOT/scripts/kinesis/dynalite.js" "$DYNALITE_PORT"
  # s3rver: any credentials, path-style buckets, its data thrown away at each start.
  rm -rf "$DIR/s3rver-data"
  start_server s3rver "$S3RVER_PORT" node "$modules/s3rver/bin/s3rver.js" -d "$DIR/s3rver-data" \
    -a 127.0.0.1 -p "$S3RVER_PORT" --silent --allow-mismatched-signatures --no-vhost-buckets \
    --configure-bucket weir-test
  # moto: the Glue Schema Registry, its registries kept in memory for the run.
  start_server moto "$MOTO_PORT" python3 -m moto.server -H 127.0.0.1 -p "$MOTO_PORT"
  echo "export WEIR_TEST_KINESIS=http://127.0.0.1:$KINESIS_LOCAL_PORT"
  echo "export WEIR_TEST_KINESALITE=http://127.0.0.1:$KINESALITE_PORT"
  echo "export WEIR_TEST_DYNAMODB=http://127.0.0.1:$DYNALITE_PORT"
  echo "export WEIR_TEST_S3=http://127.0.0.1:$S3RVER_PORT"
  echo "export WEIR_TEST_GLUE=http://127.0.0.1:$MOTO_PORT"
}

stop() {
  for name in kinesis_local kinesalite dynalite s3rver moto; do
    if [ -f "$DIR/$name.pid" ]; then
      kill "$(cat "$DIR/$name.pid")" 2>/dev/null || true
      rm -f "$DIR/$name.pid"
    fi
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start | stop" >&2; exit 2 ;;
esac
