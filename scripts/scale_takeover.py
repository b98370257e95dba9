#!/usr/bin/env python3
"""Takeover after a SIGKILL, for scripts/bench.sh (WHAT=scale).

Two `weir dedupe -G` members share a 4-partition topic while records keep arriving. One is
killed; the survivor's output is watched for the first record of a partition the killed
member owned. Prints the takeover time (kill to that record) and the work re-read: records of
the killed member's partitions that both members passed, against what one checkpoint interval
holds at the producing rate.

usage: scale_takeover.py WEIR BROKER TOPIC FILE RATE INTERVAL_MS SESSION_TIMEOUT_MS
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

weir, broker, topic, data, rate, interval_ms, session_ms = sys.argv[1:8]
rate, interval_ms, session_ms = int(rate), int(interval_ms), int(session_ms)
url = f"kafka://{broker}/{topic}"
group = f"takeover-{topic}"
tmp = tempfile.mkdtemp()

producer = subprocess.Popen(
    [weir, "replay", "-q", "--key", "event_id", "--rate", f"{rate}/s", data, "-o", url]
)


def member(name):
    out = os.path.join(tmp, f"{name}.ndjson")
    proc = subprocess.Popen(
        [weir, "dedupe", url, "-q", "-G", group, "--from", "beginning",
         "--id", "value.event_id", "--time", "value.occurred_at", "--horizon", "1h",
         "--checkpoint-interval", f"{interval_ms}ms", "-X", f"session.timeout.ms={session_ms}",
         "-o", out],
        stdout=subprocess.DEVNULL,
    )
    return proc, out


def records(path):
    seen = []
    if not os.path.exists(path):
        return seen
    with open(path) as f:
        for line in f:
            if line.endswith("\n"):
                r = json.loads(line)
                seen.append((r["partition"], r["offset"]))
    return seen


def stop_all():
    for p in (producer, survivor, victim):
        if p.poll() is None:
            p.kill()


survivor, survivor_out = member("survivor")
victim = producer
time.sleep(3)
victim, victim_out = member("victim")
# Until the victim reads partitions of its own.
deadline = time.time() + 60
while time.time() < deadline and not records(victim_out):
    time.sleep(0.2)
if not records(victim_out):
    stop_all()
    sys.exit("the second member read nothing in 60 s")
# The partitions each member reads now: those it passed records of in the last 3 s.
marks = (len(records(victim_out)), len(records(survivor_out)))
time.sleep(3)
victim_now = {p for p, _ in records(victim_out)[marks[0]:]}
survivor_now = {p for p, _ in records(survivor_out)[marks[1]:]}
owned = victim_now - survivor_now
joined_twice = len(set(records(victim_out)) & set(records(survivor_out)))
victim.send_signal(signal.SIGKILL)
victim.wait()
killed = time.time()
before = len(records(survivor_out))
takeover = None
while time.time() - killed < 60:
    new = records(survivor_out)[before:]
    if any(p in owned for p, _ in new):
        takeover = time.time() - killed
        break
    time.sleep(0.05)
time.sleep(2)
survivor.send_signal(signal.SIGTERM)
survivor.wait()
producer.kill()
victim_records = set(records(victim_out))
reread = [r for r in records(survivor_out) if r in victim_records]
print(json.dumps({
    "victim_partitions": sorted(owned),
    "survivor_partitions": sorted(survivor_now),
    "takeover_s": None if takeover is None else round(takeover, 2),
    "reread_records": len(reread),
    "passed_twice_before_the_kill": joined_twice,
    "one_interval_records": rate * interval_ms // 1000,
}))
