//! What `acp view` draws, built from a transcript and the checker's reports on it: the parties
//! (lanes), one row per message with its verdict, the request ↔ response pairs, the turns (v1: a
//! `session/prompt` to its response; v2: `running` to `idle`), the tool calls the updates belong
//! to, and every finding of `acp check`, each on the row of its message. Rendering is
//! [`super::render`]'s job; nothing here knows about HTML.

use crate::check::{self, trace, Kind, Report, Role, RuleViolation, Status, Summary};
use acp_rpc::rules::{RuleId, Tier};
use acp_types::{MethodName, Version};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// One transcript file, ready to draw.
#[derive(Debug)]
pub struct File {
    /// The name it was given as.
    pub name: String,
    /// The parties, left to right: the client, each proxy (or the conductor and its
    /// components), the agent.
    pub lanes: Vec<String>,
    pub rows: Vec<Row>,
    pub turns: Vec<Turn>,
    /// The tool calls the rows name (`toolCallId`), in order of first appearance.
    pub tools: Vec<Tool>,
    /// Every finding, in the order `acp check` prints them (end-of-conversation ones last).
    pub findings: Vec<Finding>,
    /// `acp check`'s summary line of the file.
    pub summary: String,
    /// The rows that change a session's state (v2's `x-state`), for the state at each message.
    pub state: Vec<super::state::StateOp>,
}

/// One message.
#[derive(Debug)]
pub struct Row {
    /// Its line in the file (1-based).
    pub line: usize,
    /// Sender and receiver lanes (`None`: the sender is unknown).
    pub from: Option<usize>,
    pub to: Option<usize>,
    pub kind: Kind,
    pub status: Status,
    /// The method, for a response the one of the request it answers (an envelope's shows the
    /// method it wraps: `proxy/successor [session/new]`).
    pub method: Option<String>,
    /// The session the message belongs to, when it names one (a response: its request's).
    pub session: Option<String>,
    /// The `sessionUpdate` of a `session/update`.
    pub update: Option<String>,
    /// When it was recorded (seconds; `acp tap`'s `time`, the official trace's `ts`).
    pub time: Option<f64>,
    /// The row of the request a response answers, or of the response a request got.
    pub pair: Option<usize>,
    /// The turn the message belongs to (index into [`File::turns`]).
    pub turn: Option<usize>,
    /// The tool call it is about (index into [`File::tools`]).
    pub tool: Option<usize>,
    /// The message as recorded (JSON text; a line that is not JSON as a JSON string).
    pub message: String,
}

/// What opens and ends a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnKind {
    /// v1: a `session/prompt` request to its response.
    Prompt,
    /// v2: a `running` (or `requires_action`) state update to the `idle` that ends the work.
    State,
}

/// A turn of one session: a span of rows.
#[derive(Debug)]
pub struct Turn {
    pub kind: TurnKind,
    pub session: String,
    /// The row that opens it and the one that ends it (`None`: it never ended).
    pub start: usize,
    pub end: Option<usize>,
    /// The stop reason, when the end gives one.
    pub stop: Option<String>,
    /// A cancel was sent during the turn.
    pub cancelled: bool,
    /// The column of the turn gutter it is drawn in (turns that overlap get different ones).
    pub column: usize,
}

/// A tool call: the updates and permission requests that name its `toolCallId` in a session.
#[derive(Debug)]
pub struct Tool {
    pub id: String,
    pub title: Option<String>,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingKind {
    /// The message is invalid (a problem).
    Error,
    /// Re-encoding changes the JSON (a difference).
    Lossy,
    /// A response to no request.
    Unmatched,
    /// A lenient repair or a value kept by a catch-all.
    Warning,
    /// A protocol rule broken.
    Rule,
}

/// One finding of `acp check`.
#[derive(Debug)]
pub struct Finding {
    /// The row of the message it is about (`None`: an end-of-conversation finding with no cause).
    pub row: Option<usize>,
    pub kind: FindingKind,
    /// For a rule: its id, tier and the side that broke it.
    pub rule: Option<(RuleId, Tier, Role)>,
    /// As `acp check` prints it (`path: reason`, or the rule's detail).
    pub text: String,
    /// Found at the end of the conversation (about something that never happened).
    pub end: bool,
}

/// The transcript formats, by how they name the parties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parties {
    /// `{"from": "client"|"agent"}` or bare messages: two parties.
    Two,
    /// `acp conduct --trace`: link 0 is the editor and the conductor, link K the conductor and
    /// component K-1.
    Conductor,
    /// The official conductor's trace: `Client`, `Proxy(N)`, `Agent`.
    Official,
}

/// Where a message went before the number of parties is known.
#[derive(Debug, Clone, Copy)]
enum Ends {
    /// On a link, from one of its ends (`None`: unknown).
    Link(u64, Option<Role>),
    /// Between two places of the official trace (`u64::MAX`: the agent).
    Places(u64, u64),
}

/// The parts of a line the model reads beyond the checker's report.
#[derive(Deserialize, Default)]
struct Record<'a> {
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    time: Option<f64>,
    ts: Option<f64>,
}

/// Builds the model of one transcript; `version` as `acp check --protocol-version`.
pub fn build(name: &str, bytes: &[u8], version: Option<Version>, ext: Option<Arc<check::ExtSchemas>>) -> File {
    let mut checker = check::Transcript::new(version);
    if let Some(ext) = ext {
        checker = checker.with_ext(ext);
    }
    let mut summary = Summary::default();
    let mut builder = Builder::default();
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let report = checker.check_line(i + 1, line);
        summary.add(&report);
        builder.add(report, line);
    }
    let end = checker.finish();
    summary.violations += end.len();
    let summary = format!("{name}: {summary} ({})", checker.versions_text());
    let versions: HashMap<Option<u64>, Option<Version>> = match checker.link_versions() {
        links if links.is_empty() => HashMap::from([(None, checker.version())]),
        links => links.into_iter().map(|(link, v)| (Some(link), v)).collect(),
    };
    let mut file = builder.finish(name, summary, end, &versions);
    // A chain's links are conversations of their own; the state is that of a two-party transcript.
    if versions.len() == 1 {
        file.state = super::state::ops(bytes, version);
    }
    file
}

/// The rows so far, and what pairs and groups them.
#[derive(Default)]
struct Builder {
    rows: Vec<Row>,
    ends: Vec<Ends>,
    /// The link of each row (`None`: a two-party transcript).
    links: Vec<Option<u64>>,
    parties: Option<Parties>,
    findings: Vec<Finding>,
    /// Requests awaiting their response: (link, requester, id JSON text) → row.
    pending: HashMap<(Option<u64>, Option<Role>, String), usize>,
    /// Open turns by (link, session): v1's and v2's, kept apart until the version is known.
    open: HashMap<(Option<u64>, String, TurnKind), usize>,
    turns: Vec<(Option<u64>, Turn)>,
    tools: Vec<Tool>,
    tool_index: HashMap<(Option<u64>, String, String), usize>,
}

impl Builder {
    fn add(&mut self, report: Report, line: &[u8]) {
        let row = self.rows.len();
        let text = std::str::from_utf8(line).map(|t| t.trim_end_matches('\r'));
        let value: Option<Value> = text.ok().and_then(|t| serde_json::from_str(t).ok());
        let record: Record = text.ok().and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default();
        let event = value.as_ref().and_then(Value::as_object).filter(|r| trace::is_event(r));
        let ends = self.ends_of(event, &report);
        // The JSON-RPC parts: a record's `message`, a bare message, or an event's fields.
        let message = match (&value, event) {
            (_, Some(event)) => Some(event),
            (Some(Value::Object(record)), None) if record.get("from").is_some_and(Value::is_string) => {
                record.get("message").and_then(Value::as_object)
            }
            (Some(Value::Object(message)), None) => Some(message),
            _ => None,
        };
        let params = message.and_then(|m| m.get("params"));
        // An envelope's params wrap the message's.
        let params = match (params, &report.wrapped) {
            (Some(outer), Some(_)) => outer.get("params"),
            (params, _) => params,
        };
        let result = message.and_then(|m| m.get("result").or_else(|| m.get("payload")));
        let shown = match (record.message, event) {
            (Some(raw), None) => raw.get().to_string(),
            _ => match text {
                Ok(text) if value.is_some() => text.to_string(),
                _ => Value::String(String::from_utf8_lossy(line).into_owned()).to_string(),
            },
        };
        let method = report.method.as_ref().map(|m| match &report.wrapped {
            Some(inner) => format!("{m} [{inner}]"),
            None => m.clone(),
        });
        let update = params.and_then(|p| p.get("update"));
        let mut session = params.and_then(|p| p.get("sessionId")).and_then(Value::as_str).map(str::to_string);
        let pair = self.pair(row, &report);
        if session.is_none() {
            // A response is of its request's session.
            session = pair.and_then(|request| self.rows[request].session.clone());
        }
        if session.is_none() {
            // `session/new`'s answer names the session it made.
            session = result.and_then(|r| r.get("sessionId")).and_then(Value::as_str).map(str::to_string);
        }
        let call = update.or_else(|| params.and_then(|p| p.get("toolCall")));
        let tool = session.as_ref().zip(call).and_then(|(session, call)| self.tool(report.link, session, call));
        self.findings.extend(findings(&report, row));
        self.turn_events(row, &report, session.as_deref(), update, result);
        self.rows.push(Row {
            line: report.line,
            from: None,
            to: None,
            kind: report.kind,
            status: report.status,
            method,
            session,
            update: update.and_then(|u| u.get("sessionUpdate")).and_then(Value::as_str).map(str::to_string),
            time: record.time.or(record.ts),
            pair,
            turn: None,
            tool,
            message: shown,
        });
        self.ends.push(ends);
        self.links.push(report.link);
    }

    /// Where a row stands: an official trace's event names its places; any other row its link
    /// and sender. Which kind of transcript this is follows from the first such row.
    fn ends_of(&mut self, event: Option<&Map<String, Value>>, report: &Report) -> Ends {
        match event {
            Some(event) => {
                self.parties = Some(Parties::Official);
                let place = |key: &str| event.get(key).and_then(Value::as_str).and_then(trace::place).unwrap_or(0);
                Ends::Places(place("from"), place("to"))
            }
            None => {
                if report.link.is_some() && self.parties.is_none() {
                    self.parties = Some(Parties::Conductor);
                }
                Ends::Link(report.link.unwrap_or(0), report.from)
            }
        }
    }

    /// Pairs requests with their responses: a request is kept until answered; a response
    /// returns its request's row (and that row gets this one).
    fn pair(&mut self, row: usize, report: &Report) -> Option<usize> {
        let id = report.id.as_ref()?;
        let requester = match report.kind {
            Kind::Request => report.from,
            _ => report.from.map(Role::peer),
        };
        let key = (report.link, requester, id.clone());
        match report.kind {
            Kind::Request => {
                self.pending.insert(key, row);
                None
            }
            Kind::Response | Kind::ErrorResponse => {
                let request = self.pending.remove(&key)?;
                self.rows[request].pair = Some(row);
                Some(request)
            }
            Kind::Notification | Kind::Invalid => None,
        }
    }

    /// The tool call a row names (an update's or a permission request's `toolCall`), as an index
    /// into the tools, numbered per link and session in the order first seen; its title is the
    /// first one given.
    fn tool(&mut self, link: Option<u64>, session: &str, call: &Value) -> Option<usize> {
        let id = call.get("toolCallId").and_then(Value::as_str)?;
        let key = (link, session.to_string(), id.to_string());
        let next = self.tools.len();
        let index = *self.tool_index.entry(key).or_insert(next);
        if index == next {
            self.tools.push(Tool { id: id.to_string(), title: None });
        }
        let title = call.get("title").and_then(Value::as_str);
        if let (None, Some(title)) = (&self.tools[index].title, title) {
            self.tools[index].title = Some(title.to_string());
        }
        Some(index)
    }

    /// Opens and ends turns on `row`: both kinds are followed, the version picks one at the end.
    fn turn_events(
        &mut self,
        row: usize,
        report: &Report,
        session: Option<&str>,
        update: Option<&Value>,
        result: Option<&Value>,
    ) {
        let Some(session) = session else { return };
        let method = report.method.as_deref();
        let key = |kind| (report.link, session.to_string(), kind);
        let open = |kind, stop: Option<String>| Turn {
            kind,
            session: session.to_string(),
            start: row,
            end: None,
            stop,
            cancelled: false,
            column: 0,
        };
        let name = method.and_then(MethodName::of);
        if report.kind == Kind::Notification && matches!(name, Some(MethodName::SessionCancel)) {
            for kind in [TurnKind::Prompt, TurnKind::State] {
                if let Some(turn) = self.open.get(&key(kind)) {
                    self.turns[*turn].1.cancelled = true;
                }
            }
        }
        if matches!(name, Some(MethodName::SessionPrompt)) && report.wrapped.is_none() {
            match report.kind {
                Kind::Request => {
                    self.open.insert(key(TurnKind::Prompt), self.turns.len());
                    self.turns.push((report.link, open(TurnKind::Prompt, None)));
                }
                Kind::Response | Kind::ErrorResponse => {
                    if let Some(turn) = self.open.remove(&key(TurnKind::Prompt)) {
                        let turn = &mut self.turns[turn].1;
                        turn.end = Some(row);
                        turn.stop =
                            result.and_then(|r| r.get("stopReason")).and_then(Value::as_str).map(str::to_string);
                    }
                }
                _ => {}
            }
        }
        let state = update
            .filter(|u| u.get("sessionUpdate").and_then(Value::as_str) == Some("state_update"))
            .and_then(|u| u.get("state"))
            .and_then(Value::as_str);
        match state {
            Some("running" | "requires_action") if !self.open.contains_key(&key(TurnKind::State)) => {
                self.open.insert(key(TurnKind::State), self.turns.len());
                self.turns.push((report.link, open(TurnKind::State, None)));
            }
            Some("idle") => {
                if let Some(turn) = self.open.remove(&key(TurnKind::State)) {
                    let turn = &mut self.turns[turn].1;
                    turn.end = Some(row);
                    turn.stop = update.and_then(|u| u.get("stopReason")).and_then(Value::as_str).map(str::to_string);
                }
            }
            _ => {}
        }
    }

    fn finish(
        mut self,
        name: &str,
        summary: String,
        end: Vec<RuleViolation>,
        versions: &HashMap<Option<u64>, Option<Version>>,
    ) -> File {
        let parties = self.parties.unwrap_or(Parties::Two);
        let lanes = lanes(parties, &self.ends);
        let last = lanes.len().saturating_sub(1);
        for (row, ends) in self.rows.iter_mut().zip(&self.ends) {
            let (from, to) = match (parties, *ends) {
                (_, Ends::Places(from, to)) => (from.min(last as u64) as usize, to.min(last as u64) as usize),
                (_, Ends::Link(_, None)) => continue,
                (Parties::Conductor, Ends::Link(link, Some(role))) => {
                    let client = if link == 0 { 0 } else { 1 };
                    let agent = (link as usize + 1).min(last);
                    if role == Role::Client {
                        (client, agent)
                    } else {
                        (agent, client)
                    }
                }
                (_, Ends::Link(_, Some(Role::Client))) => (0, last),
                (_, Ends::Link(_, Some(Role::Agent))) => (last, 0),
            };
            row.from = Some(from);
            row.to = Some(to);
        }
        // End-of-conversation findings go on the row of their cause.
        let by_line: HashMap<usize, usize> = self.rows.iter().enumerate().map(|(i, r)| (r.line, i)).collect();
        for violation in end {
            let row = by_line.get(&violation.line).copied();
            let mut finding = rule_finding(row, &violation);
            finding.end = true;
            self.findings.push(finding);
        }
        // The version of a turn's link says which kind of turn it has.
        let mut turns: Vec<Turn> = self
            .turns
            .into_iter()
            .filter(|(link, turn)| {
                let version =
                    versions.get(link).copied().flatten().or_else(|| versions.values().flatten().next().copied());
                match version {
                    Some(Version::V1) => turn.kind == TurnKind::Prompt,
                    Some(Version::V2) => turn.kind == TurnKind::State,
                    None => turn.kind == TurnKind::Prompt,
                }
            })
            .map(|(_, turn)| turn)
            .collect();
        // Each row of a turn's session (and link) between its ends belongs to it.
        let last_row = self.rows.len().saturating_sub(1);
        for (index, turn) in turns.iter().enumerate() {
            let link = self.links[turn.start];
            for row in turn.start..=turn.end.unwrap_or(last_row) {
                let r = &mut self.rows[row];
                if r.turn.is_none() && self.links[row] == link && r.session.as_deref() == Some(&turn.session) {
                    r.turn = Some(index);
                }
            }
        }
        columns(&mut turns, last_row);
        File {
            name: name.to_string(),
            lanes,
            rows: self.rows,
            turns,
            tools: self.tools,
            findings: self.findings,
            summary,
            state: Vec::new(),
        }
    }
}

/// The parties' names, left to right.
fn lanes(parties: Parties, ends: &[Ends]) -> Vec<String> {
    match parties {
        Parties::Two => vec!["client".into(), "agent".into()],
        Parties::Conductor => {
            let links = ends.iter().filter_map(|e| match e {
                Ends::Link(link, _) => Some(*link),
                Ends::Places(..) => None,
            });
            let components = links.max().unwrap_or(0);
            let mut lanes = vec!["client".to_string(), if components == 0 { "agent" } else { "conductor" }.to_string()];
            for k in 1..=components {
                lanes.push(if k == components { "agent".into() } else { format!("proxy {k}") });
            }
            lanes
        }
        Parties::Official => {
            let proxies = ends
                .iter()
                .flat_map(|e| match e {
                    Ends::Places(a, b) => [*a, *b],
                    Ends::Link(..) => [0, 0],
                })
                .filter(|p| *p != u64::MAX)
                .max()
                .unwrap_or(0);
            let mut lanes = vec!["Client".to_string()];
            lanes.extend((0..proxies).map(|n| format!("Proxy({n})")));
            lanes.push("Agent".into());
            lanes
        }
    }
}

/// Gives overlapping turns different gutter columns (the lowest one free at each start).
fn columns(turns: &mut [Turn], last_row: usize) {
    let mut ends: Vec<usize> = Vec::new();
    let mut order: Vec<usize> = (0..turns.len()).collect();
    order.sort_by_key(|&i| turns[i].start);
    for i in order {
        let turn = &mut turns[i];
        let column = ends.iter().position(|&end| end < turn.start).unwrap_or(ends.len());
        let end = turn.end.unwrap_or(last_row);
        match ends.get_mut(column) {
            Some(slot) => *slot = end,
            None => ends.push(end),
        }
        turn.column = column;
    }
}

/// The findings on one message, as `acp check` lists them.
fn findings(report: &Report, row: usize) -> Vec<Finding> {
    let at = |path: &str, text: String| if path.is_empty() { text } else { format!("{path}: {text}") };
    let plain = |kind, text| Finding { row: Some(row), kind, rule: None, text, end: false };
    let mut found = Vec::new();
    let problem = if report.status == Status::Unmatched { FindingKind::Unmatched } else { FindingKind::Error };
    for p in &report.problems {
        found.push(plain(problem, at(&p.path, p.reason.clone())));
    }
    for d in &report.differences {
        let show = |v: &Option<Value>| v.as_ref().map_or_else(|| "(absent)".to_string(), Value::to_string);
        let text = format!("received {}, re-encoded {}", show(&d.received), show(&d.reencoded));
        found.push(plain(FindingKind::Lossy, at(&d.path, text)));
    }
    for w in &report.warnings {
        found.push(plain(FindingKind::Warning, at(w.path.as_deref().unwrap_or_default(), w.reason.clone())));
    }
    found.extend(report.violations.iter().map(|v| rule_finding(Some(row), v)));
    found
}

fn rule_finding(row: Option<usize>, v: &RuleViolation) -> Finding {
    Finding { row, kind: FindingKind::Rule, rule: Some((v.rule, v.tier, v.by)), text: v.detail.clone(), end: false }
}

impl File {
    /// The rule ids the findings name, each once.
    pub fn rules(&self) -> BTreeSet<RuleId> {
        self.findings.iter().filter_map(|f| f.rule.map(|(id, ..)| id)).collect()
    }
}
