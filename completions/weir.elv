
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
            cand generate 'Writes man pages and shell completions (for the project''s own build)'
            cand window 'Count and aggregate events per key per event-time window, with watermarks [not built yet: issue #3]'
            cand watermark-profile 'Measure event lateness and recommend a watermark delay [not built yet: issue #5]'
            cand dedupe 'Drop repeated events within a bounded horizon [not built yet: issue #4]'
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
        &'weir;generate'= {
            cand --out-dir 'Folder that receives man/ and completions/'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'weir;window'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'weir;watermark-profile'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'weir;dedupe'= {
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
