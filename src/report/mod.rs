//! How the commands that report (`lag`, `watermark-profile`) show what they measured: the
//! core's results rendered into text, tables, JSON, Prometheus and SVG (and a profile's
//! report written where it goes, `profile::ReportOut`); and a run's metrics in Prometheus's
//! formats (`--metrics`).

pub mod lag;
pub mod metrics;
pub mod profile;
