//! The reader and scanner over arbitrary bytes, read in arbitrary pieces: no panic, every
//! line accounted for, and the same records and counts whatever the split.
#![no_main]

use std::io::Read;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use weir::core::record::{Extractor, FieldPath};
use weir::error::{Fault, Result};
use weir::io::ndjson::StreamSource;
use weir::runtime::{
    drive, Counters, Drive, ErrorPolicy, Flow, Line, OnError, Prepare, Reader,
    RecordStep,
};

/// A reader that returns `data` in pieces whose sizes come from `sizes`.
struct Pieces {
    data: Vec<u8>,
    at: usize,
    sizes: Vec<u8>,
    next: usize,
}

impl Read for Pieces {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let size = match self.sizes.is_empty() {
            true => usize::MAX,
            false => self.sizes[self.next % self.sizes.len()] as usize * 7 + 1,
        };
        self.next += 1;
        let n = size.min(buf.len()).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[derive(Default)]
struct Collect(Vec<(u64, Vec<u8>, Vec<Option<String>>)>);

impl RecordStep for Collect {
    fn record(&mut self, line: &Line<'_>, _: &mut Counters) -> Result<Flow, Fault> {
        let fields = (0..2).map(|i| line.field(i).map(str::to_string)).collect();
        self.0.push((line.number, line.bytes.to_vec(), fields));
        Ok(Flow::Continue)
    }
    fn idle(&mut self) -> Result<()> {
        Ok(())
    }
}

type Outcome = (Vec<(u64, Vec<u8>, Vec<Option<String>>)>, [u64; 3], bool);

fn run(data: &[u8], sizes: Vec<u8>, max_line: usize, extract: bool) -> Outcome {
    let prepare = if extract {
        let paths: Vec<FieldPath> = ["a", "b.c"].iter().map(|p| p.parse().unwrap()).collect();
        Prepare::Extract(Arc::new(Extractor::new(paths)))
    } else {
        Prepare::Validate
    };
    let reader = Pieces {
        data: data.to_vec(),
        at: 0,
        sizes,
        next: 0,
    };
    let source = StreamSource::new("fuzz", Box::new(reader));
    let reader = Reader::spawn(Box::new(source), prepare, max_line);
    let mut counters = Counters::default();
    let mut policy = ErrorPolicy::new(OnError::Skip, None);
    let mut step = Collect::default();
    let stop = AtomicBool::new(false);
    let result = drive(
        reader,
        Drive {
            counters: &mut counters,
            policy: &mut policy,
            stop: &stop,
            select: None,
        },
        &mut step,
    );
    (
        step.0,
        [counters.read, counters.bad, counters.blank_lines],
        result.is_ok(),
    )
}

fuzz_target!(|input: &[u8]| {
    let Some((&head, rest)) = input.split_first() else {
        return;
    };
    let split = rest.len().min(8);
    let (sizes, data) = rest.split_at(split);
    let max_line = 8 + (head as usize >> 1) * 16;
    let extract = head & 1 == 1;
    let whole = run(data, Vec::new(), max_line, extract);
    let pieces = run(data, sizes.to_vec(), max_line, extract);
    let compressed =
        data.starts_with(&[0x1f, 0x8b]) || data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]);
    if compressed && !whole.2 {
        // A damaged compressed stream: a decoder drops what it decoded in the read that meets
        // the damage, and how much that is depends on how the bytes arrived. Both reads fail,
        // and the records before the failure agree as far as both go.
        assert!(!pieces.2, "the split changed the outcome");
        let common = whole.0.len().min(pieces.0.len());
        assert_eq!(whole.0[..common], pieces.0[..common], "the split changed a record");
        return;
    }
    assert_eq!(whole, pieces, "the split changed the outcome");
    let (records, [read, bad, blank], ok) = whole;
    if ok && !compressed {
        // Every line is a record, a bad record or a blank line (of the input as it is: a
        // compressed one's lines are counted after decoding).
        let newlines = data.iter().filter(|b| **b == b'\n').count();
        let lines = newlines + usize::from(!data.is_empty() && !data.ends_with(b"\n"));
        assert_eq!(read + blank, lines as u64);
        assert_eq!(records.len() as u64, read - bad);
    }
});
