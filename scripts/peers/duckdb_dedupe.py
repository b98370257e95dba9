"""Peer for `weir dedupe`: the first record of each event_id, written out, in DuckDB."""
import sys

import duckdb

duckdb.sql(
    f"""
    COPY (SELECT DISTINCT ON (event_id) * FROM read_json('{sys.argv[1]}', format = 'newline_delimited'))
    TO '/dev/null' (FORMAT json)
    """
)
