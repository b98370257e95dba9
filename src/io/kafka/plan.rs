//! The rules of a Kafka read, checked before any client is made: where each partition
//! starts and ends, and how a consumer group takes part.

use crate::core::time::{check_range_order, LogPosition, Millis};
use crate::error::{Error, Result};
use crate::io::spec::KafkaSpec;

/// A Kafka read as the command line asks for it.
#[derive(Clone, Debug, Default)]
pub struct ReadRequest {
    pub partitions: Vec<i32>,
    pub group: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub exit_at_end: bool,
}

/// A Kafka read whose every rule holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadPlan {
    pub topic: String,
    pub from: LogPosition,
    /// The exclusive end; `None` reads on.
    pub to: Option<LogPosition>,
    pub group: Option<String>,
    /// Only these partitions (all when empty).
    pub partitions: Vec<i32>,
    /// weir joins the group as a member and the group shares the partitions out (a group
    /// without explicit partitions, as kcat -G).
    pub balanced: bool,
    /// Where a group member starts on a partition the group has no offset for.
    pub reset: Option<&'static str>,
    /// The read stops once every partition reaches its end.
    pub bounded: bool,
    /// -e: a partition is done at the end it reaches, even before its snapshot end.
    pub exit_at_end: bool,
    /// A group member that keeps state per partition saves it here (set by the command).
    pub changelog: Option<ChangelogPlan>,
}

/// Where a group member keeps its partitions' states: the changelog topic, and the job its
/// records are marked with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangelogPlan {
    pub topic: String,
    pub job: String,
}

impl ReadPlan {
    /// Checks `request` against the rules; relative times are resolved against `now`.
    pub fn new(spec: &KafkaSpec, request: &ReadRequest, now: Millis) -> Result<ReadPlan> {
        let topic = spec.topic.clone().ok_or_else(|| {
            Error::Usage("a Kafka source needs a topic: kafka://HOST:PORT/TOPIC".into())
        })?;
        let group = request.group.clone();
        let parse = |flag: &str, text: &str| {
            LogPosition::parse(text, now).map_err(|e| Error::Usage(format!("{flag}: {e}")))
        };
        let from = match &request.from {
            Some(text) => parse("--from", text)?,
            None if group.is_some() => LogPosition::Stored,
            None => LogPosition::Beginning,
        };
        if from == LogPosition::Stored && group.is_none() {
            return Err(Error::Usage("--from stored needs --group".into()));
        }
        let to = match &request.to {
            Some(text) => Some(parse("--to", text)?),
            None if request.exit_at_end => Some(LogPosition::End),
            None => None,
        };
        if let (Some(from_text), Some(to_text), Some(to)) = (&request.from, &request.to, &to) {
            check_range_order((&from, from_text), (to, to_text)).map_err(Error::Usage)?;
        }
        if to == Some(LogPosition::Stored) {
            return Err(Error::Usage(
                "--to stored is not an end position: give an offset, -N, a time or end".into(),
            ));
        }
        let balanced = group.is_some() && request.partitions.is_empty();
        let reset = match (&from, balanced) {
            (_, false) | (LogPosition::Stored, true) => None,
            (LogPosition::Beginning, true) => Some("earliest"),
            (LogPosition::End, true) => Some("latest"),
            (_, true) => {
                return Err(Error::Usage(
                    "with --group each partition starts where the group left off (--from beginning or end only say where it has no offset yet); read from explicit positions with --partitions".into(),
                ))
            }
        };
        if balanced && !matches!(to, None | Some(LogPosition::End)) {
            return Err(Error::Usage(
                "with --group, end with -e; --to positions need --partitions".into(),
            ));
        }
        let mut partitions = request.partitions.clone();
        partitions.sort_unstable();
        partitions.dedup();
        if let Some(p) = partitions.iter().find(|p| **p < 0) {
            return Err(Error::Usage(format!(
                "--partitions: {p} is not a partition"
            )));
        }
        Ok(ReadPlan {
            topic,
            from,
            bounded: request.exit_at_end || request.to.is_some(),
            to,
            group,
            partitions,
            balanced,
            reset,
            exit_at_end: request.exit_at_end,
            changelog: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 1_000_000_000;

    fn spec() -> KafkaSpec {
        crate::io::spec::parse_kafka_cluster("kafka://127.0.0.1:1/t").unwrap()
    }

    fn plan(
        group: Option<&str>,
        partitions: &[i32],
        from: Option<&str>,
        to: Option<&str>,
        e: bool,
    ) -> Result<ReadPlan> {
        let request = ReadRequest {
            partitions: partitions.to_vec(),
            group: group.map(str::to_string),
            from: from.map(str::to_string),
            to: to.map(str::to_string),
            exit_at_end: e,
        };
        ReadPlan::new(&spec(), &request, NOW)
    }

    fn usage(r: Result<ReadPlan>) -> String {
        match r {
            Err(Error::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        let p = plan(None, &[], None, None, false).unwrap();
        assert_eq!(
            (p.from, p.to, p.bounded, p.balanced),
            (LogPosition::Beginning, None, false, false)
        );
        let p = plan(Some("g"), &[], None, None, true).unwrap();
        assert_eq!(p.from, LogPosition::Stored);
        assert_eq!(p.to, Some(LogPosition::End));
        assert!(p.balanced && p.bounded && p.exit_at_end);
        assert_eq!(p.reset, None);
        assert_eq!(p.topic, "t");
    }

    #[test]
    fn group_members_start_where_the_group_left_off() {
        assert_eq!(
            plan(Some("g"), &[], Some("beginning"), None, false)
                .unwrap()
                .reset,
            Some("earliest")
        );
        assert_eq!(
            plan(Some("g"), &[], Some("end"), None, false)
                .unwrap()
                .reset,
            Some("latest")
        );
        assert!(usage(plan(Some("g"), &[], Some("-1h"), None, false)).contains("--partitions"));
        assert!(usage(plan(Some("g"), &[], Some("42"), None, false)).contains("--partitions"));
        assert!(usage(plan(Some("g"), &[], None, Some("100"), false)).contains("end with -e"));
        // With explicit partitions, a group commits for positions of any kind.
        let p = plan(Some("g"), &[2, 0, 2], Some("42"), Some("100"), false).unwrap();
        assert!(!p.balanced);
        assert_eq!(p.partitions, vec![0, 2]);
        assert_eq!(
            (p.from, p.to),
            (LogPosition::Offset(42), Some(LogPosition::Offset(100)))
        );
    }

    #[test]
    fn a_range_that_runs_backwards_is_refused() {
        for (from, to) in [
            ("100", "42"),
            ("-5", "-10"),
            ("-1m", "-2m"),
            ("end", "beginning"),
            ("5", "beginning"),
        ] {
            let message = usage(plan(None, &[0], Some(from), Some(to), false));
            assert!(
                message.contains(&format!("--from {from} comes after --to {to}")),
                "{message}"
            );
        }
        // Equal bounds read nothing, as a script computing them may ask; kinds that differ
        // compare only against the log.
        for (from, to) in [("42", "42"), ("-5", "-5"), ("100", "-5"), ("end", "42")] {
            assert!(
                plan(None, &[0], Some(from), Some(to), false).is_ok(),
                "{from} {to}"
            );
        }
    }

    #[test]
    fn stored_positions_need_a_group() {
        assert!(usage(plan(None, &[], Some("stored"), None, false)).contains("needs --group"));
        assert!(usage(plan(Some("g"), &[0], None, Some("stored"), false)).contains("not an end"));
    }

    #[test]
    fn positions_are_parsed_here() {
        assert!(usage(plan(None, &[], Some("yesterday"), None, false)).starts_with("--from"));
        assert!(usage(plan(None, &[], None, Some("soon"), false)).starts_with("--to"));
        let p = plan(None, &[], Some("-1s"), Some("-5"), false).unwrap();
        assert_eq!(p.from, LogPosition::Time(NOW - 1000));
        assert_eq!(p.to, Some(LogPosition::FromEnd(5)));
        assert!(p.bounded);
        assert!(usage(plan(None, &[-1], None, None, false)).contains("not a partition"));
    }
}
