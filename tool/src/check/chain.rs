//! Transcripts of a chain: records `{"from", "link": K, "message"}` as a conductor writes them,
//! where link 0 is the editor and the conductor and link K ≥ 1 the conductor and component K-1
//! (the conductor is the link's client, the component its agent). Each link is a connection of
//! its own, with its own negotiation, ids and sessions, so each gets its own [`Checker`];
//! records without `link` (`acp tap --log`) are one more conversation, as before. The events of
//! the official conductor's `--trace` are read too (see `trace`), each pair of neighbours a link.

use super::checker::{parse_line, Checker};
use super::ext::ExtSchemas;
use super::report::{Kind, Report, RuleViolation, Warning};
use super::trace;
#[cfg(feature = "unstable")]
#[cfg(feature = "unstable")]
use acp_rpc::rules::RuleId;
#[cfg(feature = "unstable")]
use acp_types::support::rpc::Role;
use acp_types::Version;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// Checks a transcript line by line: a one-link transcript, a chain's, or a mix.
#[derive(Debug)]
pub struct Transcript {
    forced: Option<Version>,
    /// Records without `link`.
    plain: Checker,
    /// Each link's conversation, by link.
    links: BTreeMap<u64, Checker>,
    /// The official trace's MCP requests awaiting their answers (ids as JSON text).
    mcp_requests: HashSet<String>,
    /// `--ext`: given to every link's checker.
    ext: Option<Arc<ExtSchemas>>,
}

impl Transcript {
    /// A transcript checker; `version` is forced on every link (see [`Checker::new`]).
    pub fn new(version: Option<Version>) -> Self {
        Transcript {
            forced: version,
            plain: Checker::new(version),
            links: BTreeMap::new(),
            mcp_requests: HashSet::new(),
            ext: None,
        }
    }

    /// Validates extension messages against `ext` on every link (see [`Checker::with_ext`]).
    pub fn with_ext(mut self, ext: Arc<ExtSchemas>) -> Self {
        self.plain = self.plain.with_ext(ext.clone());
        self.ext = Some(ext);
        self
    }

    /// Checks one line: a bare message, a record, or a record of one link of a chain.
    pub fn check_line(&mut self, line_no: usize, line: &[u8]) -> Report {
        let mut value = match parse_line(line) {
            Ok(value) => value,
            Err(reason) => return Report::unreadable(line_no, reason),
        };
        if let Some(record) = value.as_object().filter(|r| trace::is_event(r)) {
            let event = trace::event(record, &mut self.mcp_requests);
            return self.check_event(line_no, event);
        }
        let link = match value.as_object_mut().and_then(|record| record.remove("link")) {
            None => return self.plain.check_record(line_no, value),
            Some(link) => link,
        };
        let Some(link) = link.as_u64() else {
            let mut report = Report::new(line_no);
            report.error("link", format!("expected the link's number (0, 1, …), found {link}"));
            return report;
        };
        let checker = self.link(link);
        let report = checker.check_record(line_no, value);
        linked(report, link)
    }

    /// The conversation of `link`.
    fn link(&mut self, link: u64) -> &mut Checker {
        let (forced, ext) = (self.forced, self.ext.clone());
        self.links.entry(link).or_insert_with(|| match ext {
            Some(ext) => Checker::new(forced).with_ext(ext),
            None => Checker::new(forced),
        })
    }

    /// One event of the official conductor's trace.
    fn check_event(&mut self, line_no: usize, event: Result<trace::Event, String>) -> Report {
        let event = match event {
            Ok(event) => event,
            Err(reason) => return Report::unreadable(line_no, reason),
        };
        if !event.mcp {
            #[cfg(feature = "unstable")]
            let answered = event.message.get("result").and_then(|r| r.get("protocolVersion")).and_then(Value::as_u64);
            let checker = self.link(event.link);
            #[cfg(feature = "unstable")]
            {
                checker.unwrapped = true;
            }
            #[allow(unused_mut)]
            let mut report = checker.check_value(line_no, Some(event.from), event.message);
            #[cfg(feature = "unstable")]
            self.proxy_initialize_answered(event.link, &mut report, answered);
            return linked(report, event.link);
        }
        let mut report = Report::new(line_no);
        report.from = Some(event.from);
        report.link = Some(event.link);
        let has = |key: &str| event.message.get(key).is_some();
        report.kind = match (has("method"), has("id"), has("error")) {
            (true, true, _) => Kind::Request,
            (true, false, _) => Kind::Notification,
            (false, _, false) => Kind::Response,
            (false, _, true) => Kind::ErrorResponse,
        };
        report.method = event.message.get("method").and_then(Value::as_str).map(str::to_string);
        report.id = event.message.get("id").map(Value::to_string);
        report.warnings.push(Warning {
            path: None,
            reason: "an MCP message, traced without its `mcp/message` carrier: not checked".into(),
        });
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

    /// The versions as the summary line names them: `protocol version 1`, or in a chain
    /// `protocol version 1 on link 0, 2 on link 1` (`unknown` before a negotiation).
    pub fn versions_text(&self) -> String {
        let number = |v: Option<Version>| v.map_or_else(|| "unknown".to_string(), |v| v.number().to_string());
        match self.link_versions().as_slice() {
            [] => format!("protocol version {}", number(self.version())),
            links => {
                let each: Vec<String> =
                    links.iter().map(|(link, v)| format!("{} on link {link}", number(*v))).collect();
                format!("protocol version {}", each.join(", "))
            }
        }
    }
}

impl Transcript {
    /// A proxy's answer to `proxy/initialize` on `link`, in a trace without envelopes: the
    /// `initialize` it forwarded is the opening request of the next link, where the proxy is the
    /// client (rules `proxy.forward-initialize`, `proxy.same-version`).
    #[cfg(feature = "unstable")]
    fn proxy_initialize_answered(&mut self, link: u64, report: &mut Report, answered: Option<u64>) {
        let answers_proxy_initialize = report.kind == Kind::Response
            && report.from == Some(Role::Agent)
            && matches!(
                report.method.as_deref().and_then(acp_types::MethodName::of),
                Some(acp_types::MethodName::ProxyInitialize)
            );
        if !answers_proxy_initialize || self.forced.is_some() {
            return;
        }
        let next = link + 1;
        let (forwarded, successor) =
            self.links.get(&next).map_or((false, None), |c| (c.initialize_seen, c.opening_answer));
        let Some(checker) = self.links.get_mut(&link) else { return };
        let judge = &mut checker.judge;
        judge.exercise(RuleId::ProxyForwardInitialize, Role::Agent);
        if !forwarded {
            let detail = format!(
                "`proxy/initialize` answered with a result, but the proxy sent no `initialize` to its successor \
                 (link {next}) before"
            );
            judge.violation(report, RuleId::ProxyForwardInitialize, Role::Agent, detail);
        }
        if let (Some(successor), Some(answered)) = (successor, answered) {
            judge.exercise(RuleId::ProxySameVersion, Role::Agent);
            if successor != answered {
                let detail = format!(
                    "`proxy/initialize` answered with protocolVersion {answered}, but the successor (link {next}) \
                     answered the proxy's `initialize` with {successor}"
                );
                judge.violation(report, RuleId::ProxySameVersion, Role::Agent, detail);
            }
        }
    }
}

/// `report`, of a message of `link`.
fn linked(mut report: Report, link: u64) -> Report {
    report.link = Some(link);
    for violation in &mut report.violations {
        violation.link = Some(link);
    }
    report
}
