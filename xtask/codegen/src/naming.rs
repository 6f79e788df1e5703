//! Rust names from wire names: casing (via `heck`), keyword escaping, and doc text: cleanup for
//! rustdoc, and the schema's marker of unstable items.

use crate::ir::{Method, MethodKind, MethodNames};
use heck::{ToSnakeCase, ToUpperCamelCase};
use std::collections::BTreeMap;

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "box", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override",
    "priv", "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// A field name: `sessionId` → `session_id`, `_meta` → `meta`, `type` → `r#type`.
pub fn field(wire: &str) -> String {
    let mut name = wire.to_snake_case();
    if name.is_empty() {
        name = "value".into();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name = format!("_{name}");
    }
    if KEYWORDS.contains(&name.as_str()) {
        // `self`, `super`, `crate`, `Self` cannot be raw identifiers.
        if matches!(name.as_str(), "self" | "super" | "crate" | "Self") {
            name.push('_');
        } else {
            name = format!("r#{name}");
        }
    }
    name
}

/// A type or variant name: `tool_call_update` → `ToolCallUpdate`, `date-time` → `DateTime`,
/// `2.0` → `V2_0`.
pub fn type_name(wire: &str) -> String {
    let mut name = wire.replace('.', "_").to_upper_camel_case();
    if name.is_empty() {
        name = "Empty".into();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name = format!("V{}", wire.chars().map(|c| if c.is_alphanumeric() { c } else { '_' }).collect::<String>());
    }
    if name == "Self" {
        name = "Self_".into();
    }
    name
}

/// Whether `name` can be emitted as a Rust identifier (raw identifiers such as `r#type`
/// included). Names come from schema text, which may hold what `heck` keeps and Rust does not (`²`).
pub fn is_identifier(name: &str) -> bool {
    syn::parse_str::<syn::Ident>(name).is_ok()
}

/// Schema prose as rustdoc: bare URLs become autolinks and brackets that are not Markdown links
/// are escaped, so `cargo doc` reads it without warnings.
pub fn docs(text: &str) -> String {
    let text = &label_fences(text);
    let defined = reference_definitions(text);
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut in_code = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            if let Some(next) = rewrite_at(&chars, i, &defined, &mut out) {
                i = next;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// A fence without a language would be compiled as a Rust doctest: schema prose is not Rust, so
/// such a fence becomes ` ```text `.
fn label_fences(text: &str) -> String {
    let fenced: Vec<String> = text
        .lines()
        .scan(false, |open, line| {
            let trimmed = line.trim_start();
            Some(if let Some(lang) = trimmed.strip_prefix("```") {
                let opening = !*open;
                *open = !*open;
                if opening && lang.trim().is_empty() {
                    format!("{}```text", &line[..line.len() - trimmed.len()])
                } else {
                    line.to_string()
                }
            } else {
                line.to_string()
            })
        })
        .collect();
    fenced.join("\n")
}

/// The labels of Markdown reference definitions (`[label]: url`).
fn reference_definitions(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix('[')?;
            let end = rest.find("]:")?;
            Some(rest[..end].to_string())
        })
        .collect()
}

/// Outside code spans: what `docs` writes instead of the character at `i`, and where it goes on
/// from (`None`: the character as it is).
fn rewrite_at(chars: &[char], i: usize, defined: &[String], out: &mut String) -> Option<usize> {
    match chars[i] {
        '\\' if matches!(chars.get(i + 1), Some('[' | ']')) => {
            out.push('\\');
            out.push(chars[i + 1]);
            Some(i + 2)
        }
        '[' if !is_link(chars, i, defined) => {
            out.push_str("\\[");
            Some(i + 1)
        }
        // The closing bracket of an escaped opening one.
        ']' if out.rfind("\\[").is_some_and(|p| !out[p..].contains(']')) => {
            out.push_str("\\]");
            Some(i + 1)
        }
        'h' if starts_with(&chars[i..], "http") => autolink(chars, i, out),
        _ => None,
    }
}

/// Whether the bracket at `i` starts a Markdown link `[text](url)`, `[text][ref]` or a reference
/// definition (which stay as they are); one that is never closed is left alone too.
fn is_link(chars: &[char], i: usize, defined: &[String]) -> bool {
    let Some(close) = chars[i + 1..].iter().position(|&c| c == ']').map(|p| i + 1 + p) else {
        return true;
    };
    let inner: String = chars[i + 1..close].iter().collect();
    let next = chars.get(close + 1).copied();
    matches!(next, Some('(') | Some('[') | Some(':')) || defined.contains(&inner)
}

/// A bare URL at `i` as an autolink `<url>` (trailing punctuation left outside); where it ends.
fn autolink(chars: &[char], i: usize, out: &mut String) -> Option<usize> {
    let prev = if i > 0 { chars[i - 1] } else { ' ' };
    if prev == '(' || prev == '<' || prev == ':' || prev == '"' {
        return None;
    }
    let end = chars[i..]
        .iter()
        .position(|c| c.is_whitespace() || matches!(c, ')' | '>' | '"' | '\''))
        .map(|p| i + p)
        .unwrap_or(chars.len());
    let mut url: String = chars[i..end].iter().collect();
    let mut tail = String::new();
    while url.ends_with(['.', ',', ';']) {
        tail.insert(0, url.pop().unwrap_or('.'));
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return None;
    }
    out.push('<');
    out.push_str(&url);
    out.push('>');
    out.push_str(&tail);
    Some(end)
}

/// The paragraph by which the schema marks an item unstable, and the start of the one after it.
const UNSTABLE_MARK: &str = "**UNSTABLE**";
const UNSTABLE_NOTE: &str = "This capability is not part of the spec yet";

/// Whether a description marks its item unstable (lowering records it as the item's maturity).
pub fn marked_unstable(docs: Option<&str>) -> bool {
    docs.is_some_and(|d| d.contains(UNSTABLE_MARK))
}

/// A description without the paragraphs that mark it unstable: what it says of the item itself.
pub fn without_unstable_marker(docs: Option<&str>) -> Option<String> {
    let text = docs?;
    let kept: Vec<&str> = text
        .split("\n\n")
        .filter(|p| {
            let p = p.trim();
            p != UNSTABLE_MARK && !p.starts_with(UNSTABLE_NOTE)
        })
        .collect();
    let joined = kept.join("\n\n");
    if joined.trim().is_empty() {
        None
    } else {
        Some(joined)
    }
}

fn starts_with(chars: &[char], prefix: &str) -> bool {
    prefix.chars().enumerate().all(|(i, p)| chars.get(i) == Some(&p))
}

/// A method's name in Rust before any suffix: its wire name without `$`, in upper camel case.
pub fn method_base(wire: &str) -> String {
    type_name(&wire.replace('$', ""))
}

/// The Rust names of a protocol's methods, in order. A method's base name is its wire name in
/// upper camel case (`session/prompt` → `SessionPrompt`). Where one wire name is two methods (a
/// request and a notification, as `mcp/message`; or one per receiving side) the marker adds the
/// kind, then the side, and the handler the kind when both are on one side. Two different wire
/// names with one base name are a collision: `Err` with the indices of both methods.
pub fn method_names(methods: &[Method]) -> Result<Vec<MethodNames>, (usize, usize)> {
    let base = |m: &Method| method_base(&m.name);
    let mut by_base: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, m) in methods.iter().enumerate() {
        let clash = by_base.entry(base(m)).or_default();
        if let Some(&other) = clash.iter().find(|&&o| methods[o].name != m.name) {
            return Err((other, i));
        }
        clash.push(i);
    }
    let kind_word = |k: MethodKind| match k {
        MethodKind::Request => "Request",
        MethodKind::Notification => "Notification",
    };
    let names = methods.iter().map(|m| {
        let b = base(m);
        let clash: Vec<&Method> = by_base[&b].iter().map(|&o| &methods[o]).collect();
        let marker = if clash.len() == 1 {
            b.clone()
        } else if clash.iter().filter(|o| o.kind == m.kind).count() == 1 {
            format!("{b}{}", kind_word(m.kind))
        } else {
            format!("{b}{}{}", kind_word(m.kind), type_name(&m.side.wire))
        };
        let same_side = clash.iter().filter(|o| o.side == m.side).count();
        let handler =
            if same_side == 1 { b.to_snake_case() } else { format!("{b}{}", kind_word(m.kind)).to_snake_case() };
        MethodNames { marker, variant: b, handler }
    });
    Ok(names.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(field("sessionId"), "session_id");
        assert_eq!(field("_meta"), "meta");
        assert_eq!(field("type"), "r#type");
        assert_eq!(type_name("tool_call_update"), "ToolCallUpdate");
        assert_eq!(type_name("date-time"), "DateTime");
        assert_eq!(type_name("2.0"), "V2_0");
        assert_eq!(type_name("Parse error"), "ParseError");
        assert_eq!(type_name("2.0/x"), "V2_0_x");
    }

    #[test]
    fn identifiers() {
        for ok in ["ToolKind", "r#type", "self_", "Self_", "V2_0", "_1", "é"] {
            assert!(is_identifier(ok), "{ok}");
        }
        for bad in ["", "_", "1a", "a b", "²", "type", "self", "a\nb"] {
            assert!(!is_identifier(bad), "{bad:?}");
        }
        // `heck` drops punctuation and newlines but keeps every alphanumeric, XID or not.
        assert_eq!((type_name("a\nb: c"), field("a\nb: c")), ("ABC".to_string(), "a_b_c".to_string()));
        assert!(!is_identifier(&type_name("x²")) && !is_identifier(&field("²")));
    }

    #[test]
    fn docs_escape() {
        assert_eq!(docs("see [Client](https://x.y/z)"), "see [Client](https://x.y/z)");
        assert_eq!(docs("a [1] b"), "a \\[1\\] b");
        assert_eq!(docs("go to https://x.y/z."), "go to <https://x.y/z>.");
        assert_eq!(
            docs("[1]: https://x.y\nuse [1]"),
            "[1]: <https://x.y>\nuse [1]" // an angle-bracket destination is valid CommonMark
        );
        assert_eq!(docs("`a[0]`"), "`a[0]`");
        assert_eq!(docs("x\n```\n{}\n```"), "x\n```text\n{}\n```");
        assert_eq!(docs("```json\n[1]\n```"), "```json\n[1]\n```");
    }
}
