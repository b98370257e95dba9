//! `-X sasl.mechanism=AWS_MSK_IAM` through a real SASL exchange: a private broker that
//! advertises the address of a front of our own (`tests/peers/msk_iam_proxy.py`), which
//! answers SaslHandshake and SaslAuthenticate as MSK does, checking each OAUTHBEARER token's
//! SigV4 signature with botocore and the test's secret, and forwards the rest.

use std::process::{Command, Output, Stdio};

use super::kafka::broker;
use crate::{free_port, wait_until, weir, Background};

/// A broker reached only through the MSK IAM front.
struct Front {
    _broker: Background,
    _front: Background,
    port: u16,
    tokens: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Front {
    fn start(secret: &str) -> Front {
        let dir = tempfile::tempdir().unwrap();
        let (inner, port) = (free_port(), free_port());
        let broker = Command::new("tansu")
            .args([
                "broker",
                "--listener-url",
                &format!("tcp://127.0.0.1:{inner}"),
            ])
            .args([
                "--advertised-listener-url",
                &format!("tcp://127.0.0.1:{port}"),
            ])
            .args(["--storage-engine", "sqlite://kafka.db"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tansu on PATH");
        let tokens = dir.path().join("tokens");
        let front = Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/peers/msk_iam_proxy.py"
            ))
            .args([
                &port.to_string(),
                &format!("127.0.0.1:{inner}"),
                "AKIDWEIRTEST",
                secret,
            ])
            .arg("eu-west-1")
            .arg(&tokens)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        for p in [inner, port] {
            wait_until("the broker and its front listen", || {
                std::net::TcpStream::connect(("127.0.0.1", p)).is_ok()
            });
        }
        let created = Command::new("tansu")
            .args([
                "topic",
                "create",
                "--broker",
                &format!("tcp://127.0.0.1:{inner}"),
            ])
            .args(["--partitions", "2", "checkouts"])
            .output()
            .unwrap();
        assert!(created.status.success(), "{created:?}");
        Front {
            _broker: Background(broker),
            _front: Background(front),
            port,
            tokens,
            _dir: dir,
        }
    }

    /// `weir ARGS` through the front with MSK IAM and the given secret.
    fn weir(&self, args: &[&str], secret: &str) -> Output {
        weir()
            .args(args)
            .args(["-X", "security.protocol=SASL_PLAINTEXT"])
            .args(["-X", "sasl.mechanism=AWS_MSK_IAM", "--timeout", "5s"])
            .env("AWS_ACCESS_KEY_ID", "AKIDWEIRTEST")
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env("AWS_REGION", "eu-west-1")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE")
            .output()
            .unwrap()
    }

    fn url(&self, topic: &str) -> String {
        format!("kafka://127.0.0.1:{}/{topic}", self.port)
    }

    /// The front's verdict on each token it was shown.
    fn verdicts(&self) -> Vec<String> {
        let seen = std::fs::read_to_string(&self.tokens).unwrap_or_default();
        seen.lines()
            .map(|l| {
                l.split_once(' ')
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default()
            })
            .collect()
    }
}

/// weir produces, consumes as a group member and reads lag through the front, every token
/// it signs accepted; with the wrong secret it is exit 4 naming authentication, within
/// --timeout.
#[test]
fn msk_iam_authenticates_every_kafka_client_and_a_wrong_secret_is_exit_4() {
    let Some(_) = broker() else { return };
    let secret = "weir-test-secret";
    let front = Front::start(secret);
    let url = front.url("checkouts");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/checkouts.ndjson");
    let out = front.weir(
        &["consume", fixture, "-o", &url, "--key", "merchant_id", "-q"],
        secret,
    );
    assert!(out.status.success(), "{out:?}");
    let read = [
        "consume",
        &url,
        "-G",
        "msk",
        "--from",
        "beginning",
        "-e",
        "-q",
    ];
    let out = front.weir(&read, secret);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 500);
    let cluster = format!("kafka://127.0.0.1:{}", front.port);
    let out = front.weir(
        &["lag", &cluster, "--group", "msk", "--max-messages", "0"],
        secret,
    );
    assert!(out.status.success(), "{out:?}");
    let verdicts = front.verdicts();
    assert!(verdicts.len() >= 3, "{verdicts:?}");
    assert!(verdicts.iter().all(|v| v == "ok"), "{verdicts:?}");
    let started = std::time::Instant::now();
    let out = front.weir(&["consume", &url, "-e", "-q"], "not-the-secret");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("authentication failed"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert!(front
        .verdicts()
        .iter()
        .any(|v| v.contains("signature mismatch")));
}
