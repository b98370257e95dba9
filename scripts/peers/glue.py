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
        (PROTOBUF: the .proto in $GLUE_SCHEMA, each record a $GLUE_MESSAGE in proto3 JSON,
        framed as AWS's Java serializer frames it: Glue's message index, then the message)
    glue.py read-proto GLUE_ENDPOINT BOOTSTRAP TOPIC COUNT
        reads COUNT Protobuf values from the topic's start, each by the schema version it names
        (fetched from Glue) and its message index; prints each as a JSON line
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


def proto_file(source):
    """The FileDescriptor of a .proto text, compiled by protoc (grpc_tools)."""
    import hashlib
    import importlib
    import tempfile
    from grpc_tools import protoc

    out = tempfile.mkdtemp()
    name = "glue_" + hashlib.sha1(source.encode()).hexdigest()[:12]
    with open(os.path.join(out, name + ".proto"), "w") as f:
        f.write(source)
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    assert protoc.main(["protoc", f"-I{out}", f"-I{include}", f"--python_out={out}", name + ".proto"]) == 0
    sys.path.insert(0, out)
    return importlib.import_module(name + "_pb2").DESCRIPTOR


def glue_messages(file):
    """The file's messages in the order of Glue's message index."""
    found, queue = [], list(file.message_types_by_name.values())
    while queue:
        m = queue.pop(0)
        found.append(m)
        queue.extend(m.nested_types)
    return sorted(found, key=lambda m: m.full_name)


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(data):
    n = shift = i = 0
    while True:
        b = data[i]
        n |= (b & 0x7F) << shift
        shift, i = shift + 7, i + 1
        if b < 0x80:
            return n, data[i:]


def values(bootstrap, topic, count):
    """The first `count` values of the topic, read from its start by a consumer of its own."""
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"glue-read-{uuid.uuid4()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    while count > 0:
        m = c.poll(30)
        if m is None:
            raise SystemExit(f"{count} values never came")
        if m.error():
            continue
        count -= 1
        yield m.value()
    c.close()


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
    if fmt == "PROTOBUF":
        from google.protobuf import json_format, message_factory

        messages = glue_messages(proto_file(os.environ["GLUE_SCHEMA"]))
        wanted = [m for m in messages if m.full_name == os.environ["GLUE_MESSAGE"]][0]
        message_class = message_factory.GetMessageClass(wanted)
        index = varint(messages.index(wanted))

    def framed(record):
        if fmt == "PROTOBUF":
            datum = index + json_format.ParseDict(record, message_class()).SerializeToString()
        elif schema is None:
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
elif action == "read-proto":
    from aws_schema_registry.codec import decode
    from google.protobuf import json_format, message_factory

    endpoint, bootstrap, topic, count = args
    g, files = glue(endpoint), {}
    for value in values(bootstrap, topic, int(count)):
        datum, version = decode(value)
        if version not in files:
            source = g.get_schema_version(SchemaVersionId=str(version))["SchemaDefinition"]
            files[version] = glue_messages(proto_file(source))
        index, rest = read_varint(datum)
        message = message_factory.GetMessageClass(files[version][index])()
        message.ParseFromString(rest)
        print(json.dumps(json_format.MessageToDict(
            message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True),
            sort_keys=True))
elif action == "read":
    from aws_schema_registry import SchemaRegistryClient
    from aws_schema_registry.serde import KafkaDeserializer
    from aws_schema_registry.codec import decode

    endpoint, registry, bootstrap, topic, count = args
    deserializer = KafkaDeserializer(SchemaRegistryClient(glue(endpoint), registry_name=registry))
    versions = []
    for value in values(bootstrap, topic, int(count)):
        print(json.dumps(deserializer.deserialize(topic, value).data, sort_keys=True))
        versions.append(f"{decode(value)[1]}:{value[1]}")
    print(" ".join(versions))
else:
    raise SystemExit(f"unknown action {action}")
