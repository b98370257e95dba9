//! How the commands that report (`lag`, `watermark-profile`) show what they measured: pure
//! rendering of the core's results into text, tables, JSON, Prometheus and SVG; and a run's
//! metrics in Prometheus's formats (`--metrics`).

pub mod lag;
pub mod metrics;
pub mod profile;
