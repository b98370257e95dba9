"""Parses a metrics endpoint's answer with the official Prometheus Python client's parsers.

    prom_parse.py text|openmetrics < body
        prints each sample as a JSON line: {"name": ..., "labels": {...}, "value": ...},
        after checking every family's type; fails (non-zero exit) on what does not parse
"""
import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
from prometheus_client.parser import text_string_to_metric_families as text

body = sys.stdin.read()
parse = {"text": text, "openmetrics": openmetrics}[sys.argv[1]]
for family in parse(body):
    assert family.type in ("counter", "gauge"), family
    for s in family.samples:
        print(json.dumps({"name": s.name, "labels": s.labels, "value": s.value}))
