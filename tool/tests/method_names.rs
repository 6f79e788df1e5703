//! No hand-written file under `src/` or `tool/src/` names a protocol method with a string
//! literal: code that routes on a method or sends one names it by its generated marker
//! (`acp_types::vN::methods::…::METHOD`), so that it follows the schemas. The wire names come from
//! the generated tables, so this test follows them too. Comments and `#[cfg(test)]` code (from
//! such a line at the start of a line to the end of the file) may keep literals.

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

/// The string literals (their text between the quotes, escapes as written) of `source`, with
/// the line each starts on. Skipped: comments, and everything from a line that starts with
/// `#[cfg(test)]`. Character literals and lifetimes are stepped over, so that `'"'` opens no
/// string.
fn literals(source: &str) -> Vec<(usize, String)> {
    let end =
        source.split_inclusive('\n').take_while(|line| !line.starts_with("#[cfg(test)]")).map(str::len).sum::<usize>();
    let chars: Vec<char> = source[..end].chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut found = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let in_word = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
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
                found.push((start, text));
            }
            // `b"…"`, `b'…'`, `r"…"`, `r#"…"#`, `br#"…"#` (not inside a word: `attr`, `r#type`).
            'b' | 'r' if !in_word => {
                let mut j = i + usize::from(c == 'b');
                if at(j) == 'r' {
                    j += 1;
                    let hashes = (j..).take_while(|k| at(*k) == '#').count();
                    j += hashes;
                    if at(j) != '"' {
                        i += 1;
                        continue;
                    }
                    let start = line;
                    let closing: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                    let rest: String = chars[j + 1..].iter().collect();
                    let len = rest.find(&closing).unwrap_or(rest.len());
                    let text = &rest[..len];
                    line += text.matches('\n').count();
                    found.push((start, text.to_string()));
                    i = j + 1 + text.chars().count() + closing.chars().count();
                } else if c == 'b' && (at(j) == '"' || at(j) == '\'') {
                    // The string or character that follows, read by the arms above and below.
                    i = j;
                } else {
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
                    // A lifetime or a label.
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    found
}

/// `file:line: "name"` for each literal in `source` that is exactly a wire name.
fn offenders(file: &str, source: &str, names: &BTreeSet<&str>) -> Vec<String> {
    literals(source)
        .into_iter()
        .filter(|(_, text)| names.contains(text.as_str()))
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
        "{} method name(s) written as string literals; name them by their generated markers \
         (`acp_types::vN::methods::…::METHOD`):\n{}",
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
    let tick = '\''; let byte = b'"';
    /* "session/cancel" in a block comment */
    method == "initialize" // and "authenticate" in a trailing comment
        || method == r#"session/load"#
        || method.as_bytes() == b"session/update"
        || method == "see session/list" || method == "session/"
        || method == "a multi-line
string" || method == "$/cancel_request"
}
#[cfg(test)]
mod tests {
    const M: &str = "session/close";
}
"####;
    let found = offenders("f.rs", source, &names);
    let expected = [
        "f.rs:7: \"initialize\"",
        "f.rs:8: \"session/load\"",
        "f.rs:9: \"session/update\"",
        "f.rs:12: \"$/cancel_request\"",
    ];
    assert_eq!(found, expected);
}
