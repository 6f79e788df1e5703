//! A proxy's connection carries two conversations: the plain messages between the proxy and its
//! predecessor, and, wrapped in `proxy/successor` envelopes, those between the proxy and its
//! successor, with their own `initialize`, ids and sessions. This module unwraps each envelope
//! and checks the wrapped message with a [`Checker`] of its own for the successor conversation,
//! in the direction the envelope goes: one the proxy (this connection's agent) sends carries a
//! message from the proxy, as the successor's client; one the conductor (this connection's
//! client) sends carries a message from the successor, as the proxy's agent (`ProxySuccessorRequest`:
//! "A proxy sends it to forward a message to its successor, and the conductor sends it to
//! deliver a message from the successor to the proxy"). A response to an envelope request is
//! the wrapped request's result or error, "returned unchanged", and is checked as that. What
//! the successor checker finds is reported on the envelope, at paths inside it
//! (`params.params.prompt[0]`), naming the wrapped method.
//!
//! It also judges `proxy/initialize`'s answer against the forwarded `initialize`
//! (`proxy.forward-initialize`, `proxy.same-version`).

use super::checker::Checker;
use super::report::{Kind, Problem, Report, RuleViolation, Warning};
use acp_rpc::rules::RuleId;
use acp_types::support::rpc::Role;
use acp_types::MethodName;
use serde_json::{Map, Value};

/// Where a wrapped message's field is in its envelope.
#[derive(Debug, Clone, Copy)]
enum Carried {
    /// A request or notification: its `method` and `params` are the envelope's
    /// `params.method` and `params.params`.
    Call,
    /// A response: the envelope's result or error is the wrapped one, unchanged.
    Response,
}

impl Carried {
    fn path(self, inner: &str) -> String {
        match self {
            Carried::Response => inner.to_string(),
            Carried::Call => match inner {
                "" => "params".to_string(),
                "id" => "id".to_string(),
                p => format!("params.{p}"),
            },
        }
    }
}

impl Checker {
    /// The successor conversation's checker, made at the first envelope: it negotiates on its own,
    /// unless the version is forced.
    fn successor(&mut self) -> &mut Checker {
        let (forced, max) = (self.forced, self.max_pending);
        self.successor.get_or_insert_with(|| {
            let mut checker = Checker::new(forced).with_max_pending(max);
            checker.nested = true;
            Box::new(checker)
        })
    }

    /// A `proxy/successor` request or notification, already checked as an envelope: its wrapped
    /// message checked in the successor conversation.
    pub(super) fn envelope_call(&mut self, report: &mut Report, id: Option<&Value>, params: Option<&Value>) {
        // Without the sender, nothing tells which way the wrapped message goes.
        let Some(from) = report.from else { return };
        let Some(Value::Object(envelope)) = params else { return };
        let Some(Value::String(method)) = envelope.get("method") else { return };
        report.wrapped = Some(method.clone());
        if self.nested {
            report.warnings.push(Warning {
                path: Some("params.method".into()),
                reason: "a `proxy/successor` inside a `proxy/successor`: a conductor delivers no such message \
                         (the official one answers -32600)"
                    .into(),
            });
            return;
        }
        let opened_by = self.opened_by.as_deref().map(MethodName::of);
        if opened_by.is_some_and(|name| !matches!(name, Some(MethodName::ProxyInitialize))) {
            report.warnings.push(Warning {
                path: None,
                reason: "`proxy/successor` on a connection opened with `initialize`, not `proxy/initialize`: this \
                         component has no successor (the official conductor answers -32600)"
                    .into(),
            });
        }
        let inner_params = envelope.get("params");
        self.judge.exercise(RuleId::ProxySuccessorParams, from);
        if let Some(other) = inner_params.filter(|p| !(p.is_null() || p.is_object() || p.is_array())) {
            let detail = format!("the wrapped `{method}` has params {other}, neither an object nor an array");
            self.judge.violation(report, RuleId::ProxySuccessorParams, from, detail);
        }
        let mut message = Map::new();
        message.insert("jsonrpc".into(), "2.0".into());
        if let Some(id) = id {
            message.insert("id".into(), id.clone());
        }
        message.insert("method".into(), Value::String(method.clone()));
        // The envelope's `_meta` is hop-local: it is no part of the wrapped message.
        if let Some(params) = inner_params {
            message.insert("params".into(), params.clone());
        }
        // The proxy (this connection's agent) is its successor's client, and the reverse.
        let inner_from = from.peer();
        let initialize = matches!(MethodName::of(method), Some(MethodName::Initialize));
        if from == Role::Agent && initialize && id.is_some() && self.forwarded.line.is_none() {
            self.forwarded.line = Some(report.line);
            self.forwarded.id = id.map(Value::to_string);
        }
        let inner = self.successor().check_value(report.line, Some(inner_from), Value::Object(message));
        merge(report, inner, Carried::Call);
    }

    /// The response to a `proxy/successor` request (`id`): the wrapped request's answer, checked
    /// in the successor conversation.
    pub(super) fn envelope_response(&mut self, report: &mut Report, id: &Value, payload: &Result<Value, Value>) {
        let Some(from) = report.from else { return };
        if self.nested || self.successor.is_none() {
            return;
        }
        if from == Role::Client && self.forwarded.id.as_deref() == Some(id.to_string().as_str()) {
            if let Some(version) = payload.as_ref().ok().and_then(|r| r.get("protocolVersion")).and_then(Value::as_u64)
            {
                self.forwarded.answered = Some((version, report.line));
            }
        }
        let mut message = Map::new();
        message.insert("jsonrpc".into(), "2.0".into());
        message.insert("id".into(), id.clone());
        match payload {
            Ok(result) => message.insert("result".into(), result.clone()),
            Err(error) => message.insert("error".into(), error.clone()),
        };
        let inner = self.successor().check_value(report.line, Some(from.peer()), Value::Object(message));
        merge(report, inner, Carried::Response);
    }

    /// The proxy's answer to `proxy/initialize`: it forwarded an `initialize` first, and kept the
    /// version its successor answered.
    pub(super) fn proxy_initialize_answered(&mut self, report: &mut Report, payload: &Result<Value, Value>) {
        let (Some(Role::Agent), Ok(result)) = (report.from, payload) else { return };
        if self.forced.is_some() || self.unwrapped {
            return;
        }
        let asked = self.answered.as_ref().map_or(0, |p| p.line);
        self.judge.exercise(RuleId::ProxyForwardInitialize, Role::Agent);
        if self.forwarded.line.is_none() {
            let detail = format!(
                "`proxy/initialize` (line {asked}) answered with a result, but no `initialize` was forwarded \
                 through `proxy/successor` before"
            );
            self.judge.violation(report, RuleId::ProxyForwardInitialize, Role::Agent, detail);
        }
        let answered = result.get("protocolVersion").and_then(Value::as_u64);
        if let (Some((successor, line)), Some(answered)) = (self.forwarded.answered, answered) {
            self.judge.exercise(RuleId::ProxySameVersion, Role::Agent);
            if successor != answered {
                let detail = format!(
                    "`proxy/initialize` answered with protocolVersion {answered}, but the successor answered the \
                     forwarded `initialize` with {successor} (line {line})"
                );
                self.judge.violation(report, RuleId::ProxySameVersion, Role::Agent, detail);
            }
        }
    }

    /// The successor conversation's end-of-conversation findings, as this connection's.
    pub(super) fn finish_successor(&mut self) -> Vec<RuleViolation> {
        let Some(successor) = self.successor.as_mut() else { return Vec::new() };
        successor.finish().into_iter().map(outer_violation).collect()
    }
}

/// A finding of the successor conversation, as one on this connection: the side that sent it
/// here (the proxy is the successor's client and this connection's agent).
fn outer_violation(mut violation: RuleViolation) -> RuleViolation {
    let inner = violation.by;
    violation.by = inner.peer();
    violation.detail = format!("in the successor conversation (the {inner} there): {}", violation.detail);
    violation
}

/// What the successor checker found on the wrapped message, added to the envelope's report.
fn merge(report: &mut Report, inner: Report, carried: Carried) {
    if report.wrapped.is_none() {
        report.wrapped = inner.method.clone();
    }
    if inner.kind == Kind::Invalid && inner.problems.is_empty() {
        return;
    }
    for problem in inner.problems {
        let path = carried.path(&problem.path);
        // A response's error object is checked on both levels: report it once.
        if !report.problems.iter().any(|p| p.path == path && p.reason == problem.reason) {
            report.problems.push(Problem { path, reason: problem.reason });
        }
    }
    for mut difference in inner.differences {
        difference.path = carried.path(&difference.path);
        report.differences.push(difference);
    }
    for mut warning in inner.warnings {
        warning.path = warning.path.map(|p| carried.path(&p));
        if !report.warnings.contains(&warning) {
            report.warnings.push(warning);
        }
    }
    report.violations.extend(inner.violations.into_iter().map(outer_violation));
    // The worse verdict: an error in the wrapped message is the envelope's.
    report.status = report.status.max(inner.status);
}

#[cfg(test)]
mod tests {
    use super::super::report::Status;
    use super::*;
    use serde_json::json;

    /// Checks `records` (`(from, message)`) as one connection.
    fn check(records: &[(&str, Value)]) -> Vec<Report> {
        let mut checker = Checker::new(None);
        let reports = records
            .iter()
            .enumerate()
            .map(|(i, (from, message))| {
                let record = json!({"from": from, "message": message});
                checker.check_line(i + 1, record.to_string().as_bytes())
            })
            .collect();
        reports
    }

    fn opened() -> Vec<(&'static str, Value)> {
        vec![
            ("client", json!({"jsonrpc":"2.0","id":0,"method":"proxy/initialize","params":{"protocolVersion":1}})),
            (
                "agent",
                json!({"jsonrpc":"2.0","id":0,"method":"proxy/successor","params":{"method":"initialize","params":{"protocolVersion":1}}}),
            ),
            ("client", json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}})),
            ("agent", json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}})),
        ]
    }

    #[test]
    fn the_successor_conversation_has_its_own_lifecycle() {
        // The proxy's first message to its successor is no `initialize`: `init.first` there, by
        // the proxy (the successor's client, this connection's agent).
        let reports = check(&[
            ("client", json!({"jsonrpc":"2.0","id":0,"method":"proxy/initialize","params":{"protocolVersion":1}})),
            (
                "agent",
                json!({"jsonrpc":"2.0","id":0,"method":"proxy/successor","params":{"method":"session/new","params":{"cwd":"/","mcpServers":[]}}}),
            ),
        ]);
        let report = &reports[1];
        assert_eq!(report.status, Status::Error, "{report}");
        assert_eq!(report.problems[0].path, "params.method", "{report}");
        let violation = &report.violations[0];
        assert_eq!((violation.rule, violation.by), (RuleId::InitFirst, Role::Agent), "{report}");
        assert!(violation.detail.starts_with("in the successor conversation (the client there)"), "{report}");
    }

    #[test]
    fn a_wrapped_answer_is_checked_as_the_wrapped_requests() {
        let mut records = opened();
        records.push((
            "agent",
            json!({"jsonrpc":"2.0","id":1,"method":"proxy/successor","params":{"method":"session/new","params":{"cwd":"/","mcpServers":[]}}}),
        ));
        // `sessionId` must be a string.
        records.push(("client", json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":7}})));
        let reports = check(&records);
        let report = &reports[5];
        assert_eq!(
            (report.method.as_deref(), report.wrapped.as_deref()),
            (Some("proxy/successor"), Some("session/new"))
        );
        assert_eq!(report.status, Status::Error, "{report}");
        assert_eq!(report.problems[0].path, "result.sessionId", "{report}");
    }

    #[test]
    fn envelopes_are_not_unwrapped_twice_nor_expected_after_initialize() {
        let mut records = opened();
        records.push((
            "agent",
            json!({"jsonrpc":"2.0","method":"proxy/successor","params":{"method":"proxy/successor","params":{"method":"_x"}}}),
        ));
        let reports = check(&records);
        let nested = &reports[4];
        assert!(nested.warnings.iter().any(|w| w.reason.contains("inside a `proxy/successor`")), "{nested}");

        let reports = check(&[
            ("client", json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}})),
            ("agent", json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}})),
            ("agent", json!({"jsonrpc":"2.0","method":"proxy/successor","params":{"method":"_x"}})),
        ]);
        assert!(reports[2].warnings.iter().any(|w| w.reason.contains("has no successor")), "{}", reports[2]);
    }
}
