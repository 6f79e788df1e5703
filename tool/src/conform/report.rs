//! The verdict of `acp conform` (and `acp conform --client`): the results of every scenario's
//! checker for the side judged, merged per rule, with the driver's own findings; printed one
//! line per rule (text) or as one JSON object.

use crate::check::{Role, RuleResult, RuleViolation};
use acp_rpc::rules::{self, Rule, RuleId, Scope, Tier};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A violation and the scenario it was found in.
#[derive(Debug, Clone)]
pub struct Found {
    pub scenario: String,
    pub violation: RuleViolation,
}

/// One rule's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    Skip,
}

/// Results merged over the scenarios.
#[derive(Debug)]
pub struct Results {
    /// The side judged: the agent (`acp conform`) or the client (`--client`).
    judged: Role,
    exercised: BTreeMap<RuleId, usize>,
    found: BTreeMap<RuleId, Vec<Found>>,
    /// Why a rule was not exercised, when a scenario knows.
    skipped: BTreeMap<RuleId, String>,
    /// What a PASS rests on, when a scenario says more than a count.
    evidence: BTreeMap<RuleId, Vec<String>>,
    /// Scenarios that never reached what the rules need (the agent: a session; the client: its
    /// prompt), and why.
    unreached: Vec<(String, String)>,
    /// The agent's requests to the client, by method, over every scenario: what a tool prompt
    /// made it do (permission, `fs/*`, `terminal/*`), whichever rule they fall under.
    requests: BTreeMap<String, usize>,
    /// Messages of the side judged that re-encode differently (members no schema has, which the
    /// types do not keep): findings, never failures. The scenario and each message's line and
    /// first difference.
    lossy: Vec<(String, usize, String)>,
    /// `acp conform --format json`: the negotiations and the transcripts.
    pub negotiation: Vec<Value>,
    pub scenarios: Vec<Value>,
}

impl Default for Results {
    /// The results of `acp conform`, which judges an agent.
    fn default() -> Self {
        Results::judging(Role::Agent)
    }
}

impl Results {
    /// Empty results of a run judging `side`.
    pub fn judging(side: Role) -> Self {
        Results {
            judged: side,
            exercised: BTreeMap::new(),
            found: BTreeMap::new(),
            skipped: BTreeMap::new(),
            evidence: BTreeMap::new(),
            unreached: Vec::new(),
            requests: BTreeMap::new(),
            lossy: Vec::new(),
            negotiation: Vec::new(),
            scenarios: Vec::new(),
        }
    }

    /// Adds a scenario's results of the side judged.
    pub fn add(&mut self, scenario: &str, results: Vec<RuleResult>) {
        for result in results {
            *self.exercised.entry(result.rule.id).or_default() += result.exercised;
            let found = self.found.entry(result.rule.id).or_default();
            found.extend(
                result.violations.into_iter().map(|violation| Found { scenario: scenario.to_string(), violation }),
            );
        }
    }

    /// A scenario's lossy messages of the side judged: their line and first difference.
    pub fn lossy(&mut self, scenario: &str, found: Vec<(usize, String)>) {
        self.lossy.extend(found.into_iter().map(|(line, what)| (scenario.to_string(), line, what)));
    }

    /// A rule exercised by the driver itself.
    pub fn exercise(&mut self, rule: RuleId) {
        *self.exercised.entry(rule).or_default() += 1;
    }

    /// A violation found by the driver itself (a timeout, a cross-check).
    pub fn violate(&mut self, scenario: &str, violation: RuleViolation) {
        self.exercise(violation.rule);
        self.found.entry(violation.rule).or_default().push(Found { scenario: scenario.to_string(), violation });
    }

    /// What a PASS of `rule` rests on, beyond the count of checks.
    pub fn evidence(&mut self, rule: RuleId, text: impl Into<String>) {
        self.evidence.entry(rule).or_default().push(text.into());
    }

    /// How many requests the agent sent whose method starts with `prefix`, over every scenario.
    pub fn requested(&self, prefix: &str) -> usize {
        self.requests.iter().filter(|(method, _)| method.starts_with(prefix)).map(|(_, n)| n).sum()
    }

    /// Adds a scenario's count of the agent's requests by method.
    pub fn called(&mut self, called: &BTreeMap<String, usize>) {
        for (method, n) in called {
            *self.requests.entry(method.clone()).or_default() += n;
        }
    }

    /// A scenario that never reached what the rules need (an agent that gave no session, a
    /// client that never prompted): the run cannot say the side judged passes.
    pub fn unreached(&mut self, scenario: &str, why: impl Into<String>) {
        self.unreached.push((scenario.to_string(), why.into()));
    }

    /// Whether a scenario went unreached (exit status 3).
    pub fn incomplete(&self) -> bool {
        !self.unreached.is_empty()
    }

    /// Says why `rule` may go unexercised (kept unless a reason is already there).
    pub fn skip_reason(&mut self, rule: RuleId, reason: impl Into<String>) {
        self.skipped.entry(rule).or_insert_with(|| reason.into());
    }

    /// The rules that bind the side judged and that this run could see broken. `acp conform`
    /// drives the agent as a plain agent (`initialize`, never `proxy/initialize`) and offers it
    /// no ACP MCP server, and its stand-in for a client's agent is a plain agent that takes none,
    /// so a rule only a proxy or an MCP-over-ACP exchange can break is left out, unless the side
    /// judged met or broke it anyway (an `mcp/message` sent unasked).
    fn rules(&self) -> impl Iterator<Item = &'static Rule> + '_ {
        rules::RULES.iter().filter(|r| {
            r.binds.binds(self.judged)
                && (r.scope == Scope::Connection
                    || self.exercised.get(&r.id).is_some_and(|n| *n > 0)
                    || self.found.get(&r.id).is_some_and(|f| !f.is_empty()))
        })
    }

    pub fn verdict(&self, rule: &Rule) -> Verdict {
        if self.found.get(&rule.id).is_some_and(|f| !f.is_empty()) {
            Verdict::Fail
        } else if self.exercised.get(&rule.id).copied().unwrap_or_default() > 0 {
            Verdict::Pass
        } else {
            Verdict::Skip
        }
    }

    /// Whether a MUST rule failed.
    pub fn must_failed(&self) -> bool {
        self.rules().any(|r| r.tier == Tier::Must && self.verdict(r) == Verdict::Fail)
    }

    fn skip_text(&self, rule: &Rule) -> String {
        self.skipped.get(&rule.id).cloned().unwrap_or_else(|| "never exercised by the scenarios run".into())
    }

    /// One line per rule, then a summary line.
    pub fn text(&self) -> String {
        let width = self.rules().map(|r| r.id.as_str().len()).max().unwrap_or_default();
        let mut out = String::new();
        let mut counts = [0usize; 3];
        for rule in self.rules() {
            let verdict = self.verdict(rule);
            let (word, evidence) = match verdict {
                Verdict::Pass => {
                    let n = self.exercised.get(&rule.id).copied().unwrap_or_default();
                    let mut text = format!("{n} check{}", if n == 1 { "" } else { "s" });
                    for evidence in self.evidence.get(&rule.id).into_iter().flatten() {
                        let _ = write!(text, "; {evidence}");
                    }
                    ("PASS", text)
                }
                Verdict::Fail => {
                    let found = &self.found[&rule.id];
                    let first = &found[0];
                    let line = if first.violation.line > 0 {
                        format!(", line {}", first.violation.line)
                    } else {
                        String::new()
                    };
                    let more = if found.len() > 1 { format!(" (+{} more)", found.len() - 1) } else { String::new() };
                    ("FAIL", format!("[{}{line}] {}{more}", first.scenario, first.violation.detail))
                }
                Verdict::Skip => ("SKIP", self.skip_text(rule)),
            };
            counts[verdict as usize] += 1;
            let _ = writeln!(out, "{word}  {:<6}  {:<width$}  {evidence}", rule.tier.to_string(), rule.id);
            if verdict == Verdict::Fail {
                // The sentence the verdict is against, and where it is.
                let _ = writeln!(out, "      {:<6}  {:<width$}  \"{}\" ({})", "", "", rule.sentence, rule.source);
            }
        }
        if !self.requests.is_empty() {
            let calls: Vec<String> = self.requests.iter().map(|(method, n)| format!("{method} x{n}")).collect();
            let _ = writeln!(out, "AGENT REQUESTS  {}", calls.join(", "));
        }
        if let Some((scenario, line, what)) = self.lossy.first() {
            let _ = writeln!(
                out,
                "LOSSY  {} message(s) of the {} re-encode differently (what the schema lacks is not kept: findings, not failures); \
                 first: [{scenario}, line {line}] {what}",
                self.lossy.len(),
                self.judged
            );
        }
        let (label, why_incomplete) = match self.judged {
            Role::Client => ("NO PROMPT", "the client did not send its prompt: the rules of a turn were not exercised"),
            _ => (
                "NO SESSION",
                "the agent could not be brought to a session: the rules that need one were not exercised",
            ),
        };
        for (scenario, why) in &self.unreached {
            let _ = writeln!(out, "{label}  [{scenario}] {why}");
        }
        let verdict = if self.incomplete() {
            why_incomplete
        } else if self.must_failed() {
            "a MUST rule fails"
        } else {
            "every MUST rule exercised passes"
        };
        let _ = writeln!(out, "{} pass, {} fail, {} skip; {verdict}", counts[0], counts[1], counts[2]);
        out
    }

    /// The same as JSON, with the negotiations and transcripts.
    pub fn json(&self, exit: u8) -> Value {
        let rules: Vec<Value> = self.rules()
            .map(|rule| {
                let verdict = self.verdict(rule);
                let violations: Vec<Value> = self
                    .found
                    .get(&rule.id)
                    .into_iter()
                    .flatten()
                    .map(|f| json!({ "scenario": f.scenario, "line": f.violation.line, "detail": f.violation.detail }))
                    .collect();
                json!({
                    "id": rule.id,
                    "tier": rule.tier,
                    "binds": rule.binds,
                    "scope": rule.scope,
                    "status": match verdict { Verdict::Pass => "PASS", Verdict::Fail => "FAIL", Verdict::Skip => "SKIP" },
                    "exercised": self.exercised.get(&rule.id).copied().unwrap_or_default(),
                    "violations": violations,
                    "skipped": (verdict == Verdict::Skip).then(|| self.skip_text(rule)),
                    "evidence": self.evidence.get(&rule.id),
                    "sentence": rule.sentence,
                    "source": rule.source,
                    "tck": rule.tck,
                })
            })
            .collect();
        let unreached: Vec<Value> =
            self.unreached.iter().map(|(scenario, why)| json!({ "scenario": scenario, "why": why })).collect();
        let lossy: Vec<Value> = self
            .lossy
            .iter()
            .map(|(scenario, line, what)| json!({ "scenario": scenario, "line": line, "difference": what }))
            .collect();
        match self.judged {
            Role::Client => json!({
                "rules": rules,
                "noPrompt": unreached,
                "lossy": lossy,
                "scenarios": self.scenarios,
                "exit": exit,
            }),
            _ => json!({
                "rules": rules,
                "noSession": unreached,
                "lossy": lossy,
                "agentRequests": self.requests,
                "negotiation": self.negotiation,
                "scenarios": self.scenarios,
                "exit": exit,
            }),
        }
    }
}
