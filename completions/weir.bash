_weir() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="weir"
                ;;
            weir,consume)
                cmd="weir__subcmd__consume"
                ;;
            weir,dedupe)
                cmd="weir__subcmd__dedupe"
                ;;
            weir,generate)
                cmd="weir__subcmd__generate"
                ;;
            weir,help)
                cmd="weir__subcmd__help"
                ;;
            weir,lag)
                cmd="weir__subcmd__lag"
                ;;
            weir,replay)
                cmd="weir__subcmd__replay"
                ;;
            weir,watermark-profile)
                cmd="weir__subcmd__watermark__subcmd__profile"
                ;;
            weir,window)
                cmd="weir__subcmd__window"
                ;;
            weir__subcmd__help,consume)
                cmd="weir__subcmd__help__subcmd__consume"
                ;;
            weir__subcmd__help,dedupe)
                cmd="weir__subcmd__help__subcmd__dedupe"
                ;;
            weir__subcmd__help,generate)
                cmd="weir__subcmd__help__subcmd__generate"
                ;;
            weir__subcmd__help,help)
                cmd="weir__subcmd__help__subcmd__help"
                ;;
            weir__subcmd__help,lag)
                cmd="weir__subcmd__help__subcmd__lag"
                ;;
            weir__subcmd__help,replay)
                cmd="weir__subcmd__help__subcmd__replay"
                ;;
            weir__subcmd__help,watermark-profile)
                cmd="weir__subcmd__help__subcmd__watermark__subcmd__profile"
                ;;
            weir__subcmd__help,window)
                cmd="weir__subcmd__help__subcmd__window"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        weir)
            opts="-h -V --help --version consume window watermark-profile dedupe replay lag generate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__consume)
            opts="-e -G -r -I -X -F -n -J -f -u -o -q -h -V --on-error --dead-letter --max-line-bytes --where --from --to --exit-at-end --partitions --shards --efo --group --lease-time --schema-registry --value-format --value-schema --key-format --key-schema --value-schema-id --value-subject --register --glue-compression --validate --reader-schema --value-proto-type --key-proto-type --proto-file --proto-import-path --avro-json --kafka-config --timeout --endpoint-url --time --time-format --count --envelope --format --unbuffered --output --key --header --checkpoint --checkpoint-interval --reset --stats --quiet --metrics --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --on-error)
                    COMPREPLY=($(compgen -W "fail skip" -- "${cur}"))
                    return 0
                    ;;
                --dead-letter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-line-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --where)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partitions)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --shards)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --efo)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --group)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -G)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lease-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --schema-registry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -r)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-format)
                    COMPREPLY=($(compgen -W "avro protobuf json-schema" -- "${cur}"))
                    return 0
                    ;;
                --value-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-format)
                    COMPREPLY=($(compgen -W "avro protobuf json-schema" -- "${cur}"))
                    return 0
                    ;;
                --key-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-schema-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-subject)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glue-compression)
                    COMPREPLY=($(compgen -W "none zlib" -- "${cur}"))
                    return 0
                    ;;
                --reader-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-proto-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-proto-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-import-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -I)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --avro-json)
                    COMPREPLY=($(compgen -W "weir spec" -- "${cur}"))
                    return 0
                    ;;
                -X)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kafka-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -F)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoint-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time-format)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -f)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checkpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checkpoint-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__dedupe)
            opts="-o -e -G -r -I -X -F -q -h -V --id --time --time-format --horizon --horizon-by --delay --partition-by --idle-timeout --max-keys --exact-ids --duplicates --keep --output --key --header --on-error --dead-letter --max-line-bytes --where --from --to --exit-at-end --partitions --shards --efo --group --lease-time --schema-registry --value-format --value-schema --key-format --key-schema --value-schema-id --value-subject --register --glue-compression --validate --reader-schema --value-proto-type --key-proto-type --proto-file --proto-import-path --avro-json --kafka-config --timeout --endpoint-url --checkpoint --checkpoint-interval --reset --changelog --state-store --repartition --repartition-partitions --stats --quiet --metrics --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time-format)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --horizon)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --horizon-by)
                    COMPREPLY=($(compgen -W "event arrival" -- "${cur}"))
                    return 0
                    ;;
                --delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partition-by)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --idle-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-keys)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duplicates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keep)
                    COMPREPLY=($(compgen -W "first last" -- "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --on-error)
                    COMPREPLY=($(compgen -W "fail skip" -- "${cur}"))
                    return 0
                    ;;
                --dead-letter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-line-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --where)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partitions)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --shards)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --efo)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --group)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -G)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lease-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --schema-registry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -r)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-format)
                    COMPREPLY=($(compgen -W "avro protobuf json-schema" -- "${cur}"))
                    return 0
                    ;;
                --value-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-format)
                    COMPREPLY=($(compgen -W "avro protobuf json-schema" -- "${cur}"))
                    return 0
                    ;;
                --key-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-schema-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-subject)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glue-compression)
                    COMPREPLY=($(compgen -W "none zlib" -- "${cur}"))
                    return 0
                    ;;
                --reader-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-proto-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-proto-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-import-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -I)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --avro-json)
                    COMPREPLY=($(compgen -W "weir spec" -- "${cur}"))
                    return 0
                    ;;
                -X)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kafka-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -F)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoint-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checkpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checkpoint-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --changelog)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --repartition-partitions)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__generate)
            opts="-h -V --out-dir --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__help)
            opts="consume window watermark-profile dedupe replay lag generate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__help__subcmd__consume)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__help__subcmd__dedupe)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__help__subcmd__generate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__help__subcmd__lag)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__help__subcmd__replay)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__help__subcmd__watermark__subcmd__profile)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__help__subcmd__window)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__lag)
            opts="-G -o -q -X -F -h -V --checkpoint --kcl-app --dynamodb-endpoint-url --group --all-groups --group-pattern --time-mode --max-lag --max-messages --per --watch --format --output --quiet --serve --kafka-config --timeout --endpoint-url --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --checkpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kcl-app)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dynamodb-endpoint-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --group)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -G)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --group-pattern)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time-mode)
                    COMPREPLY=($(compgen -W "exact estimate none" -- "${cur}"))
                    return 0
                    ;;
                --max-lag)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-messages)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --per)
                    COMPREPLY=($(compgen -W "group partition" -- "${cur}"))
                    return 0
                    ;;
                --watch)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json ndjson csv prometheus" -- "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --serve)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -X)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kafka-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -F)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoint-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__replay)
            opts="-e -G -r -I -X -F -J -n -o -q -h -V --on-error --dead-letter --max-line-bytes --where --from --to --exit-at-end --partitions --shards --efo --group --lease-time --schema-registry --value-format --value-schema --key-format --key-schema --value-schema-id --value-subject --register --glue-compression --validate --reader-schema --value-proto-type --key-proto-type --proto-file --proto-import-path --avro-json --kafka-config --timeout --endpoint-url --time --time-format --envelope --keep-partition --rate --speed --count --dry-run --output --key --header --checkpoint --checkpoint-interval --reset --stats --quiet --metrics --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --on-error)
                    COMPREPLY=($(compgen -W "fail skip" -- "${cur}"))
                    return 0
                    ;;
                --dead-letter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-line-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --where)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partitions)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --shards)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --efo)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --group)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -G)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lease-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --schema-registry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -r)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-format)
                    COMPREPLY=($(compgen -W "avro protobuf json-schema" -- "${cur}"))
                    return 0
                    ;;
                --value-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-format)
                    COMPREPLY=($(compgen -W "avro protobuf json-schema" -- "${cur}"))
                    return 0
                    ;;
                --key-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-schema-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-subject)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glue-compression)
                    COMPREPLY=($(compgen -W "none zlib" -- "${cur}"))
                    return 0
                    ;;
                --reader-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-proto-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-proto-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-import-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -I)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --avro-json)
                    COMPREPLY=($(compgen -W "weir spec" -- "${cur}"))
                    return 0
                    ;;
                -X)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kafka-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -F)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoint-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time-format)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checkpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checkpoint-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__watermark__subcmd__profile)
            opts="-o -e -G -r -I -X -F -q -h -V --time --time-format --arrival --by --partition-by --target --delay --bucket --format --plot --tumbling --hop --slide --session --key --offset --allowed-lateness --max-open-windows --output --on-error --dead-letter --max-line-bytes --where --from --to --exit-at-end --partitions --shards --efo --group --lease-time --schema-registry --value-format --value-schema --key-format --key-schema --value-schema-id --value-subject --register --glue-compression --validate --reader-schema --value-proto-type --key-proto-type --proto-file --proto-import-path --avro-json --kafka-config --timeout --endpoint-url --checkpoint --checkpoint-interval --reset --changelog --state-store --stats --quiet --metrics --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time-format)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --arrival)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --by)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partition-by)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --target)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bucket)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --plot)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tumbling)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hop)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slide)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --offset)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allowed-lateness)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-open-windows)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --on-error)
                    COMPREPLY=($(compgen -W "fail skip" -- "${cur}"))
                    return 0
                    ;;
                --dead-letter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-line-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --where)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partitions)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --shards)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --efo)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --group)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -G)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lease-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --schema-registry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -r)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-format)
                    COMPREPLY=($(compgen -W "avro protobuf json-schema" -- "${cur}"))
                    return 0
                    ;;
                --value-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-format)
                    COMPREPLY=($(compgen -W "avro protobuf json-schema" -- "${cur}"))
                    return 0
                    ;;
                --key-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-schema-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-subject)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glue-compression)
                    COMPREPLY=($(compgen -W "none zlib" -- "${cur}"))
                    return 0
                    ;;
                --reader-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-proto-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-proto-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-import-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -I)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --avro-json)
                    COMPREPLY=($(compgen -W "weir spec" -- "${cur}"))
                    return 0
                    ;;
                -X)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kafka-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -F)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoint-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checkpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checkpoint-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --changelog)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        weir__subcmd__window)
            opts="-o -e -G -r -I -X -F -q -h -V --time --time-format --key --tumbling --hop --slide --session --offset --delay --partition-by --idle-timeout --allowed-lateness --late-output --emit --count --sum --min --max --avg --distinct --percentile --first --last --as --max-open-windows --format --output --on-error --dead-letter --max-line-bytes --where --from --to --exit-at-end --partitions --shards --efo --group --lease-time --schema-registry --value-format --value-schema --key-format --key-schema --value-schema-id --value-subject --register --glue-compression --validate --reader-schema --value-proto-type --key-proto-type --proto-file --proto-import-path --avro-json --kafka-config --timeout --endpoint-url --checkpoint --checkpoint-interval --reset --changelog --state-store --repartition --repartition-partitions --stats --quiet --metrics --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time-format)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tumbling)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hop)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slide)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --offset)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partition-by)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --idle-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allowed-lateness)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --late-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --emit)
                    COMPREPLY=($(compgen -W "final updates" -- "${cur}"))
                    return 0
                    ;;
                --sum)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --avg)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --distinct)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --percentile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --first)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --last)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --as)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-open-windows)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "ndjson csv table" -- "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --on-error)
                    COMPREPLY=($(compgen -W "fail skip" -- "${cur}"))
                    return 0
                    ;;
                --dead-letter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-line-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --where)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partitions)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --shards)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --efo)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --group)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -G)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lease-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --schema-registry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -r)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-format)
                    COMPREPLY=($(compgen -W "avro protobuf json-schema" -- "${cur}"))
                    return 0
                    ;;
                --value-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-format)
                    COMPREPLY=($(compgen -W "avro protobuf json-schema" -- "${cur}"))
                    return 0
                    ;;
                --key-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-schema-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-subject)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glue-compression)
                    COMPREPLY=($(compgen -W "none zlib" -- "${cur}"))
                    return 0
                    ;;
                --reader-schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --value-proto-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-proto-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-import-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -I)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --avro-json)
                    COMPREPLY=($(compgen -W "weir spec" -- "${cur}"))
                    return 0
                    ;;
                -X)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kafka-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -F)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoint-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checkpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checkpoint-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --changelog)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --repartition-partitions)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _weir -o nosort -o bashdefault -o default weir
else
    complete -F _weir -o bashdefault -o default weir
fi
