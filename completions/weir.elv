
use builtin;
use str;

set edit:completion:arg-completer[weir] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'weir'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'weir'= {
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand consume 'Read records from a source and write them to a sink, unchanged'
            cand window 'Aggregate events per key per event-time window, with watermarks and a late-data policy'
            cand watermark-profile 'Measure how late events arrive and recommend a watermark delay'
            cand dedupe 'Drop repeated records: keep the first of each id within a horizon, with bounded memory'
            cand generate 'Writes man pages and shell completions (for the project''s own build)'
            cand replay 'Re-read a range of records into a sink, at a controlled rate [not built yet: issue #6]'
            cand lag 'Consumer lag in messages and in time, with thresholds for scripts [not built yet: issue #7]'
        }
        &'weir;consume'= {
            cand --on-error 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given'
            cand --dead-letter 'Write each bad record to PATH as JSON with its position and the reason'
            cand --max-line-bytes 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)'
            cand --time 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)'
            cand --time-format 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S'''
            cand --from 'First position to read: an RFC 3339 time or a relative time (-1h, needs --time), or beginning. Kafka/Kinesis positions (offsets, -N, stored) come with their sources'
            cand --to 'Stop position, exclusive, in the same forms as --from'
            cand -n 'Stop after writing N records'
            cand --count 'Stop after writing N records'
            cand -o 'Sink: - (stdout) or a file path'
            cand --output 'Sink: - (stdout) or a file path'
            cand --stats 'Also write the run summary as JSON to PATH'
            cand -q 'No summary on stderr (errors are still reported)'
            cand --quiet 'No summary on stderr (errors are still reported)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'weir;window'= {
            cand --on-error 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given'
            cand --dead-letter 'Write each bad record to PATH as JSON with its position and the reason'
            cand --max-line-bytes 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)'
            cand --time 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)'
            cand --time-format 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S'''
            cand --key 'Group by this field (repeatable for a composite key). Without --key, one global key'
            cand --tumbling 'Tumbling windows of SIZE (1m, 1h)'
            cand --hop 'Hopping (sliding) windows of SIZE, one starting every --slide'
            cand --slide 'The step between hopping windows; SIZE must be a multiple of it'
            cand --session 'Session windows: a key''s session ends after GAP without events'
            cand --offset 'Shift tumbling/hopping window starts by D from the epoch'
            cand --delay 'Watermark delay: how much out-of-orderness to wait for'
            cand --partition-by 'Track the watermark per value of FIELD (e.g. `partition` of a `consume -J` envelope)'
            cand --idle-timeout 'A partition without records for D (processing time) stops holding the watermark back'
            cand --allowed-lateness 'Keep fired windows for L more of event time; records in that span update them'
            cand --late-output 'Write late records, unchanged, to PATH'
            cand --emit 'final: one row per window when complete; updates: a row on every change'
            cand --sum 'Exact decimal sum of FIELD'
            cand --min 'Smallest value of FIELD'
            cand --max 'Largest value of FIELD'
            cand --avg 'Mean of FIELD'
            cand --distinct 'Distinct values of FIELD: exact up to 10,000 per window, then a HyperLogLog++ estimate flagged by distinct_F_estimated'
            cand --percentile 'Percentiles of FIELD (non-negative numbers), as FIELD:p50,p99,p99.9; 3 significant digits'
            cand --first 'Value of FIELD at the earliest event time'
            cand --last 'Value of FIELD at the latest event time'
            cand --as 'Names the output column of the aggregate just before it'
            cand --max-open-windows 'Bound on (key, window) pairs held at once; exceeding it stops with exit 3'
            cand --format 'Output rows as ndjson or csv'
            cand -o 'Sink: - (stdout) or a file path'
            cand --output 'Sink: - (stdout) or a file path'
            cand --stats 'Also write the run summary as JSON to PATH'
            cand --count 'Number of records'
            cand -q 'No summary on stderr (errors are still reported)'
            cand --quiet 'No summary on stderr (errors are still reported)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'weir;watermark-profile'= {
            cand --on-error 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given'
            cand --dead-letter 'Write each bad record to PATH as JSON with its position and the reason'
            cand --max-line-bytes 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)'
            cand --time 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)'
            cand --time-format 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S'''
            cand --arrival 'Arrival-time field (same formats as --time). Default: the time weir reads the record'
            cand --by 'Also profile per value of FIELD (e.g. client type)'
            cand --partition-by 'Track out-of-orderness per value of FIELD (e.g. `partition`)'
            cand --target 'Shares (percent) to recommend a delay for'
            cand --delay 'Delays to count late records for (the first also drives the drift series)'
            cand --bucket 'Event-time bucket of the drift series'
            cand --format 'text: a readable report with an ASCII histogram; json: for scripts'
            cand --plot 'Also draw the lateness histogram and the drift series to PATH (.svg, or .html wrapping it)'
            cand -o 'Sink: - (stdout) or a file path'
            cand --output 'Sink: - (stdout) or a file path'
            cand --stats 'Also write the run summary as JSON to PATH'
            cand -q 'No summary on stderr (errors are still reported)'
            cand --quiet 'No summary on stderr (errors are still reported)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'weir;dedupe'= {
            cand --on-error 'What to do with a bad record (not JSON, missing field, unparsable time). Default: fail, or skip when --dead-letter is given'
            cand --dead-letter 'Write each bad record to PATH as JSON with its position and the reason'
            cand --max-line-bytes 'Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024)'
            cand --id 'The id field (repeatable for a composite id)'
            cand --time 'Event-time field, as a dotted path (`occurred_at`, `value.ts`)'
            cand --time-format 'How --time values are written: auto (RFC 3339, or epoch numbers told apart by size), rfc3339, s, ms, us, ns, or a strftime pattern such as ''%Y-%m-%d %H:%M:%S'''
            cand --horizon 'How long an id is remembered. Without it, ids are remembered until --max-keys evicts them'
            cand --horizon-by 'Measure the horizon in event time (--time, watermark) or processing time'
            cand --delay 'Watermark delay for an event-time horizon'
            cand --partition-by 'Track the watermark per value of FIELD (e.g. `partition` of a `consume -J` envelope)'
            cand --max-keys 'Hard bound on remembered ids; the oldest are evicted (and counted) when it is reached'
            cand --duplicates 'Write the dropped repeats, unchanged, to PATH'
            cand -o 'Sink: - (stdout) or a file path'
            cand --output 'Sink: - (stdout) or a file path'
            cand --stats 'Also write the run summary as JSON to PATH'
            cand --exact-ids 'Remember ids as text instead of 128-bit hashes (more memory, no hash collisions)'
            cand -q 'No summary on stderr (errors are still reported)'
            cand --quiet 'No summary on stderr (errors are still reported)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'weir;generate'= {
            cand --out-dir 'Folder that receives man/ and completions/'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'weir;replay'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'weir;lag'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}
