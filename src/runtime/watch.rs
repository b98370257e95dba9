//! A run that measures and reports instead of reading records (`lag`): once, or again every
//! `--watch`, with the measuring on a thread of its own so that a signal never waits for a
//! slow cluster.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::sink::Sink;
use crate::core::time::Millis;
use crate::error::{Error, Result};

/// How often a wait looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// What a report found: the checks it breached, and what it could not check at all (a
/// group without commits, a pattern matching none), each as stderr says it.
#[derive(Debug, Default)]
pub struct Findings {
    pub breached: Vec<String>,
    pub unchecked: Vec<String>,
}

/// How reports are written: once or every `every`, redrawing a terminal's screen.
pub struct Watch {
    /// The command, as its messages name it.
    pub command: &'static str,
    /// Clears the screen before each report (a terminal, watched).
    pub redraw: bool,
    pub every: Option<Millis>,
    /// Findings go unsaid on stderr (the exit code still says them).
    pub quiet: bool,
}

impl Watch {
    /// Writes what `measure` renders (the report's text and its findings) to the sink `open`
    /// opens before the first report, once or every `every`; at the end of a single run a
    /// breach is exit 1, else nothing to check exit 5. Each finding is said on stderr; a
    /// watch goes on until a signal (exit 130).
    pub fn run(
        self,
        stop: &AtomicBool,
        open: impl FnOnce() -> Result<Box<dyn Sink>>,
        mut measure: impl FnMut() -> Result<(String, Findings)>,
    ) -> Result<()> {
        let mut open = Some(open);
        let mut out: Option<Box<dyn Sink>> = None;
        loop {
            let (report, found) = measure()?;
            let mut text = String::new();
            if self.redraw {
                text.push_str("\x1b[H\x1b[2J");
            }
            text.push_str(&report);
            let sink = match &mut out {
                Some(sink) => sink,
                None => out.insert(open.take().expect("opened once")()?),
            };
            sink.write_raw(text.as_bytes())?;
            match self.every {
                Some(_) => sink.flush()?,
                None => sink.close()?,
            }
            for said in found.breached.iter().chain(&found.unchecked) {
                if !self.quiet {
                    eprintln!("weir {}: {said}", self.command);
                }
            }
            let Some(every) = self.every else {
                return self.verdict(&found);
            };
            wait(stop, Duration::from_millis(every as u64))?;
        }
    }

    /// A single run's result: a failed check is exit 1; else nothing to check, exit 5.
    fn verdict(&self, found: &Findings) -> Result<()> {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match (found.breached.len(), found.unchecked.len()) {
            (0, 0) => Ok(()),
            (0, n) => Err(Error::NothingToCheck(format!(
                "{n} {} check{} found nothing to check",
                self.command,
                plural(n)
            ))),
            (n, _) => Err(Error::CheckFailed(format!(
                "{n} {} check{} failed",
                self.command,
                plural(n)
            ))),
        }
    }
}

/// Waits `long`, or until a signal comes.
fn wait(stop: &AtomicBool, long: Duration) -> Result<()> {
    let until = Instant::now() + long;
    while Instant::now() < until {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        std::thread::sleep(STOP_CHECK);
    }
    Ok(())
}

/// A measurement, made on a thread of its own.
pub type Measure<R> = Box<dyn FnMut() -> Result<R>>;

/// The cluster (or stream) calls on a thread of their own. Each can block for up to
/// `--timeout`, and a signal must not wait for them: the command's thread waits for the
/// answer and watches the stop flag, and on a signal it returns at once, leaving the calls
/// to end with the process.
pub struct Measurer<R> {
    ask: mpsc::Sender<()>,
    answers: mpsc::Receiver<Result<R>>,
}

impl<R: Send + 'static> Measurer<R> {
    /// Starts the thread: `connect` makes the measurement there (connecting first). A
    /// connection that fails is that measurement's answer, and the next one connects again:
    /// an exporter (`lag --serve`) outlives a cluster's outage.
    pub fn spawn(mut connect: impl FnMut() -> Result<Measure<R>> + Send + 'static) -> Measurer<R> {
        let (ask, asked) = mpsc::channel::<()>();
        let (answer, answers) = mpsc::channel();
        std::thread::spawn(move || {
            let mut connected: Option<Measure<R>> = None;
            while asked.recv().is_ok() {
                let measured = match &mut connected {
                    Some(measure) => measure(),
                    None => connect().and_then(|m| connected.insert(m)()),
                };
                if answer.send(measured).is_err() {
                    return;
                }
            }
        });
        Measurer { ask, answers }
    }

    /// One measurement, or `Interrupted` as soon as a signal comes.
    pub fn measure(&self, stop: &AtomicBool) -> Result<R> {
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
