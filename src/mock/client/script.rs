//! The mock client's script: what it offers, what it sends, and how it answers the agent, read
//! from JSON. Unknown keys and values out of range are errors naming their JSON pointer.

use crate::mock::script_error::{pointer, ScriptError};
use acp_types::Version;
use serde::Deserialize;
use std::collections::BTreeMap;

/// A script the mock client follows.
///
/// JSON; every key is optional except each prompt's `text` and each rule's `answer`. Unknown
/// keys are errors naming their JSON pointer ([`ScriptError`]).
///
/// ```json
/// {
///   "protocolVersion": 1,
///   "capabilities": { "fs": { "readTextFile": true, "writeTextFile": true }, "terminal": true },
///   "auth": "login-method-id",
///   "sessions": [
///     { "cwd": "/work", "prompts": [
///       { "text": "read /work/a.txt" },
///       { "text": "a long task", "cancel": { "afterUpdates": 2 } },
///       { "text": "another", "cancel": { "afterMs": 500 } }
///     ] }
///   ],
///   "permissions": [
///     { "title": "rm", "answer": "reject_once" },
///     { "kind": "edit", "answer": "allow_always" }
///   ],
///   "defaultPermission": "allow_once",
///   "files": { "/work/a.txt": "hello\n" },
///   "terminals": [ { "command": "ls -l", "output": "a.txt\n", "exitCode": 0 } ]
/// }
/// ```
///
/// - `protocolVersion`: the newest version to ask for (default the newest spoken); the client
///   goes on with a lower one the agent answers.
/// - `capabilities` (v1; v2 has no client file or terminal methods): each `true` unless set. A
///   request the client did not advertise is answered -32601.
/// - `auth`: used (`authenticate` / `auth/login`) when `session/new` is refused `auth_required`,
///   then `session/new` is asked again.
/// - `sessions`: opened in order (`cwd` default `/`), each prompt a turn after the one before;
///   `cancel` sends `session/cancel` after that many updates of the turn, or that many
///   milliseconds after the prompt.
/// - `permissions`: the first rule whose `title` is part of the request's title and whose `kind`
///   is the tool call's kind answers (a v1 request's tool call fields over what the agent's
///   `tool_call` updates said of that tool call before it); else `defaultPermission`. Answers: `allow_once`,
///   `allow_always`, `reject_once`, `reject_always` (the first option of that kind, else of the
///   other kind that allows, or rejects), `cancelled`.
/// - `files`: path → content for `fs/read_text_file` (`line`, `limit` honoured; a missing file
///   is -32002); `fs/write_text_file` stores into it (the end state is in
///   [`Report::files`](crate::mock::Report::files)).
/// - `terminals`: `terminal/create` runs nothing: the command line (command and arguments
///   joined by spaces), else the command alone, picks the entry whose output (within
///   `outputByteLimit`) and exit status (`exitCode`, default 0, or `signal`) the terminal then
///   reports as finished. An unscripted command is answered -32603.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClientScript {
    /// The newest protocol version to ask for (`1` or `2`; default the newest spoken). The agent
    /// may answer a lower one, which the client then speaks.
    #[serde(default)]
    pub protocol_version: Option<u16>,
    /// What the client advertises (v1; v2 has no file or terminal capabilities).
    #[serde(default)]
    pub capabilities: Capabilities,
    /// The authentication method to use when the agent refuses `session/new` with
    /// `auth_required`.
    #[serde(default)]
    pub auth: Option<String>,
    /// The sessions to open, in order, each with its prompts.
    #[serde(default)]
    pub sessions: Vec<SessionScript>,
    /// How permission requests are answered: the first rule that matches.
    #[serde(default)]
    pub permissions: Vec<PermissionRule>,
    /// The answer when no rule matches (default `allow_once`).
    #[serde(default)]
    pub default_permission: PermissionAnswer,
    /// The in-memory file system: absolute path → content (`fs/write_text_file` changes it).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The commands `terminal/create` may run and what each "prints".
    #[serde(default)]
    pub terminals: Vec<TerminalScript>,
}

/// The client capabilities advertised in v1's `initialize` (each `true` unless set).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Capabilities {
    /// `fs.readTextFile` / `fs.writeTextFile`.
    #[serde(default)]
    pub fs: FsCapabilities,
    /// `terminal`.
    #[serde(default = "yes")]
    pub terminal: bool,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities { fs: FsCapabilities::default(), terminal: true }
    }
}

/// The file system capabilities (each `true` unless set).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FsCapabilities {
    /// `fs.readTextFile`.
    #[serde(default = "yes")]
    pub read_text_file: bool,
    /// `fs.writeTextFile`.
    #[serde(default = "yes")]
    pub write_text_file: bool,
}

impl Default for FsCapabilities {
    fn default() -> Self {
        FsCapabilities { read_text_file: true, write_text_file: true }
    }
}

fn yes() -> bool {
    true
}

/// One session: its working directory and its prompts, sent one turn after another.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionScript {
    /// The `cwd` of `session/new` (default `/`).
    #[serde(default = "root")]
    pub cwd: String,
    /// The prompts, in order.
    #[serde(default)]
    pub prompts: Vec<PromptScript>,
}

fn root() -> String {
    "/".into()
}

/// One prompt turn.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PromptScript {
    /// The prompt's text (one text block).
    pub text: String,
    /// Sends `session/cancel` during the turn.
    #[serde(default)]
    pub cancel: Option<Cancel>,
}

/// When to cancel a turn: after this many of its updates, or this long after the prompt was
/// sent (exactly one of the two).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Cancel {
    /// After the Nth update of the turn.
    #[serde(default)]
    pub after_updates: Option<usize>,
    /// Milliseconds after the prompt.
    #[serde(default)]
    pub after_ms: Option<u64>,
}

/// A permission rule: matches a request whose title contains `title` and whose tool kind is
/// `kind` (each when given; a rule with neither matches every request).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PermissionRule {
    /// A part of the request's title (v1: the tool call's `title`; v2: the request's `title`).
    #[serde(default)]
    pub title: Option<String>,
    /// The tool call's kind as on the wire (`edit`, `execute`, …), as the request or the
    /// updates before it give it.
    #[serde(default)]
    pub kind: Option<String>,
    /// The answer.
    pub answer: PermissionAnswer,
}

/// How a permission request is answered: the first offered option of that kind (for
/// `allow_once`/`allow_always`, any allowing option if that kind is not offered; likewise for
/// the rejections), or `cancelled`. No option of the kind wanted is answered `cancelled`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionAnswer {
    /// Select an `allow_once` option.
    #[default]
    AllowOnce,
    /// Select an `allow_always` option.
    AllowAlways,
    /// Select a `reject_once` option.
    RejectOnce,
    /// Select a `reject_always` option.
    RejectAlways,
    /// Answer `cancelled` (no option selected).
    Cancelled,
}

/// A command a terminal may run, and its result: matched against `terminal/create`'s command
/// alone or with its arguments (joined by spaces).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TerminalScript {
    /// The command (`ls`), or the command line (`ls -l`).
    pub command: String,
    /// What it prints.
    #[serde(default)]
    pub output: String,
    /// Its exit status (default 0 unless `signal` is set).
    #[serde(default)]
    pub exit_code: Option<u32>,
    /// The signal that ended it.
    #[serde(default)]
    pub signal: Option<String>,
}

impl ClientScript {
    /// Reads a script from JSON; an error names the JSON pointer of the problem.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        let mut reader = serde_json::Deserializer::from_str(text);
        let script: ClientScript = serde_path_to_error::deserialize(&mut reader)
            .map_err(|e| ScriptError::at(pointer(e.path()), e.into_inner().to_string()))?;
        reader.end().map_err(|e| ScriptError::at("", e.to_string()))?;
        script.validate()?;
        Ok(script)
    }

    /// What serde cannot say: values out of range, and choices where exactly one is needed.
    fn validate(&self) -> Result<(), ScriptError> {
        if let Some(number) = self.protocol_version {
            if Version::from_number(number).is_none() {
                let known: Vec<u16> = Version::ALL.iter().map(|v| v.number()).collect();
                return Err(ScriptError::at(
                    "/protocolVersion",
                    format!("no protocol version {number}: one of {known:?}"),
                ));
            }
        }
        for (s, session) in self.sessions.iter().enumerate() {
            for (p, prompt) in session.prompts.iter().enumerate() {
                let Some(cancel) = &prompt.cancel else { continue };
                if cancel.after_updates.is_some() == cancel.after_ms.is_some() {
                    return Err(ScriptError::at(
                        format!("/sessions/{s}/prompts/{p}/cancel"),
                        "give exactly one of afterUpdates and afterMs",
                    ));
                }
            }
        }
        for (t, terminal) in self.terminals.iter().enumerate() {
            if terminal.command.trim().is_empty() {
                return Err(ScriptError::at(format!("/terminals/{t}/command"), "the command is empty"));
            }
        }
        Ok(())
    }

    /// The version asked for at most (the script's, else the newest spoken).
    pub fn version(&self) -> Version {
        let newest = Version::ALL.iter().copied().max().unwrap_or(Version::V1);
        self.protocol_version.and_then(Version::from_number).unwrap_or(newest)
    }

    /// The answer to a permission request with this title and tool kind.
    pub fn permission(&self, title: Option<&str>, kind: Option<&str>) -> PermissionAnswer {
        let matches = |rule: &&PermissionRule| {
            rule.title.as_deref().is_none_or(|t| title.is_some_and(|title| title.contains(t)))
                && rule.kind.as_deref().is_none_or(|k| kind == Some(k))
        };
        self.permissions.iter().find(matches).map_or(self.default_permission, |rule| rule.answer)
    }

    /// The scripted command `terminal/create` asks for: matched by the command line (command
    /// and arguments joined by spaces), else by the command alone.
    pub fn terminal(&self, command: &str, args: &[String]) -> Option<&TerminalScript> {
        let line = std::iter::once(command).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ");
        let by = |wanted: &str| self.terminals.iter().find(|t| t.command == wanted);
        by(&line).or_else(|| by(command))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> ScriptError {
        ClientScript::from_json(text).err().unwrap_or_else(|| ScriptError::at("?", "accepted"))
    }

    #[test]
    fn errors_name_the_pointer() {
        let cases = [
            (r#"{"sessions": [{"prompts": [{"txt": "hi"}]}]}"#, "/sessions/0/prompts/0/txt"),
            (r#"{"sessions": [{"prompts": [{"text": 3}]}]}"#, "/sessions/0/prompts/0/text"),
            (r#"{"defaultPermission": "maybe"}"#, "/defaultPermission"),
            (r#"{"files": {"/a~b/c": 1}}"#, "/files/~1a~0b~1c"),
            (r#"{"sessions": {}}"#, "/sessions"),
            (r#"{"protocolVersion": 7}"#, "/protocolVersion"),
            (r#"{"sessions": [{"prompts": [{"text": "x", "cancel": {}}]}]}"#, "/sessions/0/prompts/0/cancel"),
            (r#"{"terminals": [{"command": " "}]}"#, "/terminals/0/command"),
            (r#"{"bogus": true}"#, "/bogus"),
        ];
        for (text, at) in cases {
            let e = error(text);
            assert_eq!(e.pointer, at, "{text}: {e}");
        }
        assert!(error("{").message.contains("EOF"), "{}", error("{"));
        let trailing = error("{} x");
        assert!(trailing.pointer.is_empty() && trailing.message.contains("trailing"), "{trailing}");
    }

    #[test]
    fn permissions_take_the_first_matching_rule() {
        let script = ClientScript::from_json(
            r#"{"permissions": [{"title": "rm", "answer": "reject_once"}, {"kind": "edit", "answer": "allow_always"}],
                "defaultPermission": "cancelled"}"#,
        )
        .unwrap_or_default();
        assert_eq!(script.permission(Some("run rm -rf"), Some("edit")), PermissionAnswer::RejectOnce);
        assert_eq!(script.permission(Some("write"), Some("edit")), PermissionAnswer::AllowAlways);
        assert_eq!(script.permission(None, None), PermissionAnswer::Cancelled);
    }

    #[test]
    fn terminals_match_the_line_before_the_command() {
        let script = ClientScript::from_json(
            r#"{"terminals": [{"command": "ls", "output": "a"}, {"command": "ls -l", "output": "b", "exitCode": 2}]}"#,
        )
        .unwrap_or_default();
        assert_eq!(script.terminal("ls", &["-l".into()]).map(|t| t.output.as_str()), Some("b"));
        assert_eq!(script.terminal("ls", &["-a".into()]).map(|t| t.output.as_str()), Some("a"));
        assert!(script.terminal("cat", &[]).is_none());
    }
}
