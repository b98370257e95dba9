#!/usr/bin/env python3
"""The peer of `weir consume -e kinesis://STREAM` in the benchmark: boto3 reads every shard of
a stream from TRIM_HORIZON until it has caught up, and writes each record's data as a line to
stdout, as weir writes values. By default one thread a shard, all at once; with --sequential
one shard after another, as the simplest scripts do.

    kinesis_reader.py ENDPOINT STREAM [--sequential] > records
"""
import sys
import threading

import boto3


def main():
    endpoint, stream = sys.argv[1], sys.argv[2]
    session = boto3.session.Session()
    k = session.client("kinesis", endpoint_url=endpoint, region_name="us-east-1")
    shards = k.list_shards(StreamName=stream)["Shards"]
    out = sys.stdout.buffer
    lock = threading.Lock()

    def read(shard_id):
        client = session.client("kinesis", endpoint_url=endpoint, region_name="us-east-1")
        it = client.get_shard_iterator(
            StreamName=stream, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while it:
            r = client.get_records(ShardIterator=it, Limit=10000)
            if r["Records"]:
                chunk = b"".join(rec["Data"] + b"\n" for rec in r["Records"])
                with lock:
                    out.write(chunk)
            elif r.get("MillisBehindLatest", 0) == 0:
                return
            it = r.get("NextShardIterator")

    if "--sequential" in sys.argv[3:]:
        for s in shards:
            read(s["ShardId"])
    else:
        threads = [threading.Thread(target=read, args=(s["ShardId"],)) for s in shards]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    out.flush()


if __name__ == "__main__":
    main()
