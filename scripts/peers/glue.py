"""The AWS Glue Schema Registry side of the Glue tests, with AWS's own libraries: boto3 for
the registry (moto in server mode stands in for Glue), aws-glue-schema-registry's codec for the
framing, fastavro for the Avro datum, confluent-kafka to produce.

    glue.py registry GLUE_ENDPOINT REGISTRY
        creates the registry if missing
    glue.py schema GLUE_ENDPOINT REGISTRY NAME FORMAT < definition
        creates the registry (if missing) and the schema; prints the version's id
    glue.py produce BOOTSTRAP TOPIC VERSION_ID FORMAT [zlib] < records.ndjson
        frames each JSON record (Avro with the definition in $GLUE_SCHEMA, or JSON) and
        produces it as a value
    glue.py put KINESIS_ENDPOINT STREAM VERSION_ID FORMAT < records.ndjson
        the same, put into a Kinesis stream (partition key: the record's position)
    glue.py read GLUE_ENDPOINT REGISTRY BOOTSTRAP TOPIC COUNT
        reads COUNT values from the topic's start with the library's own KafkaDeserializer
        (schemas fetched from Glue by the version each value names); prints each as a JSON
        line, then each value's schema version id and compression byte (ID:BYTE), one line,
        space-separated
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


def ensure_registry(g, registry):
    try:
        g.create_registry(RegistryName=registry)
    except g.exceptions.AlreadyExistsException:
        pass


if action == "registry":
    endpoint, registry = args
    ensure_registry(glue(endpoint), registry)
elif action == "schema":
    endpoint, registry, name, fmt = args
    g = glue(endpoint)
    ensure_registry(g, registry)
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
elif action == "read":
    from aws_schema_registry import SchemaRegistryClient
    from aws_schema_registry.serde import KafkaDeserializer
    from aws_schema_registry.codec import decode
    from confluent_kafka import Consumer

    endpoint, registry, bootstrap, topic, count = args
    deserializer = KafkaDeserializer(SchemaRegistryClient(glue(endpoint), registry_name=registry))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"glue-read-{uuid.uuid4()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    versions, left = [], int(count)
    while left > 0:
        m = c.poll(30)
        if m is None:
            raise SystemExit(f"{left} values never came")
        if m.error():
            continue
        print(json.dumps(deserializer.deserialize(topic, m.value()).data, sort_keys=True))
        versions.append(f"{decode(m.value())[1]}:{m.value()[1]}")
        left -= 1
    c.close()
    print(" ".join(versions))
else:
    raise SystemExit(f"unknown action {action}")
