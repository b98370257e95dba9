//! The AWS chain for the clients that are not the SDK's (MSK IAM tokens, Glue calls): its
//! credentials and region, read on a small runtime of their own since they are asked for from
//! threads that are not tokio's, and SigV4 signing with them.

use std::time::SystemTime;

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableRequest, SigningInstructions, SigningSettings};
use aws_sigv4::sign::v4;

use crate::error::{Error, Result};

/// The AWS chain's credentials provider and region.
pub struct AwsChain {
    pub region: String,
    credentials: SharedCredentialsProvider,
    runtime: tokio::runtime::Runtime,
}

impl AwsChain {
    /// Loads the chain for `what` (named in errors); `fallback_region` when it names none.
    /// No region, or no credentials provider, is exit 2.
    pub fn load(what: &str, fallback_region: Option<String>) -> Result<AwsChain> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Unreachable(format!("{what}: {e}")))?;
        let loader =
            aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(https_client());
        let config = runtime.block_on(loader.load());
        let region = (config.region().map(|r| r.to_string()))
            .or(fallback_region)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{what}: no AWS region: set AWS_REGION (or a profile's region)"
                ))
            })?;
        let credentials = (config.credentials_provider())
            .ok_or_else(|| Error::Usage(format!("{what}: no AWS credentials provider")))?;
        Ok(AwsChain {
            region,
            credentials,
            runtime,
        })
    }

    /// The chain's credentials now (refreshed as its providers refresh them).
    pub fn credentials(&self) -> std::result::Result<Credentials, String> {
        (self
            .runtime
            .block_on(self.credentials.provide_credentials()))
        .map_err(|e| format!("no AWS credentials: {e}"))
    }
}

/// The SigV4 signature of `request` for `service` in `region` at `at`: the headers or query
/// parameters to add, as `settings` place them.
pub fn sign_request(
    request: SignableRequest<'_>,
    credentials: &Credentials,
    (service, region): (&str, &str),
    settings: SigningSettings,
    at: SystemTime,
) -> std::result::Result<SigningInstructions, String> {
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(at)
        .settings(settings)
        .build()
        .map_err(|e| e.to_string())?
        .into();
    let signed = sign(request, &params).map_err(|e| e.to_string())?;
    Ok(signed.into_parts().0)
}

/// The HTTPS client of every AWS SDK client weir makes (and of the chain's own calls: SSO,
/// STS, instance metadata): hyper with rustls on ring.
pub fn https_client() -> aws_sdk_kinesis::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}
