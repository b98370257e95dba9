//! Where the members of a Kinesis application keep each shard's saved state
//! (`--state-store`): an S3 bucket and prefix, or a directory for one machine and tests.
//!
//! Every save is a new object that is never changed: the lease's `weirState` names the one
//! its checkpoint goes with, and a commit moves both in one conditional write. An object is
//! deleted only after a later commit no longer points at it. The S3 client works against
//! S3-compatible servers: path-style addressing, and checksums only where S3 requires them.

use std::path::{Path, PathBuf};

use aws_sdk_s3::config::{RequestChecksumCalculation, ResponseChecksumValidation};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;

use super::client::{retry_passing, Failure, KinesisClient};
use super::plan::StoreSpec;
use crate::error::{Error, Result};

/// An open store.
pub enum StateStore {
    S3 {
        s3: Client,
        bucket: String,
        prefix: String,
    },
    Dir(PathBuf),
}

impl StateStore {
    /// Opens the store; an S3 client from `config` (the AWS chain, with
    /// `AWS_ENDPOINT_URL_S3` where set).
    pub fn open(spec: &StoreSpec, config: &aws_config::SdkConfig) -> Result<StateStore> {
        match spec {
            StoreSpec::Dir(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Error::write(&dir.display().to_string(), e))?;
                Ok(StateStore::Dir(dir.clone()))
            }
            StoreSpec::S3 { bucket, prefix } => {
                let conf = aws_sdk_s3::config::Builder::from(config)
                    .force_path_style(true)
                    .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
                    .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
                    .build();
                Ok(StateStore::S3 {
                    s3: Client::from_conf(conf),
                    bucket: bucket.clone(),
                    prefix: prefix.clone(),
                })
            }
        }
    }

    /// Checks that the store is there and reachable, before a member reads anything: an S3
    /// bucket out of reach is exit 4 at the start, not at the first save.
    pub async fn check(&self, client: &KinesisClient) -> Result<()> {
        let StateStore::S3 { s3, bucket, .. } = self else {
            return Ok(());
        };
        let head = || s3.head_bucket().bucket(bucket).send();
        (retry_passing(client, "S3 HeadBucket", head).await)
            .map(|_| ())
            .map_err(|f| failed(&format!("s3://{bucket}"), "HeadBucket", f))
    }

    /// Saves `bytes` as a new object under `name` (`APP/SHARD/COUNTER-...`): its pointer.
    pub async fn put(&self, client: &KinesisClient, name: &str, bytes: Vec<u8>) -> Result<String> {
        match self {
            StateStore::Dir(dir) => {
                let path = dir.join(name);
                let write = || -> std::io::Result<()> {
                    std::fs::create_dir_all(path.parent().unwrap_or(dir))?;
                    // Written aside and renamed: a pointer never names a half-written file.
                    let aside = path.with_extension("partial");
                    std::fs::write(&aside, &bytes)?;
                    std::fs::File::open(&aside)?.sync_all()?;
                    std::fs::rename(&aside, &path)
                };
                write().map_err(|e| Error::write(&path.display().to_string(), e))?;
                Ok(format!("file://{}", path.display()))
            }
            StateStore::S3 { s3, bucket, prefix } => {
                let key = join(prefix, name);
                let put = || {
                    s3.put_object()
                        .bucket(bucket)
                        .key(&key)
                        .body(ByteStream::from(bytes.clone()))
                        .send()
                };
                (retry_passing(client, "S3 PutObject", put).await)
                    .map_err(|f| failed(&format!("s3://{bucket}/{key}"), "PutObject", f))?;
                Ok(format!("s3://{bucket}/{key}"))
            }
        }
    }

    /// The bytes a pointer names.
    pub async fn get(&self, client: &KinesisClient, pointer: &str) -> Result<Vec<u8>> {
        match (self, split(pointer)) {
            (StateStore::Dir(_), Pointer::File(path)) => {
                std::fs::read(path).map_err(|e| Error::Unreachable(format!("state {pointer}: {e}")))
            }
            (StateStore::S3 { s3, .. }, Pointer::S3(bucket, key)) => {
                let get = || s3.get_object().bucket(bucket).key(key).send();
                let out = (retry_passing(client, "S3 GetObject", get).await)
                    .map_err(|f| failed(pointer, "GetObject", f))?;
                let body = out.body.collect().await.map_err(|e| {
                    Error::Unreachable(format!("state {pointer}: S3 GetObject: {e}"))
                })?;
                Ok(body.into_bytes().to_vec())
            }
            _ => Err(Error::Usage(format!(
                "the lease's state {pointer} is not in this --state-store"
            ))),
        }
    }

    /// Deletes an object no commit points at any more (one already gone is no error).
    pub async fn delete(&self, client: &KinesisClient, pointer: &str) -> Result<()> {
        match (self, split(pointer)) {
            (StateStore::Dir(_), Pointer::File(path)) => match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(Error::write(&path.display().to_string(), e))
                }
                _ => Ok(()),
            },
            (StateStore::S3 { s3, .. }, Pointer::S3(bucket, key)) => {
                let delete = || s3.delete_object().bucket(bucket).key(key).send();
                (retry_passing(client, "S3 DeleteObject", delete).await)
                    .map(|_| ())
                    .map_err(|f| failed(pointer, "DeleteObject", f))
            }
            _ => Ok(()),
        }
    }
}

enum Pointer<'a> {
    File(&'a Path),
    S3(&'a str, &'a str),
    Other,
}

fn split(pointer: &str) -> Pointer<'_> {
    if let Some(path) = pointer.strip_prefix("file://") {
        return Pointer::File(Path::new(path));
    }
    match pointer
        .strip_prefix("s3://")
        .and_then(|r| r.split_once('/'))
    {
        Some((bucket, key)) => Pointer::S3(bucket, key),
        None => Pointer::Other,
    }
}

fn join(prefix: &str, name: &str) -> String {
    match prefix.is_empty() {
        true => name.to_string(),
        false => format!("{prefix}/{name}"),
    }
}

fn failed(what: &str, call: &str, failure: Failure) -> Error {
    let why = failure.reason();
    Error::Unreachable(format!("the state store at {what}: S3 {call}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::kinesis::client::testing;

    /// Saves, reads back and deletes through a store; the pointer names where it went.
    async fn round_trip(store: &StateStore, client: &KinesisClient) -> String {
        let pointer = (store
            .put(client, "app/shardId-0/3-1.state", b"state 3".to_vec())
            .await)
            .unwrap();
        assert_eq!(store.get(client, &pointer).await.unwrap(), b"state 3");
        let other = (store
            .put(client, "app/shardId-0/4-1.state", b"state 4".to_vec())
            .await)
            .unwrap();
        assert_ne!(pointer, other, "each save is a new object");
        store.delete(client, &pointer).await.unwrap();
        assert!(store.get(client, &pointer).await.is_err());
        store.delete(client, &pointer).await.unwrap();
        assert_eq!(store.get(client, &other).await.unwrap(), b"state 4");
        other
    }

    #[test]
    fn a_directory_and_an_s3_compatible_server_keep_states_alike() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = crate::io::kinesis::client::runtime().unwrap();
        let (config, client) = testing::aws("http://127.0.0.1:9");
        let local = StateStore::open(&StoreSpec::Dir(dir.path().join("states")), &config).unwrap();
        let pointer = runtime.block_on(round_trip(&local, &client));
        assert!(
            pointer.starts_with("file://") && pointer.ends_with("4-1.state"),
            "{pointer}"
        );
        let Some(endpoint) = testing::endpoint("WEIR_TEST_S3") else {
            return;
        };
        let (config, client) = testing::aws(&endpoint);
        let spec = StoreSpec::parse("s3://weir-test/states/run").unwrap();
        let s3 = StateStore::open(&spec, &config).unwrap();
        let pointer = runtime.block_on(round_trip(&s3, &client));
        assert_eq!(pointer, "s3://weir-test/states/run/app/shardId-0/4-1.state");
    }

    #[test]
    fn stores_are_a_bucket_and_prefix_or_a_directory() {
        assert_eq!(
            StoreSpec::parse("s3://b/a/p/"),
            Ok(StoreSpec::S3 {
                bucket: "b".into(),
                prefix: "a/p".into()
            })
        );
        assert_eq!(
            StoreSpec::parse("s3://b"),
            Ok(StoreSpec::S3 {
                bucket: "b".into(),
                prefix: String::new()
            })
        );
        assert!(StoreSpec::parse("s3:///x").is_err());
        // A scheme weir does not know is refused, not taken as a directory `gs:`.
        let e = StoreSpec::parse("gs://x/y").unwrap_err();
        assert!(e.contains("unknown scheme"), "{e}");
        assert_eq!(
            StoreSpec::parse("./states:2026"),
            Ok(StoreSpec::Dir("./states:2026".into()))
        );
        assert_eq!(
            StoreSpec::parse("state"),
            Ok(StoreSpec::Dir("state".into()))
        );
        assert!(matches!(split("s3://b/k/1"), Pointer::S3("b", "k/1")));
        assert!(matches!(split("file:///tmp/x"), Pointer::File(_)));
    }
}
