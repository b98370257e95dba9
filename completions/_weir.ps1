
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
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Writes man pages and shell completions (for the project''s own build)')
            [CompletionResult]::new('window', 'window', [CompletionResultType]::ParameterValue, 'Count and aggregate events per key per event-time window, with watermarks [not built yet: issue #3]')
            [CompletionResult]::new('watermark-profile', 'watermark-profile', [CompletionResultType]::ParameterValue, 'Measure event lateness and recommend a watermark delay [not built yet: issue #5]')
            [CompletionResult]::new('dedupe', 'dedupe', [CompletionResultType]::ParameterValue, 'Drop repeated events within a bounded horizon [not built yet: issue #4]')
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
        'weir;generate' {
            [CompletionResult]::new('--out-dir', '--out-dir', [CompletionResultType]::ParameterName, 'Folder that receives man/ and completions/')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;window' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;watermark-profile' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'weir;dedupe' {
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
