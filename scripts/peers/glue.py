"""The AWS Glue Schema Registry side of the Glue tests, with AWS's own libraries: boto3 for
the registry (moto in server mode stands in for Glue), aws-glue-schema-registry's codec for the
framing, fastavro for the Avro datum, confluent-kafka to produce.

    glue.py schema GLUE_ENDPOINT REGISTRY NAME FORMAT < definition
        creates the registry (if missing) and the schema; prints the version's id
    glue.py produce BOOTSTRAP TOPIC VERSION_ID FORMAT [zlib] < records.ndjson
        frames each JSON record (Avro with the definition in $GLUE_SCHEMA, or JSON) and
        produces it as a value
    glue.py put KINESIS_ENDPOINT STREAM VERSION_ID FORMAT < records.ndjson
        the same, put into a Kinesis stream (partition key: the record's position)
"""
import io
import json
import os
import sys
import uuid

import boto3

action, *args = sys.argv[1:]


def glue(endpoint):
    return boto3.client("glue", endpoint_url=endpoint, region_name=os.environ.get("AWS_REGION", "us-east-1"))


if action == "schema":
    endpoint, registry, name, fmt = args
    g = glue(endpoint)
    try:
        g.create_registry(RegistryName=registry)
    except g.exceptions.AlreadyExistsException:
        pass
    out = g.create_schema(
        RegistryId={"RegistryName": registry},
        SchemaName=name,
        DataFormat=fmt,
        Compatibility="NONE",
        SchemaDefinition=sys.stdin.read(),
    )
    print(out["SchemaVersionId"])
elif action in ("produce", "put"):
    import fastavro
    from aws_schema_registry.codec import encode

    where, target, version, fmt, *rest = args
    compress = rest == ["zlib"]
    schema = fastavro.parse_schema(json.loads(os.environ["GLUE_SCHEMA"])) if fmt == "AVRO" else None

    def framed(record):
        if schema is None:
            datum = json.dumps(record).encode()
        else:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, schema, record)
            datum = buf.getvalue()
        return encode(datum, uuid.UUID(version), compression=compress)

    records = [json.loads(line) for line in sys.stdin]
    if action == "produce":
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": where})
        for record in records:
            p.produce(target, value=framed(record))
        p.flush(30)
    else:
        k = boto3.client("kinesis", endpoint_url=where, region_name=os.environ.get("AWS_REGION", "us-east-1"))
        for i, record in enumerate(records):
            k.put_record(StreamName=target, Data=framed(record), PartitionKey=str(i))
else:
    raise SystemExit(f"unknown action {action}")
