#!/usr/bin/env python3
"""Golden records in Confluent's wire format, made by confluent-kafka's own serializers.

Writes one JSON document to stdout:
  registry: every schema its in-process mock registry assigned, by id and by subject
            version, as the tests' registry serves them;
  records:  each record's framed key and value (base64) and the JSON weir must make of
            them: confluent-kafka's own deserializer output, mapped by weir's rules (bare
            unions, decimals as strings keeping their scale, instants in RFC 3339 UTC, dates,
            base64 bytes).

Protobuf records come from checkout.proto and money.proto beside this script, compiled with
grpcio-tools; their expected JSON is MessageToDict's with the .proto's field names and fields
without presence printed.

Usage: golden.py > golden.json
       golden.py check URL < golden.json   confluent-kafka's client reads every schema and
                                           record back from the registry at URL (the tests'
                                           own), which must answer as the mock did
"""
import base64
import datetime
import decimal
import json
import sys
import uuid

from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

TOPIC = "golden"
# The in-process mock registry (new_client gives it for a mock:// URL).
CLIENT = SchemaRegistryClient.new_client({"url": "mock://golden"})

CHECKOUT_V1 = {
    "type": "record", "name": "Checkout", "namespace": "com.acme",
    "fields": [
        {"name": "event_id", "type": "string"},
        {"name": "occurred_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "seen_at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["PAID", "FAILED"]}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "raw", "type": "bytes"},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "ratio", "type": "double"},
        {"name": "weight", "type": "float"},
        {"name": "ok", "type": "boolean"},
        {"name": "n", "type": "int"},
        {"name": "big", "type": "long"},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    ],
}
# Version 2 adds a field with a default: a compatible change.
CHECKOUT_V2 = dict(CHECKOUT_V1, fields=CHECKOUT_V1["fields"] + [
    {"name": "channel", "type": "string", "default": "web"}])

MONEY = {"type": "record", "name": "Money", "namespace": "com.acme",
         "fields": [{"name": "units", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
                    {"name": "currency", "type": "string"}]}
ORDER = {"type": "record", "name": "Order", "namespace": "com.acme",
         "fields": [{"name": "order_id", "type": "string"}, {"name": "total", "type": "com.acme.Money"},
                    {"name": "lines", "type": {"type": "array", "items": "com.acme.Money"}}]}
KEY = {"type": "record", "name": "CheckoutKey", "namespace": "com.acme",
       "fields": [{"name": "merchant_id", "type": "string"}, {"name": "shard", "type": "int"}]}
JSON_SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Refund", "type": "object",
               "properties": {"refund_id": {"type": "string"}, "amount": {"type": "number"},
                              "lines": {"type": "array", "items": {"type": "integer"}}}}

UTC = datetime.timezone.utc


def checkout(i, version):
    record = {
        "event_id": f"evt-{i}",
        "occurred_at": datetime.datetime(2026, 11, 28, 12, 0, i, 123000, tzinfo=UTC),
        "seen_at": datetime.datetime(2026, 11, 28, 12, 0, i, 123456, tzinfo=UTC),
        "day": datetime.date(2026, 11, 28 - i),
        "amount": decimal.Decimal(["12.50", "-0.05", "99999999.99", "0.00"][i % 4]),
        "status": ["PAID", "FAILED"][i % 2],
        "note": None if i % 2 else f"note \"{i}\" é\n😀",
        "tags": [f"t{j}" for j in range(i % 3)],
        "counts": {f"k{j}": j * 10**12 for j in range(i % 3)},
        "raw": bytes([0, 255, i]),
        "fx": bytes([1, 2, 3, i]),
        "ratio": [0.1, -2.5e-8, 1e300, 3.0][i % 4],
        "weight": [0.5, -1.25, 1024.0, 0.0][i % 4],
        "ok": i % 2 == 0,
        "n": [-2**31, 2**31 - 1, 0, 7][i % 4],
        "big": [-2**63, 2**63 - 1, 0, 42][i % 4],
        "uid": str(uuid.UUID(int=i * 0x1234567890ABCDEF)),
    }
    if version == 2:
        record["channel"] = ["ios", "pos"][i % 2]
    return record


def millis(dt):
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def micros(dt):
    return dt.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def b64(b):
    return base64.b64encode(b).decode()


def weir_checkout(d):
    """The JSON weir makes of a Checkout the deserializer read, by weir's rules."""
    out = dict(d)
    out["occurred_at"] = millis(d["occurred_at"])
    out["seen_at"] = micros(d["seen_at"])
    out["day"] = d["day"].isoformat()
    out["amount"] = format(d["amount"], "f")
    out["raw"] = b64(d["raw"])
    out["fx"] = b64(d["fx"])
    out["uid"] = str(d["uid"])
    return out


def weir_order(d):
    money = lambda m: {"units": format(m["units"], "f"), "currency": m["currency"]}
    return {"order_id": d["order_id"], "total": money(d["total"]), "lines": [money(m) for m in d["lines"]]}


def main():
    records = []
    value_ctx = SerializationContext(TOPIC, MessageField.VALUE)
    key_ctx = SerializationContext(TOPIC, MessageField.KEY)
    key_ser = AvroSerializer(CLIENT, json.dumps(KEY))
    key_de = AvroDeserializer(CLIENT)
    avro_de = AvroDeserializer(CLIENT)
    # Two versions of one subject, with framed Avro keys.
    for version, schema in [(1, CHECKOUT_V1), (2, CHECKOUT_V2)]:
        ser = AvroSerializer(CLIENT, json.dumps(schema))
        for i in range(4):
            key = {"merchant_id": f"m-{i}", "shard": i}
            key_bytes = key_ser(key, key_ctx)
            value_bytes = ser(checkout(i, version), value_ctx)
            records.append({
                "key": b64(key_bytes), "value": b64(value_bytes),
                "expected_key": key_de(key_bytes, key_ctx),
                "expected_value": weir_checkout(avro_de(value_bytes, value_ctx)),
            })
    # A schema that refers to another subject's named type.
    money_id = CLIENT.register_schema("com.acme.Money", Schema(json.dumps(MONEY), "AVRO"))
    money_version = CLIENT.get_latest_version("com.acme.Money").version
    CLIENT.register_schema("orders-value", Schema(json.dumps(ORDER), "AVRO", [
        SchemaReference("com.acme.Money", "com.acme.Money", money_version)]))
    order_ser = AvroSerializer(CLIENT, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    for i in range(2):
        order = {"order_id": f"o-{i}",
                 "total": {"units": decimal.Decimal("1234.500"), "currency": "EUR"},
                 "lines": [{"units": decimal.Decimal(f"{j}.125"), "currency": "EUR"} for j in range(i + 1)]}
        # Serialized as for topic "orders" (subject orders-value), into the same golden topic.
        value_bytes = order_ser(order, SerializationContext("orders", MessageField.VALUE))
        records.append({"key": None, "value": b64(value_bytes),
                        "expected_key": None, "expected_value": weir_order(avro_de(value_bytes, value_ctx))})
    # JSON Schema, with a plain text key.
    json_ser = JSONSerializer(json.dumps(JSON_SCHEMA), CLIENT)
    json_de = JSONDeserializer(None, schema_registry_client=CLIENT)
    for i in range(2):
        refund = {"refund_id": f"r-{i}", "amount": [12.5, 100][i], "lines": list(range(i + 1))}
        value_bytes = json_ser(refund, value_ctx)
        records.append({"key": b64(f"r-{i}".encode()), "value": b64(value_bytes),
                        "expected_key": f"r-{i}", "expected_value": json_de(value_bytes, value_ctx)})
    records += protobuf_records()
    print(json.dumps({"registry": dump_registry(), "records": records, "money_id": money_id}, indent=1))


def protobuf_records():
    """Checkout and Refund messages through confluent-kafka's ProtobufSerializer."""
    import importlib
    import os
    import tempfile
    from google.protobuf import json_format
    from grpc_tools import protoc
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    here = os.path.dirname(os.path.abspath(__file__))
    out = tempfile.mkdtemp()
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    for name in ["money.proto", "checkout.proto"]:
        assert protoc.main(["protoc", f"-I{here}", f"-I{include}", f"--python_out={out}", name]) == 0
    sys.path.insert(0, out)
    pb = importlib.import_module("checkout_pb2")
    conf = {"use.deprecated.format": False}
    ctx = SerializationContext("proto", MessageField.VALUE)
    records = []
    to_dict = lambda m: json_format.MessageToDict(
        m, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    ser, de = ProtobufSerializer(pb.Checkout, CLIENT, conf), ProtobufDeserializer(pb.Checkout, conf)
    for i in range(3):
        c = pb.Checkout(event_id=f"evt-{i}", amount_cents=[1250, -5, 2**62][i], status=i % 2,
                        ratio=[0.1, -2.5e-8, 0.0][i], weight=[0.5, 0.0, -1.25][i], ok=i == 0,
                        big=[0, 2**64 - 1, 7][i], delta=[-3, 0, 2**31 - 1][i],
                        f64=[0, 2**63, 1][i], sf32=[-1, 0, 5][i])
        if i != 1:
            # Zero fields stay zero on the wire (nothing written): record 1 has them all.
            c.occurred_at.FromJsonString(["2026-11-28T12:00:01.234Z", "", "2026-11-28T12:00:00Z"][i])
            c.tags.extend([f"t{j}" for j in range(i + 1)])
            c.counts.update({f"k{j}": j for j in range(i + 1)})
            c.raw = bytes([0, 255, i])
            c.note = f"note \"{i}\" é😀"
            c.card = "4111"
            c.took.FromJsonString(["1.500s", "", "-0.000001s"][i])
            c.retries.value = i
            c.attrs.update({"a": 1, "b": [True, None, "x"], "c": {"d": 2.5}})
            c.line.sku, c.line.qty = f"sku-{i}", i
            c.lines.add(sku="l1", qty=1)
            c.lines.add(sku="l2", qty=2)
            c.total.units, c.total.currency = 1234, "EUR"
            c.packed.extend([1, -1, 300])
            c.by_id[-7].sku = "neg"
        if i == 2:
            c.iban = "DE89"
        value_bytes = ser(c, ctx)
        records.append({"key": None, "value": b64(value_bytes), "expected_key": None,
                        "expected_value": to_dict(de(value_bytes, ctx))})
    ser, de = ProtobufSerializer(pb.Refund, CLIENT, conf), ProtobufDeserializer(pb.Refund, conf)
    for i in range(2):
        r = pb.Refund(refund_id=f"r-{i}")
        if i:
            r.line.sku = "x"
        value_bytes = ser(r, SerializationContext("refunds", MessageField.VALUE))
        records.append({"key": None, "value": b64(value_bytes), "expected_key": None,
                        "expected_value": to_dict(de(value_bytes, ctx))})
    return records


def dump_registry():
    """Every id and subject version the mock registry holds, in the REST shapes."""
    ids, subjects = {}, []
    for subject in CLIENT.get_subjects():
        for version in CLIENT.get_versions(subject):
            reg = CLIENT.get_version(subject, version)
            schema = reg.schema
            refs = [{"name": r.name, "subject": r.subject, "version": r.version} for r in (schema.references or [])]
            entry = {"schema": schema.schema_str, "schemaType": schema.schema_type, "references": refs}
            ids[str(reg.schema_id)] = entry
            subjects.append(dict(entry, subject=subject, version=version, id=reg.schema_id))
    return {"ids": ids, "subjects": subjects}


def check(url):
    """The reference client against the tests' registry: the same schemas, the same records."""
    golden = json.load(sys.stdin)
    client = SchemaRegistryClient({"url": url})
    for id_text, entry in golden["registry"]["ids"].items():
        schema = client.get_schema(int(id_text))
        refs = [{"name": r.name, "subject": r.subject, "version": r.version} for r in (schema.references or [])]
        got = {"schema": schema.schema_str, "schemaType": schema.schema_type, "references": refs}
        assert got == entry, f"id {id_text}: {got} != {entry}"
    for s in golden["registry"]["subjects"]:
        reg = client.get_version(s["subject"], s["version"])
        assert reg.schema_id == s["id"], f"{s['subject']} v{s['version']}: id {reg.schema_id}"
    # A writer's calls: registering a schema the registry has gives its id, under a new
    # subject too, and a lookup (by a client with nothing cached) finds it.
    ids_of = {(e["schemaType"], e["schema"]): int(i) for i, e in golden["registry"]["ids"].items()}
    for kind, text, subject in [("AVRO", json.dumps(MONEY), "check-value"),
                                ("JSON", json.dumps(JSON_SCHEMA), "check-refund")]:
        registered = client.register_schema(subject, Schema(text, kind))
        assert registered == ids_of[(kind, text)], f"{subject}: id {registered}"
        found = SchemaRegistryClient({"url": url}).lookup_schema(subject, Schema(text, kind))
        assert (found.schema_id, found.version) == (registered, 1), f"{subject}: {found}"
    value_ctx = SerializationContext(TOPIC, MessageField.VALUE)
    avro_de, json_de = AvroDeserializer(client), JSONDeserializer(None, schema_registry_client=client)
    for r in golden["records"]:
        value = base64.b64decode(r["value"])
        schema_type = golden["registry"]["ids"][str(int.from_bytes(value[1:5], "big"))]["schemaType"]
        if schema_type == "PROTOBUF":
            continue  # its classes live in protobuf_records(); the ids are checked above
        if schema_type == "JSON":
            got = json_de(value, value_ctx)
        else:
            got = avro_de(value, value_ctx)
            got = weir_order(got) if "order_id" in got else weir_checkout(got)
        assert got == r["expected_value"], f"{got} != {r['expected_value']}"
    print("ok")


if __name__ == "__main__":
    if sys.argv[1:2] == ["check"]:
        check(sys.argv[2])
    else:
        main()
