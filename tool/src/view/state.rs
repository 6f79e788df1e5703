//! The session state at each message, for `acp view`: which rows change state, the session they
//! name, where in the message the annotated value is, and the rules (the generated `x-state`
//! tables) that apply to it. The page's script applies the rules of the rows up to the selected
//! one, with the same semantics as `acp_types::support::state`, and shows the selected session's
//! state. Only v2 transcripts have any.

use crate::state::{line_message, Replay};
use acp_types::support::state::{Action, Append, Rule};
use acp_types::v2::state::{nested_of, rules_of, tag_of};
use acp_types::Version;
use serde_json::Value;
use std::fmt::Write as _;

/// One annotated value of one row.
#[derive(Debug, Clone, PartialEq)]
pub struct StateOp {
    /// The row (index among the file's rows).
    pub row: usize,
    /// The session it changes.
    pub session: String,
    /// Where the value is in the message (`["params", "update"]`).
    pub path: Vec<&'static str>,
    /// The union tag to leave out of whole-message values.
    pub tag: Option<&'static str>,
    /// Its rules; `None`: no annotation describes it (kept as unapplied).
    pub rules: Option<&'static [Rule]>,
}

/// The state operations of a transcript's rows (rows are its non-blank lines, as the model's).
pub fn ops(bytes: &[u8], version: Option<Version>) -> Vec<StateOp> {
    let mut replay = Replay::new(version);
    let mut out = Vec::new();
    let lines = bytes.split(|b| *b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    for (row, line) in lines.enumerate() {
        let Some((from, message)) = line_message(line) else { continue };
        let Some(found) = replay.locate(from.as_deref(), &message) else { continue };
        let Some(session) = found.session else { continue };
        let value = message.get(found.member).unwrap_or(&Value::Null);
        resolve(found.ty, value, vec![found.member], &mut |path, tag, rules| {
            out.push(StateOp { row, session: session.clone(), path, tag, rules })
        });
    }
    out
}

/// The annotated values in `value` of schema type `ty`: itself, or the fields that hold them.
fn resolve(
    ty: &'static str,
    value: &Value,
    path: Vec<&'static str>,
    found: &mut dyn FnMut(Vec<&'static str>, Option<&'static str>, Option<&'static [Rule]>),
) {
    let tag = tag_of(ty);
    let rules = rules_of(ty, tag.and_then(|t| value.get(t)).and_then(Value::as_str));
    let nested = nested_of(ty);
    match (rules, tag, nested.is_empty()) {
        (None, None, true) => {}
        (None, _, false) => {
            for (field, inner) in nested {
                if let Some(v) = value.get(*field) {
                    let mut at = path.clone();
                    at.push(field);
                    resolve(inner, v, at, found);
                }
            }
        }
        (rules, tag, _) => found(path, tag, rules),
    }
}

/// A rule as the page's script reads it: `[scope, action, target, id, field, value, entryId, text]`.
pub fn rule_json(out: &mut String, r: &Rule) {
    let list = |out: &mut String, path: &[&str]| {
        out.push('[');
        for (i, p) in path.iter().enumerate() {
            let _ = write!(out, "{}{}", if i > 0 { "," } else { "" }, Value::String(p.to_string()));
        }
        out.push(']');
    };
    let action = match r.action {
        Action::Append => "append",
        Action::Upsert => "upsert",
        Action::Replace => "replace",
        Action::Remove => "remove",
    };
    let _ = write!(out, "[{},\"{action}\",{},", Value::String(r.scope.into()), Value::String(r.target.into()));
    list(out, r.id);
    out.push(',');
    list(out, r.field);
    out.push(',');
    list(out, r.value);
    out.push(',');
    list(out, r.entry_id);
    let _ = write!(out, ",{}]", u8::from(r.append == Append::Text));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_and_answers_of_a_v2_transcript_are_located() {
        let lines = [
            r#"{"from":"client","message":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}}"#,
            r#"{"from":"agent","message":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}}"#,
            "",
            r#"{"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/"}}}"#,
            r#"{"from":"agent","message":{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s","availableCommands":[]}}}"#,
            r#"{"from":"agent","message":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"a"}}}}}"#,
            r#"{"from":"agent","message":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"_new","x":1}}}}"#,
        ];
        let ops = ops(lines.join("\n").as_bytes(), None);
        let found: Vec<(usize, Vec<&str>, Option<usize>)> =
            ops.iter().map(|o| (o.row, o.path.clone(), o.rules.map(<[Rule]>::len))).collect();
        // Rows skip the blank line: the answer of session/new is row 3.
        assert_eq!(
            found,
            [(3, vec!["result"], Some(2)), (4, vec!["params", "update"], Some(1)), (5, vec!["params", "update"], None)]
        );
        assert_eq!(ops[1].tag, Some("sessionUpdate"));
        let mut json = String::new();
        rule_json(&mut json, &ops[1].rules.expect("rules")[0]);
        assert_eq!(
            json,
            r#"["session","append","agentMessage",["messageId"],["content"],["content"],["messageId"],0]"#
        );
    }
}
