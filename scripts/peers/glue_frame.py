"""Glue Schema Registry framing made by AWS's own Python library (aws-glue-schema-registry),
for tests: prints the hex of the framed bytes of PAYLOAD (text) with schema version UUID,
compressed with zlib when asked.

    glue_frame.py UUID PAYLOAD [zlib]
"""
import sys
import uuid

from aws_schema_registry.codec import encode

version, payload = sys.argv[1], sys.argv[2].encode()
compress = len(sys.argv) > 3 and sys.argv[3] == "zlib"
print(encode(payload, uuid.UUID(version), compression=compress).hex())
