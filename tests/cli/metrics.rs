//! `--metrics` and `lag --serve`: the endpoints read as Prometheus reads them, parsed by the
//! official Python client's parsers (`scripts/peers/prom_parse.py`), and scraped by a real
//! Prometheus server (Debian's `prometheus`), whose HTTP API the test then queries.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::kafka::{broker, Broker};
use super::kinesis::peer;
use crate::{fixture, free_port, wait_until, weir, weir_std, Background};

/// One sample, as the official client parsed it.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// `GET http://127.0.0.1:PORT/metrics`, in OpenMetrics when `openmetrics`, parsed by the
/// official client's parser of that format; `None` while nothing answers.
fn scrape(port: u16, openmetrics: bool) -> Option<Vec<Sample>> {
    let accept = match openmetrics {
        true => "application/openmetrics-text; version=1.0.0",
        false => "text/plain; version=0.0.4",
    };
    let url = format!("http://127.0.0.1:{port}/metrics");
    let mut answer = ureq::get(&url).header("Accept", accept).call().ok()?;
    let body = answer.body_mut().read_to_string().unwrap();
    let format = if openmetrics { "openmetrics" } else { "text" };
    let parsed = peer("prom_parse.py", &[format], &body, &[]);
    let samples = parsed.lines().map(|l| {
        let v: Value = serde_json::from_str(l).unwrap();
        Sample {
            name: v["name"].as_str().unwrap().to_string(),
            labels: serde_json::from_value(v["labels"].clone()).unwrap(),
            value: v["value"].as_f64().unwrap(),
        }
    });
    Some(samples.collect())
}

/// The value of the sample `name` whose labels include `labels`.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let has = |s: &Sample| {
        labels
            .iter()
            .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
    };
    (samples.iter())
        .find(|s| s.name == name && has(s))
        .map(|s| s.value)
}

fn read_total(port: u16, openmetrics: bool) -> Option<f64> {
    value(&scrape(port, openmetrics)?, "weir_records_read_total", &[])
}

/// A window over a stdin that pauses serves, while it waits, the records it read, the windows
/// it holds, and each partition's watermark: the partition's highest event time so far less
/// the delay, as computed here from the records sent; in both formats. Its late count at the
/// end of the input is the summary's and the late file's, partition by partition.
#[test]
fn a_run_serves_its_counters_and_watermarks_while_it_lasts() {
    let port = free_port();
    let text = std::fs::read_to_string(fixture("checkouts.ndjson")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let dir = tempfile::tempdir().unwrap();
    let late_file = dir.path().join("late.ndjson");
    let mut child = weir_std()
        .args(["window", "--time", "occurred_at", "--key", "merchant_id"])
        .args(["--tumbling", "1m", "--delay", "1m", "--count"])
        .args(["--partition-by", "partition"])
        .args(["--metrics", &format!("127.0.0.1:{port}")])
        .arg("--late-output")
        .arg(&late_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut run = Background(child);
    stdin
        .write_all((lines[..200].join("\n") + "\n").as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    wait_until("200 records published", || {
        read_total(port, false) == Some(200.0)
    });
    let samples = scrape(port, false).unwrap();
    for p in 0..4 {
        let highest = (lines[..200].iter())
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["partition"] == p)
            .map(|v| {
                let t = v["occurred_at"].as_str().unwrap();
                chrono::DateTime::parse_from_rfc3339(t)
                    .unwrap()
                    .timestamp_millis()
            })
            .max()
            .unwrap();
        let at = [("partition", &*p.to_string())];
        let watermark = value(&samples, "weir_partition_watermark_seconds", &at);
        assert_eq!(
            watermark,
            Some((highest - 60_000) as f64 / 1000.0),
            "partition {p}"
        );
        let max = value(&samples, "weir_partition_max_event_time_seconds", &at);
        assert_eq!(max, Some(highest as f64 / 1000.0), "partition {p}");
    }
    assert!(value(&samples, "weir_open_windows", &[]).unwrap() > 0.0);
    assert!(value(&samples, "weir_keys", &[]).unwrap() > 0.0);
    assert!(value(&samples, "weir_state_bytes", &[]).unwrap() > 0.0);
    assert_eq!(
        value(
            &samples,
            "weir_records_read_total",
            &[("command", "window")]
        ),
        Some(200.0)
    );
    stdin
        .write_all((lines[200..].join("\n") + "\n").as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    wait_until("500 records published", || {
        read_total(port, true) == Some(500.0)
    });
    let samples = scrape(port, true).unwrap();
    let late = value(&samples, "weir_records_late_total", &[]).unwrap();
    drop(stdin);
    assert!(run.wait_within("the window").success());
    // Each partition's late count is its records in the late file.
    let written = std::fs::read_to_string(&late_file).unwrap();
    assert_eq!(written.lines().count() as f64, late);
    for p in 0..4 {
        let in_file = (written.lines())
            .filter(|l| serde_json::from_str::<Value>(l).unwrap()["partition"] == p)
            .count();
        let at = [("partition", &*p.to_string())];
        let served = value(&samples, "weir_partition_records_late_total", &at);
        assert_eq!(served.unwrap_or(0.0), in_file as f64, "partition {p}");
    }
    let mut said = String::new();
    std::io::Read::read_to_string(run.0.stderr.as_mut().unwrap(), &mut said).unwrap();
    assert!(
        said.contains(&format!(", late {late},")),
        "late {late}: {said}"
    );
}

/// A dedupe serves the ids it remembers (the distinct ids sent so far, counted here), the
/// memory of its tables, and a bad record dead-lettered.
#[test]
fn a_dedupe_serves_the_ids_it_holds() {
    let port = free_port();
    let text = std::fs::read_to_string(fixture("checkouts.ndjson")).unwrap();
    let lines: Vec<&str> = text.lines().take(200).collect();
    let dir = tempfile::tempdir().unwrap();
    let dead = dir.path().join("dead.ndjson");
    let mut child = weir_std()
        .args(["dedupe", "--id", "merchant_id", "--time", "occurred_at"])
        .args(["--horizon", "1d", "--metrics", &format!("127.0.0.1:{port}")])
        .arg("--dead-letter")
        .arg(&dead)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let _run = Background(child);
    let input = lines.join("\n") + "\nnot json\n";
    stdin.write_all(input.as_bytes()).unwrap();
    stdin.flush().unwrap();
    wait_until("201 records published", || {
        read_total(port, false) == Some(201.0)
    });
    let distinct: std::collections::BTreeSet<String> = (lines.iter())
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["merchant_id"].to_string())
        .collect();
    let samples = scrape(port, false).unwrap();
    let ids = value(&samples, "weir_dedupe_ids", &[]);
    assert_eq!(ids, Some(distinct.len() as f64));
    let duplicates = value(&samples, "weir_records_duplicate_total", &[]);
    assert_eq!(duplicates, Some((200 - distinct.len()) as f64));
    assert!(value(&samples, "weir_state_bytes", &[]).unwrap() > 0.0);
    assert_eq!(value(&samples, "weir_records_bad_total", &[]), Some(1.0));
    let dead_lettered = value(&samples, "weir_records_dead_lettered_total", &[]);
    assert_eq!(dead_lettered, Some(1.0));
}

/// A Kinesis read serves each shard's records and what GetRecords says of its distance to the
/// tip (MillisBehindLatest), for every shard of the stream.
#[test]
fn a_kinesis_read_serves_each_shards_records_and_lag() {
    let Some(s) = super::kinesis::kinesis_local() else {
        return;
    };
    let stream = s.stream("metrics", 2);
    let records: String = (0..40).map(|i| format!("{{\"i\":{i}}}\n")).collect();
    s.py(&["put", &stream, "i"], &records);
    let port = free_port();
    let mut c = weir_std();
    super::kinesis::aws_env(&mut c)
        .args(["consume", &s.url(&stream), "--from", "beginning", "-q"])
        .args(["--endpoint-url", &s.endpoint])
        .args(["--metrics", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null());
    let _run = Background(c.spawn().unwrap());
    wait_until("40 records published", || {
        read_total(port, false) == Some(40.0)
    });
    let samples = scrape(port, false).unwrap();
    let shards: Vec<&Sample> = (samples.iter())
        .filter(|s| s.name == "weir_consumer_lag_seconds")
        .collect();
    assert_eq!(shards.len(), 2, "{samples:?}");
    assert!(
        shards.iter().all(|s| s.labels["topic"] == stream),
        "{shards:?}"
    );
    let per_shard: f64 = (samples.iter())
        .filter(|s| s.name == "weir_partition_records_read_total")
        .map(|s| s.value)
        .sum();
    assert_eq!(per_shard, 40.0, "{samples:?}");
}

/// What cannot serve stops the run before it reads anything: not an address is exit 2, a
/// port in use exit 4; so does `lag --serve`.
#[test]
fn a_bad_metrics_address_or_a_port_in_use_stops_before_anything_is_read() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = taken.local_addr().unwrap().to_string();
    let input = fixture("checkouts.ndjson");
    let input = input.to_str().unwrap();
    for (addr, code, said) in [
        (&*at, 4, "cannot serve metrics"),
        ("nonsense", 2, "not HOST:PORT"),
    ] {
        let out = weir()
            .args(["consume", input, "--metrics", addr])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{addr}: {out:?}");
        assert!(out.stdout.is_empty(), "{addr}: nothing read");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(said),
            "{out:?}"
        );
    }
    let out = weir()
        .args(["lag", "kafka://127.0.0.1:9", "-G", "g", "--serve", &at])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let out = weir()
        .args([
            "lag",
            "kafka://127.0.0.1:9",
            "-G",
            "g",
            "--serve",
            &at,
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// A lag exporter whose cluster is out of reach serves that, not an empty page: up 0, its
/// failures counted, no lag; each scrape tries the cluster again (so that it comes back with
/// the cluster); SIGTERM stops it, exit 0.
#[test]
fn a_lag_exporter_shows_an_unreachable_cluster_and_stops_on_sigterm() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let err = dir.path().join("err");
    let exporter = weir_std()
        .args(["lag", "kafka://127.0.0.1:9", "-G", "g", "--timeout", "1s"])
        .args(["--serve", &format!("127.0.0.1:{port}")])
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut exporter = Background(exporter);
    let failures = |samples: &[Sample]| value(samples, "weir_lag_failures_total", &[]);
    wait_until("two failed measurements served", || {
        scrape(port, true).is_some_and(|s| failures(&s).is_some_and(|n| n >= 2.0))
    });
    let samples = scrape(port, false).unwrap();
    assert_eq!(value(&samples, "weir_lag_up", &[]), Some(0.0));
    assert!(!samples
        .iter()
        .any(|s| s.name.starts_with("weir_consumergroup")));
    let pid = exporter.0.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = exporter.wait_within("the exporter after SIGTERM");
    assert_eq!(status.code(), Some(0));
    let said = std::fs::read_to_string(&err).unwrap();
    let tried = said.lines().filter(|l| l.contains("127.0.0.1:9")).count();
    assert!(tried >= 2, "each measurement tries the cluster: {said}");
}

/// Prometheus itself, scraping every second the jobs given as (name, port).
struct Prometheus {
    _server: Background,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(jobs: &[(&str, u16)]) -> Option<Prometheus> {
        if Command::new("prometheus")
            .arg("--version")
            .output()
            .is_err()
        {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but no prometheus: scripts/test.sh installs Debian's"
            );
            eprintln!("skipped: no prometheus (apt-get install prometheus)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut config = String::from("global:\n  scrape_interval: 1s\nscrape_configs:\n");
        for (job, port) in jobs {
            config += &format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
            );
        }
        let file = dir.path().join("prometheus.yml");
        std::fs::write(&file, config).unwrap();
        let port = free_port();
        let server = Command::new("prometheus")
            .arg(format!("--config.file={}", file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("err")).unwrap())
            .spawn()
            .unwrap();
        let p = Prometheus {
            _server: Background(server),
            port,
            _dir: dir,
        };
        let ready = format!("http://127.0.0.1:{port}/-/ready");
        wait_until("prometheus ready", || ureq::get(&ready).call().is_ok());
        Some(p)
    }

    /// An instant query's samples: labels and value.
    fn query(&self, query: &str) -> Vec<(Value, f64)> {
        let url = format!("http://127.0.0.1:{}/api/v1/query", self.port);
        let mut answer = ureq::get(&url).query("query", query).call().unwrap();
        let v: Value = serde_json::from_str(&answer.body_mut().read_to_string().unwrap()).unwrap();
        assert_eq!(v["status"], "success", "{v}");
        let results = v["data"]["result"].as_array().unwrap();
        (results.iter())
            .map(|r| {
                let value = r["value"][1].as_str().unwrap().parse().unwrap();
                (r["metric"].clone(), value)
            })
            .collect()
    }

    /// The single value of `query`, once it has one.
    fn one(&self, query: &str) -> Option<f64> {
        self.query(query).first().map(|(_, v)| *v)
    }
}

/// Checkouts as envelopes over `partitions` partitions, produced to a new topic.
fn produce(b: &Broker, topic: &str, lines: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.ndjson");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    b.produce(topic, &file, &["--key", "merchant_id"]);
}

/// A Prometheus server scrapes a `window -G` member and a `lag --serve` exporter on loopback:
/// the member's read counter rises as records come, up to all of them, and the lag Prometheus
/// holds for a group is what `weir lag` itself says of it.
#[test]
fn prometheus_scrapes_a_group_member_and_the_lag_exporter() {
    let Some(b) = broker() else { return };
    let (member_port, lag_port) = (free_port(), free_port());
    let Some(prometheus) = Prometheus::start(&[("member", member_port), ("lag", lag_port)]) else {
        return;
    };
    let text = std::fs::read_to_string(fixture("checkouts.ndjson")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let topic = b.topic("metrics", 3);
    produce(&b, &topic, &lines[..300]);
    // A group that read 100 records and stopped: its lag stands still.
    let behind = format!("behind-{topic}");
    let out = weir()
        .args([
            "consume",
            &b.url(&topic),
            "-G",
            &behind,
            "--from",
            "beginning",
            "-n",
            "100",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let _member = Background(
        weir_std()
            .args([
                "window",
                &b.url(&topic),
                "-G",
                &format!("member-{topic}"),
                "--from",
                "beginning",
            ])
            .args(super::pipes::WINDOW)
            .args(["--delay", "1m", "-q", "-o", "/dev/null"])
            .args(["--checkpoint-interval", "500ms"])
            .args(["--metrics", &format!("127.0.0.1:{member_port}")])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let _exporter = Background(
        weir_std()
            .args([
                "lag",
                &format!("kafka://{}", b.addr),
                "-G",
                &behind,
                "--serve",
            ])
            .arg(format!("127.0.0.1:{lag_port}"))
            .args(["--time-mode", "none", "-q"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let read = r#"sum(weir_records_read_total{job="member",command="window"})"#;
    let started = Instant::now();
    wait_until("prometheus has the member's first records", || {
        prometheus.one(read).is_some_and(|n| n >= 300.0)
    });
    let first = prometheus.one(read).unwrap();
    produce(&b, &topic, &lines[300..]);
    wait_until("prometheus sees the member read all", || {
        prometheus.one(read) == Some(500.0)
    });
    assert_eq!(first, 300.0, "the first batch, then the second: it rose");
    // librdkafka's own view: nothing left behind on any of the three partitions.
    let client_lag = r#"weir_consumer_lag_records{job="member"}"#;
    wait_until("the client reports it caught up", || {
        let lag = prometheus.query(client_lag);
        lag.len() == 3 && lag.iter().all(|(_, v)| *v == 0.0)
    });
    // Its partitions' states saved as it goes, the last one a moment ago.
    wait_until("prometheus has the member's saves", || {
        prometheus
            .one(r#"weir_checkpoints_total{job="member"}"#)
            .is_some_and(|n| n > 0.0)
    });
    let age = prometheus.one(r#"weir_checkpoint_age_seconds{job="member"}"#);
    assert!(age.is_some_and(|a| a < 60.0), "{age:?}");
    let per_partition = r#"sum(weir_partition_records_read_total{job="member"})"#;
    assert_eq!(prometheus.one(per_partition), Some(500.0));
    let owned = prometheus.query(r#"weir_partition_owned{job="member"}"#);
    assert_eq!(owned.len(), 3, "{owned:?}");
    assert!(
        owned.iter().all(|(_, v)| *v == 1.0),
        "one member owns all: {owned:?}"
    );
    // The exporter: once it has measured the second batch, what Prometheus holds of each
    // partition is what weir lag says of it.
    let ends = r#"sum(weir_partition_log_end_offset{job="lag"})"#;
    wait_until("prometheus has the log ends after the second batch", || {
        prometheus.one(ends) == Some(500.0)
    });
    let held: BTreeMap<String, f64> = (prometheus
        .query(r#"weir_consumergroup_lag_messages{job="lag"}"#))
    .into_iter()
    .map(|(labels, v)| (labels["partition"].as_str().unwrap().to_string(), v))
    .collect();
    let own = weir()
        .args([
            "lag",
            &format!("kafka://{}", b.addr),
            "-G",
            &behind,
            "--format",
            "ndjson",
        ])
        .args(["--time-mode", "none"])
        .output()
        .unwrap();
    let said: BTreeMap<String, f64> = (String::from_utf8_lossy(&own.stdout).lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|r| Some((r["partition"].to_string(), r["lag_messages"].as_f64()?)))
        .collect();
    assert_eq!(held, said, "{own:?}");
    assert!(said.values().any(|v| *v > 0.0), "{said:?}");
    assert_eq!(prometheus.one(r#"weir_lag_up{job="lag"}"#), Some(1.0));
    assert!(started.elapsed() < Duration::from_secs(120));
}
