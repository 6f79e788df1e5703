//! MCP over ACP on one conversation: the ACP-transport MCP servers the client side declared
//! (`mcpServers` entries `{"type": "acp", "name", "serverId"}` in its session requests), the
//! `mcp/message` requests the agent side has in flight, and the rules about them
//! (`mcp.distinct-server-ids`, `mcp.declared-server`, `mcp.active-request`, `mcp.one-outcome`).
//! The inner MCP payload is opaque: only the carrier is judged.

use super::tally::Tally;
use crate::check::report::Report;
use acp_rpc::rules::RuleId;
use acp_types::support::rpc::Role;
use serde_json::Value;
use std::collections::HashMap;

/// The `type` of an `McpServer` entry whose transport is the ACP connection (`McpServerAcp`).
const ACP_TRANSPORT: &str = "acp";

/// An `mcp/message` request awaiting its response.
#[derive(Debug)]
struct Call {
    server: String,
    /// The inner MCP request id, as JSON text.
    request: String,
}

#[derive(Debug, Default)]
pub(super) struct Mcp {
    /// Declared servers: `serverId` → (name, line of the first declaration).
    declared: HashMap<String, (String, usize)>,
    /// `mcp/message` requests in flight, by the ACP request's id (JSON text).
    calls: HashMap<String, Call>,
}

impl Mcp {
    /// The client side's session request with `mcpServers`: the ACP-transport servers it declares.
    pub(super) fn declare(&mut self, tally: &mut Tally, report: &mut Report, servers: &Value) {
        let Some(servers) = servers.as_array() else { return };
        let mut here: HashMap<&str, usize> = HashMap::new();
        for (i, server) in servers.iter().enumerate() {
            if server.get("type").and_then(Value::as_str) != Some(ACP_TRANSPORT) {
                continue;
            }
            let (Some(id), Some(name)) =
                (server.get("serverId").and_then(Value::as_str), server.get("name").and_then(Value::as_str))
            else {
                continue;
            };
            tally.exercise(RuleId::McpDistinctServerIds, Role::Client);
            if let Some(first) = here.insert(id, i) {
                let detail = format!(
                    "params.mcpServers[{i}] reuses serverId {id:?} of params.mcpServers[{first}] in the same request"
                );
                tally.violate(report, RuleId::McpDistinctServerIds, Role::Client, detail);
                continue;
            }
            match self.declared.get(id) {
                // The same server offered again (to another session): one server, one id.
                Some((known, _)) if known == name => {}
                Some((known, line)) => {
                    let detail = format!(
                        "params.mcpServers[{i}] declares server {name:?} with serverId {id:?}, which server {known:?} \
                         (line {line}) already has on this connection"
                    );
                    tally.violate(report, RuleId::McpDistinctServerIds, Role::Client, detail);
                }
                None => {
                    self.declared.insert(id.to_string(), (name.to_string(), report.line));
                }
            }
        }
    }

    /// An `mcp/message` request (`id`: the ACP request's id as JSON text) from the agent side.
    pub(super) fn call(&mut self, tally: &mut Tally, report: &mut Report, id: String, params: &Value, forced: bool) {
        let Some(server) = params.get("serverId").and_then(Value::as_str) else { return };
        let request = params.get("requestId").map(Value::to_string).unwrap_or_default();
        // A transcript that starts after the session was made may lack the declaration.
        if !forced {
            tally.exercise(RuleId::McpDeclaredServer, Role::Agent);
            if !self.declared.contains_key(server) {
                let detail = format!("`mcp/message` to serverId {server:?}, which no `mcpServers` entry of type \"acp\" on this connection declared");
                tally.violate(report, RuleId::McpDeclaredServer, Role::Agent, detail);
            }
        }
        self.calls.insert(id, Call { server: server.to_string(), request });
    }

    /// The `mcp/message` request `id` (JSON text) was forgotten unanswered (the checker's bound of
    /// pending requests).
    pub(super) fn forget(&mut self, id: &str) {
        self.calls.remove(id);
    }

    /// An `mcp/message` notification from the client side (the provider); `forced`: the calls in
    /// flight are not all known (the transcript started late, or requests were forgotten).
    pub(super) fn notified(&mut self, tally: &mut Tally, report: &mut Report, params: &Value, forced: bool) {
        let Some(server) = params.get("serverId").and_then(Value::as_str) else { return };
        let request = params.get("requestId").map(Value::to_string).unwrap_or_default();
        if forced {
            return;
        }
        tally.exercise(RuleId::McpActiveRequest, Role::Client);
        let active = self.calls.values().any(|c| c.server == server && c.request == request);
        if !active {
            let detail = format!(
                "`mcp/message` notification for requestId {request} of serverId {server:?}, which is no active \
                 `mcp/message` request"
            );
            tally.violate(report, RuleId::McpActiveRequest, Role::Client, detail);
        }
    }

    /// The client side's response to the `mcp/message` request `id`: its result carries exactly
    /// one outcome.
    pub(super) fn answered(&mut self, tally: &mut Tally, report: &mut Report, id: &str, result: Option<&Value>) {
        self.calls.remove(id);
        // An ACP error ("reserved for binding and runtime failures") carries no MCP outcome.
        let Some(result) = result else { return };
        tally.exercise(RuleId::McpOneOutcome, Role::Client);
        let Some(carrier) = result.as_object() else {
            let detail = format!("the `mcp/message` result is {result}, not an object carrying `result` or `error`");
            return tally.violate(report, RuleId::McpOneOutcome, Role::Client, detail);
        };
        let detail = match (carrier.get("result"), carrier.get("error")) {
            (Some(_), Some(_)) => Some("the `mcp/message` result carries both `result` and `error`".to_string()),
            (None, None) => Some("the `mcp/message` result carries neither `result` nor `error`".to_string()),
            (None, Some(error)) if !error.is_object() => {
                Some(format!("the `mcp/message` result's `error` is {error}, not a non-null object"))
            }
            _ => None,
        };
        if let Some(detail) = detail {
            tally.violate(report, RuleId::McpOneOutcome, Role::Client, detail);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::check::{Checker, Report};
    use acp_rpc::rules::RuleId;
    use serde_json::{json, Value};

    /// Checks `records` (`(from, message)`) as one connection.
    fn check(records: &[(&str, Value)]) -> Vec<Report> {
        let mut checker = Checker::new(None);
        let lines = records.iter().map(|(from, message)| json!({"from": from, "message": message}).to_string());
        lines.enumerate().map(|(i, line)| checker.check_line(i + 1, line.as_bytes())).collect()
    }

    #[test]
    fn an_mcp_error_outcome_must_be_an_object() {
        let reports = check(&[
            ("client", json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}})),
            ("agent", json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}})),
            (
                "client",
                json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[{"type":"acp","name":"e","serverId":"s"}]}}),
            ),
            ("agent", json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"x"}})),
            (
                "agent",
                json!({"jsonrpc":"2.0","id":0,"method":"mcp/message","params":{"serverId":"s","requestId":"r","method":"tools/list"}}),
            ),
            ("client", json!({"jsonrpc":"2.0","id":0,"result":{"error":null}})),
        ]);
        let report = &reports[5];
        assert_eq!(report.violations.len(), 1, "{report}");
        assert_eq!(report.violations[0].rule, RuleId::McpOneOutcome, "{report}");
        assert!(report.violations[0].detail.contains("`error` is null"), "{report}");
        assert!(reports[4].violations.is_empty(), "{}", reports[4]);
    }

    #[test]
    fn calls_never_answered_are_forgotten_with_their_requests() {
        const MAX: usize = 4;
        let mut checker = Checker::new(None).with_max_pending(MAX);
        let mut lines = vec![
            json!({"from":"client","message":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}}),
            json!({"from":"agent","message":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}}),
            json!({"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[{"type":"acp","name":"e","serverId":"s"}]}}}),
            json!({"from":"agent","message":{"jsonrpc":"2.0","id":1,"result":{"sessionId":"x"}}}),
        ];
        for i in 0..10 * MAX {
            lines.push(json!({"from":"agent","message":{"jsonrpc":"2.0","id":i,"method":"mcp/message","params":{"serverId":"s","requestId":format!("r{i}"),"method":"tools/list"}}}));
        }
        // A notification for a call that may have been forgotten proves nothing.
        lines.push(json!({"from":"client","message":{"jsonrpc":"2.0","method":"mcp/message","params":{"serverId":"s","requestId":"r0","method":"notifications/progress"}}}));
        let reports: Vec<Report> =
            lines.iter().enumerate().map(|(i, l)| checker.check_line(i + 1, l.to_string().as_bytes())).collect();
        assert!(checker.judge.mcp.calls.len() <= MAX, "{} calls kept", checker.judge.mcp.calls.len());
        let last = reports.last().expect("a report");
        assert!(last.violations.is_empty(), "{last}");
    }
}
