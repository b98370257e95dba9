//! Integration tests: the built `weir` binary on fixtures and generated data.

mod checkpoint;
mod consume;
mod corpus;
mod dedupe;
mod docs;
mod glue;
mod kafka;
mod kinesis;
mod kinesis_members;
mod kinesis_state;
mod layers;
mod metrics;
mod msk_iam;
mod pipes;
mod profile;
mod repartition;
mod scale;
mod schema;
mod select;
mod signals;
mod usage;
mod window;

#[path = "../support/gen.rs"]
pub mod gen;
#[path = "../support/registry.rs"]
pub mod registry;

use std::path::{Path, PathBuf};

/// The text of output file `name`: decompressed when its name says it is compressed, after
/// checking that it is.
pub fn decompressed(name: &str, bytes: Vec<u8>) -> Vec<u8> {
    use std::io::Read;
    let mut text = Vec::new();
    if name.ends_with(".gz") {
        assert_eq!(bytes[..2], [0x1f, 0x8b], "{name} is not gzip");
        let mut members = flate2::read::MultiGzDecoder::new(&bytes[..]);
        members.read_to_end(&mut text).unwrap();
    } else if name.ends_with(".zst") {
        assert_eq!(bytes[..4], [0x28, 0xb5, 0x2f, 0xfd], "{name} is not zstd");
        text = zstd::stream::decode_all(&bytes[..]).unwrap();
    } else {
        text = bytes;
    }
    text
}

/// How long any weir a test runs may take before the test fails: a run that hangs fails its
/// test, naming it, instead of holding the whole test run until CI's limit.
pub const RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

pub fn weir() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("weir").expect("weir binary");
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd.timeout(RUN_LIMIT);
    cmd
}

pub fn weir_std() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("weir"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// A weir started in the background, killed when the test ends, passed or failed: one left
/// running would hold the test run's output open.
pub struct Background(pub std::process::Child);

impl Background {
    /// Waits for it to end by itself; kills it and fails the test naming `what` when it has
    /// not within `RUN_LIMIT`.
    pub fn wait_within(&mut self, what: &str) -> std::process::ExitStatus {
        self.wait_showing(what, None)
    }

    /// As `wait_within`, failing with the end of its diagnostics, written to `stderr`.
    pub fn wait_showing(&mut self, what: &str, stderr: Option<&Path>) -> std::process::ExitStatus {
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            if started.elapsed() > RUN_LIMIT {
                let _ = self.0.kill();
                let said = stderr.and_then(|p| std::fs::read_to_string(p).ok());
                let said = said.unwrap_or_default();
                let tail = &said[said.len().saturating_sub(4000)..];
                panic!("{what} did not end within {RUN_LIMIT:?}; it said:\n{tail}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Waits until `done` holds, failing the test with `what` after 30 s.
pub fn wait_until(what: &str, done: impl Fn() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

pub fn stdout_lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Writes `n` generated events to a temp file; returns the file and the events.
pub fn generated(n: u64, seed: u64) -> (tempfile::NamedTempFile, Vec<gen::Event>) {
    generated_with(gen::GenConfig {
        events: n,
        seed,
        ..Default::default()
    })
}

pub fn generated_with(cfg: gen::GenConfig) -> (tempfile::NamedTempFile, Vec<gen::Event>) {
    use std::io::Write;
    let events: Vec<_> = gen::Generator::new(cfg).collect();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    let mut buf = Vec::new();
    for e in &events {
        e.write_json(&mut buf);
        buf.push(b'\n');
    }
    file.write_all(&buf).unwrap();
    (file, events)
}

/// A kill drill: starts a run with `spawn` again and again, killing it `kills` times, each a
/// random moment (up to `max_extra` after `progress` has moved on, so that a loaded machine
/// cannot turn the drill into restarts that get nowhere), then lets a run finish. At each
/// kill `after_kill` checks what the killed run left; a finished run's status goes to
/// `finished`, which says whether to start again (a run that could not reach its server,
/// which a restart is for) or that the drill is over. Fails when the drill takes longer than
/// `deadline` or a run finishes before the kills are done.
pub struct KillDrill {
    pub kills: u32,
    pub seed: u64,
    pub max_extra: std::time::Duration,
    pub deadline: std::time::Duration,
}

impl KillDrill {
    pub fn run(
        &self,
        mut spawn: impl FnMut() -> std::process::Child,
        progress: impl Fn() -> u64,
        mut after_kill: impl FnMut(),
        mut finished: impl FnMut(std::process::ExitStatus) -> bool,
    ) {
        use rand::{Rng, SeedableRng};
        use std::time::{Duration, Instant};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        let deadline = Instant::now() + self.deadline;
        let mut kills = 0;
        let mut last = progress();
        loop {
            assert!(Instant::now() < deadline, "no end after {kills} kills");
            let mut child = spawn();
            let extra =
                Duration::from_micros(rng.random_range(0..=self.max_extra.as_micros() as u64));
            let mut progressed: Option<Instant> = None;
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break Some(status);
                }
                if progressed.is_none() && progress() > last {
                    progressed = Some(Instant::now());
                }
                if kills < self.kills && progressed.is_some_and(|at| at.elapsed() >= extra) {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    break None;
                }
                if Instant::now() >= deadline {
                    let _ = child.kill();
                    panic!("a run made no progress after {kills} kills");
                }
                std::thread::sleep(Duration::from_millis(1));
            };
            match status {
                Some(status) => {
                    if finished(status) {
                        continue;
                    }
                    assert_eq!(kills, self.kills, "a run finished before the drill's kills");
                    return;
                }
                None => {
                    kills += 1;
                    let now = progress();
                    assert!(now > last, "a killed run had not moved its progress on");
                    last = now;
                    after_kill();
                }
            }
        }
    }
}
