//! Time parsing in every format, durations and positions: no panic, and the fast RFC 3339
//! path agrees with the general one; what weir prints reads back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir::core::time::{
    duration_millis, fast_rfc3339, format_millis, human_duration, parse_duration,
    parse_time_number, parse_time_str, LogPosition, TimeFormat,
};

fuzz_target!(|input: &str| {
    let formats = [
        TimeFormat::Auto,
        TimeFormat::Rfc3339,
        TimeFormat::EpochSeconds,
        TimeFormat::EpochMillis,
        TimeFormat::EpochMicros,
        TimeFormat::EpochNanos,
        TimeFormat::Pattern("%Y-%m-%d %H:%M:%S".into()),
        TimeFormat::Pattern("%d/%m/%Y %H:%M:%S%.f %z".into()),
    ];
    for format in &formats {
        if let Ok(ms) = parse_time_str(input, format) {
            // An instant weir accepts, it can write, and what it writes reads back.
            let text = format_millis(ms);
            assert_eq!(parse_time_str(&text, &TimeFormat::Rfc3339), Ok(ms), "{text}");
        }
        let _ = parse_time_number(input, format);
    }
    if let Some(ms) = fast_rfc3339(input.as_bytes()) {
        assert_eq!(parse_time_str(input, &TimeFormat::Rfc3339), Ok(ms));
    }
    if let Ok(d) = parse_duration(input) {
        let ms = duration_millis(d);
        // A printed duration reads back, and never shorter than it was.
        let printed = human_duration(ms);
        let back = parse_duration(&printed).expect("a printed duration parses");
        assert!(duration_millis(back) >= ms, "{input} -> {printed}");
    }
    let _ = input.parse::<TimeFormat>();
    let _ = LogPosition::parse(input, 1_767_225_600_000);
    let _ = LogPosition::parse(input, i64::MAX);
    let _ = LogPosition::parse(input, i64::MIN);
});
