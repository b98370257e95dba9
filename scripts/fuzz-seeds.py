#!/usr/bin/env python3
"""Builds fuzz/seeds/ (the committed seed corpus) from fixtures/: each target's input shape
around the fixtures' lines. Run it again when fixtures/ changes; scripts/fuzz.sh reads the
seeds and keeps what the fuzzer finds under target/ instead."""
import glob, gzip, hashlib, json, os, shutil, subprocess

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
seeds = os.path.join(root, "fuzz", "seeds")
shutil.rmtree(seeds, ignore_errors=True)

def put(target, name, data):
    d = os.path.join(seeds, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def raw(path):
    data = open(path, "rb").read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data

top = sorted(glob.glob(os.path.join(root, "fixtures", "*.ndjson")))
bad = sorted(glob.glob(os.path.join(root, "fixtures", "bad", "*.ndjson")))
small = [(os.path.basename(p), raw(p)[:2048], p in top) for p in top + bad]

# The configurations in fuzz/fuzz_targets/commands.rs.
COMMAND_CONFIGS = 12

for i, (name, data, is_top) in enumerate(small):
    # chunk: a head byte (line limit, extraction), 8 bytes of read sizes, the input.
    put("chunk", name, bytes([0x21 + 2 * i]) + bytes([1, 3, 0, 9, 2, 40, 5, 1]) + data)
    # commands: a head byte (configuration; skip or fail), the input. The fixtures go
    # through every configuration, the bad cases through one each.
    configs = range(COMMAND_CONFIGS) if is_top else [i % COMMAND_CONFIGS]
    for config in configs:
        head = config | (0x80 if i % 2 else 0)
        put("commands", f"{config}-{name}", bytes([head]) + data)

# chunk: the first fixture compressed, so the fuzzer starts inside each decoder.
head = bytes([0x21]) + bytes([1, 3, 0, 9, 2, 40, 5, 1])
put("chunk", "gzip", head + gzip.compress(small[0][1], mtime=0))
zstd = subprocess.run(["zstd", "-q", "-c", "-3"], input=small[0][1], capture_output=True, check=True)
put("chunk", "zstd", head + zstd.stdout)

times = [
    "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456789+05:30", "2016-12-31T23:59:60Z",
    "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "1767225600", "1767225600123",
    "1767225600123456", "1767225600123456789", "-1h", "-5", "beginning", "end", "stored",
    "10s", "1h30m", "2d", "500ms", "5s600ms", "2026-01-01 00:00:00", "01/01/2026 00:00:00.5 +0100",
    "rfc3339", "ms", "%Y-%m-%d",
]
for i, t in enumerate(times):
    put("time", f"{i}", t.encode())

envelopes = [
    {"topic": "t", "partition": 3, "offset": 1042, "timestamp": "2026-11-28T12:00:01.234Z",
     "timestamp_type": "create", "key": "m-42", "headers": {"h": "v", "r": ["a", None]},
     "value": {"amount": 12.5}},
    {"topic": "t", "partition": 0, "offset": 0, "timestamp": None, "key": None, "value": None},
    {"topic": "t", "partition": 0, "offset": 1, "key": "AAE=", "key_encoding": "base64",
     "value": "text", "value_encoding": "text"},
    {"topic": "t", "partition": 0, "offset": 2, "value": "/w==", "value_encoding": "base64",
     "headers": {"b": {"base64": "AP8="}}},
]
for i, e in enumerate(envelopes):
    put("envelope", f"{i}", json.dumps(e).encode())
# kpl: a head byte (0: record bytes, 1: the message alone, 2: user records to pack), then
# the input. Aggregates of a fixture's first lines, built as the KPL builds them.
def varint(n):
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        out += bytes([low | (0x80 if n else 0)])
        if not n:
            return out

def field(tag, payload):  # a length-delimited protobuf field
    return varint(tag << 3 | 2) + varint(len(payload)) + payload

lines = raw(top[0]).splitlines()[:4]
keys = [b"merchant-1", b"merchant-2"]
message = b"".join(field(1, k) for k in keys) + b"".join(
    field(3, varint(1 << 3) + varint(i % 2) + field(3, line)) for i, line in enumerate(lines))
put("kpl", "record", b"\x00" + b"\xf3\x89\x9a\xc2" + message + hashlib.md5(message).digest())
put("kpl", "message", b"\x01" + message)
put("kpl", "records", b"\x02" + b"\xff".join(bytes([len(k)]) + k + l for k, l in zip(keys * 2, lines)))
print("seeds in", os.path.relpath(seeds, root))
