//! `acp check` on a transcript: every line through one checker, as the command does, with the
//! version forced or negotiated (first byte). Besides "no panic": every report prints, serializes
//! to JSON, and counts into the summary.

#![no_main]

use acp_tool::check::{Checker, Summary};
use acp_types::Version;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, transcript)) = data.split_first() else { return };
    // Negotiated, or forced to one of the versions (by position, so that a new one is covered).
    let forced = match mode % 4 {
        0 => None,
        n => Version::ALL.get(usize::from(n - 1) % Version::ALL.len()).copied(),
    };
    let mut checker = Checker::new(forced);
    let mut summary = Summary::default();
    for (i, line) in transcript.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let report = checker.check_line(i + 1, line);
        assert!(!report.to_string().is_empty());
        serde_json::to_string(&report).expect("a report serializes");
        summary.add(&report);
    }
    let _ = summary.to_string();
});
