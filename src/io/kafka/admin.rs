//! Read-only questions to a Kafka cluster, for `weir lag`: topics, groups, log and committed
//! offsets, and the timestamps of records at given offsets. Two admin requests that rdkafka
//! does not wrap (ListConsumerGroups, ListConsumerGroupOffsets) are made through
//! librdkafka's C API here, and only here.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message as _;
use rdkafka::{Offset, TopicPartitionList};

use super::client::{reach, scrub, topic_error, unreachable, Reporter};
use super::config::ClientOptions;
use crate::core::time::Millis;
use crate::error::{Error, Result};
use crate::io::spec::KafkaSpec;

/// Offsets of one partition at most this far apart are read in one pass rather than by a
/// fetch each.
const SCAN_GAP: i64 = 5_000;

/// One pass over a partition: start at the first offset, read until past the last.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    topic: String,
    partition: i32,
    offsets: Vec<i64>,
}

/// Groups the wanted offsets into passes (runs of offsets at most `gap` apart) and the passes
/// into rounds: one topic per round (an end-of-partition event names only the partition),
/// each partition at most once.
fn plan_reads(wanted: &[(String, i32, i64)], gap: i64) -> Vec<Vec<Run>> {
    let mut by_partition: std::collections::BTreeMap<(&str, i32), Vec<i64>> = Default::default();
    for (t, p, o) in wanted {
        by_partition.entry((t.as_str(), *p)).or_default().push(*o);
    }
    let mut rounds: Vec<Vec<Run>> = Vec::new();
    for ((topic, partition), mut offsets) in by_partition {
        offsets.sort_unstable();
        offsets.dedup();
        let mut runs: Vec<Vec<i64>> = Vec::new();
        for o in offsets {
            match runs.last_mut() {
                Some(run) if o - run.last().expect("runs are not empty") <= gap => run.push(o),
                _ => runs.push(vec![o]),
            }
        }
        for offsets in runs {
            let run = Run {
                topic: topic.to_string(),
                partition,
                offsets,
            };
            match rounds
                .iter_mut()
                .find(|r| r[0].topic == run.topic && !r.iter().any(|x| x.partition == partition))
            {
                Some(round) => round.push(run),
                None => rounds.push(vec![run]),
            }
        }
    }
    rounds
}

/// A group's committed offset per (topic, partition); `None` where it has none.
pub type Committed = HashMap<(String, i32), Option<i64>>;

/// ListConsumerGroupOffsets requests sent at once.
const GROUPS_IN_FLIGHT: usize = 64;

/// (topic, partition, asked offset) → (offset found, its timestamp).
pub type FirstRecords = HashMap<(String, i32, i64), (i64, Millis)>;

/// Read-only questions to a cluster, for `weir lag`: topics, groups, offsets, and the
/// timestamps of records at given offsets.
pub struct Cluster {
    spec: KafkaSpec,
    config: ClientConfig,
    /// The options the clients are made with (MSK IAM's token source among them).
    options: ClientOptions,
    timeout: Duration,
    /// For metadata and log offsets.
    probe: BaseConsumer<Reporter>,
}

/// A group as the broker describes it; `None` fields (and no owners) where it would not say.
#[derive(Clone, Debug, Default)]
pub struct GroupDescription {
    pub state: Option<String>,
    pub members: Option<usize>,
    /// The member each (topic, partition) is assigned to.
    pub owners: BTreeMap<(String, i32), Owner>,
}

/// A group member, as `kafka-consumer-groups.sh --describe` names it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Owner {
    pub member_id: String,
    pub client_id: String,
    pub host: String,
}

/// The (topic, partition) pairs of a consumer-protocol member assignment: a version (int16),
/// an array (int32 count) of topics (int16-length string) each with an array of int32
/// partitions, then user data. `None` for bytes that are not one.
pub fn assigned_partitions(bytes: &[u8]) -> Option<Vec<(String, i32)>> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (b.get(..n)?, b.get(n..)?);
        *b = rest;
        Some(head)
    }
    fn int(b: &mut &[u8], n: usize) -> Option<i64> {
        let bytes = take(b, n)?;
        Some(match n {
            2 => i16::from_be_bytes(bytes.try_into().ok()?) as i64,
            _ => i32::from_be_bytes(bytes.try_into().ok()?) as i64,
        })
    }
    let mut b = bytes;
    let _version = int(&mut b, 2)?;
    let topics = int(&mut b, 4)?;
    let mut out = Vec::new();
    for _ in 0..topics.max(0) {
        let len = usize::try_from(int(&mut b, 2)?).ok()?;
        let topic = std::str::from_utf8(take(&mut b, len)?).ok()?.to_string();
        let partitions = int(&mut b, 4)?;
        for _ in 0..partitions.max(0) {
            out.push((topic.clone(), int(&mut b, 4)? as i32));
        }
    }
    Some(out)
}

impl Cluster {
    pub fn connect(spec: &KafkaSpec, client: &ClientOptions) -> Result<Cluster> {
        let timeout = client.timeout;
        let mut config = client.config(spec);
        config.set("enable.auto.commit", "false");
        config.set("enable.partition.eof", "true");
        config.set("auto.offset.reset", "earliest");
        let mut probe_config = config.clone();
        probe_config.set("group.id", "weir-lag");
        let probe: BaseConsumer<Reporter> = probe_config
            .create_with_context(Reporter::for_client(client, spec)?)
            .map_err(|e| Error::Usage(format!("Kafka client configuration: {}", scrub(&e))))?;
        // One metadata round trip proves the cluster is there.
        reach(
            probe.client(),
            &|| drop(probe.poll(Duration::from_millis(100))),
            None,
            timeout,
            spec,
        )?;
        Ok(Cluster {
            spec: spec.clone(),
            config,
            options: client.clone(),
            timeout,
            probe,
        })
    }

    /// Topics and their partitions; internal topics (`__...`) left out unless named.
    pub fn topics(&self, only: Option<&str>) -> Result<Vec<(String, Vec<i32>)>> {
        let metadata = self
            .probe
            .fetch_metadata(only, self.timeout)
            .map_err(|e| unreachable("cannot read metadata from", &self.spec, e))?;
        let mut out = Vec::new();
        for t in metadata.topics() {
            if only.is_none() && t.name().starts_with("__") {
                continue;
            }
            if let Some(err) = t.error() {
                return Err(topic_error(&self.spec, t.name(), Some(err.into()), false));
            }
            let mut partitions: Vec<i32> = t.partitions().iter().map(|p| p.id()).collect();
            partitions.sort_unstable();
            out.push((t.name().to_string(), partitions));
        }
        out.sort();
        Ok(out)
    }

    /// The consumer groups the cluster lists, with their states where it gives them.
    ///
    /// This sends ListGroups alone, through librdkafka's admin API, which rdkafka does not
    /// wrap: rdkafka's `fetch_group_list` also sends DescribeGroups, which some brokers
    /// (Tansu) answer by closing the connection.
    pub fn groups(&self) -> Result<Vec<(String, Option<String>)>> {
        list_groups(&self.probe, self.timeout).map_err(|e| {
            Error::Unreachable(format!(
                "cannot list groups at {}: {e}",
                self.spec.bootstrap_servers()
            ))
        })
    }

    /// State and member count of a group, where the broker answers DescribeGroups.
    pub fn describe(&self, group: &str) -> GroupDescription {
        match self
            .probe
            .fetch_group_list(Some(group), self.timeout.min(Duration::from_secs(3)))
        {
            Ok(list) => match list.groups().iter().find(|g| g.name() == group) {
                Some(g) => GroupDescription {
                    state: Some(g.state().to_string()).filter(|s| !s.is_empty()),
                    members: Some(g.members().len()),
                    owners: g
                        .members()
                        .iter()
                        .filter(|_| g.protocol_type() == "consumer")
                        .flat_map(|m| {
                            let owner = Owner {
                                member_id: m.id().to_string(),
                                client_id: m.client_id().to_string(),
                                host: m.client_host().to_string(),
                            };
                            let partitions = m
                                .assignment()
                                .and_then(assigned_partitions)
                                .unwrap_or_default();
                            partitions.into_iter().map(move |tp| (tp, owner.clone()))
                        })
                        .collect(),
                },
                None => GroupDescription::default(),
            },
            Err(_) => GroupDescription::default(),
        }
    }

    /// (log start, log end) of every partition, in one ListOffsets round per end.
    pub fn log_offsets(
        &self,
        topics: &[(String, Vec<i32>)],
    ) -> Result<HashMap<(String, i32), (i64, i64)>> {
        let ask = |which: Offset| -> Result<HashMap<(String, i32), i64>> {
            let mut tpl = TopicPartitionList::new();
            for (topic, partitions) in topics {
                for &p in partitions {
                    tpl.add_partition_offset(topic, p, which)
                        .map_err(|e| Error::Usage(format!("{topic}/{p}: {e}")))?;
                }
            }
            let found = self
                .probe
                .offsets_for_times(tpl, self.timeout)
                .map_err(|e| unreachable("cannot read log offsets from", &self.spec, e))?;
            let mut out = HashMap::new();
            for e in found.elements() {
                if let Offset::Offset(n) = e.offset() {
                    out.insert((e.topic().to_string(), e.partition()), n);
                }
            }
            drop(found);
            Ok(out)
        };
        let starts = ask(Offset::Beginning)?;
        let ends = ask(Offset::End)?;
        let mut out = HashMap::new();
        for (topic, partitions) in topics {
            for &p in partitions {
                let key = (topic.clone(), p);
                // Fall back to a per-partition query where the batched one gave nothing.
                let (start, end) = match (starts.get(&key), ends.get(&key)) {
                    (Some(&s), Some(&e)) => (s, e),
                    _ => self
                        .probe
                        .fetch_watermarks(topic, p, self.timeout)
                        .map_err(|e| unreachable("cannot read log offsets from", &self.spec, e))?,
                };
                out.insert(key, (start, end));
            }
        }
        Ok(out)
    }

    /// Each group's committed offsets for these partitions (`None` where it has none),
    /// asked with ListConsumerGroupOffsets: every group's request on one client at once.
    pub fn committed(
        &self,
        groups: &[String],
        topics: &[(String, Vec<i32>)],
    ) -> Result<Vec<Committed>> {
        let mut tpl = TopicPartitionList::new();
        for (topic, partitions) in topics {
            for &p in partitions {
                tpl.add_partition(topic, p);
            }
        }
        let mut out = Vec::with_capacity(groups.len());
        for batch in groups.chunks(GROUPS_IN_FLIGHT) {
            let mut answers =
                list_group_offsets(&self.probe, batch, &tpl, self.timeout).map_err(|e| {
                    Error::Unreachable(format!(
                        "cannot read committed offsets from {}: {e}",
                        self.spec.bootstrap_servers()
                    ))
                })?;
            for g in batch {
                out.push(answers.remove(g).unwrap_or_default());
            }
        }
        drop(tpl);
        Ok(out)
    }

    /// The first record at or after each (topic, partition, offset): its offset and timestamp.
    /// Where the offset is gone (retention), the earliest record stands in; where there is no
    /// record by the deadline, none.
    ///
    /// Offsets of one partition that lie close together are read in one pass (a scan from the
    /// first to the last); the passes of a topic's partitions run together, one fetch session
    /// for all of them.
    pub fn first_records(&self, wanted: &[(String, i32, i64)]) -> Result<FirstRecords> {
        let mut out = HashMap::new();
        let rounds = plan_reads(wanted, SCAN_GAP);
        if rounds.is_empty() {
            return Ok(out);
        }
        let mut config = self.config.clone();
        config.set("group.id", "weir-lag");
        config.set("fetch.max.bytes", "8388608");
        config.set("max.partition.fetch.bytes", "262144");
        config.set("queued.max.messages.kbytes", "8192");
        let consumer: BaseConsumer<Reporter> = config
            .create_with_context(Reporter::for_client(&self.options, &self.spec)?)
            .map_err(|e| Error::Usage(format!("Kafka client configuration: {}", scrub(&e))))?;
        super::client::prime_token(consumer.client())?;
        let deadline = Instant::now() + self.timeout;
        for round in rounds {
            let mut tpl = TopicPartitionList::new();
            for run in &round {
                tpl.add_partition_offset(&run.topic, run.partition, Offset::Offset(run.offsets[0]))
                    .map_err(|e| Error::Usage(format!("{}/{}: {e}", run.topic, run.partition)))?;
            }
            consumer
                .assign(&tpl)
                .map_err(|e| unreachable("cannot read from", &self.spec, e))?;
            drop(tpl);
            // Per partition: the offsets still waiting for a record, in order.
            let mut pending: HashMap<i32, (String, std::collections::VecDeque<i64>)> = round
                .into_iter()
                .map(|r| (r.partition, (r.topic, r.offsets.into_iter().collect())))
                .collect();
            while !pending.is_empty() && Instant::now() < deadline {
                match consumer.poll(Duration::from_millis(100)) {
                    None => {}
                    Some(Err(KafkaError::PartitionEOF(p))) => {
                        pending.remove(&p);
                    }
                    Some(Err(_)) => {}
                    Some(Ok(m)) => {
                        let p = m.partition();
                        let Some((topic, offsets)) = pending.get_mut(&p) else {
                            continue;
                        };
                        while offsets.front().is_some_and(|&o| o <= m.offset()) {
                            let asked = offsets.pop_front().expect("checked");
                            if let Some(ts) = m.timestamp().to_millis() {
                                out.insert((topic.clone(), p, asked), (m.offset(), ts));
                            }
                        }
                        if offsets.is_empty() {
                            let mut stop = TopicPartitionList::new();
                            stop.add_partition(topic, p);
                            let _ = consumer.pause(&stop);
                            drop(stop);
                            pending.remove(&p);
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A librdkafka admin request's queue and options, destroyed together.
struct AdminCall {
    queue: *mut rdkafka::bindings::rd_kafka_queue_t,
    options: *mut rdkafka::bindings::rd_kafka_AdminOptions_t,
}

impl AdminCall {
    /// # Safety
    /// `rk` must stay valid for the life of the call.
    unsafe fn new(
        rk: *mut rdkafka::bindings::rd_kafka_t,
        op: rdkafka::bindings::rd_kafka_admin_op_t,
        timeout: Duration,
    ) -> AdminCall {
        use rdkafka::bindings as rd;
        let queue = rd::rd_kafka_queue_new(rk);
        let options = rd::rd_kafka_AdminOptions_new(rk, op);
        let mut errstr = [0 as std::os::raw::c_char; 256];
        // Fails only for an out-of-range value, which the cap rules out.
        rd::rd_kafka_AdminOptions_set_request_timeout(
            options,
            timeout.as_millis().min(i32::MAX as u128) as i32,
            errstr.as_mut_ptr(),
            errstr.len(),
        );
        AdminCall { queue, options }
    }

    /// The next result event, if it succeeded. An error when none comes within `wait`
    /// (reported as `timeout`, the request's own), or when the broker refused the request.
    /// The caller destroys a returned event.
    unsafe fn next_result(
        &self,
        wait: Duration,
        timeout: Duration,
    ) -> Result<*mut rdkafka::bindings::rd_kafka_event_t, String> {
        let event = rdkafka::bindings::rd_kafka_queue_poll(
            self.queue,
            wait.as_millis().min(i32::MAX as u128) as i32,
        );
        if event.is_null() {
            return Err(format!("no answer within {timeout:?}"));
        }
        if let Some(e) = event_error(event) {
            rdkafka::bindings::rd_kafka_event_destroy(event);
            return Err(e);
        }
        Ok(event)
    }
}

impl Drop for AdminCall {
    fn drop(&mut self) {
        // SAFETY: both were created in `new` and are destroyed once, here.
        unsafe {
            rdkafka::bindings::rd_kafka_AdminOptions_destroy(self.options);
            rdkafka::bindings::rd_kafka_queue_destroy(self.queue);
        }
    }
}

/// The error text of a failed admin result event, if it failed.
unsafe fn event_error(event: *mut rdkafka::bindings::rd_kafka_event_t) -> Option<String> {
    use rdkafka::bindings as rd;
    if rd::rd_kafka_event_error(event) == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
        return None;
    }
    let text = rd::rd_kafka_event_error_string(event);
    Some(if text.is_null() {
        "the broker refused the request".into()
    } else {
        std::ffi::CStr::from_ptr(text)
            .to_string_lossy()
            .into_owned()
    })
}

/// ListGroups through `rd_kafka_ListConsumerGroups`: (name, state) pairs.
fn list_groups(
    consumer: &BaseConsumer<Reporter>,
    timeout: Duration,
) -> std::result::Result<Vec<(String, Option<String>)>, String> {
    use rdkafka::bindings as rd;
    use std::ffi::CStr;

    let rk = consumer.client().native_ptr();
    // SAFETY: `rk` lives as long as the borrowed `consumer`; the event is destroyed here after
    // its strings are copied out.
    unsafe {
        let call = AdminCall::new(
            rk,
            rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS,
            timeout,
        );
        rd::rd_kafka_ListConsumerGroups(rk, call.options, call.queue);
        let event = call.next_result(timeout + Duration::from_secs(1), timeout)?;
        let listing = rd::rd_kafka_event_ListConsumerGroups_result(event);
        let mut count = 0usize;
        let groups = rd::rd_kafka_ListConsumerGroups_result_valid(listing, &mut count);
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let g = *groups.add(i);
            let name = CStr::from_ptr(rd::rd_kafka_ConsumerGroupListing_group_id(g))
                .to_string_lossy()
                .into_owned();
            let state = rd::rd_kafka_ConsumerGroupListing_state(g);
            let state = (state
                != rd::rd_kafka_consumer_group_state_t::RD_KAFKA_CONSUMER_GROUP_STATE_UNKNOWN)
                .then(|| {
                    CStr::from_ptr(rd::rd_kafka_consumer_group_state_name(state))
                        .to_string_lossy()
                        .into_owned()
                });
            out.push((name, state));
        }
        rd::rd_kafka_event_destroy(event);
        Ok(out)
    }
}

/// Committed offsets of `groups` for the partitions of `tpl`, through
/// `rd_kafka_ListConsumerGroupOffsets` (rdkafka does not wrap it): one request per group, all
/// on one queue, so that many groups cost one round trip rather than one client each.
fn list_group_offsets(
    consumer: &BaseConsumer<Reporter>,
    groups: &[String],
    tpl: &TopicPartitionList,
    timeout: Duration,
) -> std::result::Result<HashMap<String, Committed>, String> {
    use rdkafka::bindings as rd;
    use std::ffi::{CStr, CString};

    let rk = consumer.client().native_ptr();
    let names: Vec<CString> = groups
        .iter()
        .map(|g| CString::new(g.as_str()).map_err(|_| format!("group name '{g}' contains NUL")))
        .collect::<std::result::Result<_, _>>()?;
    let mut out = HashMap::new();
    // SAFETY: librdkafka copies the group name and partition list into each request, which is
    // destroyed right after; everything read from an event is copied out before the event is
    // destroyed; `rk` lives as long as the borrowed `consumer`.
    unsafe {
        let call = AdminCall::new(
            rk,
            rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS,
            timeout,
        );
        for name in &names {
            let mut request = rd::rd_kafka_ListConsumerGroupOffsets_new(name.as_ptr(), tpl.ptr());
            rd::rd_kafka_ListConsumerGroupOffsets(rk, &mut request, 1, call.options, call.queue);
            rd::rd_kafka_ListConsumerGroupOffsets_destroy(request);
        }
        let deadline = Instant::now() + timeout + Duration::from_secs(1);
        for _ in 0..names.len() {
            let event =
                call.next_result(deadline.saturating_duration_since(Instant::now()), timeout)?;
            let result = rd::rd_kafka_event_ListConsumerGroupOffsets_result(event);
            let mut count = 0usize;
            let results = rd::rd_kafka_ListConsumerGroupOffsets_result_groups(result, &mut count);
            let mut failure = None;
            for i in 0..count {
                let group = *results.add(i);
                let name = CStr::from_ptr(rd::rd_kafka_group_result_name(group))
                    .to_string_lossy()
                    .into_owned();
                let error = rd::rd_kafka_group_result_error(group);
                if !error.is_null() {
                    failure = Some(format!(
                        "group '{name}': {}",
                        CStr::from_ptr(rd::rd_kafka_error_string(error)).to_string_lossy()
                    ));
                    continue;
                }
                let list = rd::rd_kafka_group_result_partitions(group);
                let mut offsets = HashMap::new();
                if !list.is_null() {
                    for j in 0..(*list).cnt.max(0) as usize {
                        let e = &*(*list).elems.add(j);
                        let topic = CStr::from_ptr(e.topic).to_string_lossy().into_owned();
                        let ok = e.err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR;
                        offsets.insert(
                            (topic, e.partition),
                            (ok && e.offset >= 0).then_some(e.offset),
                        );
                    }
                }
                out.insert(name, offsets);
            }
            rd::rd_kafka_event_destroy(event);
            if let Some(f) = failure {
                return Err(f);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_assignment_names_its_partitions() {
        // Version 1; two topics: "ab" with partitions 0 and 3, "c" with 7; 4 bytes of user
        // data. Written by hand from the consumer protocol's layout.
        let bytes = [
            0, 1, // version
            0, 0, 0, 2, // two topics
            0, 2, b'a', b'b', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, // "ab": [0, 3]
            0, 1, b'c', 0, 0, 0, 1, 0, 0, 0, 7, // "c": [7]
            0, 0, 0, 4, 1, 2, 3, 4, // user data
        ];
        assert_eq!(
            assigned_partitions(&bytes),
            Some(vec![("ab".into(), 0), ("ab".into(), 3), ("c".into(), 7)])
        );
        assert_eq!(assigned_partitions(&bytes[..9]), None, "cut short");
        assert_eq!(assigned_partitions(&[]), None);
    }

    #[test]
    fn reads_are_planned_in_passes_and_rounds() {
        let w = |t: &str, p: i32, o: i64| (t.to_string(), p, o);
        let wanted = [
            w("a", 0, 10),
            w("a", 0, 12),
            w("a", 0, 9000),
            w("a", 1, 5),
            w("b", 0, 1),
            w("a", 0, 10),
        ];
        let rounds = plan_reads(&wanted, 100);
        let shape: Vec<Vec<(String, i32, Vec<i64>)>> = rounds
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|x| (x.topic, x.partition, x.offsets))
                    .collect()
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                vec![("a".into(), 0, vec![10, 12]), ("a".into(), 1, vec![5])],
                vec![("a".into(), 0, vec![9000])],
                vec![("b".into(), 0, vec![1])],
            ]
        );
    }
}
