# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_weir_global_optspecs
    string join \n h/help V/version
end

function __fish_weir_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_weir_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_weir_using_subcommand
    set -l cmd (__fish_weir_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c weir -n "__fish_weir_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c weir -n "__fish_weir_needs_command" -s V -l version -d 'Print version'
complete -c weir -n "__fish_weir_needs_command" -f -a "consume" -d 'Read records from a source and write them to a sink, unchanged'
complete -c weir -n "__fish_weir_needs_command" -f -a "window" -d 'Aggregate events per key per event-time window, with watermarks and a late-data policy'
complete -c weir -n "__fish_weir_needs_command" -f -a "watermark-profile" -d 'Measure how late events arrive and recommend a watermark delay'
complete -c weir -n "__fish_weir_needs_command" -f -a "dedupe" -d 'Drop repeated records: keep the first (or last) of each id within a horizon, with bounded memory'
complete -c weir -n "__fish_weir_needs_command" -f -a "replay" -d 'Re-read a range of records into a sink, at a controlled rate'
complete -c weir -n "__fish_weir_needs_command" -f -a "lag" -d 'Consumer lag in messages and in time, with thresholds for scripts'
complete -c weir -n "__fish_weir_needs_command" -f -a "generate" -d 'Writes man pages and shell completions (for the project\'s own build)'
complete -c weir -n "__fish_weir_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c weir -n "__fish_weir_using_subcommand consume" -l on-error -d 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given' -r -f -a "fail\t'Stop at the first bad record, exit 3'
skip\t'Count the bad record (and dead-letter it) and go on'"
complete -c weir -n "__fish_weir_using_subcommand consume" -l dead-letter -d 'Write each bad record to PATH as JSON with its position and the reason (.gz or .zst: compressed)' -r -F
complete -c weir -n "__fish_weir_using_subcommand consume" -l max-line-bytes -d 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l where -d 'Keep only the records for which EXPR holds (repeatable: all must hold), as \'status == "failed" and amount >= 100\'' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l from -d 'First position: beginning, end, an offset, -N, a time (\'2026-11-28 12:00\', -1h) or stored (the group\'s)' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l to -d 'End position, exclusive, in the same forms as --from (not stored); a time still ahead is waited for' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l partitions -d 'Read only these partitions' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l shards -d 'Kinesis: read only these shards (their children are not followed)' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l efo -d 'Kinesis: read with enhanced fan-out as this stream consumer (registered when it does not exist), through SubscribeToShard. The consumer stays registered for the next run; the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -s G -l group -d 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group\'s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group. Kinesis: the application whose members share the stream\'s shards through the DynamoDB lease table of this name (created when missing); a shard starts at its lease\'s checkpoint, or where --from beginning|end says when it has none (window, dedupe and watermark-profile keep each shard\'s state in --state-store)' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l lease-time -d 'Kinesis with -G: how long a member\'s heartbeat may stand still before the others take its shards' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -s r -l schema-registry -d 'Decode each value framed in the schema registry\'s wire format (magic byte 0, schema id) by its id, and each framed key, from this Confluent-compatible registry: Avro, Protobuf and JSON Schema. A value not framed is a bad record. Credentials and CA: -X schema.registry.basic.auth.user.info=USER:PASSWORD, -X schema.registry.bearer.auth.token=TOKEN, -X schema.registry.ssl.ca.location=FILE. glue://NAME reads values (and keys) framed for the AWS Glue Schema Registry NAME (Avro, JSON Schema), and frames a sink\'s values for it (--value-subject names the Glue schema), with the AWS chain\'s credentials and region (AWS_ENDPOINT_URL_GLUE for the endpoint)' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l value-format -d 'A Kafka or Kinesis source: values are unframed datums of --value-schema, in this format. A sink (when the input is not a broker, or with --register): values are encoded in it, with --value-schema, --value-schema-id, --value-subject or, with -r alone, the latest schema of the subject TOPIC-value' -r -f -a "avro\t''
protobuf\t''
json-schema\t''"
complete -c weir -n "__fish_weir_using_subcommand consume" -l value-schema -d 'The schema file of --value-format: .avsc for Avro, .proto for Protobuf (with --value-proto-type), .json for JSON Schema. On a sink with -r, the schema must be registered under the subject (TOPIC-value, or --value-subject), or given --register' -r -F
complete -c weir -n "__fish_weir_using_subcommand consume" -l key-format -d 'Keys are unframed datums of --key-schema, in this format' -r -f -a "avro\t''
protobuf\t''
json-schema\t''"
complete -c weir -n "__fish_weir_using_subcommand consume" -l key-schema -d 'The schema file of --key-format' -r -F
complete -c weir -n "__fish_weir_using_subcommand consume" -l value-schema-id -d 'Kafka or Kinesis sink: encode each value (JSON, as a decode writes it) with the registry\'s schema of this id (Avro, Protobuf or JSON Schema), framed with it. Needs -r' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l value-subject -d 'Kafka or Kinesis sink: as --value-schema-id, with a subject\'s schema: SUBJECT (the latest version, resolved once at the start) or SUBJECT@VERSION. With --value-schema, the subject it is found or registered under' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l glue-compression -d 'Sink with -r glue://NAME: compress each value\'s datum inside Glue\'s framing, as AWS\'s serializers do with compression ZLIB. Readers inflate it whatever this says' -r -f -a "none\t'Not compressed (compression byte 0)'
zlib\t'zlib (compression byte 5)'"
complete -c weir -n "__fish_weir_using_subcommand consume" -l reader-schema -d 'Read every Avro value into this reader schema (.avsc), whatever schema it was written with, by the Avro specification\'s resolution: fields matched by name, defaults for the missing, numbers widened. One shape across a subject\'s versions' -r -F
complete -c weir -n "__fish_weir_using_subcommand consume" -l value-proto-type -d 'The message a --value-format protobuf value is (its full name, package.Message)' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l key-proto-type -d 'The message a --key-format protobuf key is' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l proto-file -d 'The .proto file of --value-format protobuf or --key-format protobuf, in place of --value-schema or --key-schema' -r -F
complete -c weir -n "__fish_weir_using_subcommand consume" -s I -l proto-import-path -d 'A directory a local .proto file\'s imports are found in (repeatable; the file\'s own directory is searched too, and google/protobuf/*.proto are bundled)' -r -F
complete -c weir -n "__fish_weir_using_subcommand consume" -l avro-json -d 'The JSON an Avro record becomes' -r -f -a "weir\t'Bare unions, exact decimal strings, RFC 3339 times, dates, base64 bytes'
spec\t'The Avro specification\'s JSON encoding (tagged unions, to diff against other tools)'"
complete -c weir -n "__fish_weir_using_subcommand consume" -s X -d 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -s F -l kafka-config -d 'A file of librdkafka properties (key=value lines, # comments), as kcat\'s -F. Default: $WEIR_KAFKA_CONFIG' -r -F
complete -c weir -n "__fish_weir_using_subcommand consume" -l timeout -d 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l endpoint-url -d 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS\'s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l time -d 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l time-format -d 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as \'%Y-%m-%d %H:%M:%S\'' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -s n -l count -d 'Stop after writing N records' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -s f -l format -d 'Kafka or Kinesis source: write each record by a kcat format: %t topic, %p partition, %o offset, %k key, %s value, %T timestamp (ms), %h headers, %K/%S key/value length, \\n \\t \\\\. On Kinesis: %t stream, %p shard, %o sequence number, %k partition key, %T arrival' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -s o -l output -d 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (or the stream\'s ARN)' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l key -d 'Kafka or Kinesis sink: the record key (Kinesis: the partition key) is this field\'s value (strings as they are, other JSON as its text); a record without the field is bad' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l header -d 'Kafka sink: a header NAME from FIELD (repeatable; Kinesis records have no headers)' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l checkpoint -d 'Keep a checkpoint at PATH, and resume from it when it exists' -r -F
complete -c weir -n "__fish_weir_using_subcommand consume" -l checkpoint-interval -d 'How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often each partition\'s state goes to the changelog topic' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -l stats -d 'Also write the run summary as JSON to PATH' -r -F
complete -c weir -n "__fish_weir_using_subcommand consume" -l metrics -d 'Serve the run\'s metrics to Prometheus at http://ADDR/metrics while it lasts (HOST:PORT, or :PORT for every interface): records read, written, late, bad; each partition\'s watermark and lag; state held; checkpoints' -r
complete -c weir -n "__fish_weir_using_subcommand consume" -s e -l exit-at-end -d 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard\'s end as of the start), even while records keep coming'
complete -c weir -n "__fish_weir_using_subcommand consume" -l register -d 'Sink: register --value-schema under its subject (TOPIC-value, or --value-subject) in the registry of -r, and frame values with the id it gives (a schema the subject has keeps its id)'
complete -c weir -n "__fish_weir_using_subcommand consume" -l validate -d 'Check each JSON Schema value against its schema (the registry\'s or --value-schema\'s); one that fails is a bad record naming where and why. Off by default'
complete -c weir -n "__fish_weir_using_subcommand consume" -s J -l envelope -d 'Kafka or Kinesis source: write each record\'s envelope instead of its value (Kafka: topic, partition, offset, timestamp, key, headers, value; Kinesis: stream, shard, sequence, subsequence, arrival timestamp, partition key, value)'
complete -c weir -n "__fish_weir_using_subcommand consume" -s u -l unbuffered -d 'Flush after every record (also the default on a terminal)'
complete -c weir -n "__fish_weir_using_subcommand consume" -l reset -d 'Forget the checkpoint and start afresh'
complete -c weir -n "__fish_weir_using_subcommand consume" -s q -l quiet -d 'No summary on stderr (errors are still reported)'
complete -c weir -n "__fish_weir_using_subcommand consume" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c weir -n "__fish_weir_using_subcommand consume" -s V -l version -d 'Print version'
complete -c weir -n "__fish_weir_using_subcommand window" -l time -d 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l time-format -d 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as \'%Y-%m-%d %H:%M:%S\'' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l key -d 'Group by this field (repeatable for a composite key; without --key, one global key)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l tumbling -d 'Tumbling windows of SIZE (1m, 1h)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l hop -d 'Hopping (sliding) windows of SIZE, one starting every --slide' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l slide -d 'The step between hopping windows, at most SIZE (a record is in every window that covers it: SIZE / SLIDE of them, rounded up or down)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l session -d 'Session windows: a key\'s session ends after GAP without events' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l offset -d 'Shift tumbling/hopping window starts by D from the epoch, as Flink\'s offset does; D may be negative: --tumbling 1d --offset -8h gives days from midnight at UTC+8' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l delay -d 'Watermark delay: how much out-of-orderness to wait for' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l partition-by -d 'Track the watermark per value of FIELD (e.g. `partition` of a `consume -J` envelope)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l idle-timeout -d 'A partition without records for D (processing time) stops holding the watermark back' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l allowed-lateness -d 'Keep fired windows for L more of event time; records in that span update them' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l late-output -d 'Write late records, unchanged, to PATH (.gz or .zst: compressed)' -r -F
complete -c weir -n "__fish_weir_using_subcommand window" -l emit -d 'final: one row per window when complete; updates: a row on every change' -r -f -a "final\t'One row per window when it is complete (and an update row per late change)'
updates\t'A row on every change, as Kafka Streams without suppress'"
complete -c weir -n "__fish_weir_using_subcommand window" -l sum -d 'Exact decimal sum of FIELD' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l min -d 'Smallest value of FIELD' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l max -d 'Largest value of FIELD' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l avg -d 'Mean of FIELD' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l distinct -d 'Distinct values of FIELD: exact up to 10,000 per window, then a HyperLogLog++ estimate flagged by distinct_F_estimated' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l percentile -d 'Percentiles of FIELD (non-negative numbers), as FIELD:p50,p99,p99.9; exact up to 256 values per window, then 3 significant digits' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l first -d 'Value of FIELD at the earliest event time' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l last -d 'Value of FIELD at the latest event time' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l as -d 'Names the output column of the aggregate just before it' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l max-open-windows -d 'Bound on (key, window) pairs held at once; exceeding it stops with exit 3' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l format -d 'Output rows as ndjson, csv, or table (aligned, for reading)' -r -f -a "ndjson\t'One JSON object per row'
csv\t'A header row, then one row per result (RFC 4180 quoting)'
table\t'Aligned columns for a person at a terminal, as `weir lag` prints them: rows are held until the input pauses or ends (or 1,000 are held) and then written as a block'"
complete -c weir -n "__fish_weir_using_subcommand window" -s o -l output -d 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (NDJSON rows, keyed by the first --key field; on Kinesis without --key, by window_start)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l on-error -d 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given' -r -f -a "fail\t'Stop at the first bad record, exit 3'
skip\t'Count the bad record (and dead-letter it) and go on'"
complete -c weir -n "__fish_weir_using_subcommand window" -l dead-letter -d 'Write each bad record to PATH as JSON with its position and the reason (.gz or .zst: compressed)' -r -F
complete -c weir -n "__fish_weir_using_subcommand window" -l max-line-bytes -d 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l where -d 'Keep only the records for which EXPR holds (repeatable: all must hold), as \'status == "failed" and amount >= 100\'' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l from -d 'First position: beginning, end, an offset, -N, a time (\'2026-11-28 12:00\', -1h) or stored (the group\'s)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l to -d 'End position, exclusive, in the same forms as --from (not stored); a time still ahead is waited for' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l partitions -d 'Read only these partitions' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l shards -d 'Kinesis: read only these shards (their children are not followed)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l efo -d 'Kinesis: read with enhanced fan-out as this stream consumer (registered when it does not exist), through SubscribeToShard. The consumer stays registered for the next run; the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`' -r
complete -c weir -n "__fish_weir_using_subcommand window" -s G -l group -d 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group\'s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group. Kinesis: the application whose members share the stream\'s shards through the DynamoDB lease table of this name (created when missing); a shard starts at its lease\'s checkpoint, or where --from beginning|end says when it has none (window, dedupe and watermark-profile keep each shard\'s state in --state-store)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l lease-time -d 'Kinesis with -G: how long a member\'s heartbeat may stand still before the others take its shards' -r
complete -c weir -n "__fish_weir_using_subcommand window" -s r -l schema-registry -d 'Decode each value framed in the schema registry\'s wire format (magic byte 0, schema id) by its id, and each framed key, from this Confluent-compatible registry: Avro, Protobuf and JSON Schema. A value not framed is a bad record. Credentials and CA: -X schema.registry.basic.auth.user.info=USER:PASSWORD, -X schema.registry.bearer.auth.token=TOKEN, -X schema.registry.ssl.ca.location=FILE. glue://NAME reads values (and keys) framed for the AWS Glue Schema Registry NAME (Avro, JSON Schema), and frames a sink\'s values for it (--value-subject names the Glue schema), with the AWS chain\'s credentials and region (AWS_ENDPOINT_URL_GLUE for the endpoint)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l value-format -d 'A Kafka or Kinesis source: values are unframed datums of --value-schema, in this format. A sink (when the input is not a broker, or with --register): values are encoded in it, with --value-schema, --value-schema-id, --value-subject or, with -r alone, the latest schema of the subject TOPIC-value' -r -f -a "avro\t''
protobuf\t''
json-schema\t''"
complete -c weir -n "__fish_weir_using_subcommand window" -l value-schema -d 'The schema file of --value-format: .avsc for Avro, .proto for Protobuf (with --value-proto-type), .json for JSON Schema. On a sink with -r, the schema must be registered under the subject (TOPIC-value, or --value-subject), or given --register' -r -F
complete -c weir -n "__fish_weir_using_subcommand window" -l key-format -d 'Keys are unframed datums of --key-schema, in this format' -r -f -a "avro\t''
protobuf\t''
json-schema\t''"
complete -c weir -n "__fish_weir_using_subcommand window" -l key-schema -d 'The schema file of --key-format' -r -F
complete -c weir -n "__fish_weir_using_subcommand window" -l value-schema-id -d 'Kafka or Kinesis sink: encode each value (JSON, as a decode writes it) with the registry\'s schema of this id (Avro, Protobuf or JSON Schema), framed with it. Needs -r' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l value-subject -d 'Kafka or Kinesis sink: as --value-schema-id, with a subject\'s schema: SUBJECT (the latest version, resolved once at the start) or SUBJECT@VERSION. With --value-schema, the subject it is found or registered under' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l glue-compression -d 'Sink with -r glue://NAME: compress each value\'s datum inside Glue\'s framing, as AWS\'s serializers do with compression ZLIB. Readers inflate it whatever this says' -r -f -a "none\t'Not compressed (compression byte 0)'
zlib\t'zlib (compression byte 5)'"
complete -c weir -n "__fish_weir_using_subcommand window" -l reader-schema -d 'Read every Avro value into this reader schema (.avsc), whatever schema it was written with, by the Avro specification\'s resolution: fields matched by name, defaults for the missing, numbers widened. One shape across a subject\'s versions' -r -F
complete -c weir -n "__fish_weir_using_subcommand window" -l value-proto-type -d 'The message a --value-format protobuf value is (its full name, package.Message)' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l key-proto-type -d 'The message a --key-format protobuf key is' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l proto-file -d 'The .proto file of --value-format protobuf or --key-format protobuf, in place of --value-schema or --key-schema' -r -F
complete -c weir -n "__fish_weir_using_subcommand window" -s I -l proto-import-path -d 'A directory a local .proto file\'s imports are found in (repeatable; the file\'s own directory is searched too, and google/protobuf/*.proto are bundled)' -r -F
complete -c weir -n "__fish_weir_using_subcommand window" -l avro-json -d 'The JSON an Avro record becomes' -r -f -a "weir\t'Bare unions, exact decimal strings, RFC 3339 times, dates, base64 bytes'
spec\t'The Avro specification\'s JSON encoding (tagged unions, to diff against other tools)'"
complete -c weir -n "__fish_weir_using_subcommand window" -s X -d 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL' -r
complete -c weir -n "__fish_weir_using_subcommand window" -s F -l kafka-config -d 'A file of librdkafka properties (key=value lines, # comments), as kcat\'s -F. Default: $WEIR_KAFKA_CONFIG' -r -F
complete -c weir -n "__fish_weir_using_subcommand window" -l timeout -d 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l endpoint-url -d 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS\'s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l checkpoint -d 'Keep a checkpoint at PATH, and resume from it when it exists' -r -F
complete -c weir -n "__fish_weir_using_subcommand window" -l checkpoint-interval -d 'How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often each partition\'s state goes to the changelog topic' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l changelog -d 'With -G on a Kafka source: the compacted topic that keeps each partition\'s state, for the member the group gives it to next [default: GROUP-COMMAND-changelog, created when missing]' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l state-store -d 'With -G on a Kinesis source: where each shard\'s state goes, for whichever member reads the shard next: s3://BUCKET/PREFIX (endpoint from AWS_ENDPOINT_URL_S3), or a directory all members share' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l repartition-partitions -d 'The partitions of the repartition topic, when it is created [default: the input\'s]' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l stats -d 'Also write the run summary as JSON to PATH' -r -F
complete -c weir -n "__fish_weir_using_subcommand window" -l metrics -d 'Serve the run\'s metrics to Prometheus at http://ADDR/metrics while it lasts (HOST:PORT, or :PORT for every interface): records read, written, late, bad; each partition\'s watermark and lag; state held; checkpoints' -r
complete -c weir -n "__fish_weir_using_subcommand window" -l count -d 'Number of records'
complete -c weir -n "__fish_weir_using_subcommand window" -s e -l exit-at-end -d 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard\'s end as of the start), even while records keep coming'
complete -c weir -n "__fish_weir_using_subcommand window" -l register -d 'Sink: register --value-schema under its subject (TOPIC-value, or --value-subject) in the registry of -r, and frame values with the id it gives (a schema the subject has keeps its id)'
complete -c weir -n "__fish_weir_using_subcommand window" -l validate -d 'Check each JSON Schema value against its schema (the registry\'s or --value-schema\'s); one that fails is a bad record naming where and why. Off by default'
complete -c weir -n "__fish_weir_using_subcommand window" -l reset -d 'Forget the checkpoint and start afresh'
complete -c weir -n "__fish_weir_using_subcommand window" -l repartition -d 'With -G on a topic keyed otherwise: shuffle every record by its state key first'
complete -c weir -n "__fish_weir_using_subcommand window" -s q -l quiet -d 'No summary on stderr (errors are still reported)'
complete -c weir -n "__fish_weir_using_subcommand window" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c weir -n "__fish_weir_using_subcommand window" -s V -l version -d 'Print version'
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l time -d 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l time-format -d 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as \'%Y-%m-%d %H:%M:%S\'' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l arrival -d 'Arrival-time field (same formats as --time). Default: a Kafka record\'s timestamp or a Kinesis record\'s arrival time, else the time weir reads the record' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l by -d 'Also profile per value of FIELD (e.g. client type)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l partition-by -d 'Track out-of-orderness per value of FIELD (e.g. `partition`)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l target -d 'Shares (percent) to recommend a delay for' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l delay -d 'Delays to count late records for (the first also drives the drift series)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l bucket -d 'Event-time bucket of the drift series' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l format -d 'text: a readable report with an ASCII histogram; json: for scripts' -r -f -a "text\t''
json\t''"
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l plot -d 'Also draw the lateness histogram and the drift series to PATH (.svg, or .html wrapping it)' -r -F
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l tumbling -d 'Count late records as `window --tumbling SIZE` would, with the same --delay' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l hop -d 'Count late records as `window --hop SIZE --slide SLIDE` would' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l slide -d 'The step between hopping windows, as window\'s --slide' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l session -d 'Count late records as `window --session GAP` would (with its --key): the window runs once per delay, so the recommendations are the smallest of the delays tried' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l key -d 'As window\'s --key, with --session (repeatable; without it, one global key)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l offset -d 'Shift window starts by D, as window\'s --offset' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l allowed-lateness -d 'As window\'s --allowed-lateness' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l max-open-windows -d 'As window\'s --max-open-windows, with --session (per delay tried)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -s o -l output -d 'Sink: - (stdout) or a file path' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l on-error -d 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given' -r -f -a "fail\t'Stop at the first bad record, exit 3'
skip\t'Count the bad record (and dead-letter it) and go on'"
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l dead-letter -d 'Write each bad record to PATH as JSON with its position and the reason (.gz or .zst: compressed)' -r -F
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l max-line-bytes -d 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l where -d 'Keep only the records for which EXPR holds (repeatable: all must hold), as \'status == "failed" and amount >= 100\'' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l from -d 'First position: beginning, end, an offset, -N, a time (\'2026-11-28 12:00\', -1h) or stored (the group\'s)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l to -d 'End position, exclusive, in the same forms as --from (not stored); a time still ahead is waited for' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l partitions -d 'Read only these partitions' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l shards -d 'Kinesis: read only these shards (their children are not followed)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l efo -d 'Kinesis: read with enhanced fan-out as this stream consumer (registered when it does not exist), through SubscribeToShard. The consumer stays registered for the next run; the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -s G -l group -d 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group\'s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group. Kinesis: the application whose members share the stream\'s shards through the DynamoDB lease table of this name (created when missing); a shard starts at its lease\'s checkpoint, or where --from beginning|end says when it has none (window, dedupe and watermark-profile keep each shard\'s state in --state-store)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l lease-time -d 'Kinesis with -G: how long a member\'s heartbeat may stand still before the others take its shards' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -s r -l schema-registry -d 'Decode each value framed in the schema registry\'s wire format (magic byte 0, schema id) by its id, and each framed key, from this Confluent-compatible registry: Avro, Protobuf and JSON Schema. A value not framed is a bad record. Credentials and CA: -X schema.registry.basic.auth.user.info=USER:PASSWORD, -X schema.registry.bearer.auth.token=TOKEN, -X schema.registry.ssl.ca.location=FILE. glue://NAME reads values (and keys) framed for the AWS Glue Schema Registry NAME (Avro, JSON Schema), and frames a sink\'s values for it (--value-subject names the Glue schema), with the AWS chain\'s credentials and region (AWS_ENDPOINT_URL_GLUE for the endpoint)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l value-format -d 'A Kafka or Kinesis source: values are unframed datums of --value-schema, in this format. A sink (when the input is not a broker, or with --register): values are encoded in it, with --value-schema, --value-schema-id, --value-subject or, with -r alone, the latest schema of the subject TOPIC-value' -r -f -a "avro\t''
protobuf\t''
json-schema\t''"
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l value-schema -d 'The schema file of --value-format: .avsc for Avro, .proto for Protobuf (with --value-proto-type), .json for JSON Schema. On a sink with -r, the schema must be registered under the subject (TOPIC-value, or --value-subject), or given --register' -r -F
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l key-format -d 'Keys are unframed datums of --key-schema, in this format' -r -f -a "avro\t''
protobuf\t''
json-schema\t''"
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l key-schema -d 'The schema file of --key-format' -r -F
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l value-schema-id -d 'Kafka or Kinesis sink: encode each value (JSON, as a decode writes it) with the registry\'s schema of this id (Avro, Protobuf or JSON Schema), framed with it. Needs -r' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l value-subject -d 'Kafka or Kinesis sink: as --value-schema-id, with a subject\'s schema: SUBJECT (the latest version, resolved once at the start) or SUBJECT@VERSION. With --value-schema, the subject it is found or registered under' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l glue-compression -d 'Sink with -r glue://NAME: compress each value\'s datum inside Glue\'s framing, as AWS\'s serializers do with compression ZLIB. Readers inflate it whatever this says' -r -f -a "none\t'Not compressed (compression byte 0)'
zlib\t'zlib (compression byte 5)'"
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l reader-schema -d 'Read every Avro value into this reader schema (.avsc), whatever schema it was written with, by the Avro specification\'s resolution: fields matched by name, defaults for the missing, numbers widened. One shape across a subject\'s versions' -r -F
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l value-proto-type -d 'The message a --value-format protobuf value is (its full name, package.Message)' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l key-proto-type -d 'The message a --key-format protobuf key is' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l proto-file -d 'The .proto file of --value-format protobuf or --key-format protobuf, in place of --value-schema or --key-schema' -r -F
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -s I -l proto-import-path -d 'A directory a local .proto file\'s imports are found in (repeatable; the file\'s own directory is searched too, and google/protobuf/*.proto are bundled)' -r -F
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l avro-json -d 'The JSON an Avro record becomes' -r -f -a "weir\t'Bare unions, exact decimal strings, RFC 3339 times, dates, base64 bytes'
spec\t'The Avro specification\'s JSON encoding (tagged unions, to diff against other tools)'"
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -s X -d 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -s F -l kafka-config -d 'A file of librdkafka properties (key=value lines, # comments), as kcat\'s -F. Default: $WEIR_KAFKA_CONFIG' -r -F
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l timeout -d 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l endpoint-url -d 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS\'s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l checkpoint -d 'Keep a checkpoint at PATH, and resume from it when it exists' -r -F
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l checkpoint-interval -d 'How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often each partition\'s state goes to the changelog topic' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l changelog -d 'With -G on a Kafka source: the compacted topic that keeps each partition\'s state, for the member the group gives it to next [default: GROUP-COMMAND-changelog, created when missing]' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l state-store -d 'With -G on a Kinesis source: where each shard\'s state goes, for whichever member reads the shard next: s3://BUCKET/PREFIX (endpoint from AWS_ENDPOINT_URL_S3), or a directory all members share' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l stats -d 'Also write the run summary as JSON to PATH' -r -F
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l metrics -d 'Serve the run\'s metrics to Prometheus at http://ADDR/metrics while it lasts (HOST:PORT, or :PORT for every interface): records read, written, late, bad; each partition\'s watermark and lag; state held; checkpoints' -r
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -s e -l exit-at-end -d 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard\'s end as of the start), even while records keep coming'
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l register -d 'Sink: register --value-schema under its subject (TOPIC-value, or --value-subject) in the registry of -r, and frame values with the id it gives (a schema the subject has keeps its id)'
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l validate -d 'Check each JSON Schema value against its schema (the registry\'s or --value-schema\'s); one that fails is a bad record naming where and why. Off by default'
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -l reset -d 'Forget the checkpoint and start afresh'
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -s q -l quiet -d 'No summary on stderr (errors are still reported)'
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c weir -n "__fish_weir_using_subcommand watermark-profile" -s V -l version -d 'Print version'
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l id -d 'The id field (repeatable for a composite id)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l time -d 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l time-format -d 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as \'%Y-%m-%d %H:%M:%S\'' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l horizon -d 'How long an id is remembered. Without it, ids are remembered until --max-keys evicts them' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l horizon-by -d 'Measure the horizon in event time (--time, watermark) or processing time' -r -f -a "event\t'Event time, from --time and the watermark'
arrival\t'Processing time: when weir reads the record'"
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l delay -d 'Watermark delay for an event-time horizon' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l partition-by -d 'Track the watermark per value of FIELD (e.g. `partition` of a `consume -J` envelope)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l idle-timeout -d 'A partition without records for D (processing time) stops holding the watermark back, so that ids still expire while it is silent' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l max-keys -d 'Hard bound on remembered ids; the oldest are evicted (and counted) when it is reached' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l duplicates -d 'Write the dropped repeats, unchanged, to PATH (.gz or .zst: compressed)' -r -F
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l keep -d 'Which record of an id\'s group to write: the first, at once, or the last, held until the id is forgotten (expired, evicted, or the input ends)' -r -f -a "first\t'The first record of each id within the horizon, written as it arrives'
last\t'The last record of each id within the horizon, written when the id is forgotten'"
complete -c weir -n "__fish_weir_using_subcommand dedupe" -s o -l output -d 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (or the stream\'s ARN)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l key -d 'Kafka or Kinesis sink: the record key (Kinesis: the partition key) is this field\'s value (strings as they are, other JSON as its text); a record without the field is bad' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l header -d 'Kafka sink: a header NAME from FIELD (repeatable; Kinesis records have no headers)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l on-error -d 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given' -r -f -a "fail\t'Stop at the first bad record, exit 3'
skip\t'Count the bad record (and dead-letter it) and go on'"
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l dead-letter -d 'Write each bad record to PATH as JSON with its position and the reason (.gz or .zst: compressed)' -r -F
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l max-line-bytes -d 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l where -d 'Keep only the records for which EXPR holds (repeatable: all must hold), as \'status == "failed" and amount >= 100\'' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l from -d 'First position: beginning, end, an offset, -N, a time (\'2026-11-28 12:00\', -1h) or stored (the group\'s)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l to -d 'End position, exclusive, in the same forms as --from (not stored); a time still ahead is waited for' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l partitions -d 'Read only these partitions' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l shards -d 'Kinesis: read only these shards (their children are not followed)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l efo -d 'Kinesis: read with enhanced fan-out as this stream consumer (registered when it does not exist), through SubscribeToShard. The consumer stays registered for the next run; the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -s G -l group -d 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group\'s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group. Kinesis: the application whose members share the stream\'s shards through the DynamoDB lease table of this name (created when missing); a shard starts at its lease\'s checkpoint, or where --from beginning|end says when it has none (window, dedupe and watermark-profile keep each shard\'s state in --state-store)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l lease-time -d 'Kinesis with -G: how long a member\'s heartbeat may stand still before the others take its shards' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -s r -l schema-registry -d 'Decode each value framed in the schema registry\'s wire format (magic byte 0, schema id) by its id, and each framed key, from this Confluent-compatible registry: Avro, Protobuf and JSON Schema. A value not framed is a bad record. Credentials and CA: -X schema.registry.basic.auth.user.info=USER:PASSWORD, -X schema.registry.bearer.auth.token=TOKEN, -X schema.registry.ssl.ca.location=FILE. glue://NAME reads values (and keys) framed for the AWS Glue Schema Registry NAME (Avro, JSON Schema), and frames a sink\'s values for it (--value-subject names the Glue schema), with the AWS chain\'s credentials and region (AWS_ENDPOINT_URL_GLUE for the endpoint)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l value-format -d 'A Kafka or Kinesis source: values are unframed datums of --value-schema, in this format. A sink (when the input is not a broker, or with --register): values are encoded in it, with --value-schema, --value-schema-id, --value-subject or, with -r alone, the latest schema of the subject TOPIC-value' -r -f -a "avro\t''
protobuf\t''
json-schema\t''"
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l value-schema -d 'The schema file of --value-format: .avsc for Avro, .proto for Protobuf (with --value-proto-type), .json for JSON Schema. On a sink with -r, the schema must be registered under the subject (TOPIC-value, or --value-subject), or given --register' -r -F
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l key-format -d 'Keys are unframed datums of --key-schema, in this format' -r -f -a "avro\t''
protobuf\t''
json-schema\t''"
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l key-schema -d 'The schema file of --key-format' -r -F
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l value-schema-id -d 'Kafka or Kinesis sink: encode each value (JSON, as a decode writes it) with the registry\'s schema of this id (Avro, Protobuf or JSON Schema), framed with it. Needs -r' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l value-subject -d 'Kafka or Kinesis sink: as --value-schema-id, with a subject\'s schema: SUBJECT (the latest version, resolved once at the start) or SUBJECT@VERSION. With --value-schema, the subject it is found or registered under' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l glue-compression -d 'Sink with -r glue://NAME: compress each value\'s datum inside Glue\'s framing, as AWS\'s serializers do with compression ZLIB. Readers inflate it whatever this says' -r -f -a "none\t'Not compressed (compression byte 0)'
zlib\t'zlib (compression byte 5)'"
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l reader-schema -d 'Read every Avro value into this reader schema (.avsc), whatever schema it was written with, by the Avro specification\'s resolution: fields matched by name, defaults for the missing, numbers widened. One shape across a subject\'s versions' -r -F
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l value-proto-type -d 'The message a --value-format protobuf value is (its full name, package.Message)' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l key-proto-type -d 'The message a --key-format protobuf key is' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l proto-file -d 'The .proto file of --value-format protobuf or --key-format protobuf, in place of --value-schema or --key-schema' -r -F
complete -c weir -n "__fish_weir_using_subcommand dedupe" -s I -l proto-import-path -d 'A directory a local .proto file\'s imports are found in (repeatable; the file\'s own directory is searched too, and google/protobuf/*.proto are bundled)' -r -F
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l avro-json -d 'The JSON an Avro record becomes' -r -f -a "weir\t'Bare unions, exact decimal strings, RFC 3339 times, dates, base64 bytes'
spec\t'The Avro specification\'s JSON encoding (tagged unions, to diff against other tools)'"
complete -c weir -n "__fish_weir_using_subcommand dedupe" -s X -d 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -s F -l kafka-config -d 'A file of librdkafka properties (key=value lines, # comments), as kcat\'s -F. Default: $WEIR_KAFKA_CONFIG' -r -F
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l timeout -d 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l endpoint-url -d 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS\'s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l checkpoint -d 'Keep a checkpoint at PATH, and resume from it when it exists' -r -F
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l checkpoint-interval -d 'How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often each partition\'s state goes to the changelog topic' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l changelog -d 'With -G on a Kafka source: the compacted topic that keeps each partition\'s state, for the member the group gives it to next [default: GROUP-COMMAND-changelog, created when missing]' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l state-store -d 'With -G on a Kinesis source: where each shard\'s state goes, for whichever member reads the shard next: s3://BUCKET/PREFIX (endpoint from AWS_ENDPOINT_URL_S3), or a directory all members share' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l repartition-partitions -d 'The partitions of the repartition topic, when it is created [default: the input\'s]' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l stats -d 'Also write the run summary as JSON to PATH' -r -F
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l metrics -d 'Serve the run\'s metrics to Prometheus at http://ADDR/metrics while it lasts (HOST:PORT, or :PORT for every interface): records read, written, late, bad; each partition\'s watermark and lag; state held; checkpoints' -r
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l exact-ids -d 'Remember ids as text instead of 128-bit hashes (more memory, no hash collisions)'
complete -c weir -n "__fish_weir_using_subcommand dedupe" -s e -l exit-at-end -d 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard\'s end as of the start), even while records keep coming'
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l register -d 'Sink: register --value-schema under its subject (TOPIC-value, or --value-subject) in the registry of -r, and frame values with the id it gives (a schema the subject has keeps its id)'
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l validate -d 'Check each JSON Schema value against its schema (the registry\'s or --value-schema\'s); one that fails is a bad record naming where and why. Off by default'
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l reset -d 'Forget the checkpoint and start afresh'
complete -c weir -n "__fish_weir_using_subcommand dedupe" -l repartition -d 'With -G on a topic keyed otherwise: shuffle every record by its state key first'
complete -c weir -n "__fish_weir_using_subcommand dedupe" -s q -l quiet -d 'No summary on stderr (errors are still reported)'
complete -c weir -n "__fish_weir_using_subcommand dedupe" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c weir -n "__fish_weir_using_subcommand dedupe" -s V -l version -d 'Print version'
complete -c weir -n "__fish_weir_using_subcommand replay" -l on-error -d 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given' -r -f -a "fail\t'Stop at the first bad record, exit 3'
skip\t'Count the bad record (and dead-letter it) and go on'"
complete -c weir -n "__fish_weir_using_subcommand replay" -l dead-letter -d 'Write each bad record to PATH as JSON with its position and the reason (.gz or .zst: compressed)' -r -F
complete -c weir -n "__fish_weir_using_subcommand replay" -l max-line-bytes -d 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l where -d 'Keep only the records for which EXPR holds (repeatable: all must hold), as \'status == "failed" and amount >= 100\'' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l from -d 'First position: beginning, end, an offset, -N, a time (\'2026-11-28 12:00\', -1h) or stored (the group\'s)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l to -d 'End position, exclusive, in the same forms as --from (not stored); a time still ahead is waited for' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l partitions -d 'Read only these partitions' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l shards -d 'Kinesis: read only these shards (their children are not followed)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l efo -d 'Kinesis: read with enhanced fan-out as this stream consumer (registered when it does not exist), through SubscribeToShard. The consumer stays registered for the next run; the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -s G -l group -d 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group\'s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group. Kinesis: the application whose members share the stream\'s shards through the DynamoDB lease table of this name (created when missing); a shard starts at its lease\'s checkpoint, or where --from beginning|end says when it has none (window, dedupe and watermark-profile keep each shard\'s state in --state-store)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l lease-time -d 'Kinesis with -G: how long a member\'s heartbeat may stand still before the others take its shards' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -s r -l schema-registry -d 'Decode each value framed in the schema registry\'s wire format (magic byte 0, schema id) by its id, and each framed key, from this Confluent-compatible registry: Avro, Protobuf and JSON Schema. A value not framed is a bad record. Credentials and CA: -X schema.registry.basic.auth.user.info=USER:PASSWORD, -X schema.registry.bearer.auth.token=TOKEN, -X schema.registry.ssl.ca.location=FILE. glue://NAME reads values (and keys) framed for the AWS Glue Schema Registry NAME (Avro, JSON Schema), and frames a sink\'s values for it (--value-subject names the Glue schema), with the AWS chain\'s credentials and region (AWS_ENDPOINT_URL_GLUE for the endpoint)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l value-format -d 'A Kafka or Kinesis source: values are unframed datums of --value-schema, in this format. A sink (when the input is not a broker, or with --register): values are encoded in it, with --value-schema, --value-schema-id, --value-subject or, with -r alone, the latest schema of the subject TOPIC-value' -r -f -a "avro\t''
protobuf\t''
json-schema\t''"
complete -c weir -n "__fish_weir_using_subcommand replay" -l value-schema -d 'The schema file of --value-format: .avsc for Avro, .proto for Protobuf (with --value-proto-type), .json for JSON Schema. On a sink with -r, the schema must be registered under the subject (TOPIC-value, or --value-subject), or given --register' -r -F
complete -c weir -n "__fish_weir_using_subcommand replay" -l key-format -d 'Keys are unframed datums of --key-schema, in this format' -r -f -a "avro\t''
protobuf\t''
json-schema\t''"
complete -c weir -n "__fish_weir_using_subcommand replay" -l key-schema -d 'The schema file of --key-format' -r -F
complete -c weir -n "__fish_weir_using_subcommand replay" -l value-schema-id -d 'Kafka or Kinesis sink: encode each value (JSON, as a decode writes it) with the registry\'s schema of this id (Avro, Protobuf or JSON Schema), framed with it. Needs -r' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l value-subject -d 'Kafka or Kinesis sink: as --value-schema-id, with a subject\'s schema: SUBJECT (the latest version, resolved once at the start) or SUBJECT@VERSION. With --value-schema, the subject it is found or registered under' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l glue-compression -d 'Sink with -r glue://NAME: compress each value\'s datum inside Glue\'s framing, as AWS\'s serializers do with compression ZLIB. Readers inflate it whatever this says' -r -f -a "none\t'Not compressed (compression byte 0)'
zlib\t'zlib (compression byte 5)'"
complete -c weir -n "__fish_weir_using_subcommand replay" -l reader-schema -d 'Read every Avro value into this reader schema (.avsc), whatever schema it was written with, by the Avro specification\'s resolution: fields matched by name, defaults for the missing, numbers widened. One shape across a subject\'s versions' -r -F
complete -c weir -n "__fish_weir_using_subcommand replay" -l value-proto-type -d 'The message a --value-format protobuf value is (its full name, package.Message)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l key-proto-type -d 'The message a --key-format protobuf key is' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l proto-file -d 'The .proto file of --value-format protobuf or --key-format protobuf, in place of --value-schema or --key-schema' -r -F
complete -c weir -n "__fish_weir_using_subcommand replay" -s I -l proto-import-path -d 'A directory a local .proto file\'s imports are found in (repeatable; the file\'s own directory is searched too, and google/protobuf/*.proto are bundled)' -r -F
complete -c weir -n "__fish_weir_using_subcommand replay" -l avro-json -d 'The JSON an Avro record becomes' -r -f -a "weir\t'Bare unions, exact decimal strings, RFC 3339 times, dates, base64 bytes'
spec\t'The Avro specification\'s JSON encoding (tagged unions, to diff against other tools)'"
complete -c weir -n "__fish_weir_using_subcommand replay" -s X -d 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -s F -l kafka-config -d 'A file of librdkafka properties (key=value lines, # comments), as kcat\'s -F. Default: $WEIR_KAFKA_CONFIG' -r -F
complete -c weir -n "__fish_weir_using_subcommand replay" -l timeout -d 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l endpoint-url -d 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS\'s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l time -d 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l time-format -d 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as \'%Y-%m-%d %H:%M:%S\'' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l rate -d 'At most this many records per second (5000/s, 300/m, 10k/h)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l speed -d 'Keep the original gaps between record timestamps, sped up by this factor (10x)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -s n -l count -d 'Stop after sending N records (a smoke test of a load, or its first N)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -s o -l output -d 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (or the stream\'s ARN)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l key -d 'Kafka or Kinesis sink: the record key (Kinesis: the partition key) is this field\'s value (strings as they are, other JSON as its text); a record without the field is bad' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l header -d 'Kafka sink: a header NAME from FIELD (repeatable; Kinesis records have no headers)' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l checkpoint -d 'Keep a checkpoint at PATH, and resume from it when it exists' -r -F
complete -c weir -n "__fish_weir_using_subcommand replay" -l checkpoint-interval -d 'How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often each partition\'s state goes to the changelog topic' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -l stats -d 'Also write the run summary as JSON to PATH' -r -F
complete -c weir -n "__fish_weir_using_subcommand replay" -l metrics -d 'Serve the run\'s metrics to Prometheus at http://ADDR/metrics while it lasts (HOST:PORT, or :PORT for every interface): records read, written, late, bad; each partition\'s watermark and lag; state held; checkpoints' -r
complete -c weir -n "__fish_weir_using_subcommand replay" -s e -l exit-at-end -d 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard\'s end as of the start), even while records keep coming'
complete -c weir -n "__fish_weir_using_subcommand replay" -l register -d 'Sink: register --value-schema under its subject (TOPIC-value, or --value-subject) in the registry of -r, and frame values with the id it gives (a schema the subject has keeps its id)'
complete -c weir -n "__fish_weir_using_subcommand replay" -l validate -d 'Check each JSON Schema value against its schema (the registry\'s or --value-schema\'s); one that fails is a bad record naming where and why. Off by default'
complete -c weir -n "__fish_weir_using_subcommand replay" -s J -l envelope -d 'The input lines are envelopes, as `weir consume -J` writes them'
complete -c weir -n "__fish_weir_using_subcommand replay" -l keep-partition -d 'Produce each envelope to the partition it came from (a Kafka sink)'
complete -c weir -n "__fish_weir_using_subcommand replay" -l dry-run -d 'Count what would be written, write nothing (so there is nothing to resume)'
complete -c weir -n "__fish_weir_using_subcommand replay" -l reset -d 'Forget the checkpoint and start afresh'
complete -c weir -n "__fish_weir_using_subcommand replay" -s q -l quiet -d 'No summary on stderr (errors are still reported)'
complete -c weir -n "__fish_weir_using_subcommand replay" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c weir -n "__fish_weir_using_subcommand replay" -s V -l version -d 'Print version'
complete -c weir -n "__fish_weir_using_subcommand lag" -l checkpoint -d 'Kinesis: the lag of the weir run that keeps this checkpoint' -r -F
complete -c weir -n "__fish_weir_using_subcommand lag" -l kcl-app -d 'Kinesis: the lag of this KCL application, read from its lease table in DynamoDB (the table is named after the application)' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -l dynamodb-endpoint-url -d 'Kinesis: the DynamoDB endpoint of --kcl-app\'s lease table, instead of AWS\'s' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -s G -l group -d 'A consumer group (repeatable)' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -l group-pattern -d 'The listed groups whose names match this regular expression' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -l time-mode -d 'How the time lag is found: exact, estimate, or none (messages only)' -r -f -a "exact\t'now - timestamp of the first unconsumed record, read from the log'
estimate\t'Interpolated between sampled (offset, time) points, never beyond them'
none\t'Messages only: no record is read (the cheapest, for very many partitions)'"
complete -c weir -n "__fish_weir_using_subcommand lag" -l max-lag -d 'Exit 1 when a time lag is above this (5m, 30s)' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -l max-messages -d 'Exit 1 when the lag in messages is above N' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -l per -d 'What --max-messages applies to: a group\'s sum over a topic, or each partition' -r -f -a "group\t''
partition\t''"
complete -c weir -n "__fish_weir_using_subcommand lag" -l watch -d 'Repeat every D: redraw on a terminal, append into a pipe or file. Stop with Ctrl-C' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -l format -r -f -a "table\t'Aligned columns, with a total line per group and topic'
json\t'One document: groups, topics, partitions, totals and breaches'
ndjson\t'One object per partition'
csv\t'One row per partition, with a header'
prometheus\t'Prometheus text exposition format (node_exporter\'s textfile collector)'"
complete -c weir -n "__fish_weir_using_subcommand lag" -s o -l output -d 'Where the report goes: - (stdout) or a file path' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -l serve -d 'Serve the lag to Prometheus at http://ADDR/metrics (HOST:PORT, or :PORT for every interface), as --format prometheus writes it: measured at each scrape, or at most every --watch D. Runs until SIGTERM or Ctrl-C (exit 0)' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -s X -d 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -s F -l kafka-config -d 'A file of librdkafka properties (key=value lines, # comments), as kcat\'s -F. Default: $WEIR_KAFKA_CONFIG' -r -F
complete -c weir -n "__fish_weir_using_subcommand lag" -l timeout -d 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -l endpoint-url -d 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS\'s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain' -r
complete -c weir -n "__fish_weir_using_subcommand lag" -l all-groups -d 'Every consumer group the cluster lists'
complete -c weir -n "__fish_weir_using_subcommand lag" -s q -l quiet -d 'Say nothing on stderr of breaches or of what cannot be checked: the exit code says it'
complete -c weir -n "__fish_weir_using_subcommand lag" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c weir -n "__fish_weir_using_subcommand lag" -s V -l version -d 'Print version'
complete -c weir -n "__fish_weir_using_subcommand generate" -l out-dir -d 'Folder that receives man/ and completions/' -r -F
complete -c weir -n "__fish_weir_using_subcommand generate" -s h -l help -d 'Print help'
complete -c weir -n "__fish_weir_using_subcommand generate" -s V -l version -d 'Print version'
complete -c weir -n "__fish_weir_using_subcommand help; and not __fish_seen_subcommand_from consume window watermark-profile dedupe replay lag generate help" -f -a "consume" -d 'Read records from a source and write them to a sink, unchanged'
complete -c weir -n "__fish_weir_using_subcommand help; and not __fish_seen_subcommand_from consume window watermark-profile dedupe replay lag generate help" -f -a "window" -d 'Aggregate events per key per event-time window, with watermarks and a late-data policy'
complete -c weir -n "__fish_weir_using_subcommand help; and not __fish_seen_subcommand_from consume window watermark-profile dedupe replay lag generate help" -f -a "watermark-profile" -d 'Measure how late events arrive and recommend a watermark delay'
complete -c weir -n "__fish_weir_using_subcommand help; and not __fish_seen_subcommand_from consume window watermark-profile dedupe replay lag generate help" -f -a "dedupe" -d 'Drop repeated records: keep the first (or last) of each id within a horizon, with bounded memory'
complete -c weir -n "__fish_weir_using_subcommand help; and not __fish_seen_subcommand_from consume window watermark-profile dedupe replay lag generate help" -f -a "replay" -d 'Re-read a range of records into a sink, at a controlled rate'
complete -c weir -n "__fish_weir_using_subcommand help; and not __fish_seen_subcommand_from consume window watermark-profile dedupe replay lag generate help" -f -a "lag" -d 'Consumer lag in messages and in time, with thresholds for scripts'
complete -c weir -n "__fish_weir_using_subcommand help; and not __fish_seen_subcommand_from consume window watermark-profile dedupe replay lag generate help" -f -a "generate" -d 'Writes man pages and shell completions (for the project\'s own build)'
complete -c weir -n "__fish_weir_using_subcommand help; and not __fish_seen_subcommand_from consume window watermark-profile dedupe replay lag generate help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
