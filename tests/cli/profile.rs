//! `weir watermark-profile` against exact quantiles computed from the generator's true times.

use std::collections::HashMap;

use crate::gen::{Event, GenConfig};
use serde_json::Value;
use weir::core::time::Millis;

use crate::{generated_with, weir};

fn gen(seed: u64) -> (tempfile::NamedTempFile, Vec<Event>) {
    generated_with(GenConfig {
        events: 30_000,
        seed,
        rate_per_s: 100.0,
        ..GenConfig::default()
    })
}

fn profile(file: &tempfile::NamedTempFile, extra: &[&str]) -> Value {
    let out = weir()
        .arg("watermark-profile")
        .arg(file.path())
        .args([
            "--time",
            "occurred_at",
            "--arrival",
            "arrived_at",
            "--format",
            "json",
            "-q",
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Nearest-rank quantile of sorted values; the rank in integers (q has at most 3 decimals),
/// since in floats 99.9 / 100 * 30000 lands above 29970 and ceil gives the wrong rank.
fn exact(sorted: &[Millis], q: f64) -> Millis {
    let per_100k = (q * 1000.0).round() as usize;
    let rank = ((per_100k * sorted.len()).div_ceil(100_000)).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn close(got: &Value, want: Millis) -> bool {
    let got = got.as_i64().unwrap();
    // 3 significant digits: within 0.1% (values below 2048 ms are exact).
    (got - want).abs() as f64 <= want as f64 * 0.001 + 1.0
}

/// (lateness, out-of-orderness) per event, from the generator's own times.
fn truth(events: &[Event]) -> (Vec<Millis>, Vec<Millis>) {
    let mut max = Millis::MIN;
    let mut lateness = Vec::new();
    let mut ooo = Vec::new();
    for e in events {
        lateness.push(e.arrived_at - e.occurred_at);
        ooo.push(if max == Millis::MIN {
            0
        } else {
            (max - e.occurred_at).max(0)
        });
        max = max.max(e.occurred_at);
    }
    (lateness, ooo)
}

#[test]
fn quantiles_recommendations_and_late_counts_match_exact_values() {
    let (file, events) = gen(301);
    let r = profile(
        &file,
        &["--delay", "500ms,10s,1m", "--target", "90,99,99.9"],
    );
    let (lateness, ooo) = truth(&events);
    assert_eq!(r["records"], events.len());
    let o = &r["overall"];
    let mut positive: Vec<Millis> = lateness.iter().map(|l| (*l).max(0)).collect();
    positive.sort_unstable();
    let mut sorted_ooo = ooo.clone();
    sorted_ooo.sort_unstable();
    // The loops below check every entry, so the entries must all be there.
    let quantiles = |field: &str| -> Vec<f64> {
        o[field]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["q"].as_f64().unwrap())
            .collect()
    };
    assert_eq!(
        quantiles("lateness"),
        [50.0, 90.0, 99.0, 99.9, 99.99, 100.0]
    );
    assert_eq!(quantiles("out_of_order"), quantiles("lateness"));
    assert_eq!(o["recommended"].as_array().unwrap().len(), 3);
    assert_eq!(o["late_for_delay"].as_array().unwrap().len(), 3);
    for q in o["lateness"].as_array().unwrap() {
        let want = exact(&positive, q["q"].as_f64().unwrap());
        assert!(close(&q["ms"], want), "lateness {q} vs {want}");
    }
    for q in o["out_of_order"].as_array().unwrap() {
        let want = exact(&sorted_ooo, q["q"].as_f64().unwrap());
        assert!(close(&q["ms"], want), "out-of-order {q} vs {want}");
    }
    for rec in o["recommended"].as_array().unwrap() {
        let target = rec["target"].as_f64().unwrap();
        let want = exact(&sorted_ooo, target);
        assert!(
            close(&rec["delay_ms"], want),
            "recommendation {rec} vs {want}"
        );
        // Never short of the exact quantile: with the recommended delay, at most the
        // target's complement is late.
        let delay = rec["delay_ms"].as_i64().unwrap();
        assert!(delay >= want, "recommendation {rec} below the exact {want}");
        let late = ooo.iter().filter(|x| **x > delay).count();
        let on_time_rank = ((target * 1000.0).round() as usize * ooo.len()).div_ceil(100_000);
        assert!(late <= ooo.len() - on_time_rank, "{rec}: {late} late");
    }
    for late in o["late_for_delay"].as_array().unwrap() {
        let d = late["delay_ms"].as_i64().unwrap();
        let want = ooo.iter().filter(|x| **x > d).count();
        assert_eq!(late["late"], want, "late count for {d} ms");
    }
    assert_eq!(o["lateness_min_ms"], *lateness.iter().min().unwrap());
    assert_eq!(o["lateness_max_ms"], *lateness.iter().max().unwrap());
    let negative = lateness.iter().filter(|l| **l < 0).count() as f64 / lateness.len() as f64;
    assert!((o["negative_lateness_share"].as_f64().unwrap() - negative).abs() < 1e-12);
    assert!(negative > 0.0, "the generator includes clock skew");
}

#[test]
fn per_group_split_shows_the_late_client() {
    let (file, events) = gen(302);
    let r = profile(&file, &["--by", "client"]);
    let groups = r["groups"].as_object().unwrap();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for e in &events {
        *counts.entry(e.client.name()).or_default() += 1;
    }
    assert_eq!(groups.len(), counts.len());
    for (name, n) in &counts {
        assert_eq!(groups[*name]["count"], *n);
    }
    let p99 = |g: &str| {
        groups[g]["lateness"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["q"] == 99.0)
            .unwrap()["ms"]
            .as_i64()
            .unwrap()
    };
    // Point-of-sale terminals sync in batches: far later than the web client.
    assert!(
        p99("pos") > 3 * p99("web"),
        "pos {} web {}",
        p99("pos"),
        p99("web")
    );
}

#[test]
fn svg_is_well_formed_and_has_the_bars() {
    let (file, _) = gen(303);
    let dir = tempfile::tempdir().unwrap();
    let svg_path = dir.path().join("p.svg");
    let r = profile(&file, &["--plot", svg_path.to_str().unwrap()]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let mut reader = quick_xml::Reader::from_str(&svg);
    let (mut root, mut bars, mut depth) = (None, 0, 0i32);
    loop {
        match reader.read_event().expect("well-formed XML") {
            quick_xml::events::Event::Start(e) => {
                depth += 1;
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                root.get_or_insert(name.clone());
                if name == "rect" && e.attributes().any(|a| a.unwrap().value.as_ref() == b"bar") {
                    bars += 1;
                }
            }
            quick_xml::events::Event::End(_) => depth -= 1,
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0);
    assert_eq!(root.as_deref(), Some("svg"));
    assert_eq!(
        bars,
        r["overall"]["lateness_histogram"].as_array().unwrap().len()
    );
    assert!(bars > 5);
    // A dashed line for each recommended delay, labelled with it; axes titled with units.
    let recommended = r["overall"]["recommended"].as_array().unwrap();
    assert_eq!(
        svg.matches("class=\"recommended\"").count(),
        recommended.len()
    );
    assert!(svg.contains("99.9%: --delay "), "{svg}");
    for words in [
        "lateness (log scale",
        "event time (UTC)",
        "late share",
        "records",
    ] {
        assert!(svg.contains(words), "{words}");
    }
    // The drift series is on a linear time axis: each bucket sits where its start is.
    let xs: Vec<f64> = svg
        .lines()
        .filter(|l| l.contains("class=\"drift\""))
        .map(|l| {
            let at = l.find(" x=\"").unwrap() + 4;
            l[at..at + l[at..].find('"').unwrap()].parse().unwrap()
        })
        .collect();
    let starts: Vec<i64> = (r["drift"].as_array().unwrap().iter())
        .map(|d| {
            let t = d["bucket_start"].as_str().unwrap();
            chrono::DateTime::parse_from_rfc3339(t)
                .unwrap()
                .timestamp_millis()
        })
        .collect();
    assert_eq!(xs.len(), starts.len());
    let scale = (xs[xs.len() - 1] - xs[0]) / (starts[starts.len() - 1] - starts[0]) as f64;
    for (x, t) in xs.iter().zip(&starts) {
        assert!(
            (x - xs[0] - (t - starts[0]) as f64 * scale).abs() < 0.2,
            "{x} at {t}"
        );
    }
    renders(&svg_path);
}

/// The SVG renders (rsvg-convert, librsvg's, which scripts/test.sh installs) to a picture.
fn renders(svg: &std::path::Path) {
    let png = svg.with_extension("png");
    let out = std::process::Command::new("rsvg-convert")
        .arg("-o")
        .arg(&png)
        .arg(svg)
        .output();
    match out {
        Ok(out) => assert!(out.status.success(), "{out:?}"),
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "rsvg-convert: {e}"
            );
            eprintln!("skipped the render: no rsvg-convert ({e})");
            return;
        }
    }
    let bytes = std::fs::read(&png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 5_000,
        "{}",
        bytes.len()
    );
}

/// The files a profile writes only at its end are checked before it reads: a plot named
/// `.png` would hold SVG (exit 2), a missing directory would lose the end of a long read (4).
#[test]
fn plot_and_stats_paths_are_checked_before_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.txt");
    let run = |extra: &[&str]| {
        weir()
            .args(["watermark-profile", "fixtures/checkouts.ndjson"])
            .args(["--time", "occurred_at", "-o", out.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap()
    };
    let missing = dir.path().join("no/such");
    let cases = [
        ("--plot", dir.path().join("p.png"), 2, "name the file .svg"),
        ("--plot", missing.join("p.svg"), 4, "no such directory"),
        ("--stats", missing.join("s.json"), 4, "no such directory"),
        ("--plot", dir.path().join("d.svg"), 4, "is a directory"),
    ];
    std::fs::create_dir(dir.path().join("d.svg")).unwrap();
    for (flag, path, code, message) in cases {
        let r = run(&[flag, path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(code), "{flag} {path:?}: {stderr}");
        assert!(stderr.contains(message), "{flag} {path:?}: {stderr}");
        assert!(!out.exists(), "{flag} {path:?}: the report was written");
    }
    let r = run(&["--plot", dir.path().join("p.HTML").to_str().unwrap()]);
    assert!(r.status.success());
    assert!(std::fs::read_to_string(dir.path().join("p.HTML"))
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
}

#[test]
fn records_without_a_usable_time_are_counted() {
    let out = weir()
        .args([
            "watermark-profile",
            "fixtures/bad.ndjson",
            "--time",
            "t",
            "--on-error",
            "skip",
            "--format",
            "json",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    // fixtures/README.md: lines 3, 4 and 10 have no usable t; 2, 7 and 9 are bad records.
    assert_eq!(r["no_time"], 3);
    assert_eq!(r["records"], 4);
    weir()
        .args(["watermark-profile", "--time", "t", "--target", "0"])
        .assert()
        .code(2);
    weir().args(["watermark-profile"]).assert().code(2);
}

/// How many records `window` with `flags` and `--delay delay` marks late on `input`.
fn window_late(input: &[&str], flags: &[&str], delay: &str) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let late = dir.path().join("late.ndjson");
    let out = weir()
        .arg("window")
        .args(input)
        .args(flags)
        .args(["--count", "--delay", delay, "-q", "-o", "/dev/null"])
        .arg("--late-output")
        .arg(&late)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::read_to_string(&late).unwrap().lines().count() as u64
}

/// With window's flags, the profile's late count for each --delay is what `window` with the
/// same flags and delay marks late, and each recommended delay keeps its target share out of
/// that count: tumbling, hopping and sessions (by one key, two keys and none), an offset and
/// an allowed lateness, on the checkouts fixture and on generated data with four partitions.
#[test]
fn the_profile_predicts_what_window_marks_late() {
    let (generated, _) = gen(46);
    let generated = generated.path().to_str().unwrap().to_string();
    let inputs: [(&[&str], &[&str]); 2] = [
        (&["fixtures/checkouts.ndjson"], &["--time", "occurred_at"]),
        (
            &[&generated],
            &["--time", "occurred_at", "--partition-by", "partition"],
        ),
    ];
    let windows: [&[&str]; 7] = [
        &["--session", "2m", "--key", "merchant_id"],
        &[
            "--session",
            "30s",
            "--key",
            "merchant_id",
            "--key",
            "client",
            "--allowed-lateness",
            "20s",
        ],
        &["--session", "10s"],
        &["--tumbling", "1m"],
        &["--hop", "10m", "--slide", "3m"],
        &[
            "--tumbling",
            "1m",
            "--offset",
            "15s",
            "--allowed-lateness",
            "30s",
        ],
        &["--tumbling", "5s"],
    ];
    let delays = ["0s", "10s", "1m", "10m"];
    for (input, fields) in inputs {
        for window in windows {
            let out = weir()
                .arg("watermark-profile")
                .args(input)
                .args(fields)
                .args(window)
                .args(["--delay", &delays.join(","), "--format", "json", "-q"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            let report: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(report["window"].is_string(), "{report}");
            let flags = [fields, window].concat();
            let predicted: Vec<u64> = (report["overall"]["late_for_delay"].as_array().unwrap())
                .iter()
                .map(|l| l["late"].as_u64().unwrap())
                .collect();
            let actual: Vec<u64> = (delays.iter())
                .map(|d| window_late(input, &flags, d))
                .collect();
            assert_eq!(predicted, actual, "{input:?} {window:?}");
            assert!(actual[0] > 0, "{input:?} {window:?}: nothing late");
            // The first target's delay keeps that share on time.
            let records = report["records"].as_f64().unwrap();
            let rec = &report["overall"]["recommended"][0];
            let delay = format!("{}ms", rec["delay_ms"]);
            let late = window_late(input, &flags, &delay) as f64;
            let target = rec["target"].as_f64().unwrap();
            assert!(
                late / records <= 1.0 - target / 100.0,
                "{input:?} {window:?} {rec}"
            );
        }
    }
}

/// An empty input recommends nothing and says so; without --arrival the report says that the
/// arrival time is when weir read each record (on an old file, lateness is its age), and
/// with it does not.
#[test]
fn the_report_says_when_there_is_nothing_to_profile_and_what_arrival_means() {
    let out = weir()
        .args(["watermark-profile", "--time", "t", "-q"])
        .write_stdin("")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no records to profile"), "{text}");
    assert!(!text.contains("recommended"), "{text}");
    let fixture = super::fixture("checkouts.ndjson");
    let report = |extra: &[&str]| {
        let out = weir()
            .arg("watermark-profile")
            .arg(&fixture)
            .args(["--time", "occurred_at", "-q"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = "arrival time: when weir read each record";
    assert!(report(&[]).contains(said));
    assert!(!report(&["--arrival", "arrived_at"]).contains(said));
}
