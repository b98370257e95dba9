"""The AWS Glue Schema Registry side of the Glue tests, with AWS's own libraries: boto3 for
the registry (moto in server mode stands in for Glue), aws-glue-schema-registry's codec for the
framing, fastavro for the Avro datum, confluent-kafka to produce.

    glue.py schema GLUE_ENDPOINT REGISTRY NAME FORMAT < definition
        creates the registry (if missing) and the schema; prints the version's id
    glue.py produce BOOTSTRAP TOPIC VERSION_ID FORMAT [zlib] < records.ndjson
        frames each JSON record (Avro with the definition in $GLUE_SCHEMA, or JSON) and
        produces it as a value
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
elif action == "produce":
    import fastavro
    from aws_schema_registry.codec import encode
    from confluent_kafka import Producer

    bootstrap, topic, version, fmt, *rest = args
    compress = rest == ["zlib"]
    schema = fastavro.parse_schema(json.loads(os.environ["GLUE_SCHEMA"])) if fmt == "AVRO" else None
    p = Producer({"bootstrap.servers": bootstrap})
    for line in sys.stdin:
        record = json.loads(line)
        if schema is None:
            datum = json.dumps(record).encode()
        else:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, schema, record)
            datum = buf.getvalue()
        p.produce(topic, value=encode(datum, uuid.UUID(version), compression=compress))
    p.flush(30)
else:
    raise SystemExit(f"unknown action {action}")
