//! `weir lag`: per group, topic and partition, the committed offset, the log end, the lag in
//! messages and in time; totals; thresholds that set the exit code; several output formats.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use regex::Regex;

use crate::cli::LagArgs;
use crate::core::lag::{
    breaches, estimated_time_lag, exact_time_lag, messages_behind, History, PartitionLag,
    PartitionOffsets, Sample, Thresholds, TimeLag,
};
use crate::core::time::now_millis;
use crate::error::{Error, Result};
use crate::io::kafka::{ClientOptions, Cluster, GroupDescription};
use crate::io::sink::{LineSink, Sink, SinkPlan};
use crate::io::spec::{parse_kafka_cluster, KafkaSpec, SinkSpec};
use crate::report::lag::{describe_breach, render, LagFormat, LagReport, LagTimeMode};

/// Sampled points kept per partition for `--time-mode estimate --watch`.
const HISTORY_POINTS: usize = 360;

pub fn run(args: LagArgs, stop: &AtomicBool) -> Result<()> {
    let spec = parse_kafka_cluster(&args.cluster).map_err(Error::Usage)?;
    let pattern = match &args.group_pattern {
        Some(p) => Some(Regex::new(p).map_err(|e| Error::Usage(format!("--group-pattern: {e}")))?),
        None => None,
    };
    let output = SinkPlan::text(
        SinkSpec::parse(&args.output).map_err(Error::Usage)?,
        "weir lag writes its report to stdout or a file",
    )?;
    let client = super::client_options(&args.client)?;
    let redraw = args.watch.is_some()
        && output.spec == SinkSpec::Stdout
        && std::io::stdout().is_terminal()
        && args.format == LagFormat::Table;
    let thresholds = Thresholds {
        max_time_ms: args.max_lag,
        max_messages: args.max_messages,
        scope: args.per,
    };
    let (format, watch) = (args.format, args.watch);
    let measurer = Measurer::spawn(spec, client, args, pattern);
    // Opened once the cluster has answered, so that an unreachable one leaves the file alone.
    let mut out: Option<LineSink> = None;
    loop {
        let report = measurer.measure(stop)?;
        let breached = breaches(&report.rows, &thresholds);
        let mut text = String::new();
        if redraw {
            text.push_str("\x1b[H\x1b[2J");
        }
        render(&report, &breached, format, &mut text);
        let sink = match &mut out {
            Some(sink) => sink,
            None => out.insert(LineSink::open(&output)?),
        };
        sink.write_raw(text.as_bytes())?;
        sink.flush()?;
        for b in &breached {
            eprintln!("weir lag: {}", describe_breach(b));
        }
        let Some(every) = watch else {
            return if breached.is_empty() {
                Ok(())
            } else {
                Err(Error::CheckFailed(format!(
                    "{} lag threshold{} exceeded",
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

/// How often a wait looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// The cluster calls on a thread of their own. Each can block for up to `--timeout`, and a
/// signal must not wait for them: the command's thread waits for the answer and watches the
/// stop flag, and on a signal it returns at once, leaving the calls to end with the process.
struct Measurer {
    ask: mpsc::Sender<()>,
    answers: mpsc::Receiver<Result<LagReport>>,
}

impl Measurer {
    fn spawn(
        spec: KafkaSpec,
        client: ClientOptions,
        args: LagArgs,
        pattern: Option<Regex>,
    ) -> Measurer {
        let (ask, asked) = mpsc::channel::<()>();
        let (answer, answers) = mpsc::channel();
        std::thread::spawn(move || {
            let cluster = match Cluster::connect(&spec, &client) {
                Ok(cluster) => cluster,
                Err(e) => {
                    let _ = answer.send(Err(e));
                    return;
                }
            };
            let mut history = History::new(HISTORY_POINTS);
            let mut describe = true;
            while asked.recv().is_ok() {
                let report = measure(
                    &cluster,
                    &spec,
                    &args,
                    pattern.as_ref(),
                    &mut history,
                    &mut describe,
                );
                if answer.send(report).is_err() {
                    return;
                }
            }
        });
        Measurer { ask, answers }
    }

    /// One measurement, or `Interrupted` as soon as a signal comes.
    fn measure(&self, stop: &AtomicBool) -> Result<LagReport> {
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
    if args.all_groups || pattern.is_some() {
        for (g, state) in cluster.groups()? {
            if pattern.is_none_or(|p| p.is_match(&g)) {
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
    for (group, offsets) in groups.iter().zip(&committed) {
        let before = rows.len();
        for (topic, partitions) in &topics {
            let has_commit = partitions.iter().any(|p| {
                offsets
                    .get(&(topic.clone(), *p))
                    .copied()
                    .flatten()
                    .is_some()
            });
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
    })
}
