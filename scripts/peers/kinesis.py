#!/usr/bin/env python3
"""Kinesis (and DynamoDB) through boto3, the independent client weir's Kinesis tests and
benchmarks check it against. One subcommand per action; results are JSON on stdout.

    kinesis.py ENDPOINT create STREAM SHARDS
    kinesis.py ENDPOINT delete STREAM
    kinesis.py ENDPOINT put STREAM KEY_FIELD < records.ndjson     (PutRecords, 500 at a time)
    kinesis.py ENDPOINT put-agg STREAM KEY_FIELD PER_RECORD < records.ndjson
                                              (KPL aggregates of PER_RECORD user records, made
                                              with aws-kinesis-agg)
    kinesis.py ENDPOINT shards STREAM         (ListShards, every page)
    kinesis.py ENDPOINT split STREAM SHARD    (in the middle of its hash range)
    kinesis.py ENDPOINT merge STREAM SHARD ADJACENT
    kinesis.py ENDPOINT read STREAM           (every shard from TRIM_HORIZON to its end as of
                                              now, de-aggregated: one JSON object a record)
    kinesis.py ENDPOINT arrivals STREAM       (per shard: each record's sequence and arrival
                                              time, in ms)
    kinesis.py ENDPOINT first-after STREAM SHARD SEQUENCE|TRIM_HORIZON
                                              (the arrival time, in ms, of the first record
                                              after it, or null)
    kinesis.py ENDPOINT lease-table DYNAMO_ENDPOINT APP < leases.json
    kinesis.py ENDPOINT ghost-member DYNAMO_ENDPOINT APP MEMBER BEAT
    kinesis.py ENDPOINT members DYNAMO_ENDPOINT APP
                                              (a KCL lease table, as KCL writes it)

Credentials and region: the AWS chain (the tests set AWS_ACCESS_KEY_ID and friends).
"""
import calendar
import datetime
import json
import sys
import time

import boto3


def client(endpoint, service="kinesis"):
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1")


def arrival_ms(record):
    """A record's arrival time in whole milliseconds, rounded: it comes as a float of seconds."""
    at = record["ApproximateArrivalTimestamp"]
    return (calendar.timegm(at.utctimetuple()) * 1_000_000 + at.microsecond + 500) // 1000


def wait_active(k, stream):
    for _ in range(600):
        summary = k.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]
        if summary["StreamStatus"] == "ACTIVE":
            return
        time.sleep(0.05)
    raise SystemExit(f"stream {stream} did not become ACTIVE")


def list_shards(k, stream):
    shards, token = [], None
    while True:
        out = k.list_shards(NextToken=token) if token else k.list_shards(StreamName=stream)
        shards.extend(out["Shards"])
        token = out.get("NextToken")
        if not token:
            return shards


def put_entries(k, stream, entries):
    """PutRecords in batches of 500, failed entries sent again until every one is in."""
    for start in range(0, len(entries), 500):
        batch = entries[start : start + 500]
        while batch:
            out = k.put_records(StreamName=stream, Records=batch)
            batch = [e for e, r in zip(batch, out["Records"]) if "ErrorCode" in r]
            if batch:
                time.sleep(0.1)


def shard_batches(k, stream):
    """Each shard's records from TRIM_HORIZON to its end as of now, a GetRecords batch at a
    time, shards in the order ListShards gives them: (shard id, records)."""
    for shard in list_shards(k, stream):
        it = k.get_shard_iterator(
            StreamName=stream, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while it:
            r = k.get_records(ShardIterator=it, Limit=10000)
            yield shard["ShardId"], r["Records"]
            it = r.get("NextShardIterator")
            if not r["Records"] and r.get("MillisBehindLatest", 0) == 0:
                break


def read_all(k, stream):
    """Every record of every shard, de-aggregated."""
    import base64

    from aws_kinesis_agg.deaggregator import iter_deaggregate_records

    out = []
    for shard, records in shard_batches(k, stream):
        for rec in iter_deaggregate_records(records, data_format="Boto3"):
            kin = rec["kinesis"]
            data = kin["data"]
            # A user record of an aggregate comes back base64-encoded; a plain record as
            # boto3 gave it.
            if "subSequenceNumber" in kin:
                data = base64.b64decode(data)
            out.append(
                {
                    "shard": shard,
                    "sequence": kin["sequenceNumber"],
                    "subsequence": kin.get("subSequenceNumber"),
                    "key": kin["partitionKey"],
                    "data": data.decode(),
                }
            )
    return out


def main():
    endpoint, action, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    k = client(endpoint)
    if action == "create":
        stream, shards = args[0], int(args[1])
        k.create_stream(StreamName=stream, ShardCount=shards)
        wait_active(k, stream)
    elif action == "delete":
        k.delete_stream(StreamName=args[0], EnforceConsumerDeletion=True)
    elif action == "put":
        stream, key_field = args
        lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
        entries = [
            {"Data": l.encode(), "PartitionKey": str(json.loads(l)[key_field])} for l in lines
        ]
        put_entries(k, stream, entries)
    elif action == "put-agg":
        from aws_kinesis_agg.aggregator import RecordAggregator

        stream, key_field, per_record = args[0], args[1], int(args[2])
        lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
        entries = []
        for start in range(0, len(lines), per_record):
            agg = RecordAggregator()
            for l in lines[start : start + per_record]:
                agg.add_user_record(str(json.loads(l)[key_field]), l.encode())
            key, _, data = agg.clear_and_get().get_contents()
            entries.append({"Data": data, "PartitionKey": key})
        put_entries(k, stream, entries)
    elif action == "reached":
        # Waits (up to 30 s) until the server's clock has reached a time (ms): until it takes an
        # AT_TIMESTAMP iterator for it on every shard.
        stream, ms = args[0], int(args[1])
        at = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
        deadline = time.time() + 30
        for shard in list_shards(k, stream):
            while True:
                try:
                    k.get_shard_iterator(StreamName=stream, ShardId=shard["ShardId"],
                                         ShardIteratorType="AT_TIMESTAMP", Timestamp=at)
                    break
                except k.exceptions.InvalidArgumentException:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.1)
    elif action == "arn":
        print(k.describe_stream_summary(StreamName=args[0])["StreamDescriptionSummary"]["StreamARN"])
    elif action == "shards":
        print(json.dumps(list_shards(k, args[0])))
    elif action == "split":
        stream, shard_id = args
        shard = next(s for s in list_shards(k, stream) if s["ShardId"] == shard_id)
        lo = int(shard["HashKeyRange"]["StartingHashKey"])
        hi = int(shard["HashKeyRange"]["EndingHashKey"])
        k.split_shard(
            StreamName=stream, ShardToSplit=shard_id, NewStartingHashKey=str((lo + hi) // 2 + 1)
        )
        wait_active(k, stream)
    elif action == "merge":
        stream, shard, adjacent = args
        k.merge_shards(StreamName=stream, ShardToMerge=shard, AdjacentShardToMerge=adjacent)
        wait_active(k, stream)
    elif action == "read":
        for rec in read_all(k, args[0]):
            print(json.dumps(rec))
    elif action == "arrivals":
        for shard, records in shard_batches(k, args[0]):
            for rec in records:
                print(json.dumps({"shard": shard, "sequence": rec["SequenceNumber"], "arrival": arrival_ms(rec)}))
    elif action == "first-after":
        # The arrival time (ms) of the first record after a sequence number, or null.
        stream, shard, sequence = args
        kind = {"TRIM_HORIZON": "TRIM_HORIZON"}.get(sequence, "AFTER_SEQUENCE_NUMBER")
        extra = {} if kind == "TRIM_HORIZON" else {"StartingSequenceNumber": sequence}
        it = k.get_shard_iterator(
            StreamName=stream, ShardId=shard, ShardIteratorType=kind, **extra
        )["ShardIterator"]
        r = k.get_records(ShardIterator=it, Limit=1)
        if r["Records"]:
            print(json.dumps(arrival_ms(r["Records"][0])))
        else:
            print("null")
    elif action == "lease-table":
        dynamo_endpoint, app = args
        leases = json.load(sys.stdin)
        d = client(dynamo_endpoint, "dynamodb")
        d.create_table(
            TableName=app,
            KeySchema=[{"AttributeName": "leaseKey", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "leaseKey", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        # A new table takes writes only once ACTIVE (dynalite too, on a busy machine).
        for _ in range(600):
            if d.describe_table(TableName=app)["Table"]["TableStatus"] == "ACTIVE":
                break
            time.sleep(0.05)
        for lease in leases:
            item = {
                "leaseKey": {"S": lease["leaseKey"]},
                "checkpoint": {"S": lease["checkpoint"]},
                "checkpointSubSequenceNumber": {"N": str(lease.get("checkpointSubSequenceNumber", 0))},
                "leaseCounter": {"N": "1"},
            }
            if lease.get("leaseOwner"):
                item["leaseOwner"] = {"S": lease["leaseOwner"]}
            if lease.get("parentShardId"):
                item["parentShardId"] = {"SS": lease["parentShardId"]}
            d.put_item(TableName=app, Item=item)
    elif action == "ghost-member":
        # A member's heartbeat item as weir writes it, for a member that never beats again.
        dynamo_endpoint, app, member, beat = args
        item = {
            "leaseKey": {"S": "weir-member:" + member},
            "entityType": {"S": "WEIR_MEMBER"},
            "weirHeartbeat": {"N": beat},
        }
        client(dynamo_endpoint, "dynamodb").put_item(TableName=app, Item=item)
    elif action == "members":
        dynamo_endpoint, app = args
        items = client(dynamo_endpoint, "dynamodb").scan(TableName=app, ConsistentRead=True)["Items"]
        for i in items:
            if i["leaseKey"]["S"].startswith("weir-member:"):
                print(i["leaseKey"]["S"][len("weir-member:"):])
    else:
        raise SystemExit(f"unknown action {action}")


if __name__ == "__main__":
    main()
