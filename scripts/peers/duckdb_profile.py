"""Peer for `weir watermark-profile`: lateness quantiles in DuckDB."""
import sys

import duckdb

print(
    duckdb.sql(
        f"""
        SELECT count(*),
               quantile_cont(epoch_ms(arrived_at::TIMESTAMP) - epoch_ms(occurred_at::TIMESTAMP),
                             [0.5, 0.9, 0.99, 0.999, 0.9999])
        FROM read_json('{sys.argv[1]}', format = 'newline_delimited')
        """
    ).fetchall(),
    file=sys.stderr,
)
