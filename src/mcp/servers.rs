//! The `{"type": "acp"}` entries of a session's `mcpServers`: [`AcpServer`], the declaration a
//! provider hands out; finding them in a `session/new` (`session/load`, `session/resume`, …)
//! request, typed or raw; and rewriting them into other entries (the HTTP bridge's
//! `{"type": "http", "url"}`) for a successor that cannot reach them over ACP. Raw JSON where a
//! request is forwarded: every other entry and field stays as it came.

use acp_types::{v1, v2};
use serde_json::{json, Map, Value};

/// A server offered over ACP: `{"type": "acp", "name", "serverId"}` in `mcpServers`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AcpServer {
    /// The human-readable name.
    pub name: String,
    /// The id `mcp/message` requests name it by (opaque, chosen by its provider; ours are
    /// `NAME:UUID`).
    pub server_id: String,
}

impl AcpServer {
    /// The v1 `McpServer` entry.
    pub fn v1(&self) -> v1::McpServer {
        v1::McpServer::Acp(v1::McpServerAcp::new(self.name.clone(), v1::McpServerAcpId(self.server_id.clone())))
    }

    /// The v2 `McpServer` entry.
    pub fn v2(&self) -> v2::McpServer {
        v2::McpServer::Acp(v2::McpServerAcp::new(self.name.clone(), v2::McpServerAcpId(self.server_id.clone())))
    }

    /// The entry as JSON (the same in both versions).
    pub fn to_value(&self) -> Value {
        json!({ "type": "acp", "name": self.name, "serverId": self.server_id })
    }

    /// The server an entry declares, when it is an `acp` one (a string `name` and `serverId`).
    pub fn from_value(entry: &Value) -> Option<AcpServer> {
        if entry.get("type").and_then(Value::as_str) != Some("acp") {
            return None;
        }
        let name = entry.get("name")?.as_str()?.to_string();
        let server_id = entry.get("serverId")?.as_str()?.to_string();
        Some(AcpServer { name, server_id })
    }
}

/// The `acp` servers among a v1 session's `mcpServers`.
pub fn acp_servers_v1(servers: &[v1::McpServer]) -> Vec<AcpServer> {
    servers
        .iter()
        .filter_map(|s| match s {
            v1::McpServer::Acp(acp) => Some(AcpServer { name: acp.name.clone(), server_id: acp.server_id.0.clone() }),
            _ => None,
        })
        .collect()
}

/// The `acp` servers among a v2 session's `mcpServers`.
pub fn acp_servers_v2(servers: &[v2::McpServer]) -> Vec<AcpServer> {
    servers
        .iter()
        .filter_map(|s| match s {
            v2::McpServer::Acp(acp) => Some(AcpServer { name: acp.name.clone(), server_id: acp.server_id.0.clone() }),
            _ => None,
        })
        .collect()
}

/// The `acp` servers in the raw params of a session setup request (`params.mcpServers`, either
/// version).
pub fn acp_servers(params: &Value) -> Vec<AcpServer> {
    params
        .get("mcpServers")
        .and_then(Value::as_array)
        .map(|servers| servers.iter().filter_map(AcpServer::from_value).collect())
        .unwrap_or_default()
}

/// Replaces, in the raw params of a session setup request, each `acp` entry of `mcpServers` for
/// which `replace` gives a new entry (its `_meta` is carried over when the new one has none);
/// everything else stays as it came. Returns how many were replaced.
pub fn rewrite_acp_servers(params: &mut Value, mut replace: impl FnMut(&AcpServer) -> Option<Value>) -> usize {
    let Some(servers) = params.get_mut("mcpServers").and_then(Value::as_array_mut) else {
        return 0;
    };
    let mut replaced = 0;
    for entry in servers.iter_mut() {
        let Some(server) = AcpServer::from_value(entry) else { continue };
        let Some(mut new) = replace(&server) else { continue };
        if let (Some(meta), Some(object)) = (entry.get("_meta").filter(|m| m.is_object()), new.as_object_mut()) {
            object.entry("_meta").or_insert_with(|| meta.clone());
        }
        *entry = new;
        replaced += 1;
    }
    replaced
}

/// An `http` entry: `{"type": "http", "name", "url", "headers": [{name, value}…]}`.
pub fn http_entry(name: &str, url: &str, headers: &[(String, String)]) -> Value {
    let headers: Vec<Value> = headers.iter().map(|(n, v)| json!({ "name": n, "value": v })).collect();
    let mut entry = Map::new();
    entry.insert("type".into(), "http".into());
    entry.insert("name".into(), name.into());
    entry.insert("url".into(), url.into());
    entry.insert("headers".into(), headers.into());
    Value::Object(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrite_keeps_other_entries_and_fields() {
        let mut params = json!({
            "cwd": "/w", "x-extra": 1,
            "mcpServers": [
                {"type": "acp", "name": "a", "serverId": "a:1", "_meta": {"k": 1}},
                {"type": "stdio", "name": "s", "command": "c", "args": [], "env": []},
                {"type": "acp", "name": "b"}
            ]
        });
        assert_eq!(acp_servers(&params), vec![AcpServer { name: "a".into(), server_id: "a:1".into() }]);
        let n = rewrite_acp_servers(&mut params, |s| Some(http_entry(&s.name, "http://127.0.0.1:1/x", &[])));
        assert_eq!(n, 1);
        assert_eq!(params["mcpServers"][0]["type"], "http");
        assert_eq!(params["mcpServers"][0]["_meta"], json!({"k": 1}));
        assert_eq!(params["mcpServers"][1]["type"], "stdio");
        assert_eq!(params["mcpServers"][2], json!({"type": "acp", "name": "b"}));
        assert_eq!(params["x-extra"], 1);
    }
}
