"""MSK IAM tokens made by AWS's own signer, aws-msk-iam-sasl-signer-python, for tests.

    msk_token.py REGION EPOCH_SECONDS ACCESS_KEY SECRET_KEY [SESSION_TOKEN]

prints the token (base64url of the presigned URL) and its expiry in ms, one per line: the
signing time is fixed so that the token can be compared byte for byte.
"""
import datetime
import sys

import botocore.auth
from botocore.credentials import Credentials
from aws_msk_iam_sasl_signer import MSKAuthTokenProvider as provider

region, epoch, access, secret = sys.argv[1:5]
session = sys.argv[5] if len(sys.argv) > 5 else None
at = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).replace(tzinfo=None)
botocore.auth.get_current_datetime = lambda: at
construct = getattr(provider, "__construct_auth_token")
token, expires_ms = construct(region, Credentials(access, secret, session))
print(token)
print(expires_ms)
