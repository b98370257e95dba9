//! `weir lag`: per group, topic and partition, the committed offset, the log end, the lag in
//! messages and in time; totals; thresholds that set the exit code; several output formats.
//! For a Kinesis stream: per shard, a weir checkpoint's or a KCL application's position,
//! the time lag, MillisBehindLatest and the lease owner.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::IsTerminal;
use std::sync::atomic::AtomicBool;

use std::path::PathBuf;

use regex::Regex;

use super::plan;
use crate::cli::LagArgs;
use crate::core::lag::{
    breaches, estimated_time_lag, exact_time_lag, messages_behind, shard_breaches,
    unmeasured_breaches, History, PartitionLag, PartitionOffsets, Sample, Thresholds, TimeLag,
};
use crate::core::time::{now_millis, Millis};
use crate::error::{Error, Result};
use crate::io::kafka::admin::Committed;
use crate::io::kafka::{ClientOptions, Cluster, GroupDescription};
use crate::io::kinesis::{self, lag::Consumer, AwsOptions, KinesisClient};
use crate::io::metrics::Endpoint;
use crate::io::sink::{LineSink, SinkPlan};
use crate::io::spec::{
    is_kinesis, parse_kafka_cluster, KafkaSpec, KinesisSpec, SinkSpec, SourceSpec,
};
use crate::report::lag::{
    describe_breach, describe_shard_breach, render, render_shards, LagFormat, LagReport,
    LagTimeMode, ShardLagReport,
};
use crate::runtime::watch::{Findings, Measurer, Watch};
use crate::runtime::Sink;

/// Sampled points kept per partition for `--time-mode estimate --watch`.
const HISTORY_POINTS: usize = 360;

pub fn run(args: LagArgs, stop: &AtomicBool) -> Result<()> {
    match LagPlan::new(args)? {
        LagPlan::Kafka(kafka, reports) => kafka.run(reports, stop),
        LagPlan::Kinesis(kinesis, reports) => kinesis.run(reports, stop),
    }
}

/// A lag run, checked: whose lag, and where the reports go.
enum LagPlan {
    Kafka(KafkaLag, Reports),
    Kinesis(KinesisLag, Reports),
}

/// Where reports go, and how often.
struct Reports {
    output: SinkPlan,
    watch: Watch,
    /// `--serve`: to Prometheus's scrapes instead.
    serve: Option<Endpoint>,
}

impl Reports {
    /// Writes what `measure` renders, once or every `--watch`, into the output, opened once
    /// the cluster has answered, so that an unreachable one leaves the file alone.
    fn run(
        self,
        stop: &AtomicBool,
        measure: impl FnMut() -> Result<(String, Findings)>,
    ) -> Result<()> {
        if let Some(endpoint) = self.serve {
            return plan::serve_reports(&endpoint, self.watch, stop, measure);
        }
        let output = self.output;
        let open = move || -> Result<Box<dyn Sink>> { Ok(Box::new(LineSink::open(&output)?)) };
        self.watch.run(stop, open, measure)
    }
}

/// The lag of Kafka consumer groups.
struct KafkaLag {
    spec: KafkaSpec,
    client: ClientOptions,
    /// The groups named (`--group`).
    groups: Vec<String>,
    all_groups: bool,
    /// `--group-pattern`, compiled, and as given.
    pattern: Option<(Regex, String)>,
    thresholds: Thresholds,
    time_mode: LagTimeMode,
    format: LagFormat,
}

/// The lag of a Kinesis consumer: a weir checkpoint (`Ok`) or a KCL application (`Err`).
struct KinesisLag {
    spec: KinesisSpec,
    options: AwsOptions,
    consumer: std::result::Result<PathBuf, String>,
    dynamo_endpoint: Option<String>,
    format: LagFormat,
    max_lag: Option<Millis>,
}

impl LagPlan {
    fn new(mut args: LagArgs) -> Result<LagPlan> {
        let output = plan::report_sink(&args.output, "lag")?;
        let serve = args.serve.take();
        if serve.is_some() {
            args.format = match args.format {
                LagFormat::Table | LagFormat::Prometheus => LagFormat::Prometheus,
                _ => return Err(Error::Usage("--serve serves --format prometheus".into())),
            };
        }
        let redraw = args.watch.is_some()
            && output.spec == SinkSpec::Stdout
            && std::io::stdout().is_terminal()
            && args.format == LagFormat::Table;
        let reports = Reports {
            output,
            watch: Watch {
                command: "lag",
                redraw,
                every: args.watch,
                quiet: args.quiet,
            },
            serve: None,
        };
        let mut plan = match is_kinesis(&args.cluster) {
            true => LagPlan::Kinesis(KinesisLag::new(args)?, reports),
            false => LagPlan::Kafka(KafkaLag::new(args)?, reports),
        };
        // Bound once every rule is checked: a port in use is exit 4 before any measuring.
        let (LagPlan::Kafka(_, r) | LagPlan::Kinesis(_, r)) = &mut plan;
        if let Some(addr) = serve {
            r.serve = Some(Endpoint::bind(&addr)?);
        }
        Ok(plan)
    }
}

impl KafkaLag {
    fn new(args: LagArgs) -> Result<KafkaLag> {
        let spec = parse_kafka_cluster(&args.cluster).map_err(Error::Usage)?;
        if args.checkpoint.is_some() || args.kcl_app.is_some() {
            return Err(Error::Usage(
                "--checkpoint and --kcl-app name Kinesis consumers: give kinesis://STREAM".into(),
            ));
        }
        if args.groups.is_empty() && !args.all_groups && args.group_pattern.is_none() {
            return Err(Error::Usage(
                "which groups? give --group GROUP, --all-groups or --group-pattern REGEX".into(),
            ));
        }
        let pattern = match args.group_pattern {
            Some(p) => Some((
                Regex::new(&p).map_err(|e| Error::Usage(format!("--group-pattern: {e}")))?,
                p,
            )),
            None => None,
        };
        Ok(KafkaLag {
            spec,
            client: plan::clients(&args.client).kafka()?,
            groups: args.groups,
            all_groups: args.all_groups,
            pattern,
            thresholds: Thresholds {
                max_time_ms: args.max_lag,
                max_messages: args.max_messages,
                scope: args.per,
            },
            time_mode: args.time_mode,
            format: args.format,
        })
    }

    fn run(self, reports: Reports, stop: &AtomicBool) -> Result<()> {
        let (thresholds, format) = (self.thresholds, self.format);
        let topic = self.spec.topic.clone();
        let measurer = Measurer::spawn(move || {
            let cluster = Cluster::connect(&self.spec, &self.client)?;
            let mut history = History::new(HISTORY_POINTS);
            let mut describe = true;
            Ok(Box::new(move || {
                self.measure(&cluster, &mut history, &mut describe)
            }))
        });
        reports.run(stop, || {
            let report = measurer.measure(stop)?;
            let breached = breaches(&report.rows, &thresholds);
            let unchecked = unmeasured_breaches(
                &report.uncommitted,
                report.unmatched_pattern.as_deref(),
                topic.as_deref(),
            );
            let mut text = String::new();
            let shown = [&breached[..], &unchecked[..]].concat();
            render(&report, &shown, format, &mut text);
            let found = Findings {
                breached: breached.iter().map(describe_breach).collect(),
                unchecked: unchecked.iter().map(describe_breach).collect(),
            };
            Ok((text, found))
        })
    }
}

impl KinesisLag {
    fn new(args: LagArgs) -> Result<KinesisLag> {
        let spec =
            match SourceSpec::parse(std::slice::from_ref(&args.cluster)).map_err(Error::Usage)? {
                SourceSpec::Kinesis(spec) => spec,
                _ => unreachable!("a kinesis:// URL"),
            };
        let refused = if !args.groups.is_empty() || args.all_groups || args.group_pattern.is_some()
        {
            Some("Kinesis has no consumer groups: give --checkpoint PATH or --kcl-app NAME")
        } else if args.max_messages.is_some() {
            Some("--max-messages: Kinesis has no record counts; use --max-lag")
        } else if args.time_mode != LagTimeMode::Exact {
            Some("--time-mode: a Kinesis lag is always read from the stream (exact)")
        } else {
            None
        };
        if let Some(why) = refused {
            return Err(Error::Usage(why.into()));
        }
        let consumer = match (args.checkpoint, args.kcl_app) {
            (Some(path), None) => Ok(path),
            (None, Some(app)) => Err(app),
            _ => {
                return Err(Error::Usage(
                    "whose lag? give --checkpoint PATH (a weir checkpoint) or --kcl-app NAME"
                        .into(),
                ))
            }
        };
        // A missing checkpoint is found before the stream is called.
        if let Ok(path) = &consumer {
            kinesis::lag::load_checkpoint(path)?;
        }
        Ok(KinesisLag {
            spec,
            options: plan::clients(&args.client).aws(),
            consumer,
            dynamo_endpoint: args.dynamodb_endpoint_url,
            format: args.format,
            max_lag: args.max_lag,
        })
    }

    /// A weir checkpoint's or a KCL application's lag per shard.
    fn run(self, reports: Reports, stop: &AtomicBool) -> Result<()> {
        let (format, max_lag) = (self.format, self.max_lag);
        let measurer = Measurer::spawn(move || {
            let runtime = kinesis::client::runtime()?;
            let client = KinesisClient::connect(&runtime, &self.spec, &self.options)?;
            let consumer = match self.consumer {
                Ok(path) => Consumer::Checkpoint(path),
                Err(app) => Consumer::Kcl {
                    app,
                    dynamo: runtime.block_on(kinesis::client::dynamo_client(
                        &self.options,
                        self.dynamo_endpoint.as_deref(),
                    )),
                },
            };
            Ok(Box::new(move || {
                let rows = runtime.block_on(kinesis::lag::measure(&client, &consumer));
                client.say_retries();
                let rows = rows?;
                Ok(ShardLagReport {
                    at: now_millis(),
                    rows,
                })
            }))
        });
        reports.run(stop, || {
            let report = measurer.measure(stop)?;
            let breached: Vec<String> = shard_breaches(&report.rows, max_lag)
                .into_iter()
                .map(|(i, ms)| describe_shard_breach(&report.rows[i], ms, max_lag.unwrap_or(0)))
                .collect();
            let mut text = String::new();
            render_shards(&report, &breached, format, &mut text);
            Ok((
                text,
                Findings {
                    breached,
                    unchecked: Vec::new(),
                },
            ))
        })
    }
}

impl KafkaLag {
    /// One report: each group's lag on each partition, in messages and in time.
    fn measure(
        &self,
        cluster: &Cluster,
        history: &mut History,
        describe: &mut bool,
    ) -> Result<LagReport> {
        let topics = cluster.topics(self.spec.topic.as_deref())?;
        let mut found = self.groups(cluster)?;
        let log = cluster.log_offsets(&topics)?;
        let committed = cluster.committed(&found.groups, &topics)?;
        let (mut rows, uncommitted) = self.rows(&found.groups, &committed, &topics, &log);
        // Groups that never read these topics are no part of the report, unless named.
        let shown: BTreeSet<&str> = rows.iter().map(|r| r.offsets.group.as_str()).collect();
        (found.groups).retain(|g| self.groups.contains(g) || shown.contains(g.as_str()));
        match self.time_mode {
            LagTimeMode::Exact => exact_times(cluster, &mut rows)?,
            LagTimeMode::None => {}
            LagTimeMode::Estimate => estimated_times(cluster, &mut rows, &log, history)?,
        }
        let groups = descriptions(cluster, &found, describe);
        Ok(LagReport {
            at: now_millis(),
            mode: self.time_mode,
            rows,
            groups,
            uncommitted,
            unmatched_pattern: (self.pattern.as_ref())
                .filter(|_| !found.matched)
                .map(|(_, text)| text.clone()),
        })
    }

    /// The groups to measure: those named, and those the cluster has that match.
    fn groups(&self, cluster: &Cluster) -> Result<Groups> {
        let mut groups: BTreeSet<String> = self.groups.iter().cloned().collect();
        let mut states: HashMap<String, String> = HashMap::new();
        let mut matched = false;
        if self.all_groups || self.pattern.is_some() {
            for (g, state) in cluster.groups()? {
                if self.pattern.as_ref().is_none_or(|(p, _)| p.is_match(&g)) {
                    matched = true;
                    if let Some(state) = state {
                        states.insert(g.clone(), state);
                    }
                    groups.insert(g);
                }
            }
        }
        Ok(Groups {
            groups: groups.into_iter().collect(),
            states,
            matched,
        })
    }

    /// A row per group and partition, its lag in messages; and the named groups with no
    /// committed offset on these topics.
    fn rows(
        &self,
        groups: &[String],
        committed: &[Committed],
        topics: &[(String, Vec<i32>)],
        log: &LogOffsets,
    ) -> (Vec<PartitionLag>, Vec<String>) {
        let mut rows = Vec::new();
        let mut uncommitted = Vec::new();
        for (group, offsets) in groups.iter().zip(committed) {
            let mut any_commit = false;
            for (topic, partitions) in topics {
                let commit_of = |p: i32| offsets.get(&(topic.clone(), p)).copied().flatten();
                let has_commit = partitions.iter().any(|p| commit_of(*p).is_some());
                any_commit |= has_commit;
                // Without a topic in the URL, a group's topics are those it has committed on;
                // with one, a group found by --all-groups or a pattern that never committed
                // on it has not read it, and is left out (a named group's partitions show).
                let named = self.groups.contains(group);
                if !has_commit && (self.spec.topic.is_none() || !named) {
                    continue;
                }
                for &p in partitions {
                    let (log_start, log_end) =
                        log.get(&(topic.clone(), p)).copied().unwrap_or((0, 0));
                    let o = PartitionOffsets {
                        group: group.clone(),
                        topic: topic.clone(),
                        partition: p,
                        committed: commit_of(p),
                        log_start,
                        log_end,
                    };
                    rows.push(PartitionLag {
                        messages: messages_behind(&o),
                        offsets: o,
                        time: TimeLag::Unknown,
                    });
                }
            }
            // A named group without commits is said as a finding (exit 5); another is left out.
            if !any_commit && self.groups.contains(group) {
                uncommitted.push(group.clone());
            }
        }
        (rows, uncommitted)
    }
}

/// The groups a report covers, with the states the cluster's listing gave.
struct Groups {
    groups: Vec<String>,
    states: HashMap<String, String>,
    /// Whether any group matched `--group-pattern`.
    matched: bool,
}

/// Each partition's log start and end.
type LogOffsets = HashMap<(String, i32), (i64, i64)>;

/// `--time-mode exact`: each row's time lag from the timestamp of the first record it has
/// not consumed.
fn exact_times(cluster: &Cluster, rows: &mut [PartitionLag]) -> Result<()> {
    let wanted: BTreeSet<(String, i32, i64)> = rows
        .iter()
        .filter_map(|r| {
            let o = &r.offsets;
            let c = o.committed?;
            (c < o.log_end).then(|| (o.topic.clone(), o.partition, c.max(o.log_start)))
        })
        .collect();
    let wanted: Vec<_> = wanted.into_iter().collect();
    let found = cluster.first_records(&wanted)?;
    let now = now_millis();
    for r in rows {
        let o = &r.offsets;
        let sample = o.committed.and_then(|c| {
            found
                .get(&(o.topic.clone(), o.partition, c.max(o.log_start)))
                .map(|&(offset, timestamp)| Sample { offset, timestamp })
        });
        r.time = exact_time_lag(o, sample, now);
    }
    Ok(())
}

/// `--time-mode estimate`: each row's time lag read off its partition's rate of writes,
/// from the log's first and last records and the ends sampled so far.
fn estimated_times(
    cluster: &Cluster,
    rows: &mut [PartitionLag],
    log: &LogOffsets,
    history: &mut History,
) -> Result<()> {
    let mut wanted = BTreeSet::new();
    for ((topic, p), &(start, end)) in log {
        if end > start {
            wanted.insert((topic.clone(), *p, start));
            wanted.insert((topic.clone(), *p, end - 1));
        }
    }
    let wanted: Vec<_> = wanted.into_iter().collect();
    let found = cluster.first_records(&wanted)?;
    let now = now_millis();
    for ((topic, p), &(_, end)) in log {
        let sample = Sample {
            offset: end,
            timestamp: now,
        };
        history.add(topic, *p, sample);
    }
    // A partition's points are the same for every group: gathered once.
    let mut points: HashMap<(String, i32), Vec<Sample>> = log
        .keys()
        .map(|(t, p)| ((t.clone(), *p), history.points(t, *p).to_vec()))
        .collect();
    for ((t, p, _), &(offset, timestamp)) in &found {
        if let Some(list) = points.get_mut(&(t.clone(), *p)) {
            list.push(Sample { offset, timestamp });
        }
    }
    for r in rows {
        let o = &r.offsets;
        let partition_points = points
            .get(&(o.topic.clone(), o.partition))
            .map_or(&[][..], Vec::as_slice);
        r.time = estimated_time_lag(o, partition_points, now);
    }
    Ok(())
}

/// Each group's state and members, as the cluster describes them (or lists them, for a
/// broker that will not describe).
fn descriptions(
    cluster: &Cluster,
    found: &Groups,
    describe: &mut bool,
) -> BTreeMap<String, GroupDescription> {
    let mut descriptions = BTreeMap::new();
    for g in &found.groups {
        let mut d = if *describe {
            cluster.describe(g)
        } else {
            GroupDescription::default()
        };
        // A broker that will not describe one group will not describe the next either.
        if d.state.is_none() && d.members.is_none() {
            *describe = false;
        }
        if d.state.is_none() {
            d.state = found.states.get(g).cloned();
        }
        descriptions.insert(g.clone(), d);
    }
    descriptions
}
