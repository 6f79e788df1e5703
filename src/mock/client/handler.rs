//! The mock client's answers to the agent (the generated client handler traits of v1 and v2):
//! permission requests by the script's rules, `fs/*` against the in-memory files, `terminal/*`
//! with the scripted outputs. Every request is recorded with its answer.

use super::report::AgentCall;
use super::script::{ClientScript, PermissionAnswer, TerminalScript};
use crate::client::ClientContext;
use crate::sync::lock;
use acp_types::support::rpc::{Method, RpcError};
use acp_types::support::Patch;
use acp_types::{v1, v2};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What the handler changes and records, shared with the driver.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) files: Mutex<BTreeMap<String, String>>,
    pub(super) calls: Mutex<Vec<AgentCall>>,
    terminals: Mutex<BTreeMap<String, Terminal>>,
    next_terminal: AtomicU64,
    /// The title and kind of each tool call the agent reported, by (session, tool call id):
    /// a permission request may name a tool call by its id alone.
    tool_calls: Mutex<BTreeMap<(String, String), Known>>,
}

/// What the updates said of a tool call so far.
#[derive(Debug, Default, Clone)]
struct Known {
    title: Option<String>,
    kind: Option<String>,
}

impl Known {
    /// Later fields over earlier ones.
    fn merge(&mut self, title: Option<&String>, kind: Option<&str>) {
        if let Some(title) = title {
            self.title = Some(title.clone());
        }
        if let Some(kind) = kind {
            self.kind = Some(kind.to_string());
        }
    }
}

#[derive(Debug)]
struct Terminal {
    script: TerminalScript,
    limit: Option<u64>,
}

impl Terminal {
    /// The output kept within the byte limit (cut at the front, at a character boundary), and
    /// whether any was cut.
    fn output(&self) -> (String, bool) {
        let output = &self.script.output;
        let Some(limit) = self.limit.and_then(|l| usize::try_from(l).ok()).filter(|l| output.len() > *l) else {
            return (output.clone(), false);
        };
        let mut cut = output.len() - limit;
        while !output.is_char_boundary(cut) {
            cut += 1;
        }
        (output[cut..].to_string(), true)
    }

    fn exit(&self) -> (Patch<u32>, Patch<String>) {
        let code = match (&self.script.exit_code, &self.script.signal) {
            (Some(code), _) => Some(*code),
            (None, Some(_)) => None,
            (None, None) => Some(0),
        };
        (code.into(), self.script.signal.clone().into())
    }
}

/// The client handler the mock connects with.
pub(super) struct Mock {
    pub(super) script: Arc<ClientScript>,
    pub(super) state: Arc<State>,
}

impl Mock {
    /// Records the request of `M` with its answer, and returns the answer.
    fn record<M: Method, P: Serialize, R: Serialize>(
        &self,
        session: &str,
        params: &P,
        answer: Result<R, RpcError>,
    ) -> Result<R, RpcError> {
        let call = AgentCall {
            method: M::METHOD.to_string(),
            session_id: session.to_string(),
            params: serde_json::to_value(params).unwrap_or_default(),
            answer: answer.as_ref().map(|a| serde_json::to_value(a).unwrap_or_default()).map_err(Clone::clone),
        };
        lock(&self.state.calls).push(call);
        answer
    }

    fn tool_call(&self, session: &str, id: &str, title: Option<&String>, kind: Option<&str>) {
        let mut calls = lock(&self.state.tool_calls);
        calls.entry((session.to_string(), id.to_string())).or_default().merge(title, kind);
    }

    /// The title and kind of a permission request's tool call: the request's own fields over
    /// what the updates before it said (a client applies those first).
    async fn known(
        &self,
        cx: &ClientContext,
        session: &str,
        id: &str,
        title: Option<&String>,
        kind: Option<&str>,
    ) -> Known {
        cx.connection().sync_notifications().await;
        let key = (session.to_string(), id.to_string());
        let mut known = lock(&self.state.tool_calls).get(&key).cloned().unwrap_or_default();
        known.merge(title, kind);
        known
    }

    fn not_advertised(method: &str, capability: &str) -> RpcError {
        RpcError::new(RpcError::METHOD_NOT_FOUND, format!("{method}: the client did not advertise {capability}"))
    }

    fn read(&self, path: &str, line: Option<u32>, limit: Option<u32>) -> Result<String, RpcError> {
        let files = lock(&self.state.files);
        let content = files
            .get(path)
            .ok_or_else(|| RpcError::new(RpcError::RESOURCE_NOT_FOUND, format!("Resource not found: {path}")))?;
        // `line` is 1-based; `limit` counts lines.
        let skip = line.map_or(0, |line| line.saturating_sub(1) as usize);
        let take = limit.map_or(usize::MAX, |limit| limit as usize);
        Ok(match (skip, take) {
            (0, usize::MAX) => content.clone(),
            _ => content.split_inclusive('\n').skip(skip).take(take).collect(),
        })
    }

    fn terminal<T>(&self, id: &str, with: impl FnOnce(&Terminal) -> T) -> Result<T, RpcError> {
        let terminals = lock(&self.state.terminals);
        let terminal = terminals
            .get(id)
            .ok_or_else(|| RpcError::new(RpcError::RESOURCE_NOT_FOUND, format!("no terminal {id}")))?;
        Ok(with(terminal))
    }

    fn create_terminal(&self, request: &v1::CreateTerminalRequest) -> Result<v1::CreateTerminalResponse, RpcError> {
        if !self.script.capabilities.terminal {
            return Err(Self::not_advertised(<v1::methods::TerminalCreate as Method>::METHOD, "terminal"));
        }
        let args = request.args.clone().unwrap_or_default();
        let script = self.script.terminal(&request.command, &args).cloned().ok_or_else(|| {
            let line = std::iter::once(request.command.clone()).chain(args).collect::<Vec<_>>().join(" ");
            RpcError::internal(format!("the mock client has no terminal output scripted for `{line}`"))
        })?;
        let id = format!("term-{}", self.state.next_terminal.fetch_add(1, Ordering::Relaxed));
        let limit = request.output_byte_limit.as_value().copied();
        lock(&self.state.terminals).insert(id.clone(), Terminal { script, limit });
        Ok(v1::CreateTerminalResponse::new(v1::TerminalId(id)))
    }
}

/// The option a scripted answer selects, as (id, kind); `None`: answer `cancelled`.
fn choose<'o>(answer: PermissionAnswer, options: impl Iterator<Item = (&'o str, &'o str)> + Clone) -> Option<&'o str> {
    let (exact, family) = match answer {
        PermissionAnswer::AllowOnce => ("allow_once", "allow_always"),
        PermissionAnswer::AllowAlways => ("allow_always", "allow_once"),
        PermissionAnswer::RejectOnce => ("reject_once", "reject_always"),
        PermissionAnswer::RejectAlways => ("reject_always", "reject_once"),
        PermissionAnswer::Cancelled => return None,
    };
    let find = |kind: &str| options.clone().find(|(_, k)| *k == kind).map(|(id, _)| id);
    find(exact).or_else(|| find(family))
}

impl v1::methods::client::Handler<ClientContext> for Mock {
    async fn session_update(&self, params: v1::SessionNotification, _: ClientContext) {
        let session = &params.session_id.0;
        match &params.update {
            v1::SessionUpdate::ToolCall(call) => {
                self.tool_call(session, &call.tool_call_id.0, Some(&call.title), call.kind.as_ref().map(|k| k.as_str()))
            }
            v1::SessionUpdate::ToolCallUpdate(update) => self.tool_call(
                session,
                &update.tool_call_id.0,
                update.title.as_value(),
                update.kind.as_value().map(|k| k.as_str()),
            ),
            _ => {}
        }
    }

    async fn session_request_permission(
        &self,
        params: v1::RequestPermissionRequest,
        cx: ClientContext,
    ) -> Result<v1::RequestPermissionResponse, RpcError> {
        let tool = &params.tool_call;
        let kind = tool.kind.as_value().map(|k| k.as_str());
        let known = self.known(&cx, &params.session_id.0, &tool.tool_call_id.0, tool.title.as_value(), kind).await;
        let answer = self.script.permission(known.title.as_deref(), known.kind.as_deref());
        let options = params.options.iter().map(|o| (o.option_id.0.as_str(), o.kind.as_str()));
        let outcome = match choose(answer, options) {
            Some(id) => v1::RequestPermissionOutcome::Selected(v1::SelectedPermissionOutcome::new(
                v1::PermissionOptionId(id.to_string()),
            )),
            None => v1::RequestPermissionOutcome::Cancelled,
        };
        let answer = Ok(v1::RequestPermissionResponse::new(outcome));
        self.record::<v1::methods::SessionRequestPermission, _, _>(&params.session_id.0, &params, answer)
    }

    async fn fs_read_text_file(
        &self,
        params: v1::ReadTextFileRequest,
        _: ClientContext,
    ) -> Result<v1::ReadTextFileResponse, RpcError> {
        type M = v1::methods::FsReadTextFile;
        let answer = match self.script.capabilities.fs.read_text_file {
            true => self
                .read(&params.path, params.line.as_value().copied(), params.limit.as_value().copied())
                .map(v1::ReadTextFileResponse::new),
            false => Err(Self::not_advertised(M::METHOD, "fs.readTextFile")),
        };
        self.record::<M, _, _>(&params.session_id.0, &params, answer)
    }

    async fn fs_write_text_file(
        &self,
        params: v1::WriteTextFileRequest,
        _: ClientContext,
    ) -> Result<v1::WriteTextFileResponse, RpcError> {
        type M = v1::methods::FsWriteTextFile;
        let answer = match self.script.capabilities.fs.write_text_file {
            true => {
                lock(&self.state.files).insert(params.path.clone(), params.content.clone());
                Ok(v1::WriteTextFileResponse::new())
            }
            false => Err(Self::not_advertised(M::METHOD, "fs.writeTextFile")),
        };
        self.record::<M, _, _>(&params.session_id.0, &params, answer)
    }

    async fn terminal_create(
        &self,
        params: v1::CreateTerminalRequest,
        _: ClientContext,
    ) -> Result<v1::CreateTerminalResponse, RpcError> {
        let answer = self.create_terminal(&params);
        self.record::<v1::methods::TerminalCreate, _, _>(&params.session_id.0, &params, answer)
    }

    async fn terminal_output(
        &self,
        params: v1::TerminalOutputRequest,
        _: ClientContext,
    ) -> Result<v1::TerminalOutputResponse, RpcError> {
        // A scripted command has finished by the time it is asked about.
        let answer = self.terminal(&params.terminal_id.0, |terminal| {
            let (output, truncated) = terminal.output();
            let mut answer = v1::TerminalOutputResponse::new(output, truncated);
            let mut exit = v1::TerminalExitStatus::new();
            (exit.exit_code, exit.signal) = terminal.exit();
            answer.exit_status = exit.into();
            answer
        });
        self.record::<v1::methods::TerminalOutput, _, _>(&params.session_id.0, &params, answer)
    }

    async fn terminal_wait_for_exit(
        &self,
        params: v1::WaitForTerminalExitRequest,
        _: ClientContext,
    ) -> Result<v1::WaitForTerminalExitResponse, RpcError> {
        let answer = self.terminal(&params.terminal_id.0, |terminal| {
            let mut answer = v1::WaitForTerminalExitResponse::new();
            (answer.exit_code, answer.signal) = terminal.exit();
            answer
        });
        self.record::<v1::methods::TerminalWaitForExit, _, _>(&params.session_id.0, &params, answer)
    }

    async fn terminal_kill(
        &self,
        params: v1::KillTerminalRequest,
        _: ClientContext,
    ) -> Result<v1::KillTerminalResponse, RpcError> {
        let answer = self.terminal(&params.terminal_id.0, |_| v1::KillTerminalResponse::new());
        self.record::<v1::methods::TerminalKill, _, _>(&params.session_id.0, &params, answer)
    }

    async fn terminal_release(
        &self,
        params: v1::ReleaseTerminalRequest,
        _: ClientContext,
    ) -> Result<v1::ReleaseTerminalResponse, RpcError> {
        let answer = self.terminal(&params.terminal_id.0, |_| v1::ReleaseTerminalResponse::new());
        lock(&self.state.terminals).remove(&params.terminal_id.0);
        self.record::<v1::methods::TerminalRelease, _, _>(&params.session_id.0, &params, answer)
    }
}

impl v2::methods::client::Handler<ClientContext> for Mock {
    async fn session_update(&self, params: v2::UpdateSessionNotification, _: ClientContext) {
        if let v2::SessionUpdate::ToolCallUpdate(update) = &params.update {
            let kind = update.kind.as_value().map(|k| k.as_str());
            self.tool_call(&params.session_id.0, &update.tool_call_id.0, update.title.as_value(), kind);
        }
    }

    async fn session_request_permission(
        &self,
        params: v2::RequestPermissionRequest,
        cx: ClientContext,
    ) -> Result<v2::RequestPermissionResponse, RpcError> {
        // The rules match the request's own title, and the kind of the tool call it is about.
        let kind = match params.subject.as_value() {
            Some(v2::RequestPermissionSubject::ToolCall(subject)) => {
                let tool = &subject.tool_call;
                let kind = tool.kind.as_value().map(|k| k.as_str());
                self.known(&cx, &params.session_id.0, &tool.tool_call_id.0, None, kind).await.kind
            }
            _ => None,
        };
        let answer = self.script.permission(Some(&params.title), kind.as_deref());
        let options = params.options.iter().map(|o| (o.option_id.0.as_str(), o.kind.as_str()));
        let outcome = match choose(answer, options) {
            Some(id) => v2::RequestPermissionOutcome::Selected(v2::SelectedPermissionOutcome::new(
                v2::PermissionOptionId(id.to_string()),
            )),
            None => v2::RequestPermissionOutcome::Cancelled(v2::CancelledPermissionOutcome::default()),
        };
        let answer = Ok(v2::RequestPermissionResponse::new(outcome));
        self.record::<v2::methods::SessionRequestPermission, _, _>(&params.session_id.0, &params, answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_honour_line_and_limit() {
        let mock = Mock { script: Arc::default(), state: Arc::default() };
        lock(&mock.state.files).insert("/f".into(), "a\nb\nc\n".into());
        assert_eq!(mock.read("/f", None, None), Ok("a\nb\nc\n".into()));
        assert_eq!(mock.read("/f", Some(2), None), Ok("b\nc\n".into()));
        assert_eq!(mock.read("/f", Some(1), Some(2)), Ok("a\nb\n".into()));
        assert_eq!(mock.read("/g", None, None).map_err(|e| e.code), Err(RpcError::RESOURCE_NOT_FOUND));
    }

    #[test]
    fn output_is_cut_at_the_front_on_a_character_boundary() {
        let script = |output: &str| TerminalScript {
            command: "x".into(),
            output: output.into(),
            exit_code: None,
            signal: Some("SIGKILL".into()),
        };
        let terminal = Terminal { script: script("aé€"), limit: Some(4) };
        // "é" is two bytes, "€" three: the last 4 bytes start inside "é".
        assert_eq!(terminal.output(), ("€".into(), true));
        assert_eq!(Terminal { script: script("ab"), limit: Some(2) }.output(), ("ab".into(), false));
        let (code, signal) = terminal.exit();
        assert_eq!((code.as_value().copied(), signal.as_value().cloned()), (None, Some("SIGKILL".to_string())));
    }
}
