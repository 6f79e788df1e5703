//! Transcripts of a chain: records `{"from", "link": K, "message"}` as a conductor writes them,
//! where link 0 is the editor and the conductor and link K ≥ 1 the conductor and component K-1
//! (the conductor is the link's client, the component its agent). Each link is a connection of
//! its own, with its own negotiation, ids and sessions, so each gets its own [`Checker`];
//! records without `link` (`acp tap --log`) are one more conversation, as before.

use super::{parse_line, Checker, Report, RuleViolation};
use acp_types::Version;
use std::collections::BTreeMap;

/// Checks a transcript line by line: a one-link transcript, a chain's, or a mix.
#[derive(Debug)]
pub struct Transcript {
    forced: Option<Version>,
    /// Records without `link`.
    plain: Checker,
    /// Each link's conversation, by link.
    links: BTreeMap<u64, Checker>,
}

impl Transcript {
    /// A transcript checker; `version` is forced on every link (see [`Checker::new`]).
    pub fn new(version: Option<Version>) -> Self {
        Transcript { forced: version, plain: Checker::new(version), links: BTreeMap::new() }
    }

    /// Checks one line: a bare message, a record, or a record of one link of a chain.
    pub fn check_line(&mut self, line_no: usize, line: &[u8]) -> Report {
        let mut value = match parse_line(line) {
            Ok(value) => value,
            Err(reason) => return Report::unreadable(line_no, reason),
        };
        let link = match value.as_object_mut().and_then(|record| record.remove("link")) {
            None => return self.plain.check_record(line_no, value),
            Some(link) => link,
        };
        let Some(link) = link.as_u64() else {
            let mut report = Report::new(line_no);
            report.error("link", format!("expected the link's number (0, 1, …), found {link}"));
            return report;
        };
        let forced = self.forced;
        let checker = self.links.entry(link).or_insert_with(|| Checker::new(forced));
        let mut report = checker.check_record(line_no, value);
        report.link = Some(link);
        for violation in &mut report.violations {
            violation.link = Some(link);
        }
        report
    }

    /// The end of the transcript: every conversation's end-of-conversation findings, the
    /// links' marked with their link. Call once.
    pub fn finish(&mut self) -> Vec<RuleViolation> {
        let mut found = self.plain.finish();
        for (link, checker) in &mut self.links {
            found.extend(checker.finish().into_iter().map(|mut v| {
                v.link = Some(*link);
                v
            }));
        }
        found
    }

    /// The version negotiated (or forced): of the one-link conversation, or, in a chain, of the
    /// lowest link (the editor's).
    pub fn version(&self) -> Option<Version> {
        match self.links.values().next() {
            Some(first) if self.plain.version().is_none() => first.version(),
            _ => self.plain.version(),
        }
    }

    /// Each link's negotiated (or forced) version, by link; empty for a one-link transcript.
    pub fn link_versions(&self) -> Vec<(u64, Option<Version>)> {
        self.links.iter().map(|(link, checker)| (*link, checker.version())).collect()
    }
}
