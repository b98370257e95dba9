
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'weir' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'weir'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'weir' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('consume', 'consume', [CompletionResultType]::ParameterValue, 'Read records from a source and write them to a sink, unchanged')
            [CompletionResult]::new('window', 'window', [CompletionResultType]::ParameterValue, 'Aggregate events per key per event-time window, with watermarks and a late-data policy')
            [CompletionResult]::new('watermark-profile', 'watermark-profile', [CompletionResultType]::ParameterValue, 'Measure how late events arrive and recommend a watermark delay')
            [CompletionResult]::new('dedupe', 'dedupe', [CompletionResultType]::ParameterValue, 'Drop repeated records: keep the first (or last) of each id within a horizon, with bounded memory')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Re-read a range of records into a sink, at a controlled rate')
            [CompletionResult]::new('lag', 'lag', [CompletionResultType]::ParameterValue, 'Consumer lag in messages and in time, with thresholds for scripts')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Writes man pages and shell completions (for the project''s own build)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'weir;consume' {
            [CompletionResult]::new('--on-error', '--on-error', [CompletionResultType]::ParameterName, 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given')
            [CompletionResult]::new('--dead-letter', '--dead-letter', [CompletionResultType]::ParameterName, 'Write each bad record to PATH as JSON with its position and the reason (.gz or .zst: compressed)')
            [CompletionResult]::new('--max-line-bytes', '--max-line-bytes', [CompletionResultType]::ParameterName, 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Keep only the records for which EXPR holds; repeated, all must hold. Fields as --time takes them (value.status, a\.b); JSON literals; == != < <= > >= (numbers as exact decimals, strings by their text; values of different kinds are unequal and unordered); PATH in [LIT, ...]; PATH =~ "regex"; exists(PATH), missing(PATH), startswith(PATH, "s"), contains(PATH, "s"); time(PATH) >= "2026-11-28T12:00:00Z" (read as --time-format reads times); and, or, not, parentheses. A test of a missing field is false. Dropped records are counted as filtered')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'First position: beginning, end, stored (the group''s), an offset (Kinesis: a sequence number), -N (N before the end, Kafka), an RFC 3339 time, a date or a time without an offset (UTC: 2026-01-01, ''2026-01-01 12:30''), now, or a relative time (-1h) of the broker timestamps (Kinesis: arrival times). Default: beginning, or the group''s offsets with --group (and, where the group has none, the end, as Kafka''s consumers start: give --from beginning to read a new group''s backlog). On NDJSON input (consume, replay) a time filters by --time')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'End position, exclusive, in the same forms as --from (not stored); a time still ahead is waited for')
            [CompletionResult]::new('--partitions', '--partitions', [CompletionResultType]::ParameterName, 'Read only these partitions')
            [CompletionResult]::new('--shards', '--shards', [CompletionResultType]::ParameterName, 'Kinesis: read only these shards (their children are not followed)')
            [CompletionResult]::new('--efo', '--efo', [CompletionResultType]::ParameterName, 'Kinesis: read with enhanced fan-out as this stream consumer (registered when it does not exist), through SubscribeToShard. The consumer stays registered for the next run; the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`')
            [CompletionResult]::new('-G', '-G ', [CompletionResultType]::ParameterName, 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group''s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group''s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL')
            [CompletionResult]::new('-F', '-F ', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--kafka-config', '--kafka-config', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS''s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)')
            [CompletionResult]::new('--time-format', '--time-format', [CompletionResultType]::ParameterName, 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S''')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Stop after writing N records')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Stop after writing N records')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Kafka or Kinesis source: write each record by a kcat format: %t topic, %p partition, %o offset, %k key, %s value, %T timestamp (ms), %h headers, %K/%S key/value length, \n \t \\. On Kinesis: %t stream, %p shard, %o sequence number, %k partition key, %T arrival')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Kafka or Kinesis source: write each record by a kcat format: %t topic, %p partition, %o offset, %k key, %s value, %T timestamp (ms), %h headers, %K/%S key/value length, \n \t \\. On Kinesis: %t stream, %p shard, %o sequence number, %k partition key, %T arrival')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (or the stream''s ARN)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (or the stream''s ARN)')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Kafka or Kinesis sink: the record key (Kinesis: the partition key) is this field''s value (strings as they are, other JSON as its text); a record without the field is bad')
            [CompletionResult]::new('--header', '--header', [CompletionResultType]::ParameterName, 'Kafka sink: a header NAME from FIELD (repeatable; Kinesis records have no headers)')
            [CompletionResult]::new('--checkpoint', '--checkpoint', [CompletionResultType]::ParameterName, 'Keep a checkpoint at PATH (input position, the command''s state, counters, output lengths) and resume from it when it exists: a killed run, started again, loses nothing and writes nothing twice to its -o, side and --dead-letter files')
            [CompletionResult]::new('--checkpoint-interval', '--checkpoint-interval', [CompletionResultType]::ParameterName, 'How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often each partition''s state goes to the changelog topic')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Also write the run summary as JSON to PATH')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard''s end as of the start), even while records keep coming')
            [CompletionResult]::new('--exit-at-end', '--exit-at-end', [CompletionResultType]::ParameterName, 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard''s end as of the start), even while records keep coming')
            [CompletionResult]::new('-J', '-J ', [CompletionResultType]::ParameterName, 'Kafka or Kinesis source: write each record''s envelope instead of its value (Kafka: topic, partition, offset, timestamp, key, headers, value; Kinesis: stream, shard, sequence, subsequence, arrival timestamp, partition key, value)')
            [CompletionResult]::new('--envelope', '--envelope', [CompletionResultType]::ParameterName, 'Kafka or Kinesis source: write each record''s envelope instead of its value (Kafka: topic, partition, offset, timestamp, key, headers, value; Kinesis: stream, shard, sequence, subsequence, arrival timestamp, partition key, value)')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Flush after every record (also the default on a terminal)')
            [CompletionResult]::new('--unbuffered', '--unbuffered', [CompletionResultType]::ParameterName, 'Flush after every record (also the default on a terminal)')
            [CompletionResult]::new('--reset', '--reset', [CompletionResultType]::ParameterName, 'Forget the checkpoint and start afresh')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;window' {
            [CompletionResult]::new('--on-error', '--on-error', [CompletionResultType]::ParameterName, 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given')
            [CompletionResult]::new('--dead-letter', '--dead-letter', [CompletionResultType]::ParameterName, 'Write each bad record to PATH as JSON with its position and the reason (.gz or .zst: compressed)')
            [CompletionResult]::new('--max-line-bytes', '--max-line-bytes', [CompletionResultType]::ParameterName, 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Keep only the records for which EXPR holds; repeated, all must hold. Fields as --time takes them (value.status, a\.b); JSON literals; == != < <= > >= (numbers as exact decimals, strings by their text; values of different kinds are unequal and unordered); PATH in [LIT, ...]; PATH =~ "regex"; exists(PATH), missing(PATH), startswith(PATH, "s"), contains(PATH, "s"); time(PATH) >= "2026-11-28T12:00:00Z" (read as --time-format reads times); and, or, not, parentheses. A test of a missing field is false. Dropped records are counted as filtered')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'First position: beginning, end, stored (the group''s), an offset (Kinesis: a sequence number), -N (N before the end, Kafka), an RFC 3339 time, a date or a time without an offset (UTC: 2026-01-01, ''2026-01-01 12:30''), now, or a relative time (-1h) of the broker timestamps (Kinesis: arrival times). Default: beginning, or the group''s offsets with --group (and, where the group has none, the end, as Kafka''s consumers start: give --from beginning to read a new group''s backlog). On NDJSON input (consume, replay) a time filters by --time')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'End position, exclusive, in the same forms as --from (not stored); a time still ahead is waited for')
            [CompletionResult]::new('--partitions', '--partitions', [CompletionResultType]::ParameterName, 'Read only these partitions')
            [CompletionResult]::new('--shards', '--shards', [CompletionResultType]::ParameterName, 'Kinesis: read only these shards (their children are not followed)')
            [CompletionResult]::new('--efo', '--efo', [CompletionResultType]::ParameterName, 'Kinesis: read with enhanced fan-out as this stream consumer (registered when it does not exist), through SubscribeToShard. The consumer stays registered for the next run; the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`')
            [CompletionResult]::new('-G', '-G ', [CompletionResultType]::ParameterName, 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group''s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group''s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL')
            [CompletionResult]::new('-F', '-F ', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--kafka-config', '--kafka-config', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS''s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)')
            [CompletionResult]::new('--time-format', '--time-format', [CompletionResultType]::ParameterName, 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S''')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Group by this field (repeatable for a composite key). Without --key, one global key. Keys compare by their JSON text ("1" and 1 differ, as do 1.5 and 1.50); null is a key, a missing field makes the record bad')
            [CompletionResult]::new('--tumbling', '--tumbling', [CompletionResultType]::ParameterName, 'Tumbling windows of SIZE (1m, 1h)')
            [CompletionResult]::new('--hop', '--hop', [CompletionResultType]::ParameterName, 'Hopping (sliding) windows of SIZE, one starting every --slide')
            [CompletionResult]::new('--slide', '--slide', [CompletionResultType]::ParameterName, 'The step between hopping windows, at most SIZE (a record is in every window that covers it: SIZE / SLIDE of them, rounded up or down)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session windows: a key''s session ends after GAP without events')
            [CompletionResult]::new('--offset', '--offset', [CompletionResultType]::ParameterName, 'Shift tumbling/hopping window starts by D from the epoch, as Flink''s offset does; D may be negative: --tumbling 1d --offset -8h gives days from midnight at UTC+8')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'Watermark delay: how much out-of-orderness to wait for')
            [CompletionResult]::new('--partition-by', '--partition-by', [CompletionResultType]::ParameterName, 'Track the watermark per value of FIELD (e.g. `partition` of a `consume -J` envelope)')
            [CompletionResult]::new('--idle-timeout', '--idle-timeout', [CompletionResultType]::ParameterName, 'A partition without records for D (processing time) stops holding the watermark back')
            [CompletionResult]::new('--allowed-lateness', '--allowed-lateness', [CompletionResultType]::ParameterName, 'Keep fired windows for L more of event time; records in that span update them')
            [CompletionResult]::new('--late-output', '--late-output', [CompletionResultType]::ParameterName, 'Write late records, unchanged, to PATH (.gz or .zst: compressed)')
            [CompletionResult]::new('--emit', '--emit', [CompletionResultType]::ParameterName, 'final: one row per window when complete; updates: a row on every change')
            [CompletionResult]::new('--sum', '--sum', [CompletionResultType]::ParameterName, 'Exact decimal sum of FIELD')
            [CompletionResult]::new('--min', '--min', [CompletionResultType]::ParameterName, 'Smallest value of FIELD')
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'Largest value of FIELD')
            [CompletionResult]::new('--avg', '--avg', [CompletionResultType]::ParameterName, 'Mean of FIELD')
            [CompletionResult]::new('--distinct', '--distinct', [CompletionResultType]::ParameterName, 'Distinct values of FIELD: exact up to 10,000 per window, then a HyperLogLog++ estimate flagged by distinct_F_estimated')
            [CompletionResult]::new('--percentile', '--percentile', [CompletionResultType]::ParameterName, 'Percentiles of FIELD (non-negative numbers), as FIELD:p50,p99,p99.9; exact up to 256 values per window, then 3 significant digits')
            [CompletionResult]::new('--first', '--first', [CompletionResultType]::ParameterName, 'Value of FIELD at the earliest event time')
            [CompletionResult]::new('--last', '--last', [CompletionResultType]::ParameterName, 'Value of FIELD at the latest event time')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'Names the output column of the aggregate just before it')
            [CompletionResult]::new('--max-open-windows', '--max-open-windows', [CompletionResultType]::ParameterName, 'Bound on (key, window) pairs held at once; exceeding it stops with exit 3')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output rows as ndjson or csv')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (NDJSON rows, keyed by the first --key field; on Kinesis without --key, by window_start)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (NDJSON rows, keyed by the first --key field; on Kinesis without --key, by window_start)')
            [CompletionResult]::new('--checkpoint', '--checkpoint', [CompletionResultType]::ParameterName, 'Keep a checkpoint at PATH (input position, the command''s state, counters, output lengths) and resume from it when it exists: a killed run, started again, loses nothing and writes nothing twice to its -o, side and --dead-letter files')
            [CompletionResult]::new('--checkpoint-interval', '--checkpoint-interval', [CompletionResultType]::ParameterName, 'How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often each partition''s state goes to the changelog topic')
            [CompletionResult]::new('--changelog', '--changelog', [CompletionResultType]::ParameterName, 'With -G on a Kafka source: the compacted topic that keeps each partition''s state, for the member the group gives it to next [default: GROUP-COMMAND-changelog, created when missing]')
            [CompletionResult]::new('--repartition-partitions', '--repartition-partitions', [CompletionResultType]::ParameterName, 'The partitions of the repartition topic, when it is created [default: the input''s]')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Also write the run summary as JSON to PATH')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard''s end as of the start), even while records keep coming')
            [CompletionResult]::new('--exit-at-end', '--exit-at-end', [CompletionResultType]::ParameterName, 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard''s end as of the start), even while records keep coming')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Number of records')
            [CompletionResult]::new('--reset', '--reset', [CompletionResultType]::ParameterName, 'Forget the checkpoint and start afresh')
            [CompletionResult]::new('--repartition', '--repartition', [CompletionResultType]::ParameterName, 'With -G: first send every record through the topic GROUP-COMMAND-repartition (created when missing), keyed by its state key, so that each member''s state is exact on a topic keyed by anything. Costs one more write and read of every record')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;watermark-profile' {
            [CompletionResult]::new('--on-error', '--on-error', [CompletionResultType]::ParameterName, 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given')
            [CompletionResult]::new('--dead-letter', '--dead-letter', [CompletionResultType]::ParameterName, 'Write each bad record to PATH as JSON with its position and the reason (.gz or .zst: compressed)')
            [CompletionResult]::new('--max-line-bytes', '--max-line-bytes', [CompletionResultType]::ParameterName, 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Keep only the records for which EXPR holds; repeated, all must hold. Fields as --time takes them (value.status, a\.b); JSON literals; == != < <= > >= (numbers as exact decimals, strings by their text; values of different kinds are unequal and unordered); PATH in [LIT, ...]; PATH =~ "regex"; exists(PATH), missing(PATH), startswith(PATH, "s"), contains(PATH, "s"); time(PATH) >= "2026-11-28T12:00:00Z" (read as --time-format reads times); and, or, not, parentheses. A test of a missing field is false. Dropped records are counted as filtered')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'First position: beginning, end, stored (the group''s), an offset (Kinesis: a sequence number), -N (N before the end, Kafka), an RFC 3339 time, a date or a time without an offset (UTC: 2026-01-01, ''2026-01-01 12:30''), now, or a relative time (-1h) of the broker timestamps (Kinesis: arrival times). Default: beginning, or the group''s offsets with --group (and, where the group has none, the end, as Kafka''s consumers start: give --from beginning to read a new group''s backlog). On NDJSON input (consume, replay) a time filters by --time')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'End position, exclusive, in the same forms as --from (not stored); a time still ahead is waited for')
            [CompletionResult]::new('--partitions', '--partitions', [CompletionResultType]::ParameterName, 'Read only these partitions')
            [CompletionResult]::new('--shards', '--shards', [CompletionResultType]::ParameterName, 'Kinesis: read only these shards (their children are not followed)')
            [CompletionResult]::new('--efo', '--efo', [CompletionResultType]::ParameterName, 'Kinesis: read with enhanced fan-out as this stream consumer (registered when it does not exist), through SubscribeToShard. The consumer stays registered for the next run; the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`')
            [CompletionResult]::new('-G', '-G ', [CompletionResultType]::ParameterName, 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group''s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group''s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL')
            [CompletionResult]::new('-F', '-F ', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--kafka-config', '--kafka-config', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS''s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)')
            [CompletionResult]::new('--time-format', '--time-format', [CompletionResultType]::ParameterName, 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S''')
            [CompletionResult]::new('--arrival', '--arrival', [CompletionResultType]::ParameterName, 'Arrival-time field (same formats as --time). Default: a Kafka record''s timestamp or a Kinesis record''s arrival time, else the time weir reads the record')
            [CompletionResult]::new('--by', '--by', [CompletionResultType]::ParameterName, 'Also profile per value of FIELD (e.g. client type)')
            [CompletionResult]::new('--partition-by', '--partition-by', [CompletionResultType]::ParameterName, 'Track out-of-orderness per value of FIELD (e.g. `partition`)')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Shares (percent) to recommend a delay for')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'Delays to count late records for (the first also drives the drift series)')
            [CompletionResult]::new('--bucket', '--bucket', [CompletionResultType]::ParameterName, 'Event-time bucket of the drift series')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'text: a readable report with an ASCII histogram; json: for scripts')
            [CompletionResult]::new('--plot', '--plot', [CompletionResultType]::ParameterName, 'Also draw the lateness histogram and the drift series to PATH (.svg, or .html wrapping it)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Sink: - (stdout) or a file path')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Sink: - (stdout) or a file path')
            [CompletionResult]::new('--checkpoint', '--checkpoint', [CompletionResultType]::ParameterName, 'Keep a checkpoint at PATH (input position, the command''s state, counters, output lengths) and resume from it when it exists: a killed run, started again, loses nothing and writes nothing twice to its -o, side and --dead-letter files')
            [CompletionResult]::new('--checkpoint-interval', '--checkpoint-interval', [CompletionResultType]::ParameterName, 'How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often each partition''s state goes to the changelog topic')
            [CompletionResult]::new('--changelog', '--changelog', [CompletionResultType]::ParameterName, 'With -G on a Kafka source: the compacted topic that keeps each partition''s state, for the member the group gives it to next [default: GROUP-COMMAND-changelog, created when missing]')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Also write the run summary as JSON to PATH')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard''s end as of the start), even while records keep coming')
            [CompletionResult]::new('--exit-at-end', '--exit-at-end', [CompletionResultType]::ParameterName, 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard''s end as of the start), even while records keep coming')
            [CompletionResult]::new('--reset', '--reset', [CompletionResultType]::ParameterName, 'Forget the checkpoint and start afresh')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;dedupe' {
            [CompletionResult]::new('--on-error', '--on-error', [CompletionResultType]::ParameterName, 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given')
            [CompletionResult]::new('--dead-letter', '--dead-letter', [CompletionResultType]::ParameterName, 'Write each bad record to PATH as JSON with its position and the reason (.gz or .zst: compressed)')
            [CompletionResult]::new('--max-line-bytes', '--max-line-bytes', [CompletionResultType]::ParameterName, 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Keep only the records for which EXPR holds; repeated, all must hold. Fields as --time takes them (value.status, a\.b); JSON literals; == != < <= > >= (numbers as exact decimals, strings by their text; values of different kinds are unequal and unordered); PATH in [LIT, ...]; PATH =~ "regex"; exists(PATH), missing(PATH), startswith(PATH, "s"), contains(PATH, "s"); time(PATH) >= "2026-11-28T12:00:00Z" (read as --time-format reads times); and, or, not, parentheses. A test of a missing field is false. Dropped records are counted as filtered')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'First position: beginning, end, stored (the group''s), an offset (Kinesis: a sequence number), -N (N before the end, Kafka), an RFC 3339 time, a date or a time without an offset (UTC: 2026-01-01, ''2026-01-01 12:30''), now, or a relative time (-1h) of the broker timestamps (Kinesis: arrival times). Default: beginning, or the group''s offsets with --group (and, where the group has none, the end, as Kafka''s consumers start: give --from beginning to read a new group''s backlog). On NDJSON input (consume, replay) a time filters by --time')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'End position, exclusive, in the same forms as --from (not stored); a time still ahead is waited for')
            [CompletionResult]::new('--partitions', '--partitions', [CompletionResultType]::ParameterName, 'Read only these partitions')
            [CompletionResult]::new('--shards', '--shards', [CompletionResultType]::ParameterName, 'Kinesis: read only these shards (their children are not followed)')
            [CompletionResult]::new('--efo', '--efo', [CompletionResultType]::ParameterName, 'Kinesis: read with enhanced fan-out as this stream consumer (registered when it does not exist), through SubscribeToShard. The consumer stays registered for the next run; the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`')
            [CompletionResult]::new('-G', '-G ', [CompletionResultType]::ParameterName, 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group''s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group''s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL')
            [CompletionResult]::new('-F', '-F ', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--kafka-config', '--kafka-config', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS''s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain')
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'The id field (repeatable for a composite id)')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)')
            [CompletionResult]::new('--time-format', '--time-format', [CompletionResultType]::ParameterName, 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S''')
            [CompletionResult]::new('--horizon', '--horizon', [CompletionResultType]::ParameterName, 'How long an id is remembered. Without it, ids are remembered until --max-keys evicts them')
            [CompletionResult]::new('--horizon-by', '--horizon-by', [CompletionResultType]::ParameterName, 'Measure the horizon in event time (--time, watermark) or processing time')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'Watermark delay for an event-time horizon')
            [CompletionResult]::new('--partition-by', '--partition-by', [CompletionResultType]::ParameterName, 'Track the watermark per value of FIELD (e.g. `partition` of a `consume -J` envelope)')
            [CompletionResult]::new('--idle-timeout', '--idle-timeout', [CompletionResultType]::ParameterName, 'A partition without records for D (processing time) stops holding the watermark back, so that ids still expire while it is silent')
            [CompletionResult]::new('--max-keys', '--max-keys', [CompletionResultType]::ParameterName, 'Hard bound on remembered ids; the oldest are evicted (and counted) when it is reached')
            [CompletionResult]::new('--duplicates', '--duplicates', [CompletionResultType]::ParameterName, 'Write the dropped repeats, unchanged, to PATH (.gz or .zst: compressed)')
            [CompletionResult]::new('--keep', '--keep', [CompletionResultType]::ParameterName, 'Which record of an id''s group to write: the first, at once, or the last, held until the id is forgotten (expired, evicted, or the input ends)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (or the stream''s ARN)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (or the stream''s ARN)')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Kafka or Kinesis sink: the record key (Kinesis: the partition key) is this field''s value (strings as they are, other JSON as its text); a record without the field is bad')
            [CompletionResult]::new('--header', '--header', [CompletionResultType]::ParameterName, 'Kafka sink: a header NAME from FIELD (repeatable; Kinesis records have no headers)')
            [CompletionResult]::new('--checkpoint', '--checkpoint', [CompletionResultType]::ParameterName, 'Keep a checkpoint at PATH (input position, the command''s state, counters, output lengths) and resume from it when it exists: a killed run, started again, loses nothing and writes nothing twice to its -o, side and --dead-letter files')
            [CompletionResult]::new('--checkpoint-interval', '--checkpoint-interval', [CompletionResultType]::ParameterName, 'How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often each partition''s state goes to the changelog topic')
            [CompletionResult]::new('--changelog', '--changelog', [CompletionResultType]::ParameterName, 'With -G on a Kafka source: the compacted topic that keeps each partition''s state, for the member the group gives it to next [default: GROUP-COMMAND-changelog, created when missing]')
            [CompletionResult]::new('--repartition-partitions', '--repartition-partitions', [CompletionResultType]::ParameterName, 'The partitions of the repartition topic, when it is created [default: the input''s]')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Also write the run summary as JSON to PATH')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard''s end as of the start), even while records keep coming')
            [CompletionResult]::new('--exit-at-end', '--exit-at-end', [CompletionResultType]::ParameterName, 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard''s end as of the start), even while records keep coming')
            [CompletionResult]::new('--exact-ids', '--exact-ids', [CompletionResultType]::ParameterName, 'Remember ids as text instead of 128-bit hashes (more memory, no hash collisions)')
            [CompletionResult]::new('--reset', '--reset', [CompletionResultType]::ParameterName, 'Forget the checkpoint and start afresh')
            [CompletionResult]::new('--repartition', '--repartition', [CompletionResultType]::ParameterName, 'With -G: first send every record through the topic GROUP-COMMAND-repartition (created when missing), keyed by its state key, so that each member''s state is exact on a topic keyed by anything. Costs one more write and read of every record')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;replay' {
            [CompletionResult]::new('--on-error', '--on-error', [CompletionResultType]::ParameterName, 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given')
            [CompletionResult]::new('--dead-letter', '--dead-letter', [CompletionResultType]::ParameterName, 'Write each bad record to PATH as JSON with its position and the reason (.gz or .zst: compressed)')
            [CompletionResult]::new('--max-line-bytes', '--max-line-bytes', [CompletionResultType]::ParameterName, 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Keep only the records for which EXPR holds; repeated, all must hold. Fields as --time takes them (value.status, a\.b); JSON literals; == != < <= > >= (numbers as exact decimals, strings by their text; values of different kinds are unequal and unordered); PATH in [LIT, ...]; PATH =~ "regex"; exists(PATH), missing(PATH), startswith(PATH, "s"), contains(PATH, "s"); time(PATH) >= "2026-11-28T12:00:00Z" (read as --time-format reads times); and, or, not, parentheses. A test of a missing field is false. Dropped records are counted as filtered')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'First position: beginning, end, stored (the group''s), an offset (Kinesis: a sequence number), -N (N before the end, Kafka), an RFC 3339 time, a date or a time without an offset (UTC: 2026-01-01, ''2026-01-01 12:30''), now, or a relative time (-1h) of the broker timestamps (Kinesis: arrival times). Default: beginning, or the group''s offsets with --group (and, where the group has none, the end, as Kafka''s consumers start: give --from beginning to read a new group''s backlog). On NDJSON input (consume, replay) a time filters by --time')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'End position, exclusive, in the same forms as --from (not stored); a time still ahead is waited for')
            [CompletionResult]::new('--partitions', '--partitions', [CompletionResultType]::ParameterName, 'Read only these partitions')
            [CompletionResult]::new('--shards', '--shards', [CompletionResultType]::ParameterName, 'Kinesis: read only these shards (their children are not followed)')
            [CompletionResult]::new('--efo', '--efo', [CompletionResultType]::ParameterName, 'Kinesis: read with enhanced fan-out as this stream consumer (registered when it does not exist), through SubscribeToShard. The consumer stays registered for the next run; the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`')
            [CompletionResult]::new('-G', '-G ', [CompletionResultType]::ParameterName, 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group''s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'Consumer group: weir joins it as a member and shares the partitions with the other members (as kcat -G). Each partition starts at the group''s offset, or where --from beginning|end says when it has none; offsets are committed as records are handed on. With --partitions: those partitions, from any --from, committed under the group')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL')
            [CompletionResult]::new('-F', '-F ', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--kafka-config', '--kafka-config', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS''s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)')
            [CompletionResult]::new('--time-format', '--time-format', [CompletionResultType]::ParameterName, 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S''')
            [CompletionResult]::new('--rate', '--rate', [CompletionResultType]::ParameterName, 'At most this many records per second (5000/s, 300/m, 10k/h)')
            [CompletionResult]::new('--speed', '--speed', [CompletionResultType]::ParameterName, 'Keep the original gaps between record timestamps, sped up by this factor (10x)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Stop after sending N records (a smoke test of a load, or its first N)')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Stop after sending N records (a smoke test of a load, or its first N)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (or the stream''s ARN)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst), kafka://HOST:PORT/TOPIC or kinesis://STREAM (or the stream''s ARN)')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Kafka or Kinesis sink: the record key (Kinesis: the partition key) is this field''s value (strings as they are, other JSON as its text); a record without the field is bad')
            [CompletionResult]::new('--header', '--header', [CompletionResultType]::ParameterName, 'Kafka sink: a header NAME from FIELD (repeatable; Kinesis records have no headers)')
            [CompletionResult]::new('--checkpoint', '--checkpoint', [CompletionResultType]::ParameterName, 'Keep a checkpoint at PATH (input position, the command''s state, counters, output lengths) and resume from it when it exists: a killed run, started again, loses nothing and writes nothing twice to its -o, side and --dead-letter files')
            [CompletionResult]::new('--checkpoint-interval', '--checkpoint-interval', [CompletionResultType]::ParameterName, 'How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often each partition''s state goes to the changelog topic')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Also write the run summary as JSON to PATH')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard''s end as of the start), even while records keep coming')
            [CompletionResult]::new('--exit-at-end', '--exit-at-end', [CompletionResultType]::ParameterName, 'Exit at the end: stop at the end offsets taken at start (Kinesis: each shard''s end as of the start), even while records keep coming')
            [CompletionResult]::new('-J', '-J ', [CompletionResultType]::ParameterName, 'The input lines are envelopes, as `weir consume -J` writes them')
            [CompletionResult]::new('--envelope', '--envelope', [CompletionResultType]::ParameterName, 'The input lines are envelopes, as `weir consume -J` writes them')
            [CompletionResult]::new('--keep-partition', '--keep-partition', [CompletionResultType]::ParameterName, 'Produce each envelope to the partition it came from (a Kafka sink)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Count what would be written, write nothing')
            [CompletionResult]::new('--reset', '--reset', [CompletionResultType]::ParameterName, 'Forget the checkpoint and start afresh')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;lag' {
            [CompletionResult]::new('--checkpoint', '--checkpoint', [CompletionResultType]::ParameterName, 'Kinesis: the lag of the weir run that keeps this checkpoint')
            [CompletionResult]::new('--kcl-app', '--kcl-app', [CompletionResultType]::ParameterName, 'Kinesis: the lag of this KCL application, read from its lease table in DynamoDB (the table is named after the application)')
            [CompletionResult]::new('--dynamodb-endpoint-url', '--dynamodb-endpoint-url', [CompletionResultType]::ParameterName, 'Kinesis: the DynamoDB endpoint of --kcl-app''s lease table, instead of AWS''s')
            [CompletionResult]::new('-G', '-G ', [CompletionResultType]::ParameterName, 'A consumer group (repeatable)')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'A consumer group (repeatable)')
            [CompletionResult]::new('--group-pattern', '--group-pattern', [CompletionResultType]::ParameterName, 'The listed groups whose names match this regular expression')
            [CompletionResult]::new('--time-mode', '--time-mode', [CompletionResultType]::ParameterName, 'How the time lag is found: exact, estimate, or none (messages only)')
            [CompletionResult]::new('--max-lag', '--max-lag', [CompletionResultType]::ParameterName, 'Exit 1 when a time lag is above this (5m, 30s)')
            [CompletionResult]::new('--max-messages', '--max-messages', [CompletionResultType]::ParameterName, 'Exit 1 when the lag in messages is above N')
            [CompletionResult]::new('--per', '--per', [CompletionResultType]::ParameterName, 'What --max-messages applies to: a group''s sum over a topic, or each partition')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'Repeat every D: redraw on a terminal, append into a pipe or file. Stop with Ctrl-C')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'format')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Where the report goes: - (stdout) or a file path')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Where the report goes: - (stdout) or a file path')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL')
            [CompletionResult]::new('-F', '-F ', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--kafka-config', '--kafka-config', [CompletionResultType]::ParameterName, 'A file of librdkafka properties (key=value lines, # comments), as kcat''s -F. Default: $WEIR_KAFKA_CONFIG')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for a broker, or to keep retrying a Kinesis call, before giving up with exit code 4')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS''s (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain')
            [CompletionResult]::new('--all-groups', '--all-groups', [CompletionResultType]::ParameterName, 'Every consumer group the cluster lists')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;generate' {
            [CompletionResult]::new('--out-dir', '--out-dir', [CompletionResultType]::ParameterName, 'Folder that receives man/ and completions/')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;help' {
            [CompletionResult]::new('consume', 'consume', [CompletionResultType]::ParameterValue, 'Read records from a source and write them to a sink, unchanged')
            [CompletionResult]::new('window', 'window', [CompletionResultType]::ParameterValue, 'Aggregate events per key per event-time window, with watermarks and a late-data policy')
            [CompletionResult]::new('watermark-profile', 'watermark-profile', [CompletionResultType]::ParameterValue, 'Measure how late events arrive and recommend a watermark delay')
            [CompletionResult]::new('dedupe', 'dedupe', [CompletionResultType]::ParameterValue, 'Drop repeated records: keep the first (or last) of each id within a horizon, with bounded memory')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Re-read a range of records into a sink, at a controlled rate')
            [CompletionResult]::new('lag', 'lag', [CompletionResultType]::ParameterValue, 'Consumer lag in messages and in time, with thresholds for scripts')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Writes man pages and shell completions (for the project''s own build)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'weir;help;consume' {
            break
        }
        'weir;help;window' {
            break
        }
        'weir;help;watermark-profile' {
            break
        }
        'weir;help;dedupe' {
            break
        }
        'weir;help;replay' {
            break
        }
        'weir;help;lag' {
            break
        }
        'weir;help;generate' {
            break
        }
        'weir;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
