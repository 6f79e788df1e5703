//! No hand-written file under `src/` or `tool/src/` names a protocol method with a string
//! literal: code that routes on a method or sends one names it by its generated marker
//! (`acp_types::vN::methods::…::METHOD`), so that it follows the schemas. Nor does it name a
//! namespace of methods (`"session/"`, `"$/"`: a literal `X/` that some wire name starts with):
//! code that routes a family of methods takes it from the tables too. The wire names come from the
//! generated tables, so this test follows them too. Comments and `#[cfg(test)]` modules (from the
//! attribute to the module's closing brace) may keep literals; other `#[cfg(test)]` items may not.

use acp_types::support::rpc::Tables;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The hand-written directories, from the workspace root.
const ROOTS: &[&str] = &["src", "tool/src"];

/// Every method's wire name, in either version.
fn wire_names() -> BTreeSet<&'static str> {
    let v1 = acp_types::v1::methods::Tables::METHODS.iter().map(|m| m.name);
    let v2 = acp_types::v2::methods::Tables::METHODS.iter().map(|m| m.name);
    v1.chain(v2).collect()
}

/// The `.rs` files under `dir`, recursively, in a stable order.
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// A token of Rust source, as far as the scan needs one; comments are dropped.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// A string literal (plain, byte or raw): its text between the quotes, escapes as written.
    Str(String),
    /// An identifier, a keyword or a number.
    Word(String),
    /// Any other character outside literals and comments: a brace, `#`, `;` ….
    Punct(char),
}

/// The tokens of `source`, each with the line it starts on. Character literals and lifetimes
/// are stepped over, so that `'"'` opens no string and `'{'` no block.
fn tokens(source: &str) -> Vec<(usize, Token)> {
    let chars: Vec<char> = source.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let in_word = i > 0 && word(chars[i - 1]);
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            '/' if at(i + 1) == '/' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                while i < chars.len() {
                    match (chars[i], at(i + 1)) {
                        ('/', '*') => {
                            depth += 1;
                            i += 2;
                        }
                        ('*', '/') => {
                            depth -= 1;
                            i += 2;
                            if depth == 0 {
                                break;
                            }
                        }
                        ('\n', _) => {
                            line += 1;
                            i += 1;
                        }
                        _ => i += 1,
                    }
                }
            }
            '"' => {
                let start = line;
                let mut text = String::new();
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        text.push('\\');
                        i += 1;
                    }
                    if at(i) == '\n' {
                        line += 1;
                    }
                    text.extend(chars.get(i));
                    i += 1;
                }
                i += 1;
                found.push((start, Token::Str(text)));
            }
            // `b"…"`, `b'…'`, `r"…"`, `r#"…"#`, `br#"…"#` (not inside a word: `attr`, `r#type`).
            'b' | 'r'
                if !in_word && (at(i + 1) == '"' || at(i + 1) == '\'' || at(i + 1) == 'r' || at(i + 1) == '#') =>
            {
                let mut j = i + usize::from(c == 'b');
                if at(j) == 'r' {
                    j += 1;
                    let hashes = (j..).take_while(|k| at(*k) == '#').count();
                    j += hashes;
                    if at(j) != '"' {
                        // A raw identifier (`r#type`) or a word such as `br`: read as a word.
                        let end = (i..).find(|k| !word(at(*k))).unwrap_or(chars.len()).max(i + 1);
                        found.push((line, Token::Word(chars[i..end].iter().collect())));
                        i = end;
                        continue;
                    }
                    let start = line;
                    let closing: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                    let rest: String = chars[j + 1..].iter().collect();
                    let len = rest.find(&closing).unwrap_or(rest.len());
                    let text = &rest[..len];
                    line += text.matches('\n').count();
                    found.push((start, Token::Str(text.to_string())));
                    i = j + 1 + text.chars().count() + closing.chars().count();
                } else if c == 'b' && (at(j) == '"' || at(j) == '\'') {
                    // The string or character that follows, read by the arms above and below.
                    i = j;
                } else {
                    // `r'…` is no literal: `r` is a word.
                    found.push((line, Token::Word(c.to_string())));
                    i += 1;
                }
            }
            '\'' => {
                if at(i + 1) == '\\' {
                    // An escape: up to the closing quote (`'\''`, `'\u{…}'`).
                    i += 3;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if at(i + 2) == '\'' {
                    i += 3;
                } else {
                    // A lifetime or a label: its name is read as a word.
                    i += 1;
                }
            }
            c if word(c) => {
                let end = (i..).find(|k| !word(at(*k))).unwrap_or(chars.len());
                found.push((line, Token::Word(chars[i..end].iter().collect())));
                i = end;
            }
            c if c.is_whitespace() => i += 1,
            c => {
                found.push((line, Token::Punct(c)));
                i += 1;
            }
        }
    }
    found
}

/// When `tokens[at..]` is `#[cfg(test)]` on a module (`mod name { … }` or `mod name;`, after
/// other attributes and a visibility, if any): the index just past that module, or the end of
/// the tokens when its braces do not close (a last module cut short). `None` for `#[cfg(test)]`
/// on any other item (a `use`, a function, a `const`), which the scan reads like the rest.
fn test_module(tokens: &[(usize, Token)], at: usize) -> Option<usize> {
    let punct = |i: usize, c: char| matches!(tokens.get(i), Some((_, Token::Punct(p))) if *p == c);
    let word = |i: usize, w: &str| matches!(tokens.get(i), Some((_, Token::Word(x))) if x == w);
    // Past the group that opens at `i` (`open`) and closes with `close`.
    let past = |mut i: usize, open: char, close: char| {
        let mut depth = 0usize;
        while i < tokens.len() {
            if punct(i, open) {
                depth += 1;
            } else if punct(i, close) {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            i += 1;
        }
        tokens.len()
    };
    let cfg_test = |i: usize| {
        punct(i, '#')
            && punct(i + 1, '[')
            && word(i + 2, "cfg")
            && punct(i + 3, '(')
            && word(i + 4, "test")
            && punct(i + 5, ')')
            && punct(i + 6, ']')
    };
    if !cfg_test(at) {
        return None;
    }
    let mut i = at + 7;
    while punct(i, '#') && punct(i + 1, '[') {
        i = past(i + 1, '[', ']');
    }
    if word(i, "pub") {
        i += 1;
        if punct(i, '(') {
            i = past(i, '(', ')');
        }
    }
    if !word(i, "mod") || !matches!(tokens.get(i + 1), Some((_, Token::Word(_)))) {
        return None;
    }
    i += 2;
    if punct(i, ';') {
        Some(i + 1)
    } else if punct(i, '{') {
        Some(past(i, '{', '}'))
    } else {
        None
    }
}

/// The string literals (their text between the quotes, escapes as written) of `source`, with
/// the line each starts on. Skipped: comments, and the modules marked `#[cfg(test)]` (other
/// `#[cfg(test)]` items are read).
fn literals(source: &str) -> Vec<(usize, String)> {
    let tokens = tokens(source);
    let mut found = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if let Some(end) = test_module(&tokens, i) {
            i = end;
            continue;
        }
        if let (line, Token::Str(text)) = &tokens[i] {
            found.push((*line, text.clone()));
        }
        i += 1;
    }
    found
}

/// Whether a literal's text names a method (exactly a wire name) or a namespace of methods (a
/// text ending in `/` that some wire name starts with: `session/`, `$/`).
fn names_a_method(text: &str, names: &BTreeSet<&str>) -> bool {
    names.contains(text) || (text.ends_with('/') && names.iter().any(|name| name.starts_with(text)))
}

/// `file:line: "name"` for each literal in `source` that names a method or a namespace of them.
fn offenders(file: &str, source: &str, names: &BTreeSet<&str>) -> Vec<String> {
    literals(source)
        .into_iter()
        .filter(|(_, text)| names_a_method(text, names))
        .map(|(line, text)| format!("{file}:{line}: \"{text}\""))
        .collect()
}

#[test]
fn no_method_named_by_a_string_literal() {
    let names = wire_names();
    assert!(
        names.contains("session/prompt") && names.contains("initialize"),
        "the tables lost their methods: {names:?}"
    );
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for root in ROOTS {
        let mut files = Vec::new();
        rust_files(&workspace.join(root), &mut files);
        assert!(!files.is_empty(), "no .rs file under {root}");
        for file in files {
            let source =
                std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            let shown = file.strip_prefix(&workspace).unwrap_or(&file).display().to_string();
            found.extend(offenders(&shown, &source, &names));
        }
    }
    assert!(
        found.is_empty(),
        "{} method name(s) or namespace(s) written as string literals; name a method by its generated \
         marker (`acp_types::vN::methods::…::METHOD`), and a family of methods by a lookup in the \
         generated tables (`Tables::METHODS`) or a list of markers:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The scan itself: what it must find, and what it must leave alone.
#[test]
fn the_scan_finds_literals_in_code_only() {
    let names = wire_names();
    let source = r####"//! A module that sends "session/new".
/// Routes "session/prompt".
fn route(method: &str) -> bool {
    let quote = '"'; let lifetime: &'static str = "x";
    let tick = '\''; let byte = b'"'; let brace = '{';
    /* "session/cancel" in a block comment */
    method == "initialize" // and "authenticate" in a trailing comment
        || method == r#"session/load"#
        || method.as_bytes() == b"session/update"
        || method == "see session/list" || method == "session/"
        || method == "a multi-line
string" || method == "$/cancel_request"
        || method.starts_with("terminal/") || method == "/" || method == "sessions/"
}
#[cfg(test)]
use std::fmt;
#[cfg(test)]
fn helper() -> &'static str { "fs/read_text_file" }
#[cfg(test)]
#[allow(dead_code)]
pub(crate) mod tests {
    const M: &str = "session/close";
    fn nested() { let s = "}"; let c = '}'; { "session/fork"; } }
}
const AFTER: &str = "session/set_mode";
#[cfg(test)]
mod outline;
const ALSO: &str = "$/";
mod wire {
    #[cfg(test)]
    mod tests {
        const N: &str = "session/delete";
    }
    const INNER: &str = "logout";
}
#[cfg(test)]
mod last {
    const L: &str = "session/list";
"####;
    let found = offenders("f.rs", source, &names);
    let expected = [
        "f.rs:7: \"initialize\"",
        "f.rs:8: \"session/load\"",
        "f.rs:9: \"session/update\"",
        "f.rs:10: \"session/\"",
        "f.rs:12: \"$/cancel_request\"",
        "f.rs:13: \"terminal/\"",
        "f.rs:18: \"fs/read_text_file\"",
        "f.rs:25: \"session/set_mode\"",
        "f.rs:28: \"$/\"",
        "f.rs:34: \"logout\"",
    ];
    assert_eq!(found, expected);
}
