//! The checker: decodes each message of a conversation with the negotiated version's tables,
//! re-encodes it, and reports what is invalid, lossy or against a rule.

use acp_rpc::rules::RuleId;
use acp_types::support::lenient::{self, LenientEvent};
use acp_types::support::rpc::{MessageKind, Role, RpcError, Stability};
use acp_types::Version;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::diff::{compare, join, within};
use super::ext::{ExtSchemas, Part};
use super::pending::Pending;
use super::report::{Kind, Problem, Report, RuleResult, RuleViolation, Status, Warning};
use super::tables::{tables, Receiver};
use super::{not_in_schema, rules, schema, wire};

/// Checks the messages of one conversation, in order. Keeps the negotiated version and the
/// requests awaiting a response, per direction (both sides may use the same ids).
#[derive(Debug)]
pub struct Checker {
    pub(super) forced: Option<Version>,
    /// Set by the `initialize` request (what the client asked for), then by its response.
    pub(super) version: Option<Version>,
    pub(super) initialize_seen: bool,
    /// Keyed by the sender of the request and the id's JSON text.
    pub(super) pending: HashMap<(Option<Role>, String), Pending>,
    /// The keys of `pending` in the order the requests came (entries already answered are
    /// skipped when met), to forget the oldest beyond [`MAX_PENDING`].
    pub(super) order: VecDeque<((Option<Role>, String), usize)>,
    pub(super) max_pending: usize,
    /// The request the message being checked answers (set by `check_response`).
    pub(super) answered: Option<Pending>,
    pub(super) judge: rules::Judge,
    /// The conversation the `proxy/successor` envelopes of this connection carry, once one came.
    #[cfg(feature = "unstable")]
    pub(super) successor: Option<Box<Checker>>,
    /// This checker is a successor conversation's (envelopes in it are not unwrapped again).
    #[cfg(feature = "unstable")]
    pub(super) nested: bool,
    /// The method that opened the connection (`initialize` or `proxy/initialize`).
    #[cfg(feature = "unstable")]
    pub(super) opened_by: Option<String>,
    /// The `initialize` the proxy forwarded through `proxy/successor`, for `proxy/initialize`'s rules.
    #[cfg(feature = "unstable")]
    pub(super) forwarded: Forwarded,
    /// The messages come unwrapped (the official conductor's trace): the successor conversation
    /// is the next link's, and [`Transcript`] judges `proxy/initialize`'s answer.
    #[cfg(feature = "unstable")]
    pub(super) unwrapped: bool,
    /// The `protocolVersion` the answer to the opening request named.
    pub(super) opening_answer: Option<u64>,
    /// `--ext`: the extension schemas extension messages are validated against.
    pub(super) ext: Option<Arc<ExtSchemas>>,
}

#[cfg(feature = "unstable")]
/// The `initialize` the proxy forwarded (through `proxy/successor`, see `envelope`) to its successor, and the successor's answer.
#[derive(Debug, Default)]
pub(super) struct Forwarded {
    /// Line of the first `initialize` the proxy sent through `proxy/successor`.
    pub(super) line: Option<usize>,
    /// The id (JSON text) of its envelope.
    pub(super) id: Option<String>,
    /// The `protocolVersion` the successor answered it with, and the line of the answer.
    pub(super) answered: Option<(u64, usize)>,
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
            forwarded: Forwarded::default(),
            #[cfg(feature = "unstable")]
            unwrapped: false,
            opening_answer: None,
            ext: None,
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
    pub fn note_violation(&mut self, rule: RuleId, by: Role, line: usize, detail: String) {
        self.judge.note(rule, by, line, detail);
    }

    /// Records that `rule` could have been broken by `by` and was not (a driver's own check).
    pub fn note_exercised(&mut self, rule: RuleId, by: Role) {
        self.judge.exercise(rule, by);
    }

    /// The requests `sender` sent that still await their response, in the order they were sent:
    /// their line, method and id (JSON text). A driver that knows the conversation is over
    /// (`acp conform`) judges them; a transcript may simply end before the answers.
    fn unanswered(&self, sender: Role) -> Vec<(usize, String, String)> {
        let mut found: Vec<(usize, String, String)> = self
            .pending
            .iter()
            .filter(|((from, _), _)| *from == Some(sender))
            .map(|((_, id), pending)| (pending.line, pending.method.clone(), id.clone()))
            .collect();
        found.sort();
        found
    }

    /// `rpc.reply`, for a driver that knows the conversation is over: each of the `sent` requests
    /// `sender` sent was answered (however late); each one still pending is a violation by the
    /// receiver, with the request as evidence.
    pub fn judge_replies(&mut self, sender: Role, sent: usize) {
        let unanswered = self.unanswered(sender);
        for _ in unanswered.len()..sent {
            self.judge.exercise(RuleId::Reply, sender.peer());
        }
        for (line, method, id) in unanswered {
            let detail = format!("the request `{method}` (line {line}, id {id}) was never answered");
            self.judge.note(RuleId::Reply, sender.peer(), line, detail);
        }
    }

    /// Validates extension messages against `ext` (`acp check --ext`): `ok` or `error` instead
    /// of `extension` for the methods it describes.
    pub fn with_ext(mut self, ext: Arc<ExtSchemas>) -> Self {
        self.ext = Some(ext);
        self
    }

    /// An extension message's `params` or `result`: `extension` when no extension schema
    /// describes it, else `ok` or an `error` per violation, at its JSON path.
    fn check_extension(&self, report: &mut Report, method: &str, part: Part, value: Option<&Value>) {
        let value = value.cloned().unwrap_or(Value::Null);
        match self.ext.as_ref().and_then(|ext| ext.violations(method, part, &value)) {
            None => report.status = Status::Extension,
            Some(violations) => {
                for (path, reason) in violations {
                    report.error(path, reason);
                }
            }
        }
    }

    /// The `_meta` of a core message's params or result (at `root`, of the core type `core`)
    /// against the extension schemas' `x-meta-of` entries: an `error` per violation.
    fn check_meta(&self, report: &mut Report, core: &str, root: &str, value: Option<&Value>) {
        let (Some(ext), Some(meta)) = (&self.ext, value.and_then(|v| v.get("_meta"))) else {
            return;
        };
        for (path, reason) in ext.meta_violations(core, &format!("{root}._meta"), meta) {
            report.error(path, reason);
        }
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
            self.judge.schema(&report, &message);
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
                let envelope =
                    matches!(acp_types::MethodName::of(&method), Some(acp_types::MethodName::ProxySuccessor))
                        .then(|| (id.clone(), params.clone()));
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
            report.rule_error("method", format!("`{method}` sent before `initialize`"));
        }
        let tables = tables(self.decoding_version());
        let row = tables.find(&method, kind);
        let from = report.from.or_else(|| row.and_then(|r| r.sender()));
        report.from = from;
        if let Some(id) = &id {
            self.track_request(report, &method, from, id, params.as_ref());
        }
        if report.status == Status::Error {
            return;
        }
        if extension {
            return self.check_extension(report, &method, Part::Params, params.as_ref());
        }
        if let (Some(from), Some(row)) = (from, row) {
            if row.sender() == Some(from.peer()) {
                report.error("method", format!("`{method}` is sent to the {from}, not by it"));
                return;
            }
        }
        if let Some(row) = row {
            self.check_meta(report, row.params, "params", params.as_ref());
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
            // A method no table has is no schema's to judge (`ext.underscore` is).
            Err(e) if row.is_none() && e.code == RpcError::METHOD_NOT_FOUND => report.rule_error("method", e.message),
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

    /// A request of `from` with `id`: its id not in use by another pending request, and
    /// remembered until its answer.
    fn track_request(
        &mut self,
        report: &mut Report,
        method: &str,
        from: Option<Role>,
        id: &Value,
        params: Option<&Value>,
    ) {
        let key = (from, id.to_string());
        // v2 forbids reusing a pending id (MUST); v1 has no such sentence (a SHOULD finding).
        let (rule, must) = match self.decoding_version() {
            Version::V2 => (RuleId::UniqueIds, true),
            Version::V1 => (RuleId::V1UniqueIds, false),
        };
        if let Some(from) = from {
            self.judge.exercise(rule, from);
        }
        if let Some(previous) = self.pending.get(&key) {
            let detail = format!("{id} is still in use by `{}` (line {})", previous.method, previous.line);
            if must {
                report.rule_error("id", detail.clone());
            } else {
                report.warnings.push(Warning { path: Some("id".into()), reason: detail.clone() });
            }
            if let Some(from) = from {
                self.judge.violation(report, rule, from, detail);
            }
        }
        let param = |name: &str| params.and_then(|p| p.get(name));
        let session = param("sessionId").and_then(Value::as_str).map(str::to_string);
        let requested = param("protocolVersion").and_then(Value::as_u64);
        self.remember(key, Pending { method: method.to_string(), line: report.line, session, requested });
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
        let Some((requester, pending)) = self.take_pending(report.from, &id.to_string()) else {
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
        match acp_types::MethodName::of(&method) {
            Some(acp_types::MethodName::ProxySuccessor) => self.envelope_response(report, &id, &payload),
            Some(acp_types::MethodName::ProxyInitialize) => self.proxy_initialize_answered(report, &payload),
            _ => {}
        }
        let Ok(result) = payload else {
            return;
        };
        if report.status == Status::Error {
            return;
        }
        if method.starts_with('_') {
            return self.check_extension(report, &method, Part::Result, Some(&result));
        }
        let row = tables(self.decoding_version()).find(&method, MessageKind::Request);
        if let Some(core) = row.and_then(|row| row.result) {
            self.check_meta(report, core, "result", Some(&result));
        }
        if wire::opens_connection(&method) && self.forced.is_none() {
            self.answered_version(report, &result);
        }
        self.check_result(report, &method, requester, &result);
    }

    /// A result decoded with the tables of the version (the receiver's side), compared with what
    /// came, and validated against the schema.
    fn check_result(&mut self, report: &mut Report, method: &str, requester: Option<Role>, result: &Value) {
        let tables = tables(self.decoding_version());
        let row = tables.find(method, MessageKind::Request);
        let receiver = Receiver::of(row, requester);
        let raw = match serde_json::value::to_raw_value(result) {
            Ok(raw) => raw,
            Err(e) => return report.error("result", e.to_string()),
        };
        let decode =
            |raw: &RawValue| lenient::collect(|| tables.decode_response(receiver, method, Some(raw)).map(Some));
        let (decoded, events) = decode(&raw);
        match decoded {
            Err(e) if row.is_none() && e.code == RpcError::METHOD_NOT_FOUND => report.rule_error("method", e.message),
            Err(e) => rpc_problem(report, "result", &e),
            Ok(reencoded) => {
                let again = |changed: &Value| match serde_json::value::to_raw_value(changed) {
                    Ok(raw) => decode(&raw).1,
                    Err(_) => Vec::new(),
                };
                let (events, unknown) = not_in_schema(report, "result", Some(result), events, &again);
                self.judge.unknown_values(report, &unknown);
                compare(report, "result", Some(result), reencoded.as_ref(), events);
                if let Some(def) = row.and_then(|row| row.result) {
                    validate(report, self.decoding_version(), def, "result", result);
                }
            }
        }
    }

    /// The pending request a response with id `key` answers, taken: one of the other side's,
    /// or with an unknown sender, the oldest of either side's.
    fn take_pending(&mut self, from: Option<Role>, key: &str) -> Option<(Option<Role>, Pending)> {
        let key = key.to_string();
        match from {
            Some(from) => self
                .pending
                .remove(&(Some(from.peer()), key.clone()))
                .or_else(|| self.pending.remove(&(None, key)))
                .map(|p| (Some(from.peer()), p)),
            None => {
                let mut candidates: Vec<_> =
                    self.pending.iter().filter(|((_, k), _)| *k == key).map(|((s, _), p)| (*s, p.line)).collect();
                candidates.sort_by_key(|(_, line)| *line);
                let requester = candidates.first().map(|(s, _)| *s)?;
                self.pending.remove(&(requester, key)).map(|p| (requester, p))
            }
        }
    }

    /// The version an `initialize` result names, which may be lower than the one asked: from here
    /// on (this answer included) messages decode with it.
    fn answered_version(&mut self, report: &mut Report, result: &Value) {
        let answered = result.get("protocolVersion").and_then(Value::as_u64);
        self.opening_answer = answered;
        match answered.map(|v| u16::try_from(v).ok().and_then(Version::from_number)) {
            Some(Some(v)) => self.version = Some(v),
            Some(None) => report.rule_error(
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
}

/// One line of a transcript as JSON, or why it is not (see [`Report::unreadable`]).
pub(super) fn parse_line(line: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(line).map_err(|e| format!("not UTF-8: {e}"))?;
    serde_json::from_str(text.trim_end_matches('\r')).map_err(|e| format!("invalid JSON: {e}"))
}

/// The newest known version at or below `requested` (the oldest known one below that).
fn nearest_version(requested: u64) -> Option<Version> {
    Version::ALL.iter().rev().copied().find(|v| u64::from(v.number()) <= requested).or(Version::ALL.first().copied())
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
