"""Peer for `weir watermark-profile`: lateness quantiles in DuckDB, overall or, with a second
argument, for each value of that field (as `--by`)."""
import sys

import duckdb

by = sys.argv[2] if len(sys.argv) > 2 else None
print(
    duckdb.sql(
        f"""
        SELECT {by + ',' if by else ''} count(*),
               quantile_cont(epoch_ms(arrived_at::TIMESTAMP) - epoch_ms(occurred_at::TIMESTAMP),
                             [0.5, 0.9, 0.99, 0.999, 0.9999])
        FROM read_json('{sys.argv[1]}', format = 'newline_delimited')
        {'GROUP BY ' + by if by else ''}
        """
    ).fetchall()[-3:],
    file=sys.stderr,
)
