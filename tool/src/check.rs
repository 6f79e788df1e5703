//! Checking ACP traffic against the protocol: every message is decoded with the method tables of
//! the negotiated version and re-encoded, and the result says whether it is valid, where it is
//! wrong, or what decoding changed. This is the engine of `acp check` and `acp tap`.
//!
//! A transcript has one JSON object per line: a bare JSON-RPC message, or a record
//! `{"from": "client"|"agent", "message": {…}}` whose other keys (a timestamp, say) are ignored.
//! `acp tap` also writes `{"from": …, "line": "…"}` for a line that was not JSON, so that the
//! transcript keeps it and `check` reports it. A record with a `link` belongs to one link of a
//! chain (see [`Transcript`]).
//!
//! Composition: `proxy/initialize` opens a connection as `initialize` does, and the message a
//! `proxy/successor` envelope wraps is checked as a message of its own conversation (see
//! `envelope`), its findings given at their paths inside the envelope.

use acp_types::support::lenient::{self, LenientEvent};
pub use acp_types::support::rpc::Role;
use acp_types::support::rpc::{self, MessageKind, RpcError, Stability, Tables};
use acp_types::{v1, v2, Version};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::marker::PhantomData;

mod chain;
#[cfg(feature = "unstable")]
mod envelope;
mod not_in_schema;
mod rules;
mod schema;
pub(crate) mod trace;

pub use chain::Transcript;

/// The wire names the checker and `acp conform` route on, from the generated method markers:
/// plain consts, so that they can be match patterns.
pub(crate) mod wire {
    use acp_types::support::rpc::{Method, MethodInfo, Role, Side as _, Tables};
    use acp_types::{v1::methods as v1, v2::methods as v2};

    /// Methods both versions have, for code that serves both: v1's marker names each, and the
    /// build fails should v2 name it otherwise (that code would then miss v2's).
    macro_rules! both {
        ($($(#[$attr:meta])* $name:ident = $marker:ident;)*) => {$(
            $(#[$attr])*
            pub(crate) const $name: &str = v1::$marker::METHOD;
            $(#[$attr])*
            const _: () = assert!(
                acp_types::support::rpc::same_wire_name(v1::$marker::METHOD, v2::$marker::METHOD),
                concat!("v1 and v2 name ", stringify!($marker), " apart")
            );
        )*};
    }

    both! {
        INITIALIZE = Initialize;
        SESSION_NEW = SessionNew;
        // Unstable in both versions: without the unstable tables the checker knows no fork.
        #[cfg(feature = "unstable")]
        SESSION_FORK = SessionFork;
        SESSION_RESUME = SessionResume;
        SESSION_PROMPT = SessionPrompt;
        SESSION_CANCEL = SessionCancel;
        SESSION_UPDATE = SessionUpdate;
        SESSION_REQUEST_PERMISSION = SessionRequestPermission;
        // Composition, unstable in both versions.
        #[cfg(feature = "unstable")]
        PROXY_INITIALIZE = ProxyInitialize;
        #[cfg(feature = "unstable")]
        PROXY_SUCCESSOR = ProxySuccessorRequest;
        #[cfg(feature = "unstable")]
        MCP_MESSAGE = McpMessageRequest;
    }

    /// Whether `method` opens a connection and negotiates its version: `initialize`, or
    /// `proxy/initialize` ("The params and the response are the same as for `initialize`",
    /// `InitializeProxyRequest`).
    pub(crate) fn opens_connection(method: &str) -> bool {
        #[cfg(feature = "unstable")]
        if method == PROXY_INITIALIZE {
            return true;
        }
        method == INITIALIZE
    }

    // Methods only v1 has: named by its markers.
    pub(crate) const SESSION_LOAD: &str = v1::SessionLoad::METHOD;
    pub(crate) const SESSION_SET_MODE: &str = v1::SessionSetMode::METHOD;
    pub(crate) const FS_READ_TEXT_FILE: &str = v1::FsReadTextFile::METHOD;
    pub(crate) const FS_WRITE_TEXT_FILE: &str = v1::FsWriteTextFile::METHOD;
    pub(crate) const TERMINAL_CREATE: &str = v1::TerminalCreate::METHOD;
    pub(crate) const TERMINAL_OUTPUT: &str = v1::TerminalOutput::METHOD;
    pub(crate) const TERMINAL_WAIT_FOR_EXIT: &str = v1::TerminalWaitForExit::METHOD;
    pub(crate) const TERMINAL_KILL: &str = v1::TerminalKill::METHOD;
    pub(crate) const TERMINAL_RELEASE: &str = v1::TerminalRelease::METHOD;

    /// The namespace of a wire name: up to and including its first `/` (`session/` of
    /// `session/new`), if it has one.
    pub(crate) fn namespace(method: &str) -> Option<&str> {
        method.find('/').map(|end| &method[..=end])
    }

    /// Whether `method` is a method of `T`'s tables (either side, either kind) in the namespace
    /// of `of`: with `of` = [`SESSION_NEW`], v2's `session/*` methods.
    pub(crate) fn in_namespace_of<T: Tables>(method: &str, of: &str) -> bool {
        namespace(of).is_some_and(|ns| T::METHODS.iter().any(|m| m.name == method && namespace(m.name) == Some(ns)))
    }

    /// Whether `method` is in the namespace of `T`'s protocol-level methods, the side that both
    /// ends receive (`$/cancel_request`): the schemas let a receiver ignore such notifications
    /// ("Notifications whose methods start with '$/' … it is free to ignore"), so a name there
    /// the tables do not have is no custom method and no unknown one.
    pub(crate) fn protocol_level<T: Tables>(method: &str) -> bool {
        let both = |m: &&MethodInfo<T::Side>| m.side.received_by(Role::Agent) && m.side.received_by(Role::Client);
        namespace(method).is_some_and(|ns| T::METHODS.iter().filter(both).any(|m| namespace(m.name) == Some(ns)))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use std::collections::BTreeSet;

        /// The names of `T`'s methods received by `role` in the namespace of `of`.
        fn received<T: Tables>(role: Role, of: &str) -> BTreeSet<&'static str> {
            let rows = T::METHODS.iter().filter(|m| m.side.received_by(role) && namespace(m.name) == namespace(of));
            rows.map(|m| m.name).collect()
        }

        /// The v1 methods received by the client that `rules::ClientGate` gates with `gate`.
        fn gated(gate: &[acp_rpc::rules::ClientGate]) -> BTreeSet<&'static str> {
            let gates = |m: &&MethodInfo<v1::Side>| {
                acp_rpc::rules::ClientGate::of_v1(m.name).is_some_and(|g| gate.contains(&g))
            };
            v1::Tables::METHODS
                .iter()
                .filter(|m| m.side.received_by(Role::Client))
                .filter(gates)
                .map(|m| m.name)
                .collect()
        }

        #[test]
        fn the_client_capability_gates_are_the_v1_families() {
            use acp_rpc::rules::ClientGate::{ReadTextFile, Terminal, WriteTextFile};
            assert_eq!(received::<v1::Tables>(Role::Client, FS_READ_TEXT_FILE), gated(&[ReadTextFile, WriteTextFile]));
            assert_eq!(received::<v1::Tables>(Role::Client, TERMINAL_CREATE), gated(&[Terminal]));
            assert!(received::<v2::Tables>(Role::Client, TERMINAL_CREATE).is_empty());
        }

        #[test]
        fn namespaces_follow_the_tables() {
            for cancel in [v1::CancelRequest::METHOD, v2::CancelRequest::METHOD] {
                assert!(protocol_level::<v1::Tables>(cancel) && protocol_level::<v2::Tables>(cancel));
            }
            assert!(!protocol_level::<v1::Tables>(SESSION_CANCEL) && !protocol_level::<v2::Tables>(INITIALIZE));
            assert!(in_namespace_of::<v2::Tables>(SESSION_PROMPT, SESSION_NEW));
            assert!(in_namespace_of::<v2::Tables>(SESSION_UPDATE, SESSION_NEW));
            assert!(!in_namespace_of::<v2::Tables>(SESSION_LOAD, SESSION_NEW), "v2 has no session/load");
            assert!(!in_namespace_of::<v2::Tables>(INITIALIZE, SESSION_NEW));
        }
    }
}

use acp_rpc::rules::{Rule, Tier};

/// The verdict on one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Valid, and re-encoding gives the same JSON.
    Ok,
    /// An extension method (`_…`) or its response: not described by the schema.
    Extension,
    /// A response whose id matches no request of the peer.
    Unmatched,
    /// Valid, but re-encoding the decoded value changes the JSON.
    Lossy,
    /// Invalid: see [`Report::problems`].
    Error,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::Extension => "extension",
            Status::Unmatched => "unmatched",
            Status::Lossy => "lossy",
            Status::Error => "error",
        })
    }
}

/// What a message is, as far as its envelope tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Has `method` and `id`.
    Request,
    /// Has `method` and no `id`.
    Notification,
    /// Has `result`.
    Response,
    /// Has `error`.
    ErrorResponse,
    /// Not JSON, or not a JSON-RPC message.
    Invalid,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Request => "request",
            Kind::Notification => "notification",
            Kind::Response => "response",
            Kind::ErrorResponse => "error response",
            Kind::Invalid => "invalid",
        })
    }
}

/// Where a message is wrong and why, e.g. `params.update.toolCallId`: `missing field`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// JSON path from the message root (`params.prompt[0].text`); empty for the whole line.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

/// One place where re-encoding differs from what was received.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// JSON path from the message root.
    pub path: String,
    /// What was received (`None`: absent).
    pub received: Option<Value>,
    /// What re-encoding gives (`None`: absent).
    pub reencoded: Option<Value>,
}

/// A lenient repair (`x-deserialize-*`): the message counts as valid, but a value was replaced by
/// its default or an item was dropped; or a value this schema does not list (a newer revision may)
/// that a catch-all the generator added kept as received. Also an unstable method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// JSON path of the repaired value, when it could be located.
    pub path: Option<String>,
    /// What was done and why.
    pub reason: String,
}

/// The verdict on one line of a transcript.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// 1-based line number.
    pub line: usize,
    /// The sender, when known (from the record, or inferred from the method tables).
    pub from: Option<Role>,
    /// Request, notification, response, …
    pub kind: Kind,
    /// The method (for responses: the method of the request answered).
    pub method: Option<String>,
    /// For a `proxy/successor` envelope (or its response): the method of the message it wraps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrapped: Option<String>,
    /// In a chain transcript: the link the message was sent on (0: editor and conductor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<u64>,
    /// The id, as JSON text.
    pub id: Option<String>,
    /// The verdict.
    pub status: Status,
    /// Why it is an error, or why it is unmatched (empty otherwise).
    pub problems: Vec<Problem>,
    /// What re-encoding changed (empty unless `status` is `lossy`).
    pub differences: Vec<Difference>,
    /// Lenient repairs; the message still counts as `ok`.
    pub warnings: Vec<Warning>,
    /// Rules of [`acp_rpc::rules`] this message breaks (a MUST one makes it an `error`).
    pub violations: Vec<RuleViolation>,
}

/// A rule broken: which, by whom, where and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleViolation {
    /// The rule's id ([`acp_rpc::rules::RULES`]).
    pub rule: &'static str,
    /// The rule's tier.
    pub tier: Tier,
    /// The side that broke it.
    pub by: Role,
    /// The line of the message that breaks it (for an end-of-conversation finding: the line of
    /// its cause, 0 when there is none).
    pub line: usize,
    /// What happened.
    pub detail: String,
    /// In a chain transcript: the link where it happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<u64>,
}

impl RuleViolation {
    /// A violation of the rule `rule` (an id of [`acp_rpc::rules::RULES`]; an unknown one counts as MUST).
    pub fn new(rule: &'static str, by: Role, line: usize, detail: String) -> Self {
        let tier = acp_rpc::rules::find(rule).map_or(Tier::Must, |r| r.tier);
        RuleViolation { rule, tier, by, line, detail, link: None }
    }
}

impl fmt::Display for RuleViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(link) = self.link {
            write!(f, "link {link}: ")?;
        }
        write!(f, "rule {} ({}, {}): {}", self.rule, self.tier, self.by, self.detail)
    }
}

/// How one rule fared over a conversation: PASS when exercised without a violation, FAIL with
/// a violation, SKIP when never exercised.
#[derive(Debug, Clone)]
pub struct RuleResult {
    /// The rule.
    pub rule: &'static Rule,
    /// How many times it could have been broken.
    pub exercised: usize,
    /// Where it was.
    pub violations: Vec<RuleViolation>,
}

impl Report {
    fn new(line: usize) -> Self {
        Report {
            line,
            from: None,
            kind: Kind::Invalid,
            method: None,
            wrapped: None,
            link: None,
            id: None,
            status: Status::Ok,
            problems: Vec::new(),
            differences: Vec::new(),
            warnings: Vec::new(),
            violations: Vec::new(),
        }
    }

    /// The report on a line that is not JSON (or not UTF-8).
    fn unreadable(line: usize, reason: String) -> Self {
        let mut report = Report::new(line);
        report.error("", reason);
        report
    }

    fn error(&mut self, path: impl Into<String>, reason: impl Into<String>) {
        self.status = Status::Error;
        self.problems.push(Problem { path: path.into(), reason: reason.into() });
    }
}

/// Counts per status, for a summary line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Messages checked (blank lines excluded).
    pub messages: usize,
    /// `ok`.
    pub ok: usize,
    /// `extension`.
    pub extension: usize,
    /// `error`.
    pub error: usize,
    /// `lossy`.
    pub lossy: usize,
    /// `unmatched`.
    pub unmatched: usize,
    /// Lenient repairs, over all messages.
    pub warnings: usize,
    /// Rule violations, over all messages and the end of the conversation.
    pub violations: usize,
}

impl Summary {
    /// Adds one report.
    pub fn add(&mut self, report: &Report) {
        self.messages += 1;
        self.warnings += report.warnings.len();
        self.violations += report.violations.len();
        match report.status {
            Status::Ok => self.ok += 1,
            Status::Extension => self.extension += 1,
            Status::Error => self.error += 1,
            Status::Lossy => self.lossy += 1,
            Status::Unmatched => self.unmatched += 1,
        }
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} messages: {} ok, {} extension, {} error, {} lossy, {} unmatched; {} warning{}",
            self.messages,
            self.ok,
            self.extension,
            self.error,
            self.lossy,
            self.unmatched,
            self.warnings,
            if self.warnings == 1 { "" } else { "s" }
        )?;
        if self.violations > 0 {
            write!(f, "; {} rule violation{}", self.violations, if self.violations == 1 { "" } else { "s" })?;
        }
        Ok(())
    }
}

/// A request waiting for its response.
#[derive(Debug, Clone)]
struct Pending {
    method: String,
    line: usize,
    /// The `sessionId` of the params, if any.
    session: Option<String>,
    /// The `protocolVersion` of an `initialize` request.
    requested: Option<u64>,
}

/// Checks the messages of one conversation, in order. Keeps the negotiated version and the
/// requests awaiting a response, per direction (both sides may use the same ids).
#[derive(Debug)]
pub struct Checker {
    forced: Option<Version>,
    /// Set by the `initialize` request (what the client asked for), then by its response.
    version: Option<Version>,
    initialize_seen: bool,
    /// Keyed by the sender of the request and the id's JSON text.
    pending: HashMap<(Option<Role>, String), Pending>,
    /// The keys of `pending` in the order the requests came (entries already answered are
    /// skipped when met), to forget the oldest beyond [`MAX_PENDING`].
    order: VecDeque<((Option<Role>, String), usize)>,
    max_pending: usize,
    /// The request the message being checked answers (set by `check_response`).
    answered: Option<Pending>,
    judge: rules::Judge,
    /// The conversation the `proxy/successor` envelopes of this connection carry, once one came.
    #[cfg(feature = "unstable")]
    successor: Option<Box<Checker>>,
    /// This checker is a successor conversation's (envelopes in it are not unwrapped again).
    #[cfg(feature = "unstable")]
    nested: bool,
    /// The method that opened the connection (`initialize` or `proxy/initialize`).
    #[cfg(feature = "unstable")]
    opened_by: Option<String>,
    /// The `initialize` the proxy forwarded through `proxy/successor`, for `proxy/initialize`'s rules.
    #[cfg(feature = "unstable")]
    forwarded: envelope::Forwarded,
    /// The messages come unwrapped (the official conductor's trace): the successor conversation
    /// is the next link's, and [`Transcript`] judges `proxy/initialize`'s answer.
    #[cfg(feature = "unstable")]
    unwrapped: bool,
    /// The `protocolVersion` the answer to the opening request named.
    opening_answer: Option<u64>,
}

/// Unanswered requests remembered at most, by default: a live peer (`acp tap`) that never
/// answers cannot grow the checker without bound. The oldest are forgotten; a late answer to
/// one of them is reported as unmatched.
pub const MAX_PENDING: usize = 1 << 16;

impl Checker {
    /// A checker; `version` overrides what the `initialize` exchange negotiates (and lets a
    /// transcript start after it).
    pub fn new(version: Option<Version>) -> Self {
        Checker {
            forced: version,
            version: None,
            initialize_seen: false,
            pending: HashMap::new(),
            order: VecDeque::new(),
            max_pending: MAX_PENDING,
            answered: None,
            judge: rules::Judge::new(version.is_some()),
            #[cfg(feature = "unstable")]
            successor: None,
            #[cfg(feature = "unstable")]
            nested: false,
            #[cfg(feature = "unstable")]
            opened_by: None,
            #[cfg(feature = "unstable")]
            forwarded: envelope::Forwarded::default(),
            #[cfg(feature = "unstable")]
            unwrapped: false,
            opening_answer: None,
        }
    }

    /// The end of the conversation: findings about what never happened (a turn that never
    /// ended, a user message never reported, a line never answered). Call once.
    pub fn finish(&mut self) -> Vec<RuleViolation> {
        #[allow(unused_mut)]
        let mut found = self.judge.finish();
        #[cfg(feature = "unstable")]
        found.extend(self.finish_successor());
        found
    }

    /// How every rule of [`acp_rpc::rules::RULES`] fared so far, both sides together.
    pub fn rule_results(&self) -> Vec<RuleResult> {
        self.judge.results(None)
    }

    /// How every rule fared so far for the messages `side` sent.
    pub fn rule_results_of(&self, side: Role) -> Vec<RuleResult> {
        self.judge.results(Some(side))
    }

    /// Treats `method` as one the receiver does not implement, so that `rpc.method-not-found`
    /// applies to it (a driver's probe with a `_` name no one implements).
    pub fn treat_as_unknown(&mut self, method: &str) {
        self.judge.treat_as_unknown(method);
    }

    /// Records a finding a driver makes beyond single messages (a timeout, a comparison of
    /// several conversations): `rule` broken by `by`, caused at `line`.
    pub fn note_violation(&mut self, rule: &'static str, by: Role, line: usize, detail: String) {
        self.judge.note(rule, by, line, detail);
    }

    /// Records that `rule` could have been broken by `by` and was not (a driver's own check).
    pub fn note_exercised(&mut self, rule: &'static str, by: Role) {
        self.judge.exercise(rule, by);
    }

    /// Remembers at most `max` unanswered requests instead of [`MAX_PENDING`].
    pub fn with_max_pending(mut self, max: usize) -> Self {
        self.max_pending = max;
        self
    }

    /// The version messages are decoded with now, if known.
    pub fn version(&self) -> Option<Version> {
        self.forced.or(self.version)
    }

    /// The version to decode with: the known one, or before `initialize` the oldest.
    fn decoding_version(&self) -> Version {
        self.version().unwrap_or(Version::V1)
    }

    /// Checks one line of a transcript (a bare message or a record; see the module docs).
    pub fn check_line(&mut self, line_no: usize, line: &[u8]) -> Report {
        match parse_line(line) {
            Ok(value) => self.check_record(line_no, value),
            Err(reason) => Report::unreadable(line_no, reason),
        }
    }

    /// Checks one parsed line of a transcript (a bare message or a record without `link`).
    pub(crate) fn check_record(&mut self, line_no: usize, value: Value) -> Report {
        let mut report = Report::new(line_no);
        match value {
            Value::Object(mut record) if record.get("from").is_some_and(Value::is_string) => {
                let from = record.get("from").and_then(|from| Role::deserialize(from).ok());
                let Some(from) = from else {
                    report.error("from", "expected \"client\" or \"agent\"");
                    return report;
                };
                match (record.remove("message"), record.remove("line")) {
                    (Some(message), _) => self.check_value(line_no, Some(from), message),
                    (None, Some(Value::String(raw))) => {
                        let mut report = self.check_message(line_no, Some(from), raw.as_bytes());
                        report.from = Some(from);
                        report
                    }
                    _ => {
                        report.from = Some(from);
                        report.error("", "a record needs a `message` (or a `line` that was not JSON)");
                        report
                    }
                }
            }
            value => self.check_value(line_no, None, value),
        }
    }

    /// The report for a line not checked because it is longer than `limit` bytes (its `len`).
    pub fn over_long(&self, line_no: usize, from: Option<Role>, len: usize, limit: usize) -> Report {
        let mut report = Report::new(line_no);
        report.from = from;
        report.error("", format!("line of {len} bytes exceeds the {limit}-byte limit"));
        report
    }

    /// Checks one message as received from `from` (`None`: infer the sender from the method
    /// tables and the pending requests).
    pub fn check_message(&mut self, line_no: usize, from: Option<Role>, message: &[u8]) -> Report {
        let mut report = Report::new(line_no);
        report.from = from;
        let text = match std::str::from_utf8(message) {
            Ok(text) => text.trim_end_matches('\r'),
            Err(e) => {
                report.error("", format!("not UTF-8: {e}"));
                self.judge.invalid(&mut report, true);
                return report;
            }
        };
        match serde_json::from_str::<Value>(text) {
            Ok(value) => self.check_value(line_no, from, value),
            Err(e) => {
                report.error("", format!("invalid JSON: {e}"));
                self.judge.invalid(&mut report, true);
                report
            }
        }
    }

    /// Checks one parsed message.
    pub fn check_value(&mut self, line_no: usize, from: Option<Role>, message: Value) -> Report {
        let mut report = Report::new(line_no);
        report.from = from;
        let Value::Object(message) = message else {
            let what = if message.is_array() { "a batch (array); ACP has no batches" } else { "not a JSON object" };
            report.error("", format!("not a JSON-RPC message: {what}"));
            self.judge.invalid(&mut report, false);
            return report;
        };
        self.answered = None;
        self.check_object(&mut report, message.clone());
        if report.kind == Kind::Invalid {
            self.judge.invalid(&mut report, false);
        } else {
            let answered = self.answered.take();
            self.judge.observe(&mut report, self.version(), &message, answered.as_ref());
        }
        report
    }

    fn check_object(&mut self, report: &mut Report, mut message: Map<String, Value>) {
        match message.get("jsonrpc") {
            Some(Value::String(v)) if v == "2.0" => {}
            Some(other) => report.error("jsonrpc", format!("expected \"2.0\", found {other}")),
            None => report.error("jsonrpc", "missing field"),
        }
        let id = message.remove("id");
        if let Some(id) = &id {
            report.id = Some(id.to_string());
            if !(id.is_string() || id.is_i64() || id.is_u64() || id.is_null()) {
                report.error("id", format!("must be a string or an integer, found {id}"));
            }
        }
        match message.remove("method") {
            Some(Value::String(method)) => {
                report.kind = if id.is_some() { Kind::Request } else { Kind::Notification };
                let params = message.remove("params");
                #[cfg(feature = "unstable")]
                let envelope = (method == wire::PROXY_SUCCESSOR).then(|| (id.clone(), params.clone()));
                self.check_call(report, method, id, params);
                #[cfg(feature = "unstable")]
                if let Some((id, params)) = envelope {
                    self.envelope_call(report, id.as_ref(), params.as_ref());
                }
            }
            Some(other) => {
                report.error("method", format!("must be a string, found {other}"));
            }
            None => match (message.remove("result"), message.remove("error")) {
                (Some(_), Some(_)) => report.error("", "a response has `result` or `error`, not both"),
                (None, None) => report.error("", "not a JSON-RPC message: no `method`, `result` or `error`"),
                (Some(result), None) => {
                    report.kind = Kind::Response;
                    self.check_response(report, id, Ok(result));
                }
                (None, Some(error)) => {
                    report.kind = Kind::ErrorResponse;
                    self.check_response(report, id, Err(error));
                }
            },
        }
    }

    fn check_call(&mut self, report: &mut Report, method: String, id: Option<Value>, params: Option<Value>) {
        let kind = if id.is_some() { MessageKind::Request } else { MessageKind::Notification };
        report.method = Some(method.clone());
        let extension = method.starts_with('_');
        // The version to decode with: the initialize request brings its own.
        if wire::opens_connection(&method) && kind == MessageKind::Request {
            self.initialize_seen = true;
            #[cfg(feature = "unstable")]
            self.opened_by.get_or_insert_with(|| method.clone());
            if self.forced.is_none() {
                let requested = params.as_ref().and_then(|p| p.get("protocolVersion")).and_then(Value::as_u64);
                self.version = nearest_version(requested.unwrap_or(1));
            }
        } else if self.forced.is_none() && !self.initialize_seen && !extension {
            report.error("method", format!("`{method}` sent before `initialize`"));
        }
        let tables = tables(self.decoding_version());
        let row = tables.find(&method, kind);
        let from = report.from.or_else(|| row.and_then(|r| r.sender()));
        report.from = from;
        if let Some(id) = &id {
            let key = (from, id.to_string());
            // v2 forbids reusing a pending id (MUST); v1 has no such sentence (a SHOULD finding).
            let (rule, must) = match self.decoding_version() {
                Version::V2 => (acp_rpc::rules::UNIQUE_IDS, true),
                Version::V1 => (acp_rpc::rules::V1_UNIQUE_IDS, false),
            };
            if let Some(from) = from {
                self.judge.exercise(rule, from);
            }
            if let Some(previous) = self.pending.get(&key) {
                let detail = format!("{id} is still in use by `{}` (line {})", previous.method, previous.line);
                if must {
                    report.error("id", detail.clone());
                } else {
                    report.warnings.push(Warning { path: Some("id".into()), reason: detail.clone() });
                }
                if let Some(from) = from {
                    self.judge.violation(report, rule, from, detail);
                }
            }
            let param = |name: &str| params.as_ref().and_then(|p| p.get(name));
            let session = param("sessionId").and_then(Value::as_str).map(str::to_string);
            let requested = param("protocolVersion").and_then(Value::as_u64);
            self.remember(key, Pending { method: method.clone(), line: report.line, session, requested });
        }
        if report.status == Status::Error {
            return;
        }
        if extension {
            report.status = Status::Extension;
            return;
        }
        if let (Some(from), Some(row)) = (from, row) {
            if row.sender() == Some(from.peer()) {
                report.error("method", format!("`{method}` is sent to the {from}, not by it"));
                return;
            }
        }
        let receiver = Receiver::of(row, from);
        if let Some(row) = row {
            if row.stability == Stability::Unstable {
                report.warnings.push(Warning { path: None, reason: format!("`{method}` is unstable") });
            }
        }
        let raw = match params.as_ref().map(serde_json::value::to_raw_value).transpose() {
            Ok(raw) => raw,
            Err(e) => return report.error("params", e.to_string()),
        };
        let decode = |raw: Option<&RawValue>| lenient::collect(|| tables.decode(receiver, kind, &method, raw));
        let (decoded, events) = decode(raw.as_deref());
        match decoded {
            Err(e) => rpc_problem(report, "params", &e),
            Ok(reencoded) => {
                let again = |changed: &Value| decode(serde_json::value::to_raw_value(changed).ok().as_deref()).1;
                let (events, unknown) = not_in_schema(report, "params", params.as_ref(), events, &again);
                self.judge.unknown_values(report, &unknown);
                compare(report, "params", params.as_ref(), reencoded.as_ref(), events);
                if let Some(row) = row {
                    let empty = Value::Object(Map::new());
                    // Absent and `null` params read as `{}`, as the typed decoding reads them.
                    let params = params.as_ref().filter(|p| !p.is_null()).unwrap_or(&empty);
                    validate(report, self.decoding_version(), row.params, "params", params);
                }
            }
        }
    }

    /// Records a request awaiting its response, forgetting the oldest beyond the maximum.
    fn remember(&mut self, key: (Option<Role>, String), pending: Pending) {
        self.order.push_back((key.clone(), pending.line));
        self.pending.insert(key, pending);
        while self.pending.len() > self.max_pending {
            let Some((key, line)) = self.order.pop_front() else { break };
            if self.pending.get(&key).is_some_and(|p| p.line == line) {
                self.pending.remove(&key);
                // A late answer to it would look like an answer to nothing.
                self.judge.forgot(key.0, &key.1);
            }
        }
        // Answered requests leave stale entries behind; drop them once they are the majority.
        if self.order.len() > 2 * self.max_pending.max(self.pending.len()) {
            let pending = &self.pending;
            self.order.retain(|(key, line)| pending.get(key).is_some_and(|p| p.line == *line));
        }
    }

    fn check_response(&mut self, report: &mut Report, id: Option<Value>, payload: Result<Value, Value>) {
        let Some(id) = id else {
            report.error("id", "missing field");
            return;
        };
        if let Err(error) = &payload {
            check_error_object(report, error);
        }
        if id.is_null() {
            // An answer to something that could not be read: nothing to match.
            if payload.is_ok() {
                report.error("id", "a result needs the id of the request it answers");
            }
            return;
        }
        let key = id.to_string();
        // The request was sent by the other side; with an unknown sender, by either.
        let found = match report.from {
            Some(from) => self
                .pending
                .remove(&(Some(from.peer()), key.clone()))
                .or_else(|| self.pending.remove(&(None, key.clone())))
                .map(|p| (Some(from.peer()), p)),
            None => {
                let mut candidates: Vec<_> =
                    self.pending.iter().filter(|((_, k), _)| *k == key).map(|((s, _), p)| (*s, p.line)).collect();
                candidates.sort_by_key(|(_, line)| *line);
                candidates.first().map(|(s, _)| *s).and_then(|s| self.pending.remove(&(s, key.clone())).map(|p| (s, p)))
            }
        };
        let Some((requester, pending)) = found else {
            if report.status != Status::Error {
                report.status = Status::Unmatched;
                let whose =
                    report.from.map_or_else(|| "either side".to_string(), |from| format!("the {}", from.peer()));
                report.problems.push(Problem {
                    path: "id".into(),
                    reason: format!("no request of {whose} with id {id} is pending"),
                });
            }
            return;
        };
        report.from = report.from.or(requester.map(Role::peer));
        report.method = Some(pending.method.clone());
        let method = pending.method.clone();
        self.answered = Some(pending);
        #[cfg(feature = "unstable")]
        if method == wire::PROXY_SUCCESSOR {
            self.envelope_response(report, &id, &payload);
        } else if method == wire::PROXY_INITIALIZE {
            self.proxy_initialize_answered(report, &payload);
        }
        let Ok(result) = payload else {
            return;
        };
        if report.status == Status::Error {
            return;
        }
        if method.starts_with('_') {
            report.status = Status::Extension;
            return;
        }
        if wire::opens_connection(&method) && self.forced.is_none() {
            // The answer is in the version it names, which may be lower than the one asked: from
            // here on (this answer included) messages decode with it.
            let answered = result.get("protocolVersion").and_then(Value::as_u64);
            self.opening_answer = answered;
            match answered.map(|v| u16::try_from(v).ok().and_then(Version::from_number)) {
                Some(Some(v)) => self.version = Some(v),
                Some(None) => report.error(
                    "result.protocolVersion",
                    format!(
                        "protocol version {} is not one this tool knows ({:?})",
                        answered.unwrap_or_default(),
                        Version::ALL.iter().map(|v| v.number()).collect::<Vec<_>>()
                    ),
                ),
                None => {}
            }
        }
        let tables = tables(self.decoding_version());
        let row = tables.find(&method, MessageKind::Request);
        let receiver = Receiver::of(row, requester);
        let raw = match serde_json::value::to_raw_value(&result) {
            Ok(raw) => raw,
            Err(e) => return report.error("result", e.to_string()),
        };
        let decode =
            |raw: &RawValue| lenient::collect(|| tables.decode_response(receiver, &method, Some(raw)).map(Some));
        let (decoded, events) = decode(&raw);
        match decoded {
            Err(e) => rpc_problem(report, "result", &e),
            Ok(reencoded) => {
                let again = |changed: &Value| match serde_json::value::to_raw_value(changed) {
                    Ok(raw) => decode(&raw).1,
                    Err(_) => Vec::new(),
                };
                let (events, unknown) = not_in_schema(report, "result", Some(&result), events, &again);
                self.judge.unknown_values(report, &unknown);
                compare(report, "result", Some(&result), reencoded.as_ref(), events);
                if let Some(def) = row.and_then(|row| row.result) {
                    validate(report, self.decoding_version(), def, "result", &result);
                }
            }
        }
    }
}

/// One line of a transcript as JSON, or why it is not (see [`Report::unreadable`]).
fn parse_line(line: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(line).map_err(|e| format!("not UTF-8: {e}"))?;
    serde_json::from_str(text.trim_end_matches('\r')).map_err(|e| format!("invalid JSON: {e}"))
}

/// The newest known version at or below `requested` (the oldest known one below that).
fn nearest_version(requested: u64) -> Option<Version> {
    Version::ALL.iter().rev().copied().find(|v| u64::from(v.number()) <= requested).or(Version::ALL.first().copied())
}

/// A row of a version's method table, as the checker needs it (the typed side stays with the
/// version's tables, behind `index`).
#[derive(Debug, Clone, Copy)]
struct Row {
    index: usize,
    /// The end that receives the method, when it is one of the two.
    receiver: Option<Role>,
    stability: Stability,
    /// The schema names (`$defs`) of the params and result types.
    params: &'static str,
    result: Option<&'static str>,
}

impl Row {
    /// The end that sends the method, when it is one of the two.
    fn sender(self) -> Option<Role> {
        self.receiver.map(Role::peer)
    }
}

/// The side a message is decoded as received by: its row's, or, for a method the table does not
/// have, the side of the end that is the sender's peer (the agent's when the sender is unknown).
#[derive(Debug, Clone, Copy)]
enum Receiver {
    Row(usize),
    Role(Role),
}

impl Receiver {
    fn of(row: Option<Row>, sender: Option<Role>) -> Receiver {
        match row {
            Some(row) => Receiver::Row(row.index),
            None => Receiver::Role(sender.map_or(Role::Agent, Role::peer)),
        }
    }
}

/// One version's tables behind a version-independent interface, so that the checker's logic is
/// written once for every version.
trait VersionTables: Sync {
    fn find(&self, method: &str, kind: MessageKind) -> Option<Row>;
    fn decode(
        &self,
        receiver: Receiver,
        kind: MessageKind,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Option<Value>, RpcError>;
    fn decode_response(&self, receiver: Receiver, method: &str, result: Option<&RawValue>) -> Result<Value, RpcError>;
}

struct Of<T>(PhantomData<fn() -> T>);

impl<T: Tables> Of<T> {
    fn side(receiver: Receiver, method: &str) -> Result<T::Side, RpcError> {
        let side = match receiver {
            Receiver::Row(index) => T::METHODS.get(index).map(|row| row.side),
            Receiver::Role(role) => <T::Side as rpc::Side>::of_role(role),
        };
        side.ok_or_else(|| RpcError::method_not_found(method))
    }
}

impl<T: Tables> VersionTables for Of<T> {
    fn find(&self, method: &str, kind: MessageKind) -> Option<Row> {
        let rows = T::METHODS;
        let index = rows
            .iter()
            .position(|r| r.name == method && r.kind == kind)
            .or_else(|| rows.iter().position(|r| r.name == method))?;
        let row = &rows[index];
        Some(Row {
            index,
            receiver: rpc::Side::role(row.side),
            stability: row.stability,
            params: row.params,
            result: row.result,
        })
    }

    fn decode(
        &self,
        receiver: Receiver,
        kind: MessageKind,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Option<Value>, RpcError> {
        T::decode(Self::side(receiver, method)?, kind, method, params)
    }

    fn decode_response(&self, receiver: Receiver, method: &str, result: Option<&RawValue>) -> Result<Value, RpcError> {
        T::decode_response(Self::side(receiver, method)?, method, result)
    }
}

/// The tables of `version`.
fn tables(version: Version) -> &'static dyn VersionTables {
    match version {
        Version::V1 => &Of::<v1::methods::Tables>(PhantomData),
        Version::V2 => &Of::<v2::methods::Tables>(PhantomData),
    }
}

/// Turns a decode error into a problem with a path from the message root.
fn rpc_problem(report: &mut Report, root: &str, error: &RpcError) {
    let data = error.data.as_ref();
    match error.code {
        RpcError::INVALID_PARAMS => {
            let path = data.and_then(|d| d.get("path")).and_then(Value::as_str).unwrap_or("");
            let reason = data.and_then(|d| d.get("reason")).and_then(Value::as_str).unwrap_or(&error.message);
            let mut path = join(root, path);
            let mut reason = reason.to_string();
            // `missing field `x``: the path names the field itself.
            if let Some(rest) = reason.strip_prefix("missing field `") {
                if let Some((field, tail)) = rest.split_once('`') {
                    path = join(&path, field);
                    reason = format!("missing field{tail}");
                }
            }
            report.error(path, reason);
        }
        RpcError::METHOD_NOT_FOUND => report.error("method", error.message.clone()),
        _ => report.error(root, error.message.clone()),
    }
}

/// Checks the shape of a JSON-RPC error object.
fn check_error_object(report: &mut Report, error: &Value) {
    let Value::Object(error) = error else {
        return report.error("error", format!("must be an object, found {error}"));
    };
    match error.get("code") {
        Some(code) if code.as_i64().is_some_and(|c| i32::try_from(c).is_ok()) => {}
        Some(code) => report.error("error.code", format!("must be a 32-bit integer, found {code}")),
        None => report.error("error.code", "missing field"),
    }
    match error.get("message") {
        Some(Value::String(_)) => {}
        Some(other) => report.error("error.message", format!("must be a string, found {other}")),
        None => report.error("error.message", "missing field"),
    }
}

/// `root` + `path` (a path as `rpc::decode_params` gives it, in `serde_path_to_error`'s form: `.` for the root).
fn join(root: &str, path: &str) -> String {
    match path {
        "" | "." => root.to_string(),
        p if p.starts_with('[') => format!("{root}{p}"),
        p if root.is_empty() => p.to_string(),
        p => format!("{root}.{p}"),
    }
}

fn key_path(root: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    if plain {
        join(root, key)
    } else {
        format!("{root}[{}]", Value::String(key.to_string()))
    }
}

/// Compares what was received with its re-encoding. Differences that lenient decoding explains
/// become warnings; the rest make the message `lossy`.
fn compare(
    report: &mut Report,
    root: &str,
    received: Option<&Value>,
    reencoded: Option<&Value>,
    events: Vec<LenientEvent>,
) {
    let empty = Value::Object(Map::new());
    // Absent and `null` params read as `{}`: an empty re-encoding of those is faithful.
    let received = match received {
        None | Some(Value::Null) if reencoded.is_none_or(|r| *r == empty) => return note_events(report, events),
        other => other,
    };
    let mut events: Vec<Option<LenientEvent>> = events.into_iter().map(Some).collect();
    let mut changes = Vec::new();
    diff(root, received, reencoded, &mut events, report, &mut changes);
    for change in changes {
        let explained = change.received.as_ref().and_then(|old| {
            let same = |text: &str| serde_json::from_str::<Value>(text).is_ok_and(|v| json_equal(&v, old));
            events.iter_mut().find_map(|slot| match slot {
                Some(LenientEvent::DefaultOnError { value, .. }) if same(value) => slot.take(),
                Some(LenientEvent::DefaultOnNull) if old.is_null() => slot.take(),
                _ => None,
            })
        });
        match explained {
            Some(LenientEvent::DefaultOnError { error, value }) => report.warnings.push(Warning {
                path: Some(change.path),
                reason: format!("default-on-error: {value} replaced by the default ({error})"),
            }),
            Some(_) => report.warnings.push(Warning {
                path: Some(change.path),
                reason: "default-on-null: null replaced by the default".into(),
            }),
            None => report.differences.push(change),
        }
    }
    note_events(report, events.into_iter().flatten().collect());
    if !report.differences.is_empty() && report.status != Status::Error {
        report.status = Status::Lossy;
    }
}

/// A warning for each value that only a catch-all the generator added kept (the value is written
/// back as received, but this schema does not list it); the other events are handed back, with
/// the values (path, JSON text) for the rules.
fn not_in_schema(
    report: &mut Report,
    root: &str,
    received: Option<&Value>,
    events: Vec<LenientEvent>,
    decode: &dyn Fn(&Value) -> Vec<LenientEvent>,
) -> (Vec<LenientEvent>, Vec<(Option<String>, String)>) {
    let (found, rest) = not_in_schema::locate(root, received, events, decode);
    let values = found.iter().map(|f| (f.path.clone(), f.value.clone())).collect();
    report.warnings.extend(found.into_iter().map(|f| Warning { path: f.path, reason: f.reason }));
    (rest, values)
}

/// Validates `instance` (at `root`) against `#/$defs/{def}` of `version`'s JSON Schema; each
/// violation is an error, except where a warning already explains it: a violation at or under a
/// value lenient decoding repaired or a catch-all kept, or a union (`anyOf`/`oneOf`) failing
/// because of such a value inside it.
fn validate(report: &mut Report, version: Version, def: &str, root: &str, instance: &Value) {
    let warned: Vec<&str> = report.warnings.iter().filter_map(|w| w.path.as_deref()).collect();
    let explained = |v: &schema::Violation| {
        warned
            .iter()
            .any(|w| within(&v.path, w) || (matches!(v.keyword.as_str(), "anyOf" | "oneOf") && within(w, &v.path)))
    };
    let errors: Vec<Problem> = schema::violations(version, def, root, instance)
        .into_iter()
        .filter(|v| !explained(v))
        .map(|v| Problem { path: v.path, reason: v.reason })
        .collect();
    for problem in errors {
        report.error(problem.path, problem.reason);
    }
}

/// Whether the value at `path` is the one at `ancestor` or inside it.
fn within(path: &str, ancestor: &str) -> bool {
    path.strip_prefix(ancestor).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Lenient repairs that left no trace in the JSON (or could not be located).
fn note_events(report: &mut Report, events: Vec<LenientEvent>) {
    for event in events {
        let reason = match event {
            LenientEvent::DefaultOnError { error, value } => {
                format!("default-on-error: {value} replaced by the default ({error})")
            }
            LenientEvent::SkippedItem { index, error } => {
                format!("skip-invalid-items: item [{index}] dropped ({error})")
            }
            LenientEvent::DefaultOnNull => "default-on-null: null replaced by the default".into(),
            LenientEvent::NotInSchema { ty, value, .. } => format!("{ty}: {value} not in this schema; kept"),
        };
        report.warnings.push(Warning { path: None, reason });
    }
}

/// Structural difference; arrays shorter after decoding are aligned with the skipped items that
/// lenient decoding recorded.
fn diff(
    path: &str,
    old: Option<&Value>,
    new: Option<&Value>,
    events: &mut [Option<LenientEvent>],
    report: &mut Report,
    out: &mut Vec<Difference>,
) {
    match (old, new) {
        (None, None) => {}
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            for (key, value) in a {
                diff(&key_path(path, key), Some(value), b.get(key), events, report, out);
            }
            for (key, value) in b {
                if !a.contains_key(key) {
                    diff(&key_path(path, key), None, Some(value), events, report, out);
                }
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            let mut extra = a.len().saturating_sub(b.len());
            let mut j = 0;
            for (i, item) in a.iter().enumerate() {
                let at = format!("{path}[{i}]");
                if extra > 0 {
                    let skipped = events
                        .iter_mut()
                        .find(|e| matches!(e, Some(LenientEvent::SkippedItem { index, .. }) if *index == i));
                    if let Some(slot) = skipped {
                        if let Some(LenientEvent::SkippedItem { error, .. }) = slot.take() {
                            report.warnings.push(Warning {
                                path: Some(at),
                                reason: format!("skip-invalid-items: item dropped ({error})"),
                            });
                        }
                        extra -= 1;
                        continue;
                    }
                }
                diff(&at, Some(item), b.get(j), events, report, out);
                j += 1;
            }
            for (k, item) in b.iter().enumerate().skip(j) {
                diff(&format!("{path}[{k}]"), None, Some(item), events, report, out);
            }
        }
        (Some(a), Some(b)) if json_equal(a, b) => {}
        (a, b) => out.push(Difference { path: path.to_string(), received: a.cloned(), reencoded: b.cloned() }),
    }
}

/// JSON equality with numbers compared by value (`1` and `1.0` are the same number).
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(x), Some(y), _, _) => x == y,
            (_, _, Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

impl fmt::Display for Report {
    /// One line per message, then one indented line per problem, difference or warning.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let direction = match self.from {
            Some(from) => format!("{from} → {}", from.peer()),
            None => "? → ?".to_string(),
        };
        write!(f, "{:>5}  ", self.line)?;
        if let Some(link) = self.link {
            write!(f, "link {link}  ")?;
        }
        write!(f, "{direction:<15} {}", self.kind)?;
        if let Some(method) = &self.method {
            write!(f, " {method}")?;
        }
        if let Some(wrapped) = &self.wrapped {
            write!(f, " [{wrapped}]")?;
        }
        if let Some(id) = &self.id {
            write!(f, " (id {id})")?;
        }
        write!(f, "  {}", self.status)?;
        for p in &self.problems {
            if p.path.is_empty() {
                write!(f, "\n         {}", p.reason)?;
            } else {
                write!(f, "\n         {}: {}", p.path, p.reason)?;
            }
        }
        for d in &self.differences {
            let show = |v: &Option<Value>| v.as_ref().map_or_else(|| "(absent)".to_string(), Value::to_string);
            write!(f, "\n         {}: received {}, re-encoded {}", d.path, show(&d.received), show(&d.reencoded))?;
        }
        for w in &self.warnings {
            match &w.path {
                Some(path) => write!(f, "\n         warning: {path}: {}", w.reason)?,
                None => write!(f, "\n         warning: {}", w.reason)?,
            }
        }
        for v in &self.violations {
            // The report's line names the link already.
            match v.link {
                Some(_) if v.link == self.link => {
                    write!(f, "\n         {}", RuleViolation { link: None, ..v.clone() })?
                }
                _ => write!(f, "\n         {v}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(lines: &[Value]) -> Vec<Report> {
        let mut checker = Checker::new(None);
        lines.iter().enumerate().map(|(i, l)| checker.check_line(i + 1, l.to_string().as_bytes())).collect()
    }

    #[test]
    fn nested_paths_through_unions_and_missing_fields() {
        let reports = check(&[
            serde_json::json!({"from":"client","message":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}}),
            serde_json::json!({"from":"agent","message":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}}),
            serde_json::json!({"from":"agent","message":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","title":"x"}}}}),
            serde_json::json!({"from":"agent","message":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}}}}),
        ]);
        assert_eq!(reports[0].status, Status::Ok, "{}", reports[0]);
        assert_eq!(reports[1].status, Status::Ok, "{}", reports[1]);
        assert_eq!(reports[2].problems[0].path, "params.update.toolCallId", "{}", reports[2]);
        assert!(reports[2].problems[0].reason.starts_with("missing field"), "{}", reports[2]);
        assert_eq!(reports[3].problems[0].path, "params.update.content.text", "{}", reports[3]);
    }

    #[test]
    fn same_ids_both_ways_and_version_from_initialize() {
        let reports = check(&[
            serde_json::json!({"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2}}}),
            serde_json::json!({"from":"agent","message":{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{}}}),
            serde_json::json!({"from":"agent","message":{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":2}}}),
            serde_json::json!({"from":"client","message":{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}}),
        ]);
        assert_eq!(reports[2].method.as_deref(), Some("initialize"), "{}", reports[2]);
        assert_eq!(reports[3].method.as_deref(), Some("session/request_permission"), "{}", reports[3]);
        assert_eq!(reports[3].status, Status::Ok, "{}", reports[3]);
    }

    #[test]
    fn unanswered_requests_are_remembered_up_to_a_bound() {
        const MAX: usize = 100;
        let mut checker = Checker::new(Some(Version::V1)).with_max_pending(MAX);
        let request = |id: usize| serde_json::json!({"from":"client","message":{"jsonrpc":"2.0","id":id,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}});
        let response = |id: usize| serde_json::json!({"from":"agent","message":{"jsonrpc":"2.0","id":id,"result":{"sessionId":"s"}}});
        let total = MAX + 10;
        for id in 0..total {
            checker.check_line(id + 1, request(id).to_string().as_bytes());
        }
        assert_eq!(checker.pending.len(), MAX);
        assert!(checker.order.len() <= 2 * MAX);
        // The oldest were forgotten, the newest are still matched.
        assert_eq!(checker.check_line(total + 1, response(0).to_string().as_bytes()).status, Status::Unmatched);
        assert_eq!(checker.check_line(total + 2, response(total - 1).to_string().as_bytes()).status, Status::Ok);
    }

    #[test]
    fn schema_constraints_the_types_do_not_enforce_are_errors() {
        let reports = check(&[
            serde_json::json!({"from":"client","message":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}}),
            serde_json::json!({"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}}),
            serde_json::json!({"from":"client","message":{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"x","annotations":{"priority":2}}]}}}),
        ]);
        assert_eq!(reports[1].status, Status::Error, "{}", reports[1]);
        assert_eq!(reports[1].problems.len(), 1, "{}", reports[1]);
        let problem = &reports[1].problems[0];
        assert_eq!(problem.path, "params.prompt", "{}", reports[1]);
        assert!(problem.reason.contains("`minItems`"), "{}", reports[1]);
        assert!(problem.reason.contains("(The blocks of content that compose the user's message.)"), "{}", reports[1]);
        // Through a `$ref` and two unions, to the value itself.
        assert_eq!(reports[2].problems[0].path, "params.prompt[0].annotations.priority", "{}", reports[2]);
        assert!(reports[2].problems[0].reason.contains("`maximum`"), "{}", reports[2]);
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(json_equal(&serde_json::json!(1), &serde_json::json!(1.0)));
        assert!(!json_equal(&serde_json::json!(1), &serde_json::json!(2)));
        assert!(!json_equal(&serde_json::json!({"a": 1}), &serde_json::json!({"a": 1, "b": 2})));
    }

    #[test]
    fn an_over_long_line_is_an_error_that_says_its_size() {
        let report = Checker::new(None).over_long(7, Some(Role::Agent), 200, 100);
        assert_eq!(
            (report.line, report.from, report.status, report.kind),
            (7, Some(Role::Agent), Status::Error, Kind::Invalid)
        );
        assert_eq!(
            report.problems,
            [Problem { path: String::new(), reason: "line of 200 bytes exceeds the 100-byte limit".into() }]
        );
    }
}
