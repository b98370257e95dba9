//! The cost of a checkpoint: writing and restoring one of 1 million open windows and one of
//! 10 million remembered dedupe ids, through the code a command runs (the operator's state,
//! its encoding, the checkpoint file written atomically and read back, the operator rebuilt).
//!
//! Run: `cargo bench --bench checkpoint` (or `WHAT=checkpoint scripts/bench.sh`).
//! Targets: at most 2 s for each write and each restore, and at most 32 bytes of checkpoint
//! file per remembered id.

use std::time::Instant;

use weir::core::aggregate::{prepare, AggInput, AggKind, AggSpec};
use weir::core::dedupe::{hash_id, Deduper, IdHash};
use weir::core::saved;
use weir::core::watermark::Watermarks;
use weir::core::window::{EmitMode, WindowConfig, WindowKind, WindowOperator};
use weir::runtime::checkpoint::file::{
    Checkpoint, CheckpointFile, Loaded, PartitionCheckpoint, PartitionId, Resume,
};

const WINDOWS: usize = 1_000_000;
const IDS: u64 = 10_000_000;

fn checkpoint_of(command: &str, state: Vec<u8>) -> Checkpoint {
    Checkpoint {
        weir: env!("CARGO_PKG_VERSION").into(),
        command: command.into(),
        job: "bench".into(),
        args: Vec::new(),
        taken_at_ms: 0,
        partitions: vec![PartitionCheckpoint {
            partition: PartitionId::File {
                index: 0,
                path: "in.ndjson".into(),
            },
            resume: Resume::File { offset: 0, line: 1 },
            state,
        }],
        shared: b"{}".to_vec(),
        sinks: Vec::new(),
    }
}

fn read_state(file: &mut CheckpointFile) -> Vec<u8> {
    match file.read().expect("the checkpoint reads") {
        Loaded::Current(mut c) => std::mem::take(&mut c.partitions[0].state),
        _ => panic!("no current checkpoint"),
    }
}

fn report(what: &str, write: f64, restore: f64, bytes: u64, items: u64) {
    println!(
        "{what:<34} write {write:6.3} s   restore {restore:6.3} s   file {:7.1} MB   {:5.1} B per item",
        bytes as f64 / 1e6,
        bytes as f64 / items as f64
    );
    for (label, secs) in [("write", write), ("restore", restore)] {
        let verdict = if secs <= 2.0 { "PASS" } else { "MISS" };
        println!("  {verdict}  {what} {label}: {secs:.3} s (target <= 2)");
    }
}

fn windows(dir: &std::path::Path) {
    let cfg = WindowConfig {
        kind: WindowKind::Tumbling {
            size: 3_600_000,
            offset: 0,
        },
        allowed_lateness: 0,
        emit: EmitMode::Final,
        aggs: vec![
            AggSpec {
                kind: AggKind::Count,
                field: None,
                name: "count".into(),
            },
            AggSpec {
                kind: AggKind::Sum,
                field: Some(0),
                name: "sum_amount".into(),
            },
        ],
        max_open_windows: WINDOWS * 2,
    };
    let mut op = WindowOperator::new(cfg.clone(), Watermarks::new(600_000, None));
    let mut rows = Vec::new();
    for i in 0..WINDOWS {
        let key = format!("\"merchant-{i}\"");
        let amount = format!("{}.{:02}", i % 1000, i % 100);
        let inputs = [
            AggInput::Missing,
            prepare(&AggKind::Sum, Some(&amount)).unwrap(),
        ];
        op.process(&key, (i % 1000) as i64, 0, &inputs, 0, &mut rows)
            .unwrap();
    }
    assert_eq!(op.open_windows(), WINDOWS);
    let mut file = CheckpointFile::new(&dir.join("window.ckpt"));
    let started = Instant::now();
    file.write(&checkpoint_of("window", saved::encode(&op.state())))
        .unwrap();
    let write = started.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(dir.join("window.ckpt")).unwrap().len();
    drop(op);
    let started = Instant::now();
    let restored =
        WindowOperator::restore(cfg, saved::decode(&read_state(&mut file)).unwrap()).unwrap();
    let restore = started.elapsed().as_secs_f64();
    assert_eq!(restored.open_windows(), WINDOWS);
    report(
        "1M open windows (count, sum)",
        write,
        restore,
        bytes,
        WINDOWS as u64,
    );
}

fn ids(dir: &std::path::Path) {
    let mut d: Deduper<IdHash> = Deduper::new(Some(3_600_000), usize::MAX);
    for i in 0..IDS {
        let id = format!("u-{i}");
        d.check(
            &hash_id(id.as_bytes()),
            1_767_225_600_000 + i as i64 / 1000,
            0,
        );
    }
    assert_eq!(d.remembered() as u64, IDS);
    let mut file = CheckpointFile::new(&dir.join("dedupe.ckpt"));
    let started = Instant::now();
    file.write(&checkpoint_of("dedupe", saved::encode(&d.state())))
        .unwrap();
    let write = started.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(dir.join("dedupe.ckpt")).unwrap().len();
    drop(d);
    let started = Instant::now();
    let mut restored: Deduper<IdHash> = Deduper::new(Some(3_600_000), usize::MAX);
    restored
        .restore(saved::decode(&read_state(&mut file)).unwrap())
        .unwrap();
    let restore = started.elapsed().as_secs_f64();
    assert_eq!(restored.remembered() as u64, IDS);
    report("10M remembered dedupe ids", write, restore, bytes, IDS);
    let per_id = bytes as f64 / IDS as f64;
    let verdict = if per_id <= 32.0 { "PASS" } else { "MISS" };
    println!("  {verdict}  checkpoint bytes per remembered id: {per_id:.1} (target <= 32)");
}

fn main() {
    // `cargo bench` passes --bench; nothing else is taken.
    let dir = tempfile::tempdir_in(".").expect("a scratch directory here");
    windows(dir.path());
    ids(dir.path());
}
