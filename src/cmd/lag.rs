//! `weir lag`: per group, topic and partition, the committed offset, the log end, the lag in
//! messages and in time; totals; thresholds that set the exit code; several output formats.
//! For a Kinesis stream: per shard, a weir checkpoint's or a KCL application's position,
//! the time lag, MillisBehindLatest and the lease owner.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use regex::Regex;

use crate::cli::LagArgs;
use crate::core::lag::{
    breaches, estimated_time_lag, exact_time_lag, messages_behind, shard_breaches,
    unmeasured_breaches, History, PartitionLag, PartitionOffsets, Sample, Thresholds, TimeLag,
};
use crate::core::time::{now_millis, Millis};
use crate::error::{Error, Result};
use crate::io::kafka::{Cluster, GroupDescription};
use crate::io::kinesis::{self, lag::Consumer, KinesisClient};
use crate::io::sink::{LineSink, SinkPlan};
use crate::io::spec::{is_kinesis, parse_kafka_cluster, KafkaSpec, SinkSpec, SourceSpec};
use crate::report::lag::{
    describe_breach, describe_shard_breach, render, render_shards, LagFormat, LagReport,
    LagTimeMode, ShardLagReport,
};
use crate::runtime::Sink;

/// Sampled points kept per partition for `--time-mode estimate --watch`.
const HISTORY_POINTS: usize = 360;

pub fn run(args: LagArgs, stop: &AtomicBool) -> Result<()> {
    let output = SinkPlan::text(
        SinkSpec::parse(&args.output).map_err(Error::Usage)?,
        "weir lag writes its report to stdout or a file",
    )?;
    let redraw = args.watch.is_some()
        && output.spec == SinkSpec::Stdout
        && std::io::stdout().is_terminal()
        && args.format == LagFormat::Table;
    let looped = Looped {
        output,
        redraw,
        watch: args.watch,
    };
    if is_kinesis(&args.cluster) {
        return run_kinesis(args, looped, stop);
    }
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
    let pattern = match &args.group_pattern {
        Some(p) => Some(Regex::new(p).map_err(|e| Error::Usage(format!("--group-pattern: {e}")))?),
        None => None,
    };
    let client = super::plan::clients(&args.client).kafka()?;
    let thresholds = Thresholds {
        max_time_ms: args.max_lag,
        max_messages: args.max_messages,
        scope: args.per,
    };
    let format = args.format;
    let topic = spec.topic.clone();
    let measurer = Measurer::spawn(move || {
        let cluster = Cluster::connect(&spec, &client)?;
        let mut history = History::new(HISTORY_POINTS);
        let mut describe = true;
        Ok(Box::new(move || {
            measure(
                &cluster,
                &spec,
                &args,
                pattern.as_ref(),
                &mut history,
                &mut describe,
            )
        }))
    });
    looped.run(stop, || {
        let report = measurer.measure(stop)?;
        let mut breached = breaches(&report.rows, &thresholds);
        breached.extend(unmeasured_breaches(
            &report.uncommitted,
            report.unmatched_pattern.as_deref(),
            topic.as_deref(),
            &thresholds,
        ));
        let mut text = String::new();
        render(&report, &breached, format, &mut text);
        Ok((text, breached.iter().map(describe_breach).collect()))
    })
}

/// `weir lag kinesis://STREAM`: a weir checkpoint's or a KCL application's lag per shard.
fn run_kinesis(args: LagArgs, looped: Looped, stop: &AtomicBool) -> Result<()> {
    let spec = match SourceSpec::parse(std::slice::from_ref(&args.cluster)).map_err(Error::Usage)? {
        SourceSpec::Kinesis(spec) => spec,
        _ => unreachable!("a kinesis:// URL"),
    };
    let refused = if !args.groups.is_empty() || args.all_groups || args.group_pattern.is_some() {
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
    let options = super::plan::clients(&args.client).aws();
    let consumer = match (args.checkpoint.clone(), args.kcl_app.clone()) {
        (Some(path), None) => Ok(path),
        (None, Some(app)) => Err(app),
        _ => {
            return Err(Error::Usage(
                "whose lag? give --checkpoint PATH (a weir checkpoint) or --kcl-app NAME".into(),
            ))
        }
    };
    // A missing checkpoint is found before the stream is called.
    if let Ok(path) = &consumer {
        kinesis::lag::load_checkpoint(path)?;
    }
    let dynamo_endpoint = args.dynamodb_endpoint_url.clone();
    let (format, max_lag) = (args.format, args.max_lag);
    let measurer = Measurer::spawn(move || {
        let runtime = kinesis::client::runtime()?;
        let client = KinesisClient::connect(&runtime, &spec, &options)?;
        let consumer = match consumer {
            Ok(path) => Consumer::Checkpoint(path),
            Err(app) => Consumer::Kcl {
                app,
                dynamo: runtime.block_on(kinesis::lag::dynamo_client(
                    &options,
                    dynamo_endpoint.as_deref(),
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
    looped.run(stop, || {
        let report = measurer.measure(stop)?;
        let breached: Vec<String> = shard_breaches(&report.rows, max_lag)
            .into_iter()
            .map(|(i, ms)| describe_shard_breach(&report.rows[i], ms, max_lag.unwrap_or(0)))
            .collect();
        let mut text = String::new();
        render_shards(&report, &breached, format, &mut text);
        Ok((text, breached))
    })
}

/// Where reports go, and how often.
struct Looped {
    output: SinkPlan,
    redraw: bool,
    watch: Option<Millis>,
}

impl Looped {
    /// Writes what `measure` renders (the report's text and its breaches), once or every
    /// `--watch`; a breach is exit 1 at the end of a single run.
    fn run(
        self,
        stop: &AtomicBool,
        mut measure: impl FnMut() -> Result<(String, Vec<String>)>,
    ) -> Result<()> {
        // Opened once the cluster has answered, so that an unreachable one leaves the file
        // alone.
        let mut out: Option<LineSink> = None;
        loop {
            let (report, breached) = measure()?;
            let mut text = String::new();
            if self.redraw {
                text.push_str("\x1b[H\x1b[2J");
            }
            text.push_str(&report);
            let sink = match &mut out {
                Some(sink) => sink,
                None => out.insert(LineSink::open(&self.output)?),
            };
            sink.write_raw(text.as_bytes())?;
            match self.watch {
                Some(_) => sink.flush()?,
                None => sink.close()?,
            }
            for b in &breached {
                eprintln!("weir lag: {b}");
            }
            let Some(every) = self.watch else {
                return if breached.is_empty() {
                    Ok(())
                } else {
                    Err(Error::CheckFailed(format!(
                        "{} lag check{} failed",
                        breached.len(),
                        if breached.len() == 1 { "" } else { "s" }
                    )))
                };
            };
            let until = Instant::now() + Duration::from_millis(every as u64);
            while Instant::now() < until {
                if stop.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                std::thread::sleep(STOP_CHECK);
            }
        }
    }
}

/// How often a wait looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// A measurement, made on a thread of its own.
type Measure<R> = Box<dyn FnMut() -> Result<R>>;

/// The cluster (or stream) calls on a thread of their own. Each can block for up to
/// `--timeout`, and a signal must not wait for them: the command's thread waits for the
/// answer and watches the stop flag, and on a signal it returns at once, leaving the calls
/// to end with the process.
struct Measurer<R> {
    ask: mpsc::Sender<()>,
    answers: mpsc::Receiver<Result<R>>,
}

impl<R: Send + 'static> Measurer<R> {
    /// Starts the thread: `connect` makes the measurement there (connecting first).
    fn spawn(connect: impl FnOnce() -> Result<Measure<R>> + Send + 'static) -> Measurer<R> {
        let (ask, asked) = mpsc::channel::<()>();
        let (answer, answers) = mpsc::channel();
        std::thread::spawn(move || {
            let mut measure = match connect() {
                Ok(measure) => measure,
                Err(e) => {
                    let _ = answer.send(Err(e));
                    return;
                }
            };
            while asked.recv().is_ok() {
                if answer.send(measure()).is_err() {
                    return;
                }
            }
        });
        Measurer { ask, answers }
    }

    /// One measurement, or `Interrupted` as soon as a signal comes.
    fn measure(&self, stop: &AtomicBool) -> Result<R> {
        let _ = self.ask.send(());
        loop {
            if stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            match self.answers.recv_timeout(STOP_CHECK) {
                Ok(report) => return report,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Error::Unreachable(
                        "the cluster's answer was lost (its thread ended)".into(),
                    ))
                }
            }
        }
    }
}

fn measure(
    cluster: &Cluster,
    spec: &KafkaSpec,
    args: &LagArgs,
    pattern: Option<&Regex>,
    history: &mut History,
    describe: &mut bool,
) -> Result<LagReport> {
    let topics = cluster.topics(spec.topic.as_deref())?;
    let mut groups: BTreeSet<String> = args.groups.iter().cloned().collect();
    let mut states: HashMap<String, String> = HashMap::new();
    let mut matched = false;
    if args.all_groups || pattern.is_some() {
        for (g, state) in cluster.groups()? {
            if pattern.is_none_or(|p| p.is_match(&g)) {
                matched = true;
                if let Some(state) = state {
                    states.insert(g.clone(), state);
                }
                groups.insert(g);
            }
        }
    }
    let groups: Vec<String> = groups.into_iter().collect();
    let log = cluster.log_offsets(&topics)?;
    let committed = cluster.committed(&groups, &topics)?;

    let mut rows = Vec::new();
    let mut uncommitted = Vec::new();
    for (group, offsets) in groups.iter().zip(&committed) {
        let before = rows.len();
        let mut any_commit = false;
        for (topic, partitions) in &topics {
            let has_commit = partitions.iter().any(|p| {
                offsets
                    .get(&(topic.clone(), *p))
                    .copied()
                    .flatten()
                    .is_some()
            });
            any_commit |= has_commit;
            // Without a topic in the URL, a group's topics are those it has committed on.
            if spec.topic.is_none() && !has_commit {
                continue;
            }
            for &p in partitions {
                let (log_start, log_end) = log.get(&(topic.clone(), p)).copied().unwrap_or((0, 0));
                let o = PartitionOffsets {
                    group: group.clone(),
                    topic: topic.clone(),
                    partition: p,
                    committed: offsets.get(&(topic.clone(), p)).copied().flatten(),
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
        if rows.len() == before {
            eprintln!("weir lag: group '{group}' has no committed offsets on these topics");
        }
        if !any_commit && args.groups.contains(group) {
            uncommitted.push(group.clone());
        }
    }

    match args.time_mode {
        LagTimeMode::Exact => {
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
            for r in &mut rows {
                let o = &r.offsets;
                let sample = o.committed.and_then(|c| {
                    found
                        .get(&(o.topic.clone(), o.partition, c.max(o.log_start)))
                        .map(|&(offset, timestamp)| Sample { offset, timestamp })
                });
                r.time = exact_time_lag(o, sample, now);
            }
        }
        LagTimeMode::None => {}
        LagTimeMode::Estimate => {
            let mut wanted = BTreeSet::new();
            for ((topic, p), &(start, end)) in &log {
                if end > start {
                    wanted.insert((topic.clone(), *p, start));
                    wanted.insert((topic.clone(), *p, end - 1));
                }
            }
            let wanted: Vec<_> = wanted.into_iter().collect();
            let found = cluster.first_records(&wanted)?;
            let now = now_millis();
            for ((topic, p), &(_, end)) in &log {
                history.add(
                    topic,
                    *p,
                    Sample {
                        offset: end,
                        timestamp: now,
                    },
                );
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
            for r in &mut rows {
                let o = &r.offsets;
                let partition_points = points
                    .get(&(o.topic.clone(), o.partition))
                    .map_or(&[][..], Vec::as_slice);
                r.time = estimated_time_lag(o, partition_points, now);
            }
        }
    }

    let mut descriptions = BTreeMap::new();
    for g in &groups {
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
            d.state = states.get(g).cloned();
        }
        descriptions.insert(g.clone(), d);
    }
    Ok(LagReport {
        at: now_millis(),
        mode: args.time_mode,
        rows,
        groups: descriptions,
        uncommitted,
        unmatched_pattern: args.group_pattern.clone().filter(|_| !matched),
    })
}
