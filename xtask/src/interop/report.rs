//! Text of result lines: failure details, indentation, command lines as one string.

use crate::process::{tail, Finished, TAIL_LINES};

/// `argv` as one string that `shell_words::split` (the SDK's `AcpAgent::from_str`) splits back:
/// words with anything but `[A-Za-z0-9_./:@%+,=-]` in single quotes.
pub(super) fn command_string(argv: &[String]) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_./:@%+,=-".contains(c);
    argv.iter()
        .map(|word| {
            if !word.is_empty() && word.chars().all(safe) {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The end of a text, each line indented under a `stderr:` heading.
pub(super) fn indented_tail(text: &str) -> String {
    if text.trim().is_empty() {
        return "      (empty)".into();
    }
    tail(text, TAIL_LINES).lines().map(|line| format!("      {line}")).collect::<Vec<_>>().join("\n")
}

/// The indented details of a failure: command, and the tails of stdout and stderr.
pub(super) fn details(described: &str, run: &Finished) -> String {
    let mut out = format!("    command: {described}");
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        if text.trim().is_empty() {
            out.push_str(&format!("\n    {name}: (empty)"));
        } else {
            out.push_str(&format!("\n    {name}:"));
            for line in tail(text, TAIL_LINES).lines() {
                out.push_str(&format!("\n      {line}"));
            }
        }
    }
    out
}

/// Indents every line after the first, for multi-line messages inside a result line.
pub(super) fn indent_rest(text: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, line)| if i == 0 { line.to_string() } else { format!("    {line}") })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(super) fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
