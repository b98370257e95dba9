//! Kafka client options: kcat's `-F` file and `-X` properties, checked before any client is
//! made.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::KafkaError;

use super::properties::PROPERTIES;
use crate::error::{Error, Result};
use crate::io::spec::KafkaSpec;

/// Environment variable naming a default `-F` file, as `KAFKACAT_CONFIG` does for kcat.
pub const CONFIG_ENV: &str = "WEIR_KAFKA_CONFIG";

/// librdkafka properties whose values must never be shown.
pub(crate) fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("password") || key.contains("secret") || key.ends_with(".key.pem")
}

/// How a Kafka client connects, checked: the config file read and every property parsed.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// librdkafka properties in order: the config file's (`-F`, else `$WEIR_KAFKA_CONFIG`),
    /// then `-X` pairs, which win.
    pub properties: Vec<(String, String)>,
    /// The `schema.registry.*` properties, which are the schema registry's, not librdkafka's.
    pub registry: Vec<(String, String)>,
    /// How long to wait for a broker before giving up.
    pub timeout: Duration,
    /// `-X sasl.mechanism=AWS_MSK_IAM`: librdkafka is given OAUTHBEARER, and weir the tokens.
    pub msk_iam: bool,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            properties: Vec::new(),
            registry: Vec::new(),
            timeout: Duration::from_secs(10),
            msk_iam: false,
        }
    }
}

impl ClientOptions {
    /// Reads the config file (`-F`, else `$WEIR_KAFKA_CONFIG`) and parses it and the `-X`
    /// pairs. A malformed line or property is a usage error.
    pub fn resolve(
        config_file: Option<&Path>,
        properties: &[String],
        timeout: Duration,
    ) -> Result<ClientOptions> {
        let mut out = Vec::new();
        let file: Option<PathBuf> = config_file
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os(CONFIG_ENV).map(PathBuf::from));
        if let Some(path) = file {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                Error::Usage(format!("cannot read Kafka config {}: {e}", path.display()))
            })?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (k, v) = split_property(line)
                    .map_err(|e| Error::Usage(format!("{}:{}: {e}", path.display(), n + 1)))?;
                out.push((k.to_string(), v.to_string()));
            }
        }
        for p in properties {
            let (k, v) = split_property(p).map_err(|e| Error::Usage(format!("-X {e}")))?;
            out.push((k.to_string(), v.to_string()));
        }
        let (registry, mut out): (Vec<_>, Vec<_>) = out
            .into_iter()
            .partition(|(k, _)| k.starts_with("schema.registry."));
        let msk_iam = take_msk_iam(&mut out)?;
        check_properties(&out)?;
        Ok(ClientOptions {
            properties: out,
            registry,
            timeout,
            msk_iam,
        })
    }

    /// A client configuration for the cluster of `spec`, with these properties applied.
    pub(crate) fn config(&self, spec: &KafkaSpec) -> ClientConfig {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", spec.bootstrap_servers());
        config.set_log_level(RDKafkaLogLevel::Emerg);
        for (k, v) in &self.properties {
            config.set(k, v);
        }
        config
    }
}

/// Whether the properties ask for MSK IAM (`sasl.mechanism=AWS_MSK_IAM`, which becomes
/// librdkafka's OAUTHBEARER with weir's tokens). OAUTHBEARER asked for otherwise is refused:
/// weir supplies its tokens, and this librdkafka has no OIDC of its own.
fn take_msk_iam(properties: &mut [(String, String)]) -> Result<bool> {
    let mut msk = false;
    for (k, v) in properties.iter_mut() {
        if k != "sasl.mechanism" && k != "sasl.mechanisms" {
            continue;
        }
        if v.eq_ignore_ascii_case(super::msk_iam::MECHANISM) {
            *v = "OAUTHBEARER".into();
            msk = true;
        } else if v.eq_ignore_ascii_case("OAUTHBEARER") {
            return Err(Error::Usage(format!(
                "-X {k}=OAUTHBEARER: weir supplies OAUTHBEARER tokens for Amazon MSK only; give -X {k}=AWS_MSK_IAM"
            )));
        }
    }
    Ok(msk)
}

/// Sets every property on a client configuration librdkafka checks (no client is made, no
/// broker called): an unknown key or a bad value is a usage error before anything opens.
fn check_properties(properties: &[(String, String)]) -> Result<()> {
    let mut config = ClientConfig::new();
    for (k, v) in properties {
        config.set(k, v);
    }
    match config.create_native_config() {
        Ok(_) => Ok(()),
        Err(KafkaError::ClientConfig(_, desc, key, value)) => {
            Err(Error::Usage(refused_property(&desc, &key, &value)))
        }
        // Setting properties fails only as above.
        Err(_) => Err(Error::Usage("-X: librdkafka refused a property".into())),
    }
}

/// A property librdkafka refused, said without its value (a mistyped secret's key would
/// print the secret) and with the property a mistyped key likely meant.
pub(crate) fn refused_property(desc: &str, key: &str, value: &str) -> String {
    let desc = match value.is_empty() {
        true => desc.to_string(),
        false => desc.replace(value, "(value not shown)"),
    };
    let mut text = format!("-X {key}: {desc}");
    if !PROPERTIES.contains(&key) {
        let near = PROPERTIES
            .iter()
            .map(|p| (strsim::damerau_levenshtein(p, key), p))
            .min()
            .filter(|(d, _)| *d <= 2 + key.len() / 10);
        if let Some((_, p)) = near {
            text.push_str(&format!(" (did you mean '{p}'?)"));
        }
    }
    text
}

fn split_property(s: &str) -> std::result::Result<(&str, &str), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim(), v.trim())),
        _ => Err(format!(
            "expected key=value, got '{}'",
            s.split('=').next().unwrap_or("")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kafka.conf");
        std::fs::write(
            &file,
            "# comment\n\nsecurity.protocol=SASL_SSL\nclient.id = from-file\n",
        )
        .unwrap();
        let spec = KafkaSpec {
            brokers: vec![crate::io::spec::Broker {
                host: "127.0.0.1".into(),
                port: 9092,
            }],
            topic: Some("t".into()),
        };
        let timeout = Duration::from_secs(1);
        let options =
            ClientOptions::resolve(Some(&file), &["client.id=cli".into()], timeout).unwrap();
        let c = options.config(&spec);
        assert_eq!(c.get("bootstrap.servers"), Some("127.0.0.1:9092"));
        assert_eq!(c.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(c.get("client.id"), Some("cli"));
        assert!(ClientOptions::resolve(None, &["novalue".into()], timeout).is_err());
        std::fs::write(&file, "sasl.password\n").unwrap();
        let e = ClientOptions::resolve(Some(&file), &[], timeout)
            .unwrap_err()
            .to_string();
        assert!(e.contains("kafka.conf:1"), "{e}");
    }

    #[test]
    fn a_refused_property_is_named_without_its_value_and_with_the_likely_key() {
        let timeout = Duration::from_secs(1);
        let refused = |p: &str| {
            ClientOptions::resolve(None, &[p.to_string()], timeout)
                .unwrap_err()
                .to_string()
        };
        let e = refused("sasl.pasword=hunter2x");
        assert!(!e.contains("hunter2x"), "{e}");
        assert!(e.contains("did you mean 'sasl.password'?"), "{e}");
        let e = refused("fetch.wait.max.ms=soon-ish");
        assert!(
            !e.contains("soon-ish") && e.contains("fetch.wait.max.ms"),
            "{e}"
        );
        let e = refused("no.such.thing.at.all=1");
        assert!(!e.contains("did you mean"), "{e}");
        // Known and well formed: taken.
        assert!(ClientOptions::resolve(None, &["fetch.wait.max.ms=5".into()], timeout).is_ok());
    }

    #[test]
    fn secrets_are_recognised() {
        assert!(is_secret("sasl.password"));
        assert!(is_secret("ssl.key.password"));
        assert!(!is_secret("bootstrap.servers"));
    }
}
