//! The page of `acp view`: the [`model`](super::model) as one JSON document embedded once in a
//! self-contained HTML file (the template, its CSS and its script are `page.html`, `view.css` and
//! `view.js` beside this file). The script draws only the rows in sight, so a transcript of
//! 100,000 messages costs the page one `JSON.parse`, not 100,000 DOM rows.
//!
//! The data sits in `<script type="application/json">`: every `<`, `>` and `&` in it is written
//! `\u003c`, `\u003e`, `\u0026` (JSON has them only inside strings, where the escape means the
//! same), so no message can close the element or open a comment; the file names in the title are
//! HTML-escaped. The script puts every text in the DOM with `textContent`, never as markup.

use super::model::{File, Finding, FindingKind, Row, Tool, Turn, TurnKind};
use crate::check::{Kind, Role, Status};
use acp_rpc::rules::{RuleId, Tier};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

const TEMPLATE: &str = include_str!("page.html");
const CSS: &str = include_str!("view.css");
const SCRIPT: &str = include_str!("view.js");

/// The whole page for `files`.
pub fn page(files: &[File]) -> String {
    let title = files.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ");
    let data = data(files);
    let mut out = String::with_capacity(TEMPLATE.len() + CSS.len() + SCRIPT.len() + data.len() + data.len() / 16);
    let mut rest = TEMPLATE;
    for (marker, fill) in [
        ("{{title}}", Fill::Html(&title)),
        ("{{css}}", Fill::Raw(CSS)),
        ("{{data}}", Fill::Json(&data)),
        ("{{script}}", Fill::Raw(SCRIPT)),
    ] {
        let (before, after) = rest.split_once(marker).unwrap_or((rest, ""));
        out.push_str(before);
        match fill {
            Fill::Raw(text) => out.push_str(text),
            Fill::Html(text) => escape_html(&mut out, text),
            Fill::Json(text) => escape_json_for_script(&mut out, text),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

enum Fill<'a> {
    Raw(&'a str),
    Html(&'a str),
    Json(&'a str),
}

fn escape_html(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// JSON text made safe inside `<script>`: see the module docs.
fn escape_json_for_script(out: &mut String, json: &str) {
    let mut start = 0;
    for (i, b) in json.bytes().enumerate() {
        let escaped = match b {
            b'<' => "\\u003c",
            b'>' => "\\u003e",
            b'&' => "\\u0026",
            _ => continue,
        };
        out.push_str(&json[start..i]);
        out.push_str(escaped);
        start = i + 1;
    }
    out.push_str(&json[start..]);
}

/// A JSON string.
fn string(out: &mut String, text: &str) {
    // Writing a `&str` as JSON cannot fail.
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

fn opt_string(out: &mut String, text: Option<&str>) {
    match text {
        Some(text) => string(out, text),
        None => out.push_str("null"),
    }
}

/// Strings written once and named by their index + 1 in the rows (0: none).
#[derive(Default)]
struct Interned<'a> {
    index: HashMap<&'a str, usize>,
    list: Vec<&'a str>,
}

impl<'a> Interned<'a> {
    fn id(&mut self, text: Option<&'a str>) -> usize {
        let Some(text) = text else { return 0 };
        let next = self.list.len() + 1;
        let id = *self.index.entry(text).or_insert(next);
        if id == next {
            self.list.push(text);
        }
        id
    }

    fn write(&self, out: &mut String, key: &str) {
        let _ = write!(out, "\"{key}\":[");
        for (i, text) in self.list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            string(out, text);
        }
        out.push_str("],");
    }
}

/// A column of integers.
/// A column of integers. One whose values are all the same (the session of a one-session
/// transcript, the line numbers' deltas) is written as that value alone, which the script
/// expands to the column's length.
fn column(out: &mut String, key: &str, values: impl Iterator<Item = i64>) {
    let values: Vec<i64> = values.collect();
    if let [first, rest @ ..] = values.as_slice() {
        if !rest.is_empty() && rest.iter().all(|v| v == first) {
            let _ = write!(out, "\"{key}\":{first},");
            return;
        }
    }
    let _ = write!(out, "\"{key}\":[");
    for (i, value) in values.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{value}");
    }
    out.push_str("],");
}

fn kind_code(kind: Kind) -> i64 {
    match kind {
        Kind::Request => 0,
        Kind::Notification => 1,
        Kind::Response => 2,
        Kind::ErrorResponse => 3,
        Kind::Invalid => 4,
    }
}

fn status_code(status: Status) -> i64 {
    match status {
        Status::Ok => 0,
        Status::Extension => 1,
        Status::Unmatched => 2,
        Status::Lossy => 3,
        Status::Error => 4,
    }
}

fn finding_code(kind: FindingKind) -> i64 {
    match kind {
        FindingKind::Error => 0,
        FindingKind::Lossy => 1,
        FindingKind::Unmatched => 2,
        FindingKind::Warning => 3,
        FindingKind::Rule => 4,
    }
}

/// What almost every message starts with: left out of the page (a tenth of its size) and put
/// back by the script.
const JSONRPC_FIRST: &str = "{\"jsonrpc\":\"2.0\",";

fn jsonrpc_first(message: &str) -> bool {
    message.starts_with(JSONRPC_FIRST)
}

/// Each value minus the one before (the first minus 0).
fn deltas(values: impl Iterator<Item = i64>) -> impl Iterator<Item = i64> {
    let mut previous = 0;
    values.map(move |v| {
        let delta = v - previous;
        previous = v;
        delta
    })
}

/// The findings, as columns like the rows': `findingRow` (the row + 1, 0 for none, as deltas),
/// `findingCode` (kind + 5 × at the end + 10 × the rule broken, its tier and side as an index + 1
/// into `findingRules`, 0 for none) and `findingText` (an index into `findingTexts`): a finding
/// repeated on every message is a few bytes each, its text written once (`view.js` documents the
/// layout).
fn findings(out: &mut String, findings: &[Finding]) {
    let mut texts = Interned::default();
    let mut rules: Vec<(RuleId, Tier, Role)> = Vec::new();
    let mut codes = Vec::with_capacity(findings.len());
    let mut text = Vec::with_capacity(findings.len());
    for finding in findings {
        let who = finding.rule.map_or(0, |rule| {
            rules.iter().position(|r| *r == rule).unwrap_or_else(|| {
                rules.push(rule);
                rules.len() - 1
            }) + 1
        });
        codes.push(finding_code(finding.kind) + 5 * i64::from(finding.end) + 10 * who as i64);
        // Interned ids count from 1 (0 stands for none); every finding has a text.
        text.push(texts.id(Some(&finding.text)) as i64 - 1);
    }
    out.push_str("],\"findingRules\":[");
    for (i, (id, tier, by)) in rules.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        string(out, id.as_str());
        let _ = write!(out, ",\"{tier}\",\"{by}\"]");
    }
    out.push_str("],");
    texts.write(out, "findingTexts");
    let _ = write!(out, "\"findingCount\":{},", findings.len());
    column(out, "findingRow", deltas(findings.iter().map(|f| f.row.map_or(0, |r| r as i64 + 1))));
    column(out, "findingCode", codes.into_iter());
    column(out, "findingText", text.into_iter());
    out.push_str("\"findings\":[");
}

/// The data the script reads (`view.js` documents the layout): per file, one array per column,
/// small integers where a value repeats (interned strings, deltas).
fn data(files: &[File]) -> String {
    let mut out = String::new();
    out.push_str("{\"files\":[");
    for (n, file) in files.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        file_data(&mut out, file);
    }
    out.push_str("],\"rules\":{");
    let ids: BTreeSet<RuleId> = files.iter().flat_map(File::rules).collect();
    for (i, rule) in ids.into_iter().map(RuleId::rule).enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(&mut out, rule.id.as_str());
        out.push_str(":{\"tier\":");
        string(&mut out, &rule.tier.to_string());
        out.push_str(",\"sentence\":");
        string(&mut out, rule.sentence);
        out.push_str(",\"source\":");
        string(&mut out, rule.source);
        out.push('}');
    }
    out.push_str("}}");
    out
}

/// `"state":{"rules":[RULES…],"rows":[[row, session, path, tag, rules]…]},` (rules: an index into
/// `rules`, -1 for a value no annotation describes; session: an index into `sessions`, from 1).
fn state_data(out: &mut String, file: &File, sessions: &[usize]) {
    let mut tables: Vec<&[acp_types::support::state::Rule]> = Vec::new();
    let mut rows = String::new();
    for (i, (op, session)) in file.state.iter().zip(sessions).enumerate() {
        let rules = match op.rules {
            Some(rules) => match tables.iter().position(|t| std::ptr::eq(*t, rules)) {
                Some(at) => at as i64,
                None => {
                    tables.push(rules);
                    tables.len() as i64 - 1
                }
            },
            None => -1,
        };
        let path: Vec<String> = op.path.iter().map(|p| format!("\"{p}\"")).collect();
        let tag = op.tag.map_or("null".to_string(), |t| format!("\"{t}\""));
        let _ =
            write!(rows, "{}[{},{session},[{}],{tag},{rules}]", if i > 0 { "," } else { "" }, op.row, path.join(","));
    }
    out.push_str("\"state\":{\"rules\":[");
    for (i, table) in tables.iter().enumerate() {
        out.push_str(if i > 0 { ",[" } else { "[" });
        for (k, rule) in table.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            super::state::rule_json(out, rule);
        }
        out.push(']');
    }
    let _ = write!(out, "],\"rows\":[{rows}]}},");
}

fn file_data(out: &mut String, file: &File) {
    let rows = &file.rows;
    out.push_str("{\"name\":");
    string(out, &file.name);
    out.push_str(",\"summary\":");
    string(out, &file.summary);
    out.push_str(",\"lanes\":[");
    for (i, lane) in file.lanes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, lane);
    }
    out.push_str("],");
    let (mut methods, mut sessions, mut updates) = (Interned::default(), Interned::default(), Interned::default());
    let method: Vec<usize> = rows.iter().map(|r| methods.id(r.method.as_deref())).collect();
    let session: Vec<usize> = rows.iter().map(|r| sessions.id(r.session.as_deref())).collect();
    let update: Vec<usize> = rows.iter().map(|r| updates.id(r.update.as_deref())).collect();
    // Turns name their session by the same index.
    let turn_sessions: Vec<usize> = file.turns.iter().map(|t| sessions.id(Some(&t.session))).collect();
    let state_sessions: Vec<usize> = file.state.iter().map(|o| sessions.id(Some(&o.session))).collect();
    methods.write(out, "methods");
    sessions.write(out, "sessions");
    updates.write(out, "updates");
    let direction = directions(out, rows);
    column(out, "line", deltas(rows.iter().map(|r| r.line as i64)));
    column(out, "direction", direction.into_iter());
    // Kind, status, and whether the message's leading `"jsonrpc":"2.0",` was left out.
    column(
        out,
        "code",
        rows.iter().map(|r| kind_code(r.kind) + 5 * status_code(r.status) + 25 * i64::from(jsonrpc_first(&r.message))),
    );
    column(out, "method", method.into_iter().map(|m| m as i64));
    column(out, "session", session.into_iter().map(|s| s as i64));
    column(out, "update", update.into_iter().map(|u| u as i64));
    column(out, "pair", rows.iter().enumerate().map(|(i, r)| r.pair.map_or(0, |p| p as i64 - i as i64)));
    column(out, "turn", deltas(rows.iter().map(|r| r.turn.map_or(0, |t| t as i64 + 1))));
    column(out, "tool", rows.iter().map(|r| r.tool.map_or(0, |t| t as i64 + 1)));
    column(out, "time", time_tenths(rows).into_iter());
    let _ = write!(out, "\"timed\":{},", rows.iter().any(|r| r.time.is_some()));
    out.push_str("\"turns\":[");
    turns_data(out, &file.turns, turn_sessions);
    out.push_str("],\"tools\":[");
    tools_data(out, &file.tools);
    findings(out, &file.findings);
    out.push_str("],");
    state_data(out, file, &state_sessions);
    out.push_str("\"messages\":[");
    messages(out, rows);
    out.push_str("]}");
}

/// The `directions` table (sender and receiver: a pair of lanes, -1 for unknown), written to
/// `out`; returns each row's index into it.
fn directions(out: &mut String, rows: &[Row]) -> Vec<i64> {
    let mut directions: Vec<(i64, i64)> = Vec::new();
    let lane = |l: Option<usize>| l.map_or(-1, |l| l as i64);
    let direction: Vec<i64> = rows
        .iter()
        .map(|r| {
            let pair = (lane(r.from), lane(r.to));
            let at = directions.iter().position(|d| *d == pair).unwrap_or_else(|| {
                directions.push(pair);
                directions.len() - 1
            });
            at as i64
        })
        .collect();
    out.push_str("\"directions\":[");
    for (i, (from, to)) in directions.iter().enumerate() {
        let _ = write!(out, "{}[{from},{to}]", if i > 0 { "," } else { "" });
    }
    out.push_str("],");
    direction
}

/// Tenths of a millisecond since the previous time recorded (a row without one repeats it).
fn time_tenths(rows: &[Row]) -> Vec<i64> {
    let mut last = rows.iter().find_map(|r| r.time).unwrap_or_default();
    rows.iter()
        .map(|r| match r.time {
            Some(t) if (t - last).is_finite() => {
                let delta = ((t - last) * 10_000.0).round() as i64;
                last += delta as f64 / 10_000.0;
                delta
            }
            _ => 0,
        })
        .collect()
}

/// The turns, each `[kind, session, start, end, stop, cancelled, column]` (`sessions`: each turn's
/// session as an index into the file's).
fn turns_data(out: &mut String, turns: &[Turn], sessions: Vec<usize>) {
    for (i, (turn, session)) in turns.iter().zip(sessions).enumerate() {
        if i > 0 {
            out.push(',');
        }
        let kind = match turn.kind {
            TurnKind::Prompt => 0,
            TurnKind::State => 1,
        };
        let end = turn.end.map_or(-1, |e| e as i64);
        let _ = write!(out, "[{kind},{session},{},{end},", turn.start);
        opt_string(out, turn.stop.as_deref());
        let _ = write!(out, ",{},{}]", u8::from(turn.cancelled), turn.column);
    }
}

/// The tool calls, each `[id, title]`.
fn tools_data(out: &mut String, tools: &[Tool]) {
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        string(out, &tool.id);
        out.push(',');
        opt_string(out, tool.title.as_deref());
        out.push(']');
    }
}

/// The messages as received, each without its leading `"jsonrpc":"2.0",` when it has one (the
/// `code` column says so).
fn messages(out: &mut String, rows: &[Row]) {
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match row.message.strip_prefix(JSONRPC_FIRST) {
            Some(rest) => {
                out.push('{');
                out.push_str(rest);
            }
            None => out.push_str(&row.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_in_a_message_closes_the_script_element() {
        let mut out = String::new();
        escape_json_for_script(&mut out, r#"{"text":"</script><script>alert(1)</script><!-- & >"}"#);
        assert!(!out.contains('<') && !out.contains('>') && !out.contains('&'), "{out}");
        let back: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
        assert_eq!(back["text"], "</script><script>alert(1)</script><!-- & >");
    }

    #[test]
    fn the_template_has_each_marker_once_and_the_script_and_style_cannot_end_early() {
        for marker in ["{{title}}", "{{css}}", "{{data}}", "{{script}}"] {
            assert_eq!(TEMPLATE.matches(marker).count(), 1, "{marker}");
        }
        assert!(!SCRIPT.to_ascii_lowercase().contains("</script"));
        assert!(!CSS.to_ascii_lowercase().contains("</style"));
        // No network: nothing is fetched from anywhere.
        for text in [TEMPLATE, CSS, SCRIPT] {
            assert!(!text.contains("http://") && !text.contains("https://"));
        }
    }
}
