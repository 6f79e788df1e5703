//! Other programs, as the drivers (`schema`, `bench`, `interop`, `fuzz`) run them: which program
//! to start (`cargo`, `rustc`, `npm`, `python3`), how a command reads in progress lines and errors,
//! and running one to completion with its output captured, streamed, left on the terminal, or
//! under a time limit. Every failure is an error that names the command.

pub use acp_process::Finished;
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::Duration;

/// Lines of a failing command's stderr (and stdout) kept for its error.
pub const TAIL_LINES: usize = 40;

/// The cargo running us (`$CARGO`), else `cargo` from the PATH, without the variables `cargo run`
/// set for us (`CARGO_PKG_NAME=xtask`, `CARGO_MANIFEST_DIR`, …; see [`inherited_from_cargo_run`]).
/// Build scripts watch some of them: ring's declares `rerun-if-env-changed` on
/// `CARGO_PKG_NAME` and `CARGO_MANIFEST_DIR`, so a build started here saw other values than one
/// started from a shell or by `cargo xtask` itself, and rebuilt ring and everything above it
/// (rustls, acp-rpc, every example) each time: eight minutes of each `cargo xtask bench --quick`
/// on a loaded 2-core machine.
pub fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(inherited_from_cargo_run) {
            command.env_remove(name);
        }
    }
    command
}

/// A variable cargo sets for the program it runs (or the test it runs), describing that package:
/// nothing a nested cargo needs.
pub fn inherited_from_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_MANIFEST_")
        || name.starts_with("CARGO_BIN_")
        || matches!(name, "CARGO_CRATE_NAME" | "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR")
}

/// The rustc cargo builds with (`$RUSTC`), else `rustc` from the PATH.
pub fn rustc() -> Command {
    Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
}

/// npm; Windows only finds it through its `.cmd` shim.
pub fn npm() -> Command {
    Command::new(if cfg!(windows) { "npm.cmd" } else { "npm" })
}

/// A Python 3 interpreter (`python` on Windows, where `python3` is often a store stub).
pub fn python3() -> Command {
    Command::new(if cfg!(windows) { "python" } else { "python3" })
}

/// A command as one would type it in a shell: `cd DIR && KEY=VALUE PROGRAM ARGS…`, each word
/// with whitespace or quotes in single quotes.
pub fn describe(command: &Command) -> String {
    let mut words: Vec<String> = Vec::new();
    if let Some(dir) = command.get_current_dir() {
        words.extend(["cd".to_string(), shell_word(dir.as_os_str()), "&&".to_string()]);
    }
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            words.push(format!("{}={}", key.to_string_lossy(), shell_word(value)));
        }
    }
    words.extend(std::iter::once(command.get_program()).chain(command.get_args()).map(shell_word));
    words.join(" ")
}

fn shell_word(word: &OsStr) -> String {
    let word = word.to_string_lossy();
    if word.is_empty() || word.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"') {
        format!("'{}'", word.replace('\'', "'\\''"))
    } else {
        word.into_owned()
    }
}

/// Runs `command` quietly to completion, stdin closed; its stdout, or an error with the end of
/// its stderr and stdout.
pub fn capture(command: &mut Command) -> Result<String, String> {
    let what = describe(command);
    let output = command.stdin(Stdio::null()).output().map_err(|e| cannot_run(&what, command, &e))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        return Err(failure(&what, output.status, &String::from_utf8_lossy(&output.stderr), &stdout));
    }
    Ok(stdout)
}

/// Runs `command` to completion with its output on our terminal (cargo's progress stays visible).
pub fn run_attached(command: &mut Command) -> Result<(), String> {
    let what = describe(command);
    let status = command.status().map_err(|e| cannot_run(&what, command, &e))?;
    if !status.success() {
        return Err(failure(&what, status, "", ""));
    }
    Ok(())
}

/// Runs `command`, passing its stderr through to ours as it comes and each stdout line to
/// `on_line`; returns its stdout, or an error with the end of its stderr.
pub fn stream(command: &mut Command, mut on_line: impl FnMut(&str)) -> Result<String, String> {
    let what = describe(command);
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| cannot_run(&what, command, &e))?;
    let stderr = child.stderr.take();
    let echo = thread::spawn(move || {
        let mut tail = VecDeque::with_capacity(TAIL_LINES);
        if let Some(stderr) = stderr {
            for_each_line(stderr, |line| {
                eprintln!("{line}");
                if tail.len() == TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line.to_string());
            });
        }
        Vec::from(tail).join("\n")
    });
    let mut stdout = String::new();
    if let Some(out) = child.stdout.take() {
        for_each_line(out, |line| {
            on_line(line);
            stdout.push_str(line);
            stdout.push('\n');
        });
    }
    let status = child.wait().map_err(|e| format!("cannot wait for `{what}`: {e}"))?;
    let stderr_tail = echo.join().unwrap_or_default();
    if !status.success() {
        return Err(failure(&what, status, &stderr_tail, ""));
    }
    Ok(stdout)
}

/// Each line of `reader` until its end, invalid UTF-8 replaced (so a stray byte never stops the
/// reading and leaves the child blocked on a full pipe).
fn for_each_line(reader: impl Read, mut f: impl FnMut(&str)) {
    let mut reader = BufReader::new(reader);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match reader.read_until(b'\n', &mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(_) => f(String::from_utf8_lossy(&buffer).trim_end_matches(['\n', '\r'])),
        }
    }
}

fn cannot_run(what: &str, command: &Command, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        let program = command.get_program().to_string_lossy();
        format!("cannot run `{what}`: {e} (is `{program}` installed and on the PATH?)")
    } else {
        format!("cannot run `{what}`: {e}")
    }
}

/// The error of a command that exited unsuccessfully, with the ends of its outputs.
fn failure(what: &str, status: ExitStatus, stderr: &str, stdout: &str) -> String {
    let mut message = format!("`{what}` failed ({status})");
    for (name, text) in [("stderr", stderr), ("stdout", stdout)] {
        if !text.trim().is_empty() {
            message.push_str(&format!("\n{name}:\n{}", tail(text, TAIL_LINES)));
        }
    }
    message
}

/// The last `n` lines of `text`, with a note of how many were cut.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    if lines.len() <= n {
        return lines.join("\n");
    }
    let mut out = format!("[… {} earlier lines]\n", lines.len() - n);
    out.push_str(&lines[lines.len() - n..].join("\n"));
    out
}

/// Runs `command` with stdin closed and stdout/stderr captured; after `timeout` it kills the
/// command and everything it spawned (its own process group on Unix). Stragglers left by a
/// command that exited are killed too.
pub fn run_with_timeout(command: &mut Command, timeout: Duration) -> Result<Finished, String> {
    acp_process::run_with_timeout(command, timeout).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_cargo_does_not_inherit_what_cargo_run_set_for_us() {
        for name in ["CARGO_PKG_NAME", "CARGO_PKG_VERSION_MAJOR", "CARGO_MANIFEST_DIR", "CARGO_CRATE_NAME"] {
            assert!(inherited_from_cargo_run(name), "{name}");
        }
        for name in ["CARGO", "CARGO_TARGET_DIR", "CARGO_HOME", "CARGO_INCREMENTAL", "CARGO_PROFILE_DEV_DEBUG", "RUSTC"]
        {
            assert!(!inherited_from_cargo_run(name), "{name}");
        }
        // `cargo test` set CARGO_PKG_NAME for this test: the command we make drops it.
        let command = cargo();
        let removed: Vec<_> = command.get_envs().filter(|(_, v)| v.is_none()).map(|(k, _)| k.to_owned()).collect();
        assert!(removed.iter().any(|k| k == "CARGO_PKG_NAME"), "{removed:?}");
    }

    #[test]
    fn describes_commands_for_a_shell() {
        let mut command = Command::new("node");
        command.args(["client.mjs", "--prompt", "hello perm world", "--", "it's"]);
        assert_eq!(describe(&command), "node client.mjs --prompt 'hello perm world' -- 'it'\\''s'");
        command.current_dir("/a dir").env("KEY", "x y");
        assert!(describe(&command).starts_with("cd '/a dir' && KEY='x y' node "), "{}", describe(&command));
    }

    #[test]
    fn tails() {
        assert_eq!(tail("a\nb\nc\n", 5), "a\nb\nc");
        assert_eq!(tail("a\nb\nc", 2), "[… 1 earlier lines]\nb\nc");
    }

    #[cfg(unix)]
    #[test]
    fn failures_name_the_command_and_show_its_output() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo out; echo oops >&2; exit 3"]);
        let err = capture(&mut command).unwrap_err();
        assert!(err.starts_with("`sh -c 'echo out; echo oops >&2; exit 3'` failed ("), "{err}");
        assert!(err.contains("\nstderr:\noops") && err.contains("\nstdout:\nout"), "{err}");
        let err = capture(&mut Command::new("/nonexistent/program")).unwrap_err();
        assert!(err.contains("is `/nonexistent/program` installed"), "{err}");
    }
}
