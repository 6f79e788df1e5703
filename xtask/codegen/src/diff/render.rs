//! The three outputs of `cargo xtask diff`: text for a terminal, a markdown changelog, and JSON
//! for scripts. All group by severity (most severe first), then by method; none holds anything
//! that varies between runs.

use super::report::{Finding, Report, Severity};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write;

const ORDER: [Severity; 4] = [Severity::Breaking, Severity::Warning, Severity::Info, Severity::Docs];

fn heading(s: Severity) -> &'static str {
    match s {
        Severity::Breaking => "Breaking changes",
        Severity::Warning => "Warnings",
        Severity::Info => "Compatible changes",
        Severity::Docs => "Documentation only",
    }
}

fn summary(r: &Report) -> String {
    let n = |s| r.count(s);
    format!(
        "{} breaking, {} warning{}, {} info, {} docs",
        n(Severity::Breaking),
        n(Severity::Warning),
        if n(Severity::Warning) == 1 { "" } else { "s" },
        n(Severity::Info),
        n(Severity::Docs)
    )
}

/// Findings of one severity by method, each group sorted by location.
fn by_method(r: &Report, s: Severity) -> BTreeMap<&str, Vec<&Finding>> {
    let mut groups: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
    for f in r.findings.iter().filter(|f| f.severity == s) {
        groups.entry(f.method.as_str()).or_default().push(f);
    }
    for list in groups.values_mut() {
        list.sort_by(|a, b| (&a.location, a.rule, &a.message).cmp(&(&b.location, b.rule, &b.message)));
    }
    groups
}

fn others(f: &Finding) -> Vec<&str> {
    f.methods.iter().map(String::as_str).filter(|m| *m != f.method).collect()
}

/// For a terminal.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} → {}: {}", r.old, r.new, summary(r));
    for s in ORDER {
        let groups = by_method(r, s);
        if groups.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{}", heading(s).to_uppercase());
        for (method, list) in groups {
            let _ = writeln!(out, "  {method}");
            for f in list {
                let at = if f.location.is_empty() { String::new() } else { format!("  {}", f.location) };
                let _ = writeln!(out, "    {}{at}  [{}]", f.rule.id(), f.direction);
                if s == Severity::Docs {
                    continue;
                }
                let _ = writeln!(out, "      {}", f.message);
                if !f.breaks.is_empty() {
                    let _ = writeln!(out, "      breaks: {}", f.breaks.join("; "));
                }
                if !f.tolerated.is_empty() {
                    let _ = writeln!(out, "      tolerated by lenient decoding: {}", f.tolerated.join("; "));
                }
                if let Some(rust) = &f.rust {
                    let _ = writeln!(out, "      rust: {rust}");
                }
                let also = others(f);
                if !also.is_empty() {
                    let _ = writeln!(out, "      also via: {}", also.join(", "));
                }
            }
        }
    }
    unreachable_lines(r, &mut out, false);
    out
}

/// A changelog: severity sections, most severe first, each grouped by method.
pub fn markdown(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Protocol changes: `{}` → `{}`\n", r.old, r.new);
    let _ = writeln!(out, "| breaking | warning | info | docs |\n|---:|---:|---:|---:|");
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} |\n",
        r.count(Severity::Breaking),
        r.count(Severity::Warning),
        r.count(Severity::Info),
        r.count(Severity::Docs)
    );
    out.push_str(
        "Each change names who sends the value (`client → agent`). A pairing such as *new clients → old agents* \
         is a client built on the new schema talking to an agent built on the old one: **breaks** lists the \
         pairings that no longer interoperate, *tolerated* those where the receiver's lenient decoding drops or \
         defaults the value instead. *Rust* says what changes for code built on `acp-types`. Types are matched \
         by where methods use them, so a renamed type is a rename, not a removal and an addition.\n\n",
    );
    for s in ORDER {
        let groups = by_method(r, s);
        if groups.is_empty() {
            continue;
        }
        let _ = writeln!(out, "## {}\n", heading(s));
        if s == Severity::Docs {
            let total: usize = groups.values().map(Vec::len).sum();
            let _ = writeln!(out, "<details><summary>{total} descriptions changed</summary>\n");
        }
        for (method, list) in groups {
            let _ = writeln!(out, "### `{method}`\n");
            for f in list {
                let at = if f.location.is_empty() { String::new() } else { format!(" `{}`", f.location) };
                if s == Severity::Docs {
                    let _ = writeln!(out, "-{at}: {}", f.message);
                    continue;
                }
                let mut line = format!("- **{}**{at} ({}): {}.", f.rule.id(), f.direction, escape(&f.message));
                if !f.breaks.is_empty() {
                    let _ = write!(line, " Breaks *{}*.", f.breaks.join("*, *"));
                }
                if !f.tolerated.is_empty() {
                    let _ = write!(line, " Tolerated by lenient decoding: *{}*.", f.tolerated.join("*, *"));
                }
                if let Some(rust) = &f.rust {
                    let _ = write!(line, " Rust: {rust}.");
                }
                let also = others(f);
                if !also.is_empty() {
                    let _ = write!(
                        line,
                        " Also via {}.",
                        also.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
                    );
                }
                let _ = writeln!(out, "{line}");
            }
            out.push('\n');
        }
        if s == Severity::Docs {
            out.push_str("</details>\n\n");
        }
    }
    unreachable_lines(r, &mut out, true);
    out
}

/// `<`, `>` and `|` in messages (defaults, generics) would otherwise be read as markup.
fn escape(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '<' if !in_code => out.push_str("&lt;"),
            '>' if !in_code => out.push_str("&gt;"),
            '|' if !in_code => out.push_str("\\|"),
            _ => out.push(c),
        }
    }
    out
}

fn unreachable_lines(r: &Report, out: &mut String, markdown: bool) {
    if r.unreachable_old.is_empty() && r.unreachable_new.is_empty() {
        return;
    }
    let list = |names: &[String]| {
        if names.is_empty() {
            "none".to_string()
        } else if markdown {
            names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        } else {
            names.join(", ")
        }
    };
    if markdown {
        let _ = writeln!(out, "## Not compared\n");
        let _ = writeln!(out, "Types that no method's params or result reach (JSON-RPC envelopes, errors, …).\n");
        let _ = writeln!(out, "- old: {}", list(&r.unreachable_old));
        let _ = writeln!(out, "- new: {}", list(&r.unreachable_new));
    } else {
        let _ = writeln!(out, "\nNOT COMPARED (no method reaches them)");
        let _ = writeln!(out, "  old: {}", list(&r.unreachable_old));
        let _ = writeln!(out, "  new: {}", list(&r.unreachable_new));
    }
}

/// For scripts: `{"old", "new", "summary", "findings": [...], "unreachable"}`.
pub fn json(r: &Report) -> String {
    let findings: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            json!({
                "id": f.rule.id(),
                "severity": f.severity.as_str(),
                "direction": f.direction,
                "path": f.path(),
                "message": f.message,
                "old": f.old,
                "new": f.new,
                "breaks": f.breaks,
                "tolerated": f.tolerated,
                "rust": f.rust,
                "methods": f.methods,
            })
        })
        .collect();
    let value = json!({
        "old": r.old,
        "new": r.new,
        "summary": {
            "breaking": r.count(Severity::Breaking),
            "warning": r.count(Severity::Warning),
            "info": r.count(Severity::Info),
            "docs": r.count(Severity::Docs),
        },
        "findings": findings,
        "unreachable": { "old": r.unreachable_old, "new": r.unreachable_new },
    });
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}
