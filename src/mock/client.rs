//! The mock client: drives an agent from a script (the version to ask for, what to advertise,
//! sessions and their prompts, cancels) and answers the agent's requests from it (permission
//! rules, an in-memory file system, scripted terminal outputs), then reports what happened
//! ([`Report`]): each turn's updates and stop reason, each request of the agent and the answer.
//! In process over any transport ([`MockClient::run_over`], e.g. a tokio duplex pipe to an agent
//! served with [`agent::serve`](crate::agent::serve)), or against an agent process
//! ([`MockClient::run_spawned`]; `acp mock-client --script FILE -- AGENT_CMD…`).
//!
//! The script's format: [`ClientScript`].

mod handler;
mod report;
mod script;

pub use report::{AgentCall, Report, SessionReport, TurnReport};
pub use script::{
    Cancel, Capabilities, ClientScript, FsCapabilities, PermissionAnswer, PermissionRule, PromptScript, SessionScript,
    TerminalScript,
};

use crate::client::{ClientConnection, Initialized, Offer, TurnUpdates};
use crate::error::Error;
use crate::jsonrpc::{Config, Transport};
use crate::sync::lock;
use acp_types::support::rpc::Method;
use acp_types::{v1, v2};
use handler::{Mock, State};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A scripted client (feature `mock`).
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use acp_rpc::mock::{ClientScript, MockClient};
/// let script = ClientScript::from_json(r#"{"sessions": [{"prompts": [{"text": "hello"}]}]}"#)?;
/// let (client_end, agent_end) = tokio::io::duplex(64 * 1024);
/// // … serve an agent on `agent_end` with `acp_rpc::agent::serve` …
/// let (reader, writer) = tokio::io::split(client_end);
/// let report = MockClient::new(script).run_over(acp_rpc::jsonrpc::Pipe { reader, writer }).await?;
/// assert_eq!(report.turns().next().and_then(|t| t.stop_reason.as_deref()), Some("end_turn"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MockClient {
    script: Arc<ClientScript>,
}

/// A run that failed: the step, the error, and what happened before it.
#[derive(Debug, Clone)]
pub struct RunError {
    /// The step that failed (`initialize`, `session/new`, `session/prompt`, …).
    pub step: String,
    /// Why.
    pub error: Error,
    /// What happened until then (a failed turn is in it, without a stop reason).
    pub report: Report,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step, self.error)
    }
}

impl std::error::Error for RunError {}

impl MockClient {
    /// A client that follows `script`.
    pub fn new(script: ClientScript) -> Self {
        MockClient { script: Arc::new(script) }
    }

    /// Connects over `transport` to an agent, runs the script, and reports.
    pub async fn run_over<T: Transport>(&self, transport: T) -> Result<Report, RunError> {
        let state = Arc::new(State::default());
        *lock(&state.files) = self.script.files.clone();
        let mock = Mock { script: self.script.clone(), state: state.clone() };
        let (conn, driver) = crate::client::connect_over(mock, transport, Config::default());
        self.drive(conn, driver, state).await
    }

    /// Starts the agent `program args…` (in a process group of its own), runs the script, and
    /// reports; the agent is shut down (stdin closed, then signals) at the end. The outer error:
    /// the agent could not be started.
    pub async fn run_spawned(&self, program: &str, args: &[String]) -> std::io::Result<Result<Report, RunError>> {
        let state = Arc::new(State::default());
        *lock(&state.files) = self.script.files.clone();
        let mock = Mock { script: self.script.clone(), state: state.clone() };
        let (conn, driver, agent) = crate::client::spawn_agent(mock, program, args, Config::default())?;
        let result = self.drive(conn, driver, state).await;
        if let Err(e) = agent.shutdown().await {
            tracing::warn!("acp mock client: ending the agent: {e}");
        }
        Ok(result)
    }

    async fn drive(
        &self,
        conn: ClientConnection,
        driver: impl Future<Output = std::io::Result<()>> + Send + 'static,
        state: Arc<State>,
    ) -> Result<Report, RunError> {
        let driving = tokio::spawn(driver);
        let mut run = Run { script: &self.script, conn: &conn, report: Report::default() };
        let outcome = run.all().await;
        driving.abort();
        let mut report = run.report;
        report.calls = std::mem::take(&mut *lock(&state.calls));
        report.files = lock(&state.files).clone();
        match outcome {
            Ok(()) => Ok(report),
            Err((step, error)) => Err(RunError { step: step.into(), error, report }),
        }
    }
}

const SESSION_NEW: &str = <v1::methods::SessionNew as Method>::METHOD;
const SESSION_PROMPT: &str = <v1::methods::SessionPrompt as Method>::METHOD;

type Step<T> = Result<T, (&'static str, Error)>;

fn at(step: &'static str) -> impl Fn(Error) -> (&'static str, Error) {
    move |e| (step, e)
}

/// One run of a script on one connection.
struct Run<'r> {
    script: &'r ClientScript,
    conn: &'r ClientConnection,
    report: Report,
}

/// A turn's updates as JSON, and `session/cancel` when the script says.
struct Watch<'p> {
    prompt: &'p PromptScript,
    session: String,
}

impl Watch<'_> {
    async fn turn<U: serde::Serialize, T>(
        &self,
        conn: &ClientConnection,
        mut turn: TurnUpdates<'_, U, T>,
        report: &mut TurnReport,
    ) -> Result<T, Error> {
        let cancel = self.prompt.cancel.clone().unwrap_or_default();
        let timer = tokio::time::sleep(Duration::from_millis(cancel.after_ms.unwrap_or(0)));
        tokio::pin!(timer);
        loop {
            if !report.cancel_sent && cancel.after_updates.is_some_and(|n| report.updates.len() >= n) {
                conn.cancel_session(&self.session).await?;
                report.cancel_sent = true;
            }
            tokio::select! {
                update = turn.next() => match update {
                    Some(update) => report.updates.push(json(update)),
                    None => break,
                },
                () = &mut timer, if cancel.after_ms.is_some() && !report.cancel_sent => {
                    conn.cancel_session(&self.session).await?;
                    report.cancel_sent = true;
                }
            }
        }
        turn.outcome().await
    }
}

/// A session of one version: opened (authenticating when the agent asks and the script says
/// how), then each prompt's turn recorded; the updates between turns are the session's.
macro_rules! session_fn {
    ($(#[$doc:meta])* $name:ident, $new:ident, $request:expr, $block:expr, $stop:expr) => {
        $(#[$doc])*
        async fn $name(&mut self, script: &SessionScript) -> Step<()> {
            let conn = self.conn;
            let mut session = self.open(|| conn.$new($request(&script.cwd))).await?;
            let mut report = SessionReport { id: session.id().0.clone(), ..SessionReport::default() };
            report.updates.extend(std::iter::from_fn(|| session.next_update()).map(json));
            for prompt in &script.prompts {
                let mut turn = TurnReport { prompt: prompt.text.clone(), ..TurnReport::default() };
                let watch = Watch { prompt, session: report.id.clone() };
                let updates = session.prompt(vec![$block(prompt.text.clone())]).await;
                let done = watch.turn(conn, updates, &mut turn).await;
                turn.stop_reason = done.as_ref().ok().map($stop);
                report.turns.push(turn);
                if let Err(e) = done {
                    self.report.sessions.push(report);
                    return Err((SESSION_PROMPT, e));
                }
                report.updates.extend(std::iter::from_fn(|| session.next_update()).map(json));
            }
            self.report.sessions.push(report);
            Ok(())
        }
    };
}

impl Run<'_> {
    async fn all(&mut self) -> Step<()> {
        let mut v1_init = v1::InitializeRequest::new(v1::ProtocolVersion(1));
        let caps = &self.script.capabilities;
        v1_init.client_capabilities.fs.read_text_file = caps.fs.read_text_file.into();
        v1_init.client_capabilities.fs.write_text_file = caps.fs.write_text_file.into();
        v1_init.client_capabilities.terminal = caps.terminal.into();
        let name = || "acp mock client".to_string();
        v1_init.client_info = v1::Implementation::new(name(), env!("CARGO_PKG_VERSION").into()).into();
        let info = v2::Implementation::new(name(), env!("CARGO_PKG_VERSION").into());
        let offer = Offer::new()
            .v1(v1_init)
            .v2(v2::InitializeRequest::new(v2::ProtocolVersion(2), info))
            .at_most(self.script.version());
        let agreed = self.conn.negotiate(offer).await.map_err(at(crate::lifecycle::INITIALIZE))?;
        self.report.version = Some(agreed.version());
        self.report.initialize = match &agreed {
            Initialized::V1(answer) => serde_json::to_value(answer),
            Initialized::V2(answer) => serde_json::to_value(answer),
        }
        .unwrap_or_default();
        for session in &self.script.sessions {
            match agreed {
                Initialized::V1(_) => self.session_v1(session).await?,
                Initialized::V2(_) => self.session_v2(session).await?,
            }
        }
        Ok(())
    }

    /// `session/new` again after authenticating, when the agent refuses it `auth_required` and
    /// the script names a method.
    async fn open<S, F: Future<Output = Result<S, Error>>>(&mut self, new: impl Fn() -> F) -> Step<S> {
        match new().await {
            Err(Error::AuthRequired(_)) if self.report.authenticated.is_none() && self.script.auth.is_some() => {
                let method = self.script.auth.clone().unwrap_or_default();
                let step = match self.report.version {
                    Some(acp_types::Version::V2) => <v2::methods::AuthLogin as Method>::METHOD,
                    _ => <v1::methods::Authenticate as Method>::METHOD,
                };
                self.conn.authenticate(&method).await.map_err(at(step))?;
                self.report.authenticated = Some(method);
                new().await.map_err(at(SESSION_NEW))
            }
            other => other.map_err(at(SESSION_NEW)),
        }
    }

    session_fn!(
        /// One v1 session: `session/new`, then its prompts, one turn after another.
        session_v1,
        new_session_v1,
        |cwd: &str| v1::NewSessionRequest::new(cwd.into(), vec![]),
        |text: String| v1::ContentBlock::from(v1::TextContent::new(text)),
        |done: &v1::PromptResponse| done.stop_reason.as_str().to_string()
    );

    session_fn!(
        /// One v2 session: `session/new`, then its prompts, each turn ended by its `idle`.
        session_v2,
        new_session_v2,
        |cwd: &str| v2::NewSessionRequest::new(v2::AbsolutePath(cwd.into())),
        |text: String| v2::ContentBlock::from(v2::TextContent::new(text)),
        |end: &crate::client::TurnEnd| end.idle.stop_reason.tag().unwrap_or("none").to_string()
    );
}

fn json(update: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(update).unwrap_or_default()
}
