
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
            [CompletionResult]::new('dedupe', 'dedupe', [CompletionResultType]::ParameterValue, 'Drop repeated records: keep the first of each id within a horizon, with bounded memory')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Writes man pages and shell completions (for the project''s own build)')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Re-read a range of records into a sink, at a controlled rate [not built yet: issue #6]')
            [CompletionResult]::new('lag', 'lag', [CompletionResultType]::ParameterValue, 'Consumer lag in messages and in time, with thresholds for scripts [not built yet: issue #7]')
            break
        }
        'weir;consume' {
            [CompletionResult]::new('--on-error', '--on-error', [CompletionResultType]::ParameterName, 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given')
            [CompletionResult]::new('--dead-letter', '--dead-letter', [CompletionResultType]::ParameterName, 'Write each bad record to PATH as JSON with its position and the reason')
            [CompletionResult]::new('--max-line-bytes', '--max-line-bytes', [CompletionResultType]::ParameterName, 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)')
            [CompletionResult]::new('--time-format', '--time-format', [CompletionResultType]::ParameterName, 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S''')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'First position to read: an RFC 3339 time or a relative time (-1h, needs --time), or beginning. Kafka/Kinesis positions (offsets, -N, stored) come with their sources')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Stop position, exclusive, in the same forms as --from')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Stop after writing N records')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Stop after writing N records')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Sink: - (stdout) or a file path')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Sink: - (stdout) or a file path')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Also write the run summary as JSON to PATH')
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
            [CompletionResult]::new('--dead-letter', '--dead-letter', [CompletionResultType]::ParameterName, 'Write each bad record to PATH as JSON with its position and the reason')
            [CompletionResult]::new('--max-line-bytes', '--max-line-bytes', [CompletionResultType]::ParameterName, 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)')
            [CompletionResult]::new('--time-format', '--time-format', [CompletionResultType]::ParameterName, 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S''')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Group by this field (repeatable for a composite key). Without --key, one global key')
            [CompletionResult]::new('--tumbling', '--tumbling', [CompletionResultType]::ParameterName, 'Tumbling windows of SIZE (1m, 1h)')
            [CompletionResult]::new('--hop', '--hop', [CompletionResultType]::ParameterName, 'Hopping (sliding) windows of SIZE, one starting every --slide')
            [CompletionResult]::new('--slide', '--slide', [CompletionResultType]::ParameterName, 'The step between hopping windows; SIZE must be a multiple of it')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session windows: a key''s session ends after GAP without events')
            [CompletionResult]::new('--offset', '--offset', [CompletionResultType]::ParameterName, 'Shift tumbling/hopping window starts by D from the epoch')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'Watermark delay: how much out-of-orderness to wait for')
            [CompletionResult]::new('--partition-by', '--partition-by', [CompletionResultType]::ParameterName, 'Track the watermark per value of FIELD (e.g. `partition` of a `consume -J` envelope)')
            [CompletionResult]::new('--idle-timeout', '--idle-timeout', [CompletionResultType]::ParameterName, 'A partition without records for D (processing time) stops holding the watermark back')
            [CompletionResult]::new('--allowed-lateness', '--allowed-lateness', [CompletionResultType]::ParameterName, 'Keep fired windows for L more of event time; records in that span update them')
            [CompletionResult]::new('--late-output', '--late-output', [CompletionResultType]::ParameterName, 'Write late records, unchanged, to PATH')
            [CompletionResult]::new('--emit', '--emit', [CompletionResultType]::ParameterName, 'final: one row per window when complete; updates: a row on every change')
            [CompletionResult]::new('--sum', '--sum', [CompletionResultType]::ParameterName, 'Exact decimal sum of FIELD')
            [CompletionResult]::new('--min', '--min', [CompletionResultType]::ParameterName, 'Smallest value of FIELD')
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'Largest value of FIELD')
            [CompletionResult]::new('--avg', '--avg', [CompletionResultType]::ParameterName, 'Mean of FIELD')
            [CompletionResult]::new('--distinct', '--distinct', [CompletionResultType]::ParameterName, 'Distinct values of FIELD: exact up to 10,000 per window, then a HyperLogLog++ estimate flagged by distinct_F_estimated')
            [CompletionResult]::new('--percentile', '--percentile', [CompletionResultType]::ParameterName, 'Percentiles of FIELD (non-negative numbers), as FIELD:p50,p99,p99.9; 3 significant digits')
            [CompletionResult]::new('--first', '--first', [CompletionResultType]::ParameterName, 'Value of FIELD at the earliest event time')
            [CompletionResult]::new('--last', '--last', [CompletionResultType]::ParameterName, 'Value of FIELD at the latest event time')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'Names the output column of the aggregate just before it')
            [CompletionResult]::new('--max-open-windows', '--max-open-windows', [CompletionResultType]::ParameterName, 'Bound on (key, window) pairs held at once; exceeding it stops with exit 3')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output rows as ndjson or csv')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Sink: - (stdout) or a file path')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Sink: - (stdout) or a file path')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Also write the run summary as JSON to PATH')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Number of records')
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
            [CompletionResult]::new('--dead-letter', '--dead-letter', [CompletionResultType]::ParameterName, 'Write each bad record to PATH as JSON with its position and the reason')
            [CompletionResult]::new('--max-line-bytes', '--max-line-bytes', [CompletionResultType]::ParameterName, 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)')
            [CompletionResult]::new('--time-format', '--time-format', [CompletionResultType]::ParameterName, 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S''')
            [CompletionResult]::new('--arrival', '--arrival', [CompletionResultType]::ParameterName, 'Arrival-time field (same formats as --time). Default: the time weir reads the record')
            [CompletionResult]::new('--by', '--by', [CompletionResultType]::ParameterName, 'Also profile per value of FIELD (e.g. client type)')
            [CompletionResult]::new('--partition-by', '--partition-by', [CompletionResultType]::ParameterName, 'Track out-of-orderness per value of FIELD (e.g. `partition`)')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Shares (percent) to recommend a delay for')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'Delays to count late records for (the first also drives the drift series)')
            [CompletionResult]::new('--bucket', '--bucket', [CompletionResultType]::ParameterName, 'Event-time bucket of the drift series')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'text: a readable report with an ASCII histogram; json: for scripts')
            [CompletionResult]::new('--plot', '--plot', [CompletionResultType]::ParameterName, 'Also draw the lateness histogram and the drift series to PATH (.svg, or .html wrapping it)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Sink: - (stdout) or a file path')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Sink: - (stdout) or a file path')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Also write the run summary as JSON to PATH')
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
            [CompletionResult]::new('--dead-letter', '--dead-letter', [CompletionResultType]::ParameterName, 'Write each bad record to PATH as JSON with its position and the reason')
            [CompletionResult]::new('--max-line-bytes', '--max-line-bytes', [CompletionResultType]::ParameterName, 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)')
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'The id field (repeatable for a composite id)')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)')
            [CompletionResult]::new('--time-format', '--time-format', [CompletionResultType]::ParameterName, 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S''')
            [CompletionResult]::new('--horizon', '--horizon', [CompletionResultType]::ParameterName, 'How long an id is remembered. Without it, ids are remembered until --max-keys evicts them')
            [CompletionResult]::new('--horizon-by', '--horizon-by', [CompletionResultType]::ParameterName, 'Measure the horizon in event time (--time, watermark) or processing time')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'Watermark delay for an event-time horizon')
            [CompletionResult]::new('--partition-by', '--partition-by', [CompletionResultType]::ParameterName, 'Track the watermark per value of FIELD (e.g. `partition` of a `consume -J` envelope)')
            [CompletionResult]::new('--max-keys', '--max-keys', [CompletionResultType]::ParameterName, 'Hard bound on remembered ids; the oldest are evicted (and counted) when it is reached')
            [CompletionResult]::new('--duplicates', '--duplicates', [CompletionResultType]::ParameterName, 'Write the dropped repeats, unchanged, to PATH')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Sink: - (stdout) or a file path')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Sink: - (stdout) or a file path')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Also write the run summary as JSON to PATH')
            [CompletionResult]::new('--exact-ids', '--exact-ids', [CompletionResultType]::ParameterName, 'Remember ids as text instead of 128-bit hashes (more memory, no hash collisions)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No summary on stderr (errors are still reported)')
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
        'weir;replay' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;lag' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
