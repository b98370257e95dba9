//! `weir lag`: per group, topic and partition, the committed offset, the log end, the lag in
//! messages and in time; totals; thresholds that set the exit code; several output formats.
//! For a Kinesis stream: per shard, a weir checkpoint's or a KCL application's position,
//! the time lag, MillisBehindLatest and the lease owner.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::plan;
use crate::cli::LagArgs;
use crate::core::lag::{History, Thresholds};
use crate::core::time::{now_millis, Millis};
use crate::error::{Error, Result};
use crate::io::kafka::lag::GroupsQuery;
use crate::io::kafka::{ClientOptions, Cluster};
use crate::io::kinesis::{self, lag::ShardLags, AwsOptions};
use crate::io::metrics::Endpoint;
use crate::io::sink::{LineSink, SinkPlan};
use crate::io::spec::{
    is_kinesis, parse_kafka_cluster, parse_kinesis_stream, KafkaSpec, KinesisSpec, SinkSpec,
};
use crate::report::lag::{
    rendered, rendered_shards, LagFormat, LagReport, LagTimeMode, ShardLagReport,
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
    query: GroupsQuery,
    thresholds: Thresholds,
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
        Ok(KafkaLag {
            client: plan::clients(&args.client).kafka()?,
            query: GroupsQuery {
                topic: spec.topic.clone(),
                groups: args.groups,
                all_groups: args.all_groups,
                pattern: args.group_pattern,
                time_mode: args.time_mode,
            },
            thresholds: Thresholds {
                max_time_ms: args.max_lag,
                max_messages: args.max_messages,
                scope: args.per,
            },
            format: args.format,
            spec,
        })
    }

    fn run(self, reports: Reports, stop: &AtomicBool) -> Result<()> {
        let (thresholds, format) = (self.thresholds, self.format);
        let topic = self.spec.topic.clone();
        let lag = Arc::new(self);
        let measurer = Measurer::spawn(move || {
            let cluster = Cluster::connect(&lag.spec, &lag.client)?;
            let mut history = History::new(HISTORY_POINTS);
            let mut describe = true;
            let lag = lag.clone();
            Ok(Box::new(move || {
                let m = (lag.query).measure(&cluster, &mut history, &mut describe)?;
                Ok(LagReport::of(m, now_millis(), lag.query.time_mode))
            }))
        });
        reports.run(stop, || {
            let report = measurer.measure(stop)?;
            Ok(rendered(&report, &thresholds, topic.as_deref(), format))
        })
    }
}

impl KinesisLag {
    fn new(args: LagArgs) -> Result<KinesisLag> {
        let spec = parse_kinesis_stream(&args.cluster).map_err(Error::Usage)?;
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
            let endpoint = self.dynamo_endpoint.as_deref();
            let lags = ShardLags::connect(&self.spec, &self.options, &self.consumer, endpoint)?;
            Ok(Box::new(move || {
                let rows = lags.measure()?;
                Ok(ShardLagReport {
                    at: now_millis(),
                    rows,
                })
            }))
        });
        reports.run(stop, || {
            let report = measurer.measure(stop)?;
            Ok(rendered_shards(&report, max_lag, format))
        })
    }
}
