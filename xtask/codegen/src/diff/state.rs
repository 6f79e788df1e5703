//! The `x-state` and `x-scope` annotations of two revisions, matched by the message they stand on
//! (type name, and variant tag for a union's branch): a message that gains rules, loses them, or
//! whose rules change. Whom a change breaks: clients that keep state (the generated reducer of the
//! old revision applies new agents' messages the old way).

use super::report::{Finding, Rule, Severity};
use crate::ir::*;
use std::collections::BTreeMap;

/// A message as the annotations name it: `SessionUpdate::agent_message_chunk`, `NewSessionResponse`.
fn location(p: &Protocol, s: &StateSource) -> String {
    let ty = &p.get(s.ty).name;
    match (&s.tag, &s.variant) {
        (Some(tag), _) => format!("{ty}::{tag}"),
        (None, Some(v)) => format!("{ty}::{v}"),
        (None, None) => ty.clone(),
    }
}

/// A rule as one line: `session: append agentMessage[messageId].content ← content`.
fn describe(r: &StateRule) -> String {
    let mut s = format!("{}: {} {}", r.scope, r.action.as_str(), r.target);
    if !r.id.is_empty() {
        s.push_str(&format!("[{}]", r.id.join(".")));
    }
    if !r.field.is_empty() {
        s.push_str(&format!(".{}", r.field.join(".")));
    }
    if !r.value.is_empty() {
        s.push_str(&format!(" ← {}", r.value.join(".")));
    }
    s
}

/// The rules of each message, described; `x-state: {}` as an empty list.
fn rules_by_message(p: &Protocol) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &p.state.rules {
        out.entry(location(p, &r.source)).or_default().push(describe(r));
    }
    for s in &p.state.silent {
        out.entry(location(p, s)).or_default();
    }
    out
}

fn scopes(p: &Protocol) -> BTreeMap<(String, String), Vec<String>> {
    p.state
        .scopes
        .iter()
        .map(|s| ((p.get(s.ty).name.clone(), s.scope.clone()), s.paths.iter().map(|path| path.join(".")).collect()))
        .collect()
}

/// The methods whose messages carry a type: their params or result reach it through fields,
/// branches, items and newtypes.
fn methods_of(p: &Protocol, type_name: &str) -> Vec<String> {
    let Some(ty) = p.find(type_name) else { return Vec::new() };
    let reaches = |from: TypeId| super::compare::reachable(p, [from]).contains(&ty);
    let mut names: Vec<String> = p
        .methods
        .iter()
        .filter(|m| reaches(m.params) || m.result.is_some_and(reaches))
        .map(|m| m.name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

fn finding(new: &Protocol, rule: Rule, severity: Severity, location: &str, message: String) -> Finding {
    let type_name = location.split("::").next().unwrap_or(location);
    let methods = methods_of(new, type_name);
    let breaks = match severity {
        Severity::Breaking => vec!["new agents → old clients that keep state".to_string()],
        _ => Vec::new(),
    };
    Finding {
        rule,
        severity,
        direction: "agent → client".into(),
        method: methods.first().cloned().unwrap_or_default(),
        methods,
        location: location.to_string(),
        message,
        old: None,
        new: None,
        breaks,
        tolerated: Vec::new(),
        rust: None,
    }
}

/// The findings on `x-state` and `x-scope` between two revisions.
pub(super) fn findings(old: &Protocol, new: &Protocol) -> Vec<Finding> {
    let (a, b) = (rules_by_message(old), rules_by_message(new));
    let mut out = Vec::new();
    for (at, rules) in &b {
        match a.get(at) {
            None => {
                let message = format!("x-state added: {}", shown(rules));
                let mut f = finding(new, Rule::StateAdded, Severity::Info, at, message);
                f.new = Some(shown(rules));
                out.push(f);
            }
            Some(before) if before != rules => {
                let message = format!("x-state changed: {} → {}", shown(before), shown(rules));
                let mut f = finding(new, Rule::StateChanged, Severity::Breaking, at, message);
                f.old = Some(shown(before));
                f.new = Some(shown(rules));
                out.push(f);
            }
            Some(_) => {}
        }
    }
    for (at, rules) in a.iter().filter(|(at, _)| !b.contains_key(*at)) {
        let message = format!("x-state removed: {}", shown(rules));
        let mut f = finding(new, Rule::StateRemoved, Severity::Warning, at, message);
        f.old = Some(shown(rules));
        out.push(f);
    }
    let (sa, sb) = (scopes(old), scopes(new));
    for key in sa.keys().chain(sb.keys()).collect::<std::collections::BTreeSet<_>>() {
        let (before, after) = (sa.get(key), sb.get(key));
        if before == after {
            continue;
        }
        let severity = if before.is_none() { Severity::Info } else { Severity::Breaking };
        let list = |v: Option<&Vec<String>>| v.map_or_else(|| "none".to_string(), |v| v.join(", "));
        let message = format!("x-scope {}: {} → {}", key.1, list(before), list(after));
        let mut f = finding(new, Rule::ScopeChanged, severity, &key.0, message);
        f.old = before.map(|v| v.join(", "));
        f.new = after.map(|v| v.join(", "));
        out.push(f);
    }
    out
}

fn shown(rules: &[String]) -> String {
    if rules.is_empty() {
        "no state ({})".into()
    } else {
        rules.join("; ")
    }
}
