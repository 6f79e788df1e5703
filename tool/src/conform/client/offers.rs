//! What a v1 client advertises in `initialize` (`clientCapabilities.fs`, `.terminal`), exercised
//! by the stand-in during the turn: `fs/read_text_file` of a file the stand-in wrote,
//! `fs/write_text_file` of a new one (read back from disk), and `terminal/create` of `echo`
//! followed by `terminal/output` and `terminal/release`. Each answer is judged against the
//! client's twin of `cap.serves-*` (`cap.client-serves-fs`, `cap.client-serves-terminal`):
//! "method not found" refuses a method the client advertised; another error refuses only the
//! request (a path outside the client's project, say) and still shows the method served.

use super::conn::Conn;
use crate::check::Role;
use acp_rpc::rules::{self, RuleId};
use acp_types::support::rpc::{Method, RpcError};
use acp_types::v1::methods as v1;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The file the stand-in asks the client to read (written by `acp conform` into its scratch
/// directory, see `conform::tempdir`), and what it holds.
const READ: (&str, &str) = ("notes.txt", "a scratch file of acp conform\n");
/// The file the stand-in asks the client to write, and what.
const WRITE: (&str, &str) = ("written-by-the-client.txt", "written through fs/write_text_file\n");

/// The client's v1 capabilities that gate methods the agent calls.
#[derive(Debug, Default, Clone, Copy)]
pub struct Offered {
    pub read: bool,
    pub write: bool,
    pub terminal: bool,
}

impl Offered {
    /// Reads the `initialize` params of a v1 client.
    pub fn of(params: &Value) -> Self {
        let caps = &params["clientCapabilities"];
        Offered {
            read: caps["fs"]["readTextFile"] == true,
            write: caps["fs"]["writeTextFile"] == true,
            terminal: caps["terminal"] == true,
        }
    }
}

/// What an answer is checked for.
#[derive(Debug)]
enum Expect {
    Read(PathBuf),
    Write(PathBuf),
    Create,
    Output(Value),
    Release,
}

#[derive(Debug)]
struct Call {
    method: &'static str,
    line: usize,
    expect: Expect,
}

/// The stand-in's calls of what the client advertised, and what their answers showed.
#[derive(Debug, Default)]
pub struct Calls {
    pending: HashMap<String, Call>,
    session: Value,
    /// What a PASS rests on: the rule and the text.
    pub evidence: Vec<(RuleId, String)>,
    /// Why a rule was not exercised.
    pub skipped: Vec<(RuleId, String)>,
}

impl Calls {
    /// Calls each method `offered` names, in the session `session`; the files are in `scratch`.
    pub async fn start(&mut self, conn: &mut Conn, offered: Offered, session: &Value, scratch: &Path) {
        self.session = session.clone();
        if offered.read {
            let path = scratch.join(READ.0);
            let params = json!({ "sessionId": session, "path": path });
            self.call(conn, v1::FsReadTextFile::METHOD, params, Expect::Read(path)).await;
        } else {
            self.skipped.push((RuleId::ClientServesFs, "the client did not advertise `fs.readTextFile`".into()));
        }
        if offered.write {
            let path = scratch.join(WRITE.0);
            let params = json!({ "sessionId": session, "path": path, "content": WRITE.1 });
            self.call(conn, v1::FsWriteTextFile::METHOD, params, Expect::Write(path)).await;
        } else {
            self.skipped.push((RuleId::ClientServesFs, "the client did not advertise `fs.writeTextFile`".into()));
        }
        if offered.terminal {
            let params = json!({ "sessionId": session, "command": "echo", "args": ["acp conform"], "cwd": scratch });
            self.call(conn, v1::TerminalCreate::METHOD, params, Expect::Create).await;
        } else {
            self.skipped.push((RuleId::ClientServesTerminal, "the client did not advertise `terminal`".into()));
        }
    }

    async fn call(&mut self, conn: &mut Conn, method: &'static str, params: Value, expect: Expect) {
        let line = conn.line();
        let id = conn.request(method, params).await;
        self.pending.insert(id.to_string(), Call { method, line, expect });
    }

    /// Whether every call was answered (a terminal's last one included).
    pub fn done(&self) -> bool {
        self.pending.is_empty()
    }

    /// Judges the client's `response` if it answers one of these calls (and makes the next
    /// call of a terminal's); whether it did.
    pub async fn answered(&mut self, conn: &mut Conn, response: &Value) -> bool {
        let Some(call) = response.get("id").and_then(|id| self.pending.remove(&id.to_string())) else {
            return false;
        };
        let rule = rules::ClientGate::of_v1(call.method).map_or(RuleId::ClientServesTerminal, |g| g.serves_rule());
        let what = format!("`{}` (line {})", call.method, call.line);
        if let Some(error) = response.get("error") {
            let code = error["code"].as_i64().unwrap_or_default();
            let text = format!("answered error {code} {}", error["message"]);
            if code == i64::from(RpcError::METHOD_NOT_FOUND) {
                let detail = format!("{what} {text} though the client advertised it");
                conn.checker.note_violation(rule, Role::Client, call.line, detail);
            } else {
                conn.checker.note_exercised(rule, Role::Client);
                self.evidence.push((rule, format!("{what} served: it refused this request ({text})")));
            }
            return true;
        }
        let result = &response["result"];
        match self.check(conn, &call.expect, result).await {
            Ok(evidence) => {
                conn.checker.note_exercised(rule, Role::Client);
                self.evidence.push((rule, format!("{what} {evidence}")));
            }
            Err(wrong) => conn.checker.note_violation(rule, Role::Client, call.line, format!("{what} {wrong}")),
        }
        true
    }

    /// What a successful answer shows, or what is wrong with it; the terminal's next call.
    async fn check(&mut self, conn: &mut Conn, expect: &Expect, result: &Value) -> Result<String, String> {
        match expect {
            Expect::Read(path) => match result["content"].as_str() {
                Some(text) if text == READ.1 => Ok(format!("read {} as it is on disk", path.display())),
                Some(text) => Err(format!("answered {text:?} for {}, which holds {:?}", path.display(), READ.1)),
                None => Err("answered no `content`".into()),
            },
            Expect::Write(path) => match std::fs::read_to_string(path) {
                Ok(text) if text == WRITE.1 => Ok(format!("wrote {} as asked", path.display())),
                Ok(text) => Err(format!("answered success, but {} holds {text:?}", path.display())),
                Err(e) => Err(format!("answered success, but {} cannot be read: {e}", path.display())),
            },
            Expect::Create => {
                let terminal = result.get("terminalId").cloned().unwrap_or(Value::Null);
                let params = json!({ "sessionId": self.session, "terminalId": terminal });
                self.call(conn, v1::TerminalOutput::METHOD, params, Expect::Output(terminal.clone())).await;
                Ok(format!("created terminal {terminal}"))
            }
            Expect::Output(terminal) => {
                let params = json!({ "sessionId": self.session, "terminalId": terminal });
                self.call(conn, v1::TerminalRelease::METHOD, params, Expect::Release).await;
                Ok(format!("gave the output {}", result["output"]))
            }
            Expect::Release => Ok("released the terminal".into()),
        }
    }
}
