"""Peer for `weir window`: tumbling 1-minute count and sum per merchant, in DuckDB."""
import sys

import duckdb

rows = duckdb.sql(
    f"""
    SELECT merchant_id, time_bucket(INTERVAL '1 minute', occurred_at::TIMESTAMP) AS window_start,
           count(*) AS count, sum(amount) AS sum_amount
    FROM read_json('{sys.argv[1]}', format = 'newline_delimited')
    GROUP BY ALL
    """
).fetchall()
print(len(rows), "rows", file=sys.stderr)
