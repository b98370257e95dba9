//! A Kinesis client: the AWS SDK on a tokio runtime of its own, configured by the standard
//! AWS chain (environment, profile, `AWS_ENDPOINT_URL`) and `--endpoint-url`; what its errors
//! mean to weir (retry, renew an iterator, or give up with exit 4), calls retried by that
//! rule (`retrying`), and arrival times as weir keeps them.
//!
//! The runtime stays at this edge: the rest of weir is synchronous, and calls into the SDK
//! with `block_on` or reads what the runtime's tasks hand over through channels.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;
use aws_sdk_kinesis::config::http::HttpResponse;
use aws_sdk_kinesis::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_kinesis::primitives::DateTime;
use tokio::runtime::Runtime;

use super::plan::backoff;
use crate::core::time::{now_millis, Millis};
use crate::error::{Error, Result};
use crate::io::spec::KinesisSpec;
use crate::runtime::signals::stopping;

/// How an AWS client connects: an endpoint besides the AWS chain's, and how long to keep
/// trying before giving up (exit 4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AwsOptions {
    pub endpoint_url: Option<String>,
    pub timeout: Duration,
}

/// The stream a call names: by name, or by ARN when one was given.
#[derive(Clone, Debug)]
pub struct StreamRef {
    pub name: String,
    pub arn: Option<String>,
}

impl StreamRef {
    pub fn new(spec: &KinesisSpec) -> StreamRef {
        StreamRef {
            name: spec.stream.clone(),
            arn: spec.arn.clone(),
        }
    }
}

/// A connected client: the SDK client, the stream and the options. Its calls run on a
/// runtime from `runtime`, which the caller owns (and shuts down outside it: a runtime
/// cannot be dropped by one of its own tasks).
#[derive(Clone)]
pub struct KinesisClient {
    pub sdk: aws_sdk_kinesis::Client,
    pub stream: StreamRef,
    pub options: AwsOptions,
    retries: Arc<Retries>,
}

/// The calls a client's clones retried (throttled, or a failure that passes), said once on
/// stderr when the last clone is gone: a read that slowed down says why.
struct Retries {
    count: AtomicU64,
    last: Mutex<String>,
}

impl Retries {
    /// Says on stderr how many calls were retried since it last said, if any.
    fn say(&self) {
        let count = self.count.swap(0, Ordering::Relaxed);
        if count == 0 {
            return;
        }
        let last = self.last.lock().map(|s| s.clone()).unwrap_or_default();
        match count {
            1 => eprintln!(
                "weir: 1 AWS call was throttled or failed, and retried after a backoff ({last})"
            ),
            n => eprintln!(
                "weir: {n} AWS calls were throttled or failed, and retried after a backoff (the last: {last})"
            ),
        }
    }
}

impl Drop for Retries {
    fn drop(&mut self) {
        self.say();
    }
}

/// Builds the tokio runtime AWS clients run on: two workers are plenty for network calls.
pub fn runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("weir-aws")
        .enable_all()
        .build()
        .map_err(|e| Error::Unreachable(format!("cannot start the AWS client's runtime: {e}")))
}

/// The SDK configuration from the AWS chain, with `options`' endpoint. The SDK's own retries
/// are off: weir retries with its own bounded backoff, and a call's single attempt is
/// limited in time so that an endpoint that does not answer is found within `timeout`.
pub async fn sdk_config(options: &AwsOptions) -> aws_config::SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(crate::io::aws::https_client())
        .retry_config(RetryConfig::disabled())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(options.timeout.min(Duration::from_secs(5)))
                .operation_attempt_timeout(options.timeout.max(Duration::from_secs(1)))
                .build(),
        );
    if let Some(url) = &options.endpoint_url {
        loader = loader.endpoint_url(url);
    }
    loader.load().await
}

impl KinesisClient {
    pub fn connect(
        runtime: &Runtime,
        spec: &KinesisSpec,
        options: &AwsOptions,
    ) -> Result<KinesisClient> {
        let config = runtime.block_on(sdk_config(options));
        if config.region().is_none() {
            return Err(Error::Usage(
                "no AWS region: set AWS_REGION (or a profile's region)".into(),
            ));
        }
        Ok(KinesisClient::with_config(&config, spec, options))
    }

    /// A client of `config` as it is.
    pub fn with_config(
        config: &aws_config::SdkConfig,
        spec: &KinesisSpec,
        options: &AwsOptions,
    ) -> KinesisClient {
        KinesisClient {
            sdk: aws_sdk_kinesis::Client::new(config),
            stream: StreamRef::new(spec),
            options: options.clone(),
            retries: Arc::new(Retries {
                count: AtomicU64::new(0),
                last: Mutex::new(String::new()),
            }),
        }
    }

    /// Says on stderr how many calls were retried since it last said (a run that keeps its
    /// client, as `lag --watch` does, says it after each report; others when it is dropped).
    pub fn say_retries(&self) {
        self.retries.say();
    }

    /// Counts a call `what` that failed for `why` and is tried again after a backoff.
    pub fn retried(&self, what: &str, why: &str) {
        self.retries.count.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut last) = self.retries.last.lock() {
            *last = format!("{what}: {why}");
        }
    }

    /// Where the client connects, for messages: as the SDK picks it, `--endpoint-url`, then
    /// the service's own variable, then the general one, else the region's AWS endpoint.
    pub fn endpoint(&self) -> String {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        self.options
            .endpoint_url
            .clone()
            .or_else(|| var("AWS_ENDPOINT_URL_KINESIS"))
            .or_else(|| var("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| "AWS".into())
    }
}

/// What a failed call means.
#[derive(Debug)]
pub enum Failure {
    /// Throttled, or the service or the network failed for now: try again after a while.
    Retry(String),
    /// The shard iterator expired: get a new one from the last record read.
    ExpiredIterator,
    /// The stream (or shard, or consumer) does not exist, or the credentials were refused:
    /// exit 4 at once.
    Refused(String),
    /// The request itself was wrong (a bad argument): exit 2.
    Invalid(String),
}

impl Failure {
    /// What it says, for a message.
    pub fn reason(self) -> String {
        match self {
            Failure::Retry(why) | Failure::Refused(why) | Failure::Invalid(why) => why,
            Failure::ExpiredIterator => "an expired iterator".into(),
        }
    }
}

/// Sorts a failed SDK call into what weir does about it. (The DynamoDB client's errors
/// have the same shape: `lag` reads a KCL lease table with it.)
pub fn classify<E>(e: &SdkError<E, HttpResponse>) -> Failure
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    match e {
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or("");
            let said = described(e);
            match code {
                "ExpiredIteratorException" => Failure::ExpiredIterator,
                "ProvisionedThroughputExceededException"
                | "KMSThrottlingException"
                | "LimitExceededException"
                | "ThrottlingException"
                | "InternalFailure"
                | "InternalFailureException"
                | "ServiceUnavailable"
                | "ServiceUnavailableException" => Failure::Retry(said),
                "InvalidArgumentException" | "ValidationException" => Failure::Invalid(said),
                _ if service.raw().status().is_server_error() => Failure::Retry(said),
                // The stream, shard, consumer or table does not exist, or the credentials
                // were refused, or any other answer no retry changes.
                _ => Failure::Refused(said),
            }
        }
        // A request that could not be built.
        SdkError::ConstructionFailure(_) => Failure::Refused(causes(e)),
        _ => match credentials_missing(e) {
            // No credentials anywhere in the chain, or a broken profile: no retry finds them.
            // (A provider that failed for now, such as an STS or instance-metadata call, may.)
            Some(why) => Failure::Refused(why),
            // Connection refused or reset, a timeout, a garbled response: the endpoint may
            // come back.
            None => Failure::Retry(causes(e)),
        },
    }
}

/// Why the call failed, when the credential chain found nothing or a profile is broken: no
/// retry changes that.
fn credentials_missing(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use aws_credential_types::provider::error::CredentialsError;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = cause {
        match error.downcast_ref::<CredentialsError>() {
            Some(CredentialsError::CredentialsNotLoaded(_)) => {
                return Some(match std::env::var("AWS_PROFILE") {
                    Ok(profile) => format!(
                        "no AWS credentials: profile '{profile}' (AWS_PROFILE) gives none, nor \
                         do the environment, a web identity, the container or instance metadata"
                    ),
                    Err(_) => "no AWS credentials in the environment, a profile, a web \
                               identity, the container or instance metadata: set \
                               AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
                        .into(),
                })
            }
            Some(CredentialsError::InvalidConfiguration(_)) => {
                return Some(format!("AWS credentials: {}", causes(error)))
            }
            Some(_) => return None,
            None => cause = error.source(),
        }
    }
    None
}

/// What a failed call says: the service's code and message, or the error and its causes.
/// Any response type: an event stream's errors come as messages, not HTTP responses.
pub fn described<E, R>(e: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match e {
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or("");
            match (code, service.err().message().unwrap_or("")) {
                ("", "") => causes(e),
                (code, "") => code.to_string(),
                ("", message) => message.to_string(),
                (code, message) => format!("{code}: {message}"),
            }
        }
        _ => causes(e),
    }
}

/// An error and its causes, each said once: "dispatch failure: io error: ... refused".
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// The jitter for a backoff, in [0, 1): from the clock's nanoseconds and a per-caller salt,
/// so that shards that failed together do not retry together. (No random-number crate in
/// the binary for this.)
pub fn jitter(salt: u64) -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    let mixed = xxhash_rust::xxh3::xxh3_64(&(nanos ^ salt.rotate_left(17)).to_le_bytes());
    (mixed % 1_000_000) as f64 / 1_000_000.0
}

/// Runs `call` until it succeeds, retrying what may pass with backoff for up to the client's
/// timeout; what cannot pass is exit 4 (refused) or 2 (an invalid request).
pub async fn retrying<T, E, F, Fut>(client: &KinesisClient, what: &str, call: F) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, SdkError<E, HttpResponse>>>,
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    retry_passing(client, what, call)
        .await
        .map_err(|failure| match failure {
            Failure::Retry(_) if stopping() => Error::Interrupted,
            Failure::Retry(why) => Error::Unreachable(format!(
                "Kinesis at {}: {what} failed for {:?}: {why}",
                client.endpoint(),
                client.options.timeout
            )),
            Failure::ExpiredIterator => {
                Error::Unreachable(format!("Kinesis {what}: expired iterator"))
            }
            Failure::Refused(why) => Error::Unreachable(format!(
                "Kinesis stream '{}' at {}: {what}: {why}",
                client.stream.name,
                client.endpoint()
            )),
            Failure::Invalid(why) => Error::Usage(format!(
                "Kinesis stream '{}': {what}: {why}",
                client.stream.name
            )),
        })
}

/// Runs `call` until it succeeds, retrying what may pass (counted on the client) with backoff
/// for up to the client's timeout, or until a signal asks the run to stop. The failure it
/// gives up on is returned for the caller to word: `Failure::Retry` when the time ran out
/// (or the run is stopping).
pub async fn retry_passing<T, E, F, Fut>(
    client: &KinesisClient,
    what: &str,
    call: F,
) -> std::result::Result<T, Failure>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, SdkError<E, HttpResponse>>>,
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    let since = Instant::now();
    let mut attempt = 0;
    loop {
        match call().await {
            Ok(out) => return Ok(out),
            Err(e) => match classify(&e) {
                Failure::Retry(why) if since.elapsed() < client.options.timeout && !stopping() => {
                    client.retried(what, &why);
                    tokio::time::sleep(backoff(attempt, jitter(attempt as u64))).await;
                    attempt += 1;
                }
                failure => return Err(failure),
            },
        }
    }
}

/// Whether `error`, from a call for an AT_TIMESTAMP iterator at `time`, is the service
/// refusing a time its clock has not reached while weir's has: clocks differ a little, and a
/// checkpoint's start time is weir's. Nothing has arrived after such a time yet. A time ahead
/// by both clocks is a real error.
pub fn not_reached_by_service(error: &Error, time: Millis) -> bool {
    time <= now_millis()
        && matches!(error, Error::Usage(why) if why.to_ascii_lowercase().contains("in the future"))
}

/// An arrival time in whole milliseconds, rounded: the service keeps milliseconds, and the
/// SDK reads its epoch-seconds number through a float, so 52.655 s may come as 52.654999 s.
pub fn arrival_millis(t: &DateTime) -> Millis {
    let nanos = t.secs() as i128 * 1_000_000_000 + t.subsec_nanos() as i128;
    ((nanos + 500_000).div_euclid(1_000_000)) as Millis
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_times_round_to_the_millisecond() {
        let t = DateTime::from_secs_f64(1_796_188_252.655);
        assert_eq!(arrival_millis(&t), 1_796_188_252_655);
        assert_eq!(arrival_millis(&DateTime::from_millis(-1)), -1);
        assert_eq!(arrival_millis(&DateTime::from_millis(0)), 0);
    }

    #[test]
    fn a_service_error_is_said_by_its_code_and_message() {
        use aws_sdk_kinesis::error::ErrorMetadata;
        use aws_sdk_kinesis::operation::subscribe_to_shard::SubscribeToShardError;
        let error = |code: Option<&str>, message: Option<&str>| {
            let mut meta = ErrorMetadata::builder();
            if let Some(code) = code {
                meta = meta.code(code);
            }
            if let Some(message) = message {
                meta = meta.message(message);
            }
            SdkError::service_error(SubscribeToShardError::generic(meta.build()), ())
        };
        let in_use = "ResourceInUseException";
        assert_eq!(
            described(&error(Some(in_use), Some("held"))),
            "ResourceInUseException: held"
        );
        assert_eq!(described(&error(Some(in_use), None)), in_use);
        // An event stream's exception may come without a code.
        assert_eq!(described(&error(None, Some("held"))), "held");
        // Neither: the error and its causes.
        assert!(described(&error(None, None)).starts_with("service error: "));
    }
}

/// What the adapter's tests against local servers share: an SDK configuration with fixed
/// test credentials, and a client to retry with.
#[cfg(test)]
pub(crate) mod testing {
    use std::time::Duration;

    use aws_config::{BehaviorVersion, Region, SdkConfig};
    use aws_credential_types::provider::SharedCredentialsProvider;
    use aws_credential_types::Credentials;

    use super::{AwsOptions, KinesisClient};
    use crate::io::spec::KinesisSpec;

    /// The endpoint in `var`; `None` (skipped) without it, which fails under `CI=true`.
    pub fn endpoint(var: &str) -> Option<String> {
        let found = std::env::var(var).ok();
        if found.is_none() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but no {var}: scripts/test.sh starts the server"
            );
            eprintln!("skipped: no {var}");
        }
        found
    }

    /// A configuration for `endpoint`, and a client whose retries last `timeout`.
    pub fn aws(endpoint: &str) -> (SdkConfig, KinesisClient) {
        let config = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .http_client(crate::io::aws::https_client())
            .region(Region::new("us-east-1"))
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "S3RVER", "S3RVER", None, None, "test",
            )))
            .endpoint_url(endpoint)
            .build();
        let spec = KinesisSpec {
            stream: "unused".into(),
            arn: None,
        };
        let options = AwsOptions {
            endpoint_url: Some(endpoint.to_string()),
            timeout: Duration::from_secs(10),
        };
        let client = KinesisClient::with_config(&config, &spec, &options);
        (config, client)
    }
}

/// A DynamoDB client from the AWS chain, with its own endpoint when given.
pub async fn dynamo_client(
    options: &AwsOptions,
    endpoint: Option<&str>,
) -> aws_sdk_dynamodb::Client {
    let config = sdk_config(options).await;
    let mut builder = aws_sdk_dynamodb::config::Builder::from(&config);
    if let Some(url) = endpoint {
        builder = builder.endpoint_url(url);
    }
    aws_sdk_dynamodb::Client::from_conf(builder.build())
}
