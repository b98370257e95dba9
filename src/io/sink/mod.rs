//! Sinks: stdout and files (`file`, over `output_file`), Kafka topics (`kafka`) and Kinesis
//! streams (`kinesis`), each a `runtime::Sink`; `LineSink` (`line`) is the one a command
//! holds, opened from a checked `SinkPlan` (`plan`); `table` writes rows of named columns
//! (NDJSON or CSV) into one.

mod file;
mod kafka;
mod kinesis;
mod line;
mod output_file;
mod plan;
mod table;

pub use file::FileSink;
pub use kafka::{KafkaLines, RecordFields};
pub use kinesis::KinesisLines;
pub use line::LineSink;
pub use output_file::OutputFile;
pub use plan::SinkPlan;
pub use table::{CsvRow, TableFormat, TableWriter};
