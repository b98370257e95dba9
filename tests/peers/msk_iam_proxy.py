"""A stand-in for Amazon MSK's IAM front, for tests: a Kafka-protocol proxy in front of a
broker that answers SaslHandshake and SaslAuthenticate itself, as MSK does, and forwards
every other request once the connection has authenticated.

    tests/peers/msk_iam_proxy.py LISTEN_PORT UPSTREAM_HOST:PORT ACCESS_KEY SECRET_KEY REGION TOKENS_FILE

Each OAUTHBEARER token is checked as MSK checks it: base64url of a presigned URL of
kafka-cluster:Connect on kafka.REGION.amazonaws.com, whose SigV4 signature must be the one
the secret gives for its own parameters (recomputed with botocore, AWS's signer), signed
within its X-Amz-Expires. Each token seen is appended to TOKENS_FILE, with the verdict.
"""
import asyncio
import base64
import datetime
import struct
import sys
import urllib.parse

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

LISTEN, UPSTREAM, ACCESS, SECRET, REGION, TOKENS = sys.argv[1:7]
UP_HOST, UP_PORT = UPSTREAM.rsplit(":", 1)


def verdict(token):
    """None if the token is good, else why not."""
    try:
        url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except Exception as e:  # noqa: BLE001 - any undecodable token is refused
        return f"not base64url: {e}"
    parsed = urllib.parse.urlparse(url)
    if parsed.netloc != f"kafka.{REGION}.amazonaws.com" or parsed.path != "/":
        return f"wrong host or path: {parsed.netloc}{parsed.path}"
    params = dict(urllib.parse.parse_qsl(parsed.query))
    if params.get("Action") != "kafka-cluster:Connect":
        return "not kafka-cluster:Connect"
    cred = params.get("X-Amz-Credential", "")
    if not cred.startswith(ACCESS + "/"):
        return f"unknown access key in {cred}"
    at = datetime.datetime.strptime(params["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
    age = datetime.datetime.utcnow() - at
    if age.total_seconds() > int(params["X-Amz-Expires"]) or age.total_seconds() < -300:
        return "expired"
    # Sign the same request with the secret, at the token's own time, and compare.
    botocore.auth.get_current_datetime = lambda: at
    creds = Credentials(ACCESS, SECRET, params.get("X-Amz-Security-Token"))
    signer = botocore.auth.SigV4QueryAuth(creds, "kafka-cluster", REGION, expires=int(params["X-Amz-Expires"]))
    request = AWSRequest(method="GET", url=f"https://{parsed.netloc}/", params={"Action": "kafka-cluster:Connect"})
    signer.add_auth(request)
    want = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(request.prepare().url).query))["X-Amz-Signature"]
    if want != params.get("X-Amz-Signature"):
        return "signature mismatch"
    return None


async def read_frame(reader):
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


def frame(body):
    return struct.pack(">i", len(body)) + body


def handshake_response(corr, body):
    (n,) = struct.unpack(">h", body[:2])
    mechanism = body[2 : 2 + n].decode()
    error = 0 if mechanism == "OAUTHBEARER" else 33  # UNSUPPORTED_SASL_MECHANISM
    mech = b"OAUTHBEARER"
    return struct.pack(">ihi", corr, error, 1) + struct.pack(">h", len(mech)) + mech


def authenticate_response(corr, version, body):
    (n,) = struct.unpack(">i", body[:4])
    auth = body[4 : 4 + n].decode(errors="replace")
    # RFC 7628: gs2 header, then \x01-separated key=value pairs, auth=Bearer TOKEN.
    fields = dict(kv.split("=", 1) for kv in auth.split("\x01") if "=" in kv and not kv.startswith("n,"))
    token = fields.get("auth", "").removeprefix("Bearer ")
    why = verdict(token)
    with open(TOKENS, "a") as f:
        f.write(f"{token} {why or 'ok'}\n")
    error, message = (0, None) if why is None else (58, f"authentication failed: {why}")  # SASL_AUTHENTICATION_FAILED
    out = struct.pack(">ih", corr, error)
    out += struct.pack(">h", -1) if message is None else struct.pack(">h", len(message)) + message.encode()
    out += struct.pack(">i", 0)
    if version >= 1:
        out += struct.pack(">q", 0)
    return out, why is None


async def serve(client_r, client_w):
    up_r, up_w = await asyncio.open_connection(UP_HOST, int(UP_PORT))
    authenticated = False
    try:
        while True:
            body = await read_frame(client_r)
            key, version, corr = struct.unpack(">hhi", body[:8])
            (cid_len,) = struct.unpack(">h", body[8:10])
            rest = body[10 + max(cid_len, 0) :]
            if key == 17:
                client_w.write(frame(handshake_response(corr, rest)))
            elif key == 36:
                response, authenticated = authenticate_response(corr, version, rest)
                client_w.write(frame(response))
            elif key == 18 or authenticated:
                up_w.write(frame(body))
                await up_w.drain()
                client_w.write(frame(await read_frame(up_r)))
            else:
                return  # as a broker with SASL does: nothing before authentication
            await client_w.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        client_w.close()
        up_w.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", int(LISTEN))
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
