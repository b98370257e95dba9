//! Amazon MSK's IAM access control (`-X sasl.mechanism=AWS_MSK_IAM`): librdkafka speaks
//! OAUTHBEARER, and each token is MSK's: the SigV4-presigned URL of `kafka-cluster:Connect`
//! on `kafka.REGION.amazonaws.com`, base64url without padding, valid for 15 minutes (as
//! `aws-msk-iam-sasl-signer-python` makes it). Credentials and region come from the AWS chain
//! weir uses for Kinesis; librdkafka asks for a new token before the last one expires.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SignatureLocation, SigningSettings};
use base64::Engine;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::error::{Error, Result};
use crate::io::aws::{sign_request, AwsChain};

/// The `sasl.mechanism` value that asks for MSK IAM.
pub const MECHANISM: &str = "AWS_MSK_IAM";

/// How long a token is valid, as MSK's own signers make them.
const EXPIRES: Duration = Duration::from_secs(900);

/// The user agent MSK's Python signer adds after signing (MSK logs it; it is not signed).
const USER_AGENT: &str = concat!("weir/", env!("CARGO_PKG_VERSION"));

/// SigV4's URI encoding: all but the unreserved characters.
const SIGV4: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A token as librdkafka takes it: the token, who it names, and when it expires (ms since
/// the epoch).
#[derive(Debug, PartialEq)]
pub struct Token {
    pub token: String,
    pub principal: String,
    pub expires_ms: i64,
}

/// MSK's token for `credentials` in `region`, signed at `at`, with `user_agent` appended.
pub fn token(
    credentials: &Credentials,
    region: &str,
    at: SystemTime,
    user_agent: &str,
) -> Result<Token> {
    let host = format!("kafka.{region}.amazonaws.com");
    let url = format!("https://{host}/?Action=kafka-cluster%3AConnect");
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(EXPIRES);
    let headers = [("host", host.as_str())];
    let request = SignableRequest::new("GET", &url, headers.into_iter(), SignableBody::Bytes(&[]))
        .map_err(|e| Error::Usage(format!("MSK IAM: {e}")))?;
    let signed = sign_request(
        request,
        credentials,
        ("kafka-cluster", region),
        settings,
        at,
    )
    .map_err(|e| Error::Usage(format!("MSK IAM: {e}")))?;
    let mut presigned = url;
    // In the reference signer's order: the signature last (after a session token).
    let mut params = signed.params().to_vec();
    params.sort_by_key(|(name, _)| *name == "X-Amz-Signature");
    for (name, value) in &params {
        presigned.push('&');
        presigned.push_str(name);
        presigned.push('=');
        presigned.extend(utf8_percent_encode(value, SIGV4));
    }
    presigned.push_str("&User-Agent=");
    presigned.extend(utf8_percent_encode(user_agent, SIGV4));
    let signed_at = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    Ok(Token {
        token: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(presigned),
        principal: credentials.access_key_id().to_string(),
        expires_ms: (signed_at + EXPIRES.as_secs() as i64) * 1000,
    })
}

/// Where a client's tokens come from: the AWS chain's credentials, signed for its region.
pub struct TokenSource {
    chain: AwsChain,
}

impl TokenSource {
    /// The AWS chain's credentials provider and region (else the one a broker's MSK host
    /// name carries: `b-1.NAME.ID.c2.kafka.REGION.amazonaws.com`). No region is exit 2.
    pub fn from_chain(bootstrap: &str) -> Result<Arc<TokenSource>> {
        let chain = AwsChain::load(MECHANISM, region_of_host(bootstrap))?;
        Ok(Arc::new(TokenSource { chain }))
    }

    /// A fresh token, for librdkafka's refresh callback.
    pub fn token(&self) -> std::result::Result<Token, String> {
        let credentials = (self.chain.credentials()).map_err(|e| format!("{MECHANISM}: {e}"))?;
        let now = SystemTime::now();
        token(&credentials, &self.chain.region, now, USER_AGENT).map_err(|e| e.to_string())
    }
}

/// The region in an MSK broker's host name (`...kafka.REGION.amazonaws.com`), if it is one.
fn region_of_host(bootstrap: &str) -> Option<String> {
    let host = bootstrap.split(',').next()?.split(':').next()?;
    let (before, _) = host.split_once(".amazonaws.com")?;
    let (_, region) = before.rsplit_once(".kafka.")?;
    Some(region.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> SystemTime {
        // 2026-12-05T12:00:00Z
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_472_000)
    }

    /// Byte for byte the token `aws-msk-iam-sasl-signer-python` 1.0.2 made for the same
    /// credentials, region, time and user agent (`scripts/peers/msk_token.py`), with and
    /// without a session token.
    #[test]
    fn tokens_equal_the_reference_signers() {
        let plain = Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            None,
            None,
            "test",
        );
        let ua = "aws-msk-iam-sasl-signer-python/1.0.2";
        let t = token(&plain, "eu-west-1", at(), ua).unwrap();
        assert_eq!(t.token, REFERENCE_PLAIN);
        assert_eq!(t.expires_ms, 1_796_472_900_000);
        assert_eq!(t.principal, "AKIDEXAMPLE");
        let session = Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            Some("FwoGZXIvYXdzE/session+token=".into()),
            None,
            "test",
        );
        let t = token(&session, "eu-west-1", at(), ua).unwrap();
        assert_eq!(t.token, REFERENCE_SESSION);
    }

    #[test]
    fn an_msk_host_names_its_region() {
        let host = "b-1.orders.abc123.c2.kafka.eu-central-1.amazonaws.com:9098,b-2.orders";
        assert_eq!(region_of_host(host).as_deref(), Some("eu-central-1"));
        assert_eq!(region_of_host("localhost:9092"), None);
    }

    const REFERENCE_PLAIN: &str = "aHR0cHM6Ly9rYWZrYS5ldS13ZXN0LTEuYW1hem9uYXdzLmNvbS8_QWN0aW9uPWthZmthLWNsdXN0ZXIlM0FDb25uZWN0JlgtQW16LUFsZ29yaXRobT1BV1M0LUhNQUMtU0hBMjU2JlgtQW16LUNyZWRlbnRpYWw9QUtJREVYQU1QTEUlMkYyMDI2MTIwNSUyRmV1LXdlc3QtMSUyRmthZmthLWNsdXN0ZXIlMkZhd3M0X3JlcXVlc3QmWC1BbXotRGF0ZT0yMDI2MTIwNVQxMjAwMDBaJlgtQW16LUV4cGlyZXM9OTAwJlgtQW16LVNpZ25lZEhlYWRlcnM9aG9zdCZYLUFtei1TaWduYXR1cmU9ODYzN2MxOTk2MjI1ODhiMmFiOGRmMzQ0YzY3OWU5ODUyMTM3NWIxMzk1ZWRhYWEzNjZjYjE2MmY4MjhkYTQ1OCZVc2VyLUFnZW50PWF3cy1tc2staWFtLXNhc2wtc2lnbmVyLXB5dGhvbiUyRjEuMC4y";
    const REFERENCE_SESSION: &str = "aHR0cHM6Ly9rYWZrYS5ldS13ZXN0LTEuYW1hem9uYXdzLmNvbS8_QWN0aW9uPWthZmthLWNsdXN0ZXIlM0FDb25uZWN0JlgtQW16LUFsZ29yaXRobT1BV1M0LUhNQUMtU0hBMjU2JlgtQW16LUNyZWRlbnRpYWw9QUtJREVYQU1QTEUlMkYyMDI2MTIwNSUyRmV1LXdlc3QtMSUyRmthZmthLWNsdXN0ZXIlMkZhd3M0X3JlcXVlc3QmWC1BbXotRGF0ZT0yMDI2MTIwNVQxMjAwMDBaJlgtQW16LUV4cGlyZXM9OTAwJlgtQW16LVNpZ25lZEhlYWRlcnM9aG9zdCZYLUFtei1TZWN1cml0eS1Ub2tlbj1Gd29HWlhJdllYZHpFJTJGc2Vzc2lvbiUyQnRva2VuJTNEJlgtQW16LVNpZ25hdHVyZT1hNjBkMzZiNzliYjdlZDYyZWE5NWNhN2M4Nzk2NGJlMGI1NTI4ZWE0ODk2ODdlNWY1ZDlmMjViYjU2MmJjN2U4JlVzZXItQWdlbnQ9YXdzLW1zay1pYW0tc2FzbC1zaWduZXItcHl0aG9uJTJGMS4wLjI";
}
