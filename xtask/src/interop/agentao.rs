//! Agentao (PyPI `agentao`, [`AGENTAO_VERSION`]), the production agent written in Python: its venv
//! (`.cache/interop/agentao/venv/`, with the `cli` extra that `agentao --acp` needs), and the
//! check of our extension schema [`EXT_SCHEMA`] against the JSON Schema Agentao exports of its
//! ACP payloads (`agentao.host.schema.export_host_acp_json_schema`, pydantic), which
//! `interop/agentao/schema_check.py` runs in that venv: each example of our schema, each message
//! seed 001 documents, and payloads made by Agentao's own models, validated under both schemas.
//! A case whose two verdicts differ, or that both schemas judge against its expectation, is a
//! finding; the scenario passes when the findings are exactly [`KNOWN_FINDINGS`], each with
//! the reason, so that a new disagreement (or a settled one) fails it.

use super::install::install_venv;
use super::output::read_tap;
use super::report::{first_line, indented_tail};
use crate::process::run_with_timeout;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The PyPI distribution of Agentao, installed at exactly [`AGENTAO_VERSION`].
pub const AGENTAO_PACKAGE: &str = "agentao";
/// Version of [`AGENTAO_PACKAGE`]: the one seed 001 documents.
pub const AGENTAO_VERSION: &str = "0.5.17";
/// The extra that brings `agentao --acp`'s command line dependencies.
pub const AGENTAO_EXTRA: &str = "cli";
/// Our extension schema of Agentao's vendor methods, relative to the repository.
pub const EXT_SCHEMA: &str = "schema/ext/agentao.json";
/// The script that validates the cases under both schemas, relative to the repository.
const SCHEMA_CHECK_PY: &str = "interop/agentao/schema_check.py";

/// The findings the schema check is known to make: the case, and why the verdicts are what they
/// are (which side the wire supports).
pub const KNOWN_FINDINGS: &[(&str, &str)] = &[
    (
        "C.11 ask_user answer",
        "seed 001 documents the reply {\"answer\": TEXT}; Agentao 0.5.17 reads {\"outcome\": \"answered\", \"text\": TEXT} \
         (ACPTransport.ask_user, AcpAskUserResponse) and turns the seed's shape into \"(user unavailable)\"; ours follows the code",
    ),
    ("C.11 ask_user sentinel", "the seed's {\"answer\": …} shape again (see C.11 ask_user answer)"),
    (
        "AskUserRequest with an unknown field",
        "theirs is closed (pydantic extra=\"forbid\"); ours stays open, as ACP's own v1 objects are",
    ),
    ("AskUserResponse with an unknown field", "theirs is closed (extra=\"forbid\"); ours open"),
    ("SetModelResponse with an unknown field", "theirs is closed (extra=\"forbid\"); ours open"),
];

/// The vendor-methods turn's prompt: the stand-in's `tool:ask` marker (Agentao's `ask_user` tool).
pub fn vendor_prompt() -> String {
    format!("please use a tool: tool:ask {QUESTION}")
}

/// What the stand-in has Agentao ask.
const QUESTION: &str = "What is the code word?";
/// The method Agentao asks the user with (agent → client).
const ASK_USER: &str = "_agentao.cn/ask_user";
/// The method that switches Agentao's model (client → agent).
const SET_MODEL: &str = "_agentao.cn/set_model";
/// The model our client switches to.
const NEXT_MODEL: &str = "stand-in-model-2";
/// What Agentao hands its model when an answer is unusable (`ASK_USER_UNAVAILABLE_SENTINEL`).
const UNAVAILABLE: &str = "(user unavailable)";

/// Our client's flags for the vendor-methods turn, both typed by the types generated from
/// [`EXT_SCHEMA`] (`acp_types::v1::ext::agentao`): `_agentao.cn/ask_user` answered with `nonce`
/// (`AskUserResponse::Answered`, the shape Agentao 0.5.17 reads), and a `_agentao.cn/set_model`
/// call after the turn.
pub fn vendor_args(nonce: &str) -> Vec<String> {
    ["--agentao-answer", nonce, "--agentao-model", NEXT_MODEL].map(str::to_string).to_vec()
}

/// The vendor-methods turn: Agentao asked `_agentao.cn/ask_user` as a request, our answer (the
/// `nonce`) reached the model as the tool result (`model_log`, the stand-in's lines of the
/// scenario) rather than the unavailable sentinel, and `_agentao.cn/set_model` was answered with
/// the new model (in the tap and on our client's `stderr`).
pub(super) fn check_vendor_turn(tap: &Path, model_log: &str, stderr: &str, nonce: &str) -> Result<String, String> {
    let records = read_tap(tap)?;
    let message = |r: &Value, side: &str, method: &str| {
        r.get("from").and_then(Value::as_str) == Some(side)
            && r.pointer("/message/method").and_then(Value::as_str) == Some(method)
    };
    let asked =
        records.iter().find(|r| message(r, "agent", ASK_USER)).ok_or("the agent sent no _agentao.cn/ask_user")?;
    if asked.pointer("/message/id").is_none() {
        return Err(format!("_agentao.cn/ask_user came as a notification: {}", asked["message"]));
    }
    let results: Vec<&str> = model_log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|entry| entry.get("tool_result").and_then(Value::as_str).map(str::to_string))
        .map(|result| match (result.contains(nonce), result.contains(UNAVAILABLE)) {
            (true, _) => "answer",
            (false, true) => UNAVAILABLE,
            (false, false) => "other",
        })
        .collect();
    if !results.contains(&"answer") {
        return Err(format!("our answer {nonce:?} never reached the model; its tool results were: {results:?}"));
    }
    let expected = format!("client: {SET_MODEL} answered {}", serde_json::json!({ "model": NEXT_MODEL }));
    if !stderr.lines().any(|line| line.trim() == expected) {
        return Err(format!("no `{expected}` on the client's stderr"));
    }
    if !records.iter().any(|r| message(r, "client", SET_MODEL)) {
        return Err("the tap shows no _agentao.cn/set_model request".into());
    }
    Ok(format!(", {ASK_USER} answered and its answer reached the model, {SET_MODEL} switched to {NEXT_MODEL}"))
}

/// The installed Agentao.
#[derive(Debug, Clone)]
pub(super) struct Agentao {
    /// The venv's interpreter.
    pub(super) python: PathBuf,
    /// The venv's `agentao` command.
    pub(super) program: PathBuf,
}

/// Installs Agentao into `cache/agentao/venv` (or reuses it).
pub(super) fn install(cache: &Path) -> Result<Agentao, String> {
    let requirement = format!("{AGENTAO_PACKAGE}[{AGENTAO_EXTRA}]=={AGENTAO_VERSION}");
    let python = install_venv(&cache.join("agentao").join("venv"), &requirement)?;
    let program = python.with_file_name(format!("agentao{}", std::env::consts::EXE_SUFFIX));
    if !program.is_file() {
        return Err(format!("pip install {requirement} left no {}", program.display()));
    }
    Ok(Agentao { python, program })
}

/// One case of `schema_check.py`'s output.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Case {
    case: String,
    source: String,
    /// "ok" or "error", or `None` (a probe: either).
    expect: Option<String>,
    ours: String,
    theirs: String,
}

impl Case {
    fn read(line: &str) -> Result<Case, String> {
        let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {line}"))?;
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
        let field = |key: &str| text(key).ok_or_else(|| format!("no {key:?} in {line}"));
        Ok(Case {
            case: field("case")?,
            source: field("source")?,
            expect: text("expect"),
            ours: field("ours")?,
            theirs: field("theirs")?,
        })
    }

    /// What is wrong with the verdicts, if anything: they differ, or both miss the expectation.
    fn finding(&self) -> Option<String> {
        let (ours, theirs) = (self.ours == "ok", self.theirs == "ok");
        if ours != theirs {
            return Some(format!("ours {}; theirs {}", self.ours, self.theirs));
        }
        match self.expect.as_deref() {
            Some(expect) if (expect == "ok") != ours => {
                Some(format!("both schemas say {}, expected {expect}", if ours { "ok" } else { &self.ours }))
            }
            _ => None,
        }
    }
}

/// Runs the check with Agentao's interpreter; its output is kept in `saved`.
pub(super) fn check_ext_schema(root: &Path, python: &Path, saved: &Path) -> Result<String, String> {
    let mut command = Command::new(python);
    command.arg(root.join(SCHEMA_CHECK_PY)).arg(root.join(EXT_SCHEMA)).current_dir(root);
    let run = run_with_timeout(&mut command, Duration::from_secs(60)).map_err(|why| format!("cannot run: {why}"))?;
    let _ = fs::write(saved, &run.stdout);
    if run.status.is_none_or(|s| !s.success()) {
        return Err(format!("{SCHEMA_CHECK_PY} failed ({:?}):\n{}", run.status, indented_tail(&run.stderr)));
    }
    let cases: Vec<Case> =
        run.stdout.lines().filter(|l| !l.trim().is_empty()).map(Case::read).collect::<Result<_, _>>()?;
    judge(&cases).map(|summary| format!("{summary}; {}, {:.1} s", saved.display(), run.elapsed.as_secs_f64()))
}

/// Passes when the findings are exactly [`KNOWN_FINDINGS`] (and there are cases at all).
fn judge(cases: &[Case]) -> Result<String, String> {
    if cases.is_empty() {
        return Err(format!("{SCHEMA_CHECK_PY} printed no case"));
    }
    let findings: Vec<(&Case, String)> = cases.iter().filter_map(|c| c.finding().map(|f| (c, f))).collect();
    let known = |case: &Case| KNOWN_FINDINGS.iter().find(|(name, _)| *name == case.case).map(|(_, why)| *why);
    let mut lines = Vec::new();
    let mut unexpected = 0;
    for (case, finding) in &findings {
        let why = known(case).unwrap_or_else(|| {
            unexpected += 1;
            "NOT KNOWN"
        });
        lines.push(format!("{} ({}): {}: {why}", case.case, case.source, first_line(finding)));
    }
    let settled: Vec<&str> = KNOWN_FINDINGS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !findings.iter().any(|(c, _)| c.case == *name))
        .collect();
    let agreed = cases.len() - findings.len();
    let summary = format!("{} cases, {agreed} without a finding, {} known finding(s)", cases.len(), findings.len());
    if unexpected > 0 || !settled.is_empty() {
        let settled = settled.iter().map(|name| format!("{name}: a known finding no longer found\n"));
        return Err(format!("{summary}, {unexpected} not known\n{}{}", settled.collect::<String>(), lines.join("\n")));
    }
    Ok(format!("{summary}\n{}", lines.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, expect: Option<&str>, ours: &str, theirs: &str) -> Case {
        Case {
            case: name.into(),
            source: "seed".into(),
            expect: expect.map(str::to_string),
            ours: ours.into(),
            theirs: theirs.into(),
        }
    }

    #[test]
    fn findings_are_disagreements_and_missed_expectations() {
        assert_eq!(case("a", Some("ok"), "ok", "ok").finding(), None);
        assert_eq!(case("a", Some("error"), "error: x", "error: y").finding(), None);
        assert!(case("a", None, "ok", "error: closed").finding().unwrap().contains("theirs error: closed"));
        assert!(case("a", Some("ok"), "error: x", "error: y").finding().unwrap().contains("expected ok"));
        let line = r#"{"case": "c", "source": "probe", "expect": null, "ours": "ok", "theirs": "ok"}"#;
        assert_eq!(Case::read(line).unwrap(), Case { source: "probe".into(), ..case("c", None, "ok", "ok") });
        assert!(Case::read("{}").unwrap_err().contains("no \"case\""));
    }

    #[test]
    fn a_vendor_turn_needs_the_answer_at_the_model_and_the_model_switched() {
        let dir = tempfile::tempdir().unwrap();
        let tap = dir.path().join("tap.jsonl");
        let ask = r#"{"from":"agent","message":{"id":"s1","method":"_agentao.cn/ask_user","params":{}}}"#;
        let set = r#"{"from":"client","message":{"id":3,"method":"_agentao.cn/set_model","params":{}}}"#;
        let answered = r#"client: _agentao.cn/set_model answered {"model":"stand-in-model-2"}"#;
        let reached = r#"{"n":2,"tool_result":"n-1"}"#;
        fs::write(&tap, format!("{ask}\n{set}\n")).unwrap();
        assert!(check_vendor_turn(&tap, reached, answered, "n-1").unwrap().contains("reached the model"));
        let sentinel = r#"{"n":2,"tool_result":"(user unavailable)"}"#;
        let err = check_vendor_turn(&tap, sentinel, answered, "n-1").unwrap_err();
        assert!(err.contains("never reached") && err.contains("(user unavailable)"), "{err}");
        assert!(check_vendor_turn(&tap, reached, "", "n-1").unwrap_err().contains("stderr"));
        let notified = ask.replace(r#""id":"s1","#, "");
        fs::write(&tap, format!("{notified}\n{set}\n")).unwrap();
        assert!(check_vendor_turn(&tap, reached, answered, "n-1").unwrap_err().contains("notification"));
        fs::write(&tap, format!("{set}\n")).unwrap();
        assert!(check_vendor_turn(&tap, reached, answered, "n-1").unwrap_err().contains("no _agentao.cn/ask_user"));
        let args = vendor_args("n-1").join(" ");
        assert_eq!(args, "--agentao-answer n-1 --agentao-model stand-in-model-2");
    }

    #[test]
    fn only_the_known_findings_pass() {
        let known: Vec<Case> = KNOWN_FINDINGS.iter().map(|(name, _)| case(name, None, "ok", "error: closed")).collect();
        let summary = judge(&known).unwrap();
        assert!(summary.contains("known finding(s)") && summary.contains("C.11 ask_user answer"), "{summary}");
        let mut more = known.clone();
        more.push(case("new", Some("ok"), "ok", "error: no"));
        assert!(judge(&more).unwrap_err().contains("new (seed): ours ok; theirs error: no: NOT KNOWN"));
        assert!(judge(&known[1..]).unwrap_err().contains("a known finding no longer found"));
        assert!(judge(&[]).is_err());
    }
}
