//! How the commands that report (`lag`, `watermark-profile`) show what they measured: pure
//! rendering of the core's results into text, tables, JSON, Prometheus and SVG.

pub mod lag;
pub mod profile;
