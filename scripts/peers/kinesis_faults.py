#!/usr/bin/env python3
"""A fault-injecting HTTP proxy in front of a real Kinesis (or DynamoDB) server, for the retry
tests: the test servers never throttle, so this one says what the service says when it does.

    kinesis_faults.py UPSTREAM [EVERY]

It prints its endpoint (http://127.0.0.1:PORT) on the first line of stdout, then forwards
every request to UPSTREAM unchanged, except that the first and then every EVERY-th (3 by
default) call of each data and control operation is answered with an error instead of being
forwarded, in turn:
  - HTTP 400 ProvisionedThroughputExceededException (GetRecords, PutRecords, PutRecord,
    GetShardIterator) or LimitExceededException (ListShards, DescribeStreamSummary, ...),
    the service's throttling answers;
  - HTTP 500 InternalFailure, a service failure that passes.
A refused call never reaches the server, so nothing of it happened there. The PutRecords
call after each refused one fails in part, as the service's do: every seventh entry from the
fourth is answered ProvisionedThroughputExceededException and left out of what goes to the
server; the others go in and are answered with the server's own results. GET /faults answers
the count of injected errors per operation (partly failed PutRecords calls as
"PutRecords/partial", failed entries as "PutRecords/entries"), as JSON.
"""
import http.client
import json
import sys
import threading
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UPSTREAM = urllib.parse.urlsplit(sys.argv[1])
EVERY = int(sys.argv[2]) if len(sys.argv) > 2 else 3
# Throttled with ProvisionedThroughputExceededException, as the service does: Kinesis data
# calls, and a DynamoDB lease table's Scan; the rest with LimitExceededException.
DATA_CALLS = {"GetRecords", "PutRecords", "PutRecord", "GetShardIterator", "Scan"}
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}

lock = threading.Lock()
calls = Counter()
injected = Counter()
local = threading.local()


def upstream():
    if getattr(local, "conn", None) is None:
        local.conn = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port, timeout=60)
    return local.conn


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, headers, body):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with lock:
            body = json.dumps(dict(injected)).encode()
        self.reply(200, [("Content-Type", "application/json")], body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        operation = self.headers.get("X-Amz-Target", "").rpartition(".")[2]
        with lock:
            calls[operation] += 1
            n = calls[operation]
            fail = n % EVERY == 1
            if fail:
                injected[operation] += 1
                turn = injected[operation]
        if fail:
            if turn % 2 == 1:
                status = 400
                kind = (
                    "ProvisionedThroughputExceededException"
                    if operation in DATA_CALLS
                    else "LimitExceededException"
                )
                message = f"Rate exceeded for {operation}"
            else:
                status, kind, message = 500, "InternalFailure", "Internal service failure"
            error = json.dumps({"__type": kind, "message": message}).encode()
            headers = [
                ("Content-Type", self.headers.get("Content-Type", "application/x-amz-json-1.1")),
                ("x-amzn-ErrorType", kind),
                ("x-amzn-RequestId", f"fault-{operation}-{n}"),
            ]
            self.reply(status, headers, error)
            return
        failed = []
        if operation == "PutRecords" and n % EVERY == 2:
            request = json.loads(body)
            entries = request["Records"]
            failed = [i for i in range(len(entries)) if i % 7 == 3]
            if failed:
                request["Records"] = [e for i, e in enumerate(entries) if i % 7 != 3]
                body = json.dumps(request).encode()
                with lock:
                    injected["PutRecords/partial"] += 1
                    injected["PutRecords/entries"] += len(failed)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Host"] = UPSTREAM.netloc
        for attempt in range(2):
            conn = upstream()
            try:
                conn.request("POST", self.path, body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                break
            except (http.client.HTTPException, OSError):
                # A kept-alive connection the server closed: once more on a new one.
                conn.close()
                local.conn = None
                if attempt == 1:
                    raise
        kept = [(k, v) for k, v in answer.getheaders() if k.lower() not in HOP_BY_HOP]
        if failed and answer.status == 200:
            data = partly_failed(json.loads(data), failed)
        self.reply(answer.status, kept, data)


def partly_failed(result, failed):
    """The server's PutRecords result for the entries that went, with the failed ones put
    back at their places."""
    went = iter(result["Records"])
    total = len(result["Records"]) + len(failed)
    records = [
        {
            "ErrorCode": "ProvisionedThroughputExceededException",
            "ErrorMessage": "Rate exceeded for shard in stream under account 000000000000.",
        }
        if i in failed
        else next(went)
        for i in range(total)
    ]
    failures = sum(1 for r in records if "ErrorCode" in r)
    return json.dumps({"FailedRecordCount": failures, "Records": records}).encode()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
