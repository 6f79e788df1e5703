//! The verdict of `acp conform --client`: the client-side results of every scenario's checker,
//! merged per rule, printed as `acp conform` prints an agent's (one line per rule, the sentence
//! under a FAIL, a summary line), or as one JSON object.

use crate::check::RuleResult;
use acp_rpc::rules::{self, Binds, Rule, Scope, Tier};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A violation and the scenario it was found in.
#[derive(Debug, Clone)]
struct Found {
    scenario: String,
    line: usize,
    detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Pass,
    Fail,
    Skip,
}

/// Results merged over the scenarios.
#[derive(Debug, Default)]
pub struct Results {
    exercised: BTreeMap<&'static str, usize>,
    found: BTreeMap<&'static str, Vec<Found>>,
    skipped: BTreeMap<&'static str, String>,
    /// Scenarios in which the client never prompted, and why.
    no_prompt: Vec<(String, String)>,
    /// `--format json`: the transcripts.
    pub scenarios: Vec<Value>,
}

impl Results {
    /// Adds a scenario's client-side results.
    pub fn add(&mut self, scenario: &str, results: Vec<RuleResult>) {
        for result in results {
            *self.exercised.entry(result.rule.id).or_default() += result.exercised;
            let found = self.found.entry(result.rule.id).or_default();
            found.extend(result.violations.into_iter().map(|v| Found {
                scenario: scenario.to_string(),
                line: v.line,
                detail: v.detail,
            }));
        }
    }

    /// Says why `rule` may go unexercised (kept unless a reason is already there).
    pub fn skip_reason(&mut self, rule: &'static str, reason: impl Into<String>) {
        self.skipped.entry(rule).or_insert_with(|| reason.into());
    }

    /// A scenario whose client never sent its prompt: the run cannot say the client passes.
    pub fn no_prompt(&mut self, scenario: &str, why: impl Into<String>) {
        self.no_prompt.push((scenario.to_string(), why.into()));
    }

    /// Whether a scenario went without a prompt (exit status 3).
    pub fn without_prompt(&self) -> bool {
        !self.no_prompt.is_empty()
    }

    /// The rules that bind the client and that this run could see broken: the stand-in is a
    /// plain agent (no proxy) and takes no ACP MCP server, so a rule only a proxy or an
    /// MCP-over-ACP exchange can break is left out, unless the client met or broke it anyway.
    fn rules(&self) -> impl Iterator<Item = &'static Rule> + '_ {
        rules::RULES.iter().filter(|r| {
            r.binds != Binds::Agent
                && (r.scope == Scope::Connection
                    || self.exercised.get(r.id).is_some_and(|n| *n > 0)
                    || self.found.get(r.id).is_some_and(|f| !f.is_empty()))
        })
    }

    fn verdict(&self, rule: &Rule) -> Verdict {
        if self.found.get(rule.id).is_some_and(|f| !f.is_empty()) {
            Verdict::Fail
        } else if self.exercised.get(rule.id).copied().unwrap_or_default() > 0 {
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
        self.skipped.get(rule.id).cloned().unwrap_or_else(|| "never exercised by the scenarios run".into())
    }

    /// One line per rule, then a summary line.
    pub fn text(&self) -> String {
        let width = self.rules().map(|r| r.id.len()).max().unwrap_or_default();
        let mut out = String::new();
        let mut counts = [0usize; 3];
        for rule in self.rules() {
            let verdict = self.verdict(rule);
            let (word, evidence) = match verdict {
                Verdict::Pass => {
                    let n = self.exercised.get(rule.id).copied().unwrap_or_default();
                    ("PASS", format!("{n} check{}", if n == 1 { "" } else { "s" }))
                }
                Verdict::Fail => {
                    let found = &self.found[rule.id];
                    let first = &found[0];
                    let line = if first.line > 0 { format!(", line {}", first.line) } else { String::new() };
                    let more = if found.len() > 1 { format!(" (+{} more)", found.len() - 1) } else { String::new() };
                    ("FAIL", format!("[{}{line}] {}{more}", first.scenario, first.detail))
                }
                Verdict::Skip => ("SKIP", self.skip_text(rule)),
            };
            counts[verdict as usize] += 1;
            let _ = writeln!(out, "{word}  {:<6}  {:<width$}  {evidence}", rule.tier.to_string(), rule.id);
            if verdict == Verdict::Fail {
                let _ = writeln!(out, "      {:<6}  {:<width$}  \"{}\" ({})", "", "", rule.sentence, rule.source);
            }
        }
        for (scenario, why) in &self.no_prompt {
            let _ = writeln!(out, "NO PROMPT  [{scenario}] {why}");
        }
        let verdict = if self.without_prompt() {
            "the client did not send its prompt: the rules of a turn were not exercised"
        } else if self.must_failed() {
            "a MUST rule fails"
        } else {
            "every MUST rule exercised passes"
        };
        let _ = writeln!(out, "{} pass, {} fail, {} skip; {verdict}", counts[0], counts[1], counts[2]);
        out
    }

    /// The same as JSON, with the transcripts.
    pub fn json(&self, exit: u8) -> Value {
        let rules: Vec<Value> = self
            .rules()
            .map(|rule| {
                let verdict = self.verdict(rule);
                let violations: Vec<Value> = self
                    .found
                    .get(rule.id)
                    .into_iter()
                    .flatten()
                    .map(|f| json!({ "scenario": f.scenario, "line": f.line, "detail": f.detail }))
                    .collect();
                json!({
                    "id": rule.id,
                    "tier": rule.tier,
                    "binds": rule.binds,
                    "scope": rule.scope,
                    "status": match verdict { Verdict::Pass => "PASS", Verdict::Fail => "FAIL", Verdict::Skip => "SKIP" },
                    "exercised": self.exercised.get(rule.id).copied().unwrap_or_default(),
                    "violations": violations,
                    "skipped": (verdict == Verdict::Skip).then(|| self.skip_text(rule)),
                    "sentence": rule.sentence,
                    "source": rule.source,
                    "tck": rule.tck,
                })
            })
            .collect();
        let no_prompt: Vec<Value> =
            self.no_prompt.iter().map(|(scenario, why)| json!({ "scenario": scenario, "why": why })).collect();
        json!({ "rules": rules, "noPrompt": no_prompt, "scenarios": self.scenarios, "exit": exit })
    }
}
