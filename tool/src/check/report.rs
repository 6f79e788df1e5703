//! The report model: what the checker says about each message (its status, problems,
//! differences, warnings and rule violations), and the summary of a conversation.

use acp_rpc::rules::{Rule, RuleId, Tier};
use acp_types::support::rpc::Role;
use serde::Serialize;
use serde_json::Value;
use std::fmt;

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
    /// The indices of the `problems` another rule than schema validity accounts for (an id
    /// reused, a call before `initialize`); the others are the schema's.
    #[serde(skip)]
    pub(super) rule_problems: Vec<usize>,
}

/// A rule broken: which, by whom, where and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleViolation {
    /// The rule's id ([`acp_rpc::rules::RULES`]).
    pub rule: RuleId,
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
    /// A violation of the rule `rule`, of its tier.
    pub fn new(rule: RuleId, by: Role, line: usize, detail: String) -> Self {
        let tier = rule.rule().tier;
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
    pub(super) fn new(line: usize) -> Self {
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
            rule_problems: Vec::new(),
        }
    }

    /// The report on a line that is not JSON (or not UTF-8).
    pub(super) fn unreadable(line: usize, reason: String) -> Self {
        let mut report = Report::new(line);
        report.error("", reason);
        report
    }

    pub(super) fn error(&mut self, path: impl Into<String>, reason: impl Into<String>) {
        self.status = Status::Error;
        self.problems.push(Problem { path: path.into(), reason: reason.into() });
    }

    /// A `lossy` message's first difference in words (`path: received X, re-encoded Y`), and how
    /// many more there are.
    pub fn first_difference(&self) -> Option<String> {
        let first = self.differences.first()?;
        let show = |v: &Option<Value>| v.as_ref().map_or_else(|| "(absent)".to_string(), Value::to_string);
        let more = match self.differences.len() {
            1 => String::new(),
            n => format!(" (+{} more)", n - 1),
        };
        Some(format!("{}: received {}, re-encoded {}{more}", first.path, show(&first.received), show(&first.reencoded)))
    }

    /// An error that a rule other than schema validity judges (see [`Report::schema_problems`]).
    pub(super) fn rule_error(&mut self, path: impl Into<String>, reason: impl Into<String>) {
        self.error(path, reason);
        self.rule_problems.push(self.problems.len() - 1);
    }

    /// The problems that make the message invalid by its schema (and JSON-RPC's envelope): an
    /// `error` report's problems but those another rule accounts for.
    pub fn schema_problems(&self) -> impl Iterator<Item = &Problem> {
        let problems = if self.status == Status::Error { &self.problems[..] } else { &[] };
        problems.iter().enumerate().filter(|(i, _)| !self.rule_problems.contains(i)).map(|(_, p)| p)
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
