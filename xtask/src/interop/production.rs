//! The production-agent scenarios of `cargo xtask interop` (`--only production`): two ACP agents
//! people use, installed from npm at pinned versions into `.cache/interop/agents/`, run offline
//! against the stand-in model server `interop/model/server.mjs`, driven by our `client` example
//! behind `acp tap` (each transcript then read by `acp check`) and by `acp conform`.
//!
//! | agent | started as | model API it streams | setup (a throwaway HOME per scenario) |
//! |---|---|---|---|
//! | `@google/gemini-cli` [`GEMINI_VERSION`] | `node …/bundle/gemini.js --acp` (v1 only) | Gemini API `…:streamGenerateContent?alt=sse` at `GOOGLE_GEMINI_BASE_URL` | `GEMINI_API_KEY`; `~/.gemini/settings.json`: API-key auth, no telemetry, usage statistics or update checks, folder trust off |
//! | `@agentclientprotocol/codex-acp` [`CODEX_ACP_VERSION`] | `node …/dist/index.js` (v1 and v2), which runs `codex app-server` from `@openai/codex` [`CODEX_VERSION`] (a native binary in an optional dependency) | OpenAI Responses API `POST /v1/responses` | `$CODEX_HOME/config.toml`: a custom `responses` provider at the stand-in; `INITIAL_AGENT_MODE=workspace-write` (approvals go to the client, not codex's model-run auto-reviewer), `NO_BROWSER=1` |
//! | `agentao[cli]` [`AGENTAO_VERSION`](super::agentao::AGENTAO_VERSION) (PyPI, a venv: see `super::agentao`) | `…/venv/bin/agentao --acp` (v1 only) | OpenAI Chat Completions `POST /v1/chat/completions` | `LLM_PROVIDER=OPENAI` and `OPENAI_API_KEY`, `OPENAI_BASE_URL` (the stand-in), `OPENAI_MODEL` |
//!
//! The stand-in answers from the prompt (see its header): [`PLAIN_PROMPT`] gets [`FIXED_TEXT`];
//! [`tool_prompt`] makes the model call the agent's shell tool with a command that writes a
//! nonce into a file of the workspace (both agents ask `session/request_permission` first, our
//! client allows), then answer text after the tool result; [`SLOW_PROMPT`] stalls the stream for
//! 30 s, so only `session/cancel` ends the turn soon.
//!
//! Offline: where `unshare -rn` works (Linux with unprivileged user namespaces, and `ip`), each
//! scenario runs in a network namespace of its own with only loopback, and its own stand-in
//! (result lines say `offline`), so an agent that needed any other host would fail. Elsewhere one
//! stand-in serves all scenarios on the host's loopback; the agents are configured to reach
//! nothing else (no telemetry, update checks or browser login), but nothing enforces it.
//!
//! Agentao also has an extension schema, `schema/ext/agentao.json`: one scenario checks it
//! against the JSON Schema Agentao exports ([`Production::ExtSchema`]).
//!
//! Each scenario runs in `.cache/interop/production/<scenario>/` (made afresh): `home/`,
//! `workspace/` (the session's cwd), `tap.jsonl` (the transcript), `client.out`/`client.err`, and
//! `model.log`, one line per request the stand-in got (on the host's network:
//! `.cache/interop/production/model.log`); a failed scenario shows the lines of its requests.
//! By hand, after one run (PORT from `node interop/model/server.mjs`'s `listening on` line):
//!
//! ```text
//! cd .cache/interop/production/<scenario>/workspace
//! env -i PATH=$PATH HOME="$PWD/../home" GEMINI_API_KEY=stand-in GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT \
//!   ../../../../../target/debug/examples/client --protocol-version 1 --prompt hello -- \
//!   node ../../../agents/node_modules/@google/gemini-cli/bundle/gemini.js --acp
//! ```
//!
//! (the `command:` line of a failure has the exact command, environment included).

use super::agentao::{self, Agentao};
use super::install::install_npm_project;
use super::output::{parse_client_output, read_tap, Transcript};
use super::peers::{path_arg, target_debug, Ours};
use super::report::{details, first_line, indent_rest, indented_tail};
use super::scenario::{Argv, ScenarioResult, Verdict, LISTEN_TIMEOUT};
use crate::listener::{Listener, NotListening};
use crate::process::{self, describe, run_with_timeout, Finished};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The npm package of Gemini CLI, installed at exactly [`GEMINI_VERSION`].
pub const GEMINI_PACKAGE: &str = "@google/gemini-cli";
/// Version of [`GEMINI_PACKAGE`]: one JavaScript bundle; its optional native dependencies
/// (keytar, node-pty) are not needed with an API key, and `@lydell/node-pty-linux-x64` ships
/// prebuilt, so the install runs no scripts.
pub const GEMINI_VERSION: &str = "0.61.0";
/// The npm package of the Codex ACP adapter, installed at exactly [`CODEX_ACP_VERSION`].
pub const CODEX_ACP_PACKAGE: &str = "@agentclientprotocol/codex-acp";
/// Version of [`CODEX_ACP_PACKAGE`]: a JavaScript program that speaks ACP and drives
/// `codex app-server` over JSON-RPC.
pub const CODEX_ACP_VERSION: &str = "2.6.0";
/// Codex itself, which [`CODEX_ACP_PACKAGE`] asks for as `^0.166.0`: pinned here so that a new
/// Codex release does not change the runs. Its native binary comes from the optional dependency
/// `@openai/codex-<platform>` (no install script).
pub const CODEX_PACKAGE: &str = "@openai/codex";
/// Version of [`CODEX_PACKAGE`].
pub const CODEX_VERSION: &str = "0.166.0";

/// What the stand-in model answers to a plain prompt (as in `interop/model/server.mjs`).
pub const FIXED_TEXT: &str = "Stand-in model reply: hello from the interop model server.";
/// The prompt of the plain turns.
pub const PLAIN_PROMPT: &str = "hello";
/// The prompt of the cancelled turns: `slow` makes the stand-in stall its stream for 30 s.
pub const SLOW_PROMPT: &str = "please be slow";
/// How long after the slow prompt the client sends `session/cancel`: both agents first make a
/// request or two of their own (gemini's model router), so the cancel lands mid-stream.
pub const CANCEL_AFTER: Duration = Duration::from_millis(2000);
/// A cancelled turn must end before this, well before the stand-in's 30 s stall.
pub const CANCELLED_WITHIN: Duration = Duration::from_secs(15);
/// The file the tool turn's command writes in the workspace.
pub const TOOL_OUTPUT: &str = "tool-output.txt";
/// Wall-clock limit of one client scenario: both agents answer `initialize` in 1-2 s here.
pub const TIMEOUT: Duration = Duration::from_secs(60);
/// Wall-clock limit of one `acp conform` run (a fresh agent per conform scenario, ~20 of them).
pub const CONFORM_TIMEOUT: Duration = Duration::from_secs(300);
/// `acp conform --timeout`: each of its waits; agents take 1-2 s to start.
pub const CONFORM_WAIT_SECS: u64 = 10;
/// The environment variable codex reads the stand-in provider's key from (`env_key`).
const CODEX_KEY_ENV: &str = "ACP_INTEROP_MODEL_KEY";

/// A production agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Gemini,
    Codex,
    Agentao,
}

impl Agent {
    pub fn label(self) -> &'static str {
        match self {
            Agent::Gemini => "gemini",
            Agent::Codex => "codex",
            Agent::Agentao => "agentao",
        }
    }

    /// The `authMethods` id of its API-key method, which the `authenticated` scenarios and
    /// `acp conform --auth` use. Neither agent requires `authenticate` when its key is in the
    /// environment; the scenarios check that calling it works. Agentao has none (its
    /// `authMethods` is empty: seed 001 C.1, "Agentao does no ACP-level auth").
    pub fn auth_method(self) -> Option<&'static str> {
        match self {
            Agent::Gemini => Some("gemini-api-key"),
            Agent::Codex => Some("api-key"),
            Agent::Agentao => None,
        }
    }

    /// Its extension schema, relative to the repository: `acp check --ext` validates its vendor
    /// messages in the transcripts against it.
    fn ext_schema(self) -> Option<&'static str> {
        match self {
            Agent::Agentao => Some(agentao::EXT_SCHEMA),
            Agent::Gemini | Agent::Codex => None,
        }
    }

    /// MUST rules this agent's release is known to break, each with where its code does so:
    /// `acp conform` failing one of these (and no other) is the agent's real behaviour, which
    /// the verdict reports; failing any other is a finding. A rule listed here may also pass
    /// or be skipped in a run (these are races).
    fn known_must_failures(self) -> &'static [(&'static str, &'static str)] {
        match self {
            // gemini-cli 0.61.0, `GeminiAgent.loadSession` (bundle/gemini-*.js): it calls
            // `session.streamHistory(sessionData.messages)` without awaiting it and answers at
            // once, so the replay races the answer. Whether a run shows it depends on timing too:
            // when the session is not on disk yet, the load is refused (`cap.serves-load`, a
            // SHOULD) and the rule is skipped.
            // (Rule ids as `acp_rpc::rules` names them; xtask depends on no runtime crate.)
            Agent::Gemini => &[(
                "session.load-replay",
                "gemini-cli 0.61.0 answers session/load before its replay: loadSession does not await streamHistory",
            )],
            // Agentao 0.5.17, by hand against the stand-in: a v2 `initialize` (no
            // `clientCapabilities`, which v2 does not have) is refused -32602 "initialize.
            // clientCapabilities must be a JSON object" instead of answered with 1
            // (`acp/initialize.py` checks the params' v1 shape before the version); and after
            // `session/cancel` it answers `cancelled` only when the model stream it waits on
            // ends (30.1 s, the stand-in's whole stall), past conform's wait, so the prompt is
            // unanswered there (the cancel reaches no blocked HTTP read).
            Agent::Agentao => &[
                (
                    "init.version",
                    "Agentao 0.5.17 refuses a v2-shaped initialize with -32602 (it reads clientCapabilities before the version) instead of answering 1",
                ),
                (
                    "turn.v1-cancelled",
                    "Agentao 0.5.17 answers cancelled only once the stalled model stream ends (30 s), after conform's wait",
                ),
                ("rpc.reply", "the same late cancelled answer: the prompt is unanswered within conform's wait"),
            ],
            Agent::Codex => &[],
        }
    }

    /// The command line, from the installed packages.
    fn argv(self, agents: &Agents) -> Argv {
        match self {
            Agent::Gemini => vec!["node".into(), path_arg(&agents.gemini_js), "--acp".into()],
            Agent::Codex => vec!["node".into(), path_arg(&agents.codex_acp_js)],
            Agent::Agentao => vec![path_arg(&agents.agentao.program), "--acp".into()],
        }
    }

    /// Writes the agent's configuration into `home` and returns its environment: nothing but
    /// `PATH` from ours (no proxies, no keys), so that it reaches nothing but the stand-in.
    fn environment(self, home: &Path, model_url: &str) -> Result<Vec<(String, String)>, String> {
        let mut env =
            vec![("PATH".to_string(), std::env::var("PATH").unwrap_or_default()), ("HOME".to_string(), path_arg(home))];
        match self {
            Agent::Gemini => {
                let dir = home.join(".gemini");
                let settings = serde_json::json!({
                    "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false },
                    "privacy": { "usageStatisticsEnabled": false },
                    "telemetry": { "enabled": false },
                    // Without this, an untrusted workspace refuses "allow always" and writes.
                    "security": { "auth": { "selectedType": "gemini-api-key" }, "folderTrust": { "enabled": false } },
                });
                write(
                    &dir.join("settings.json"),
                    &(serde_json::to_string_pretty(&settings).map_err(|e| e.to_string())? + "\n"),
                )?;
                env.push(("GEMINI_API_KEY".into(), "stand-in-key".into()));
                env.push(("GOOGLE_GEMINI_BASE_URL".into(), model_url.to_string()));
            }
            Agent::Codex => {
                let codex_home = home.join(".codex");
                let config = format!(
                    "# Written by `cargo xtask interop`: codex against the stand-in model server.\n\
                     model = \"stand-in-model\"\n\
                     model_provider = \"stand-in\"\n\
                     check_for_update_on_startup = false\n\
                     \n\
                     [model_providers.stand-in]\n\
                     name = \"Stand-in\"\n\
                     base_url = \"{model_url}/v1\"\n\
                     wire_api = \"responses\"\n\
                     env_key = \"{CODEX_KEY_ENV}\"\n\
                     \n\
                     [analytics]\n\
                     enabled = false\n"
                );
                write(&codex_home.join("config.toml"), &config)?;
                env.push(("CODEX_HOME".into(), path_arg(&codex_home)));
                env.push((CODEX_KEY_ENV.into(), "stand-in-key".into()));
                // What its `api-key` auth method logs in with (else `authenticate` answers
                // -32603 "CODEX_API_KEY or OPENAI_API_KEY is not set"); the turns still go to
                // the stand-in provider afterwards.
                env.push(("CODEX_API_KEY".into(), "stand-in-key".into()));
                // codex-acp's default mode ("agent") has codex's model review each approval;
                // this one asks the client (codex-acp reads INITIAL_AGENT_MODE).
                env.push(("INITIAL_AGENT_MODE".into(), "workspace-write".into()));
                // No ChatGPT browser login offered (nor attempted).
                env.push(("NO_BROWSER".into(), "1".into()));
            }
            Agent::Agentao => {
                // Its LLM block: the provider's {PREFIX}_API_KEY / _BASE_URL / _MODEL, spoken as
                // OpenAI Chat Completions (its default `api_format`).
                env.push(("LLM_PROVIDER".into(), "OPENAI".into()));
                env.push(("OPENAI_API_KEY".into(), "stand-in-key".into()));
                env.push(("OPENAI_BASE_URL".into(), format!("{model_url}/v1")));
                env.push(("OPENAI_MODEL".into(), "stand-in-model".into()));
            }
        }
        Ok(env)
    }
}

/// What a client scenario's turn must show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// [`PLAIN_PROMPT`]: `end_turn`, [`FIXED_TEXT`] among the agent's message chunks.
    Plain,
    /// The same with `--auth` [`Agent::auth_method`] first.
    Authenticated,
    /// [`tool_prompt`]: `end_turn`, a `tool_call`/`tool_call_update`, a
    /// `session/request_permission`, and [`TOOL_OUTPUT`] in the workspace holding the nonce (the
    /// command really ran).
    Tool,
    /// [`SLOW_PROMPT`] with `--cancel-after`: `cancelled`, within [`CANCELLED_WITHIN`], and the
    /// stand-in's log shows the model stream it stalled.
    Cancelled,
    /// [`fs_prompt`] (gemini): its `write_file` tool through our client's `fs/read_text_file`
    /// and `fs/write_text_file`, on a file the workspace already holds: `end_turn`, a
    /// `fs/write_text_file` request in the transcript, the file in the workspace with the
    /// stand-in's [`WRITTEN_TEXT`]. An existing file, because gemini-cli 0.61.0 cannot create a
    /// new one through a client's `fs/*`: it reads the file first and takes only an error whose
    /// message says "Resource not found" (or ENOENT…) as "absent", but its ACP connection rejects
    /// with the JSON-RPC error object itself, not an `Error`, so the message it tests is
    /// "[object Object]" whatever the client answers (bundle: `AcpFileSystemService.
    /// normalizeFileSystemError`).
    FsWrite,
    /// Agentao's vendor methods ([`agentao::vendor_prompt`]): the stand-in makes Agentao call
    /// its `ask_user` tool, which it puts to our client as `_agentao.cn/ask_user`, answered with a
    /// nonce that must reach the model as the tool result; then our client calls
    /// `_agentao.cn/set_model`.
    Vendor,
}

/// One production scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Production {
    /// Our client asks for `protocol_version` (at most); the agent answers `answers`.
    Client { agent: Agent, protocol_version: u32, answers: u32, kind: Kind },
    /// `acp conform` with a tool prompt, a cancel prompt and `--auth` (when it has a method).
    Conform { agent: Agent },
    /// `schema/ext/agentao.json` against the JSON Schema Agentao exports (see
    /// `super::agentao`).
    ExtSchema,
}

impl Production {
    const fn client(agent: Agent, protocol_version: u32, kind: Kind) -> Self {
        Production::Client { agent, protocol_version, answers: protocol_version, kind }
    }

    /// `production: our-client -> gemini v1, tool`, `production: our-client -> gemini v2
    /// (answers v1)`, `production: acp conform -> codex`.
    pub fn name(&self) -> String {
        match *self {
            Production::Client { agent, protocol_version, answers, kind } => {
                let kind = match kind {
                    Kind::Plain => "",
                    Kind::Authenticated => ", authenticated",
                    Kind::Tool => ", tool",
                    Kind::Cancelled => ", cancelled",
                    Kind::FsWrite => ", fs write",
                    Kind::Vendor => ", vendor methods",
                };
                let answers =
                    if answers == protocol_version { String::new() } else { format!(" (answers v{answers})") };
                format!("production: our-client -> {} v{protocol_version}{answers}{kind}", agent.label())
            }
            Production::Conform { agent } => format!("production: acp conform -> {}", agent.label()),
            Production::ExtSchema => format!("production: {} against agentao's exported schema", agentao::EXT_SCHEMA),
        }
    }

    /// The scenario's directory name: its name in lower-case words joined by `-`.
    fn slug(&self) -> String {
        let name = self.name();
        let words: Vec<&str> = name
            .trim_start_matches("production: ")
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        words.join("-")
    }
}

/// Every production scenario, in the order they run. gemini-cli speaks v1 only: asked for v2, it
/// answers 1 and our client goes on in v1.
pub const PRODUCTION: &[Production] = &[
    Production::client(Agent::Gemini, 1, Kind::Plain),
    Production::client(Agent::Gemini, 1, Kind::Tool),
    Production::client(Agent::Gemini, 1, Kind::Cancelled),
    Production::client(Agent::Gemini, 1, Kind::FsWrite),
    Production::client(Agent::Gemini, 1, Kind::Authenticated),
    Production::Client { agent: Agent::Gemini, protocol_version: 2, answers: 1, kind: Kind::Plain },
    Production::client(Agent::Codex, 1, Kind::Plain),
    Production::client(Agent::Codex, 1, Kind::Tool),
    Production::client(Agent::Codex, 1, Kind::Cancelled),
    Production::client(Agent::Codex, 1, Kind::Authenticated),
    Production::client(Agent::Codex, 2, Kind::Plain),
    Production::client(Agent::Codex, 2, Kind::Tool),
    Production::client(Agent::Codex, 2, Kind::Cancelled),
    Production::client(Agent::Agentao, 1, Kind::Plain),
    Production::client(Agent::Agentao, 1, Kind::Tool),
    Production::client(Agent::Agentao, 1, Kind::Vendor),
    Production::Client { agent: Agent::Agentao, protocol_version: 2, answers: 1, kind: Kind::Plain },
    Production::ExtSchema,
    Production::Conform { agent: Agent::Gemini },
    Production::Conform { agent: Agent::Codex },
    Production::Conform { agent: Agent::Agentao },
];

/// The tool turn's prompt: the stand-in's `tool:run` marker with a command that writes `nonce`
/// into [`TOOL_OUTPUT`].
pub fn tool_prompt(nonce: &str) -> String {
    format!("please use a tool: tool:run echo {nonce} > {TOOL_OUTPUT}")
}

/// What the stand-in's `tool:write` asks the agent to write.
pub const WRITTEN_TEXT: &str = "written by the stand-in model\n";

/// The fs turn's prompt: the stand-in's `tool:write` marker with a file named after `nonce`.
pub fn fs_prompt(nonce: &str) -> String {
    format!("please use a tool: tool:write {nonce}.txt")
}

/// `acp conform --tool-prompt`: gemini's `write_file` (a permission request, then
/// `fs/read_text_file` to see whether the file exists, then `fs/write_text_file` where that read
/// succeeds: `acp conform`'s answer to a read of a new file is an error, which gemini-cli 0.61.0
/// cannot tell from a failure (see [`Kind::FsWrite`]), so its write ends there); codex runs commands
/// itself and never calls `fs/*` or `terminal/*`, so its shell tool (a permission request).
fn conform_tool_prompt(agent: Agent) -> &'static str {
    match agent {
        Agent::Gemini => "please use a tool: tool:write conform-tool.txt",
        Agent::Codex | Agent::Agentao => "please use a tool: tool:run echo conform > conform-tool.txt",
    }
}

// ------------------------------------------------------------------------------------------
// Installation

/// The installed agents.
#[derive(Debug, Clone)]
pub(super) struct Agents {
    gemini_js: PathBuf,
    codex_acp_js: PathBuf,
    agentao: Agentao,
}

/// Installs the npm agents into `cache/agents` with `npm install --ignore-scripts` (or reuses
/// them; the marker `.installed` names the versions), and Agentao into its venv.
pub(super) fn install_agents(cache: &Path) -> Result<Agents, String> {
    let dir = cache.join("agents");
    let modules = dir.join("node_modules");
    let agents = Agents {
        gemini_js: modules.join(GEMINI_PACKAGE).join("bundle").join("gemini.js"),
        codex_acp_js: modules.join(CODEX_ACP_PACKAGE).join("dist").join("index.js"),
        agentao: agentao::install(cache)?,
    };
    let pinned =
        [(GEMINI_PACKAGE, GEMINI_VERSION), (CODEX_ACP_PACKAGE, CODEX_ACP_VERSION), (CODEX_PACKAGE, CODEX_VERSION)];
    // No install scripts: gemini-cli's (keytar, node-pty builds) are for features unused here,
    // and Codex's binary is a plain optional dependency.
    install_npm_project(&dir, "acp-rpc-interop-agents", &pinned, &["--ignore-scripts"])?;
    for program in [&agents.gemini_js, &agents.codex_acp_js] {
        if !program.is_file() {
            return Err(format!("npm install left no {}", program.display()));
        }
    }
    Ok(agents)
}

/// Builds the `acp` binary (`cargo build -p acp-tool`); its path, or why not.
pub(super) fn build_acp(root: &Path) -> Result<PathBuf, String> {
    let started = Instant::now();
    let mut build = process::cargo();
    build.args(["build", "--quiet", "-p", "acp-tool"]).current_dir(root);
    process::capture(&mut build)?;
    let acp = target_debug(root).join(format!("acp{}", std::env::consts::EXE_SUFFIX));
    if !acp.is_file() {
        return Err(format!("cargo build -p acp-tool left no {}", acp.display()));
    }
    eprintln!("interop: cargo build -p acp-tool in {:.1} s", started.elapsed().as_secs_f64());
    Ok(acp)
}

// ------------------------------------------------------------------------------------------
// Running

/// What the production scenarios run with, set up once per `cargo xtask interop`.
pub(super) struct Setup {
    root: PathBuf,
    dir: PathBuf,
    agents: Agents,
    client: Result<PathBuf, String>,
    acp: Result<PathBuf, String>,
    network: Network,
}

/// The stand-in's port inside a scenario's own network namespace, where nothing else listens.
const ISOLATED_MODEL_PORT: u16 = 38917;

/// Where the stand-in model server runs, and so what the agents can reach.
enum Network {
    /// Each scenario in a network namespace of its own (`unshare -rn`: loopback only, up), with
    /// its own stand-in at [`ISOLATED_MODEL_PORT`] logging into the scenario's directory: an
    /// agent that needed anything but the stand-in would fail.
    Isolated { server_js: PathBuf },
    /// The host's network, where isolation is not available (set-up says why): one stand-in for
    /// all. The agents are configured to reach nothing else, but nothing enforces it.
    Shared { model: Listener, log: PathBuf },
}

/// Run by `sh -c` in a scenario's network namespace: loopback up, the stand-in started (`$1`
/// the server, `$2` its log, `$3` the port), and once it listens, the scenario's command.
const ISOLATED_SH: &str = r#"server=$1; log=$2; port=$3; shift 3
ip link set lo up || exit 97
node "$server" --listen "127.0.0.1:$port" --log "$log" >/dev/null 2>"$log.stderr" &
i=0
until grep -q 'listening on' "$log.stderr" 2>/dev/null; do
  i=$((i + 1))
  if [ "$i" -gt 200 ]; then echo "the stand-in model server did not start:" >&2; cat "$log.stderr" >&2; exit 98; fi
  sleep 0.05
done
exec "$@"
"#;

impl Setup {
    /// The stand-in's base URL as the agents are configured with it.
    fn model_url(&self) -> String {
        match &self.network {
            Network::Isolated { .. } => format!("http://127.0.0.1:{ISOLATED_MODEL_PORT}"),
            Network::Shared { model, .. } => model.url.clone(),
        }
    }

    /// A scenario's command: `argv` in `workspace` with only `env`, in a network namespace of its
    /// own when isolated (its stand-in logging to `dir/model.log`).
    fn command(&self, argv: &[String], workspace: &Path, env: &[(String, String)], dir: &Path) -> Command {
        let mut command = match &self.network {
            Network::Isolated { server_js } => {
                let mut command = Command::new("unshare");
                command
                    .args(["-rn", "--", "sh", "-c", ISOLATED_SH, "sh"])
                    .arg(server_js)
                    .arg(dir.join("model.log"))
                    .arg(ISOLATED_MODEL_PORT.to_string())
                    .args(argv);
                command
            }
            Network::Shared { .. } => {
                let mut command = Command::new(&argv[0]);
                command.args(&argv[1..]);
                command
            }
        };
        command.current_dir(workspace).env_clear().envs(env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// The stand-in's log of a scenario and where its requests start in it.
    fn model_log(&self, dir: &Path) -> (PathBuf, u64) {
        match &self.network {
            Network::Isolated { .. } => (dir.join("model.log"), 0),
            Network::Shared { log, .. } => (log.clone(), file_len(log)),
        }
    }

    /// `, offline` (isolated) or `` for a scenario's summary.
    fn offline(&self) -> &'static str {
        match self.network {
            Network::Isolated { .. } => ", offline",
            Network::Shared { .. } => "",
        }
    }
}

/// Why each scenario cannot have a network namespace of its own here, or `None` when it can:
/// `unshare -rn` (an unprivileged user namespace) and `ip` to bring loopback up, both Linux.
fn isolation_unavailable() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some("network namespaces are Linux's".into());
    }
    let mut probe = Command::new("unshare");
    probe
        .args(["-rn", "--", "sh", "-c", "ip link set lo up"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    match run_with_timeout(&mut probe, Duration::from_secs(10)) {
        Ok(run) if run.status.is_some_and(|s| s.success()) => None,
        Ok(run) => {
            Some(format!("`unshare -rn -- sh -c 'ip link set lo up'` failed: {}", first_line(run.stderr.trim())))
        }
        Err(why) => Some(format!("cannot run unshare: {why}")),
    }
}

/// Installs the agents and chooses the network: a namespace per scenario where `unshare -rn`
/// works, else one stand-in model server for all, started here. `ours` is the examples' build
/// (our `client`), `acp` the tool's.
pub(super) fn set_up(root: &Path, cache: &Path, ours: &Ours, acp: Result<PathBuf, String>) -> Result<Setup, String> {
    let agents = install_agents(cache)?;
    let dir = cache.join("production");
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let server_js = root.join("interop").join("model").join("server.mjs");
    let network = match isolation_unavailable() {
        None => {
            eprintln!("interop: production scenarios offline: each in a network namespace of its own (unshare -rn), loopback only, with its own stand-in model server");
            Network::Isolated { server_js }
        }
        Some(why) => {
            let log = dir.join("model.log");
            let _ = fs::remove_file(&log);
            let mut server = Command::new("node");
            server.arg(&server_js).args(["--listen", "127.0.0.1:0", "--log"]).arg(&log).current_dir(root);
            let model = Listener::start(&mut server, LISTEN_TIMEOUT).map_err(|e| match e {
                NotListening::Exited { status, stderr } => {
                    format!("the stand-in model server exited with {status}:\n{}", indented_tail(&stderr))
                }
                NotListening::TimedOut { stderr } => {
                    format!("the stand-in model server printed no `listening on URL`:\n{}", indented_tail(&stderr))
                }
                NotListening::Spawn(why) => why,
            })?;
            eprintln!(
                "interop: production scenarios on the host's network ({why}): one stand-in model server at {} (log: {})",
                model.url,
                log.display()
            );
            Network::Shared { model, log }
        }
    };
    let client = match ours {
        Ours::Built { client: Some(path), .. } => Ok(path.clone()),
        Ours::Built { .. } => Err("the client example was not built".to_string()),
        Ours::BuildFailed(message) => Err(message.clone()),
    };
    Ok(Setup { root: root.to_path_buf(), dir, agents, client, acp, network })
}

/// Runs one production scenario.
pub(super) fn run(setup: &Setup, scenario: Production) -> ScenarioResult {
    let name = scenario.name();
    let outcome = match scenario {
        Production::Client { agent, protocol_version, answers, kind } => {
            client_scenario(setup, scenario, agent, protocol_version, answers, kind)
        }
        Production::Conform { agent } => conform_scenario(setup, scenario, agent),
        Production::ExtSchema => {
            let saved = setup.dir.join("agentao-schema.jsonl");
            agentao::check_ext_schema(&setup.root, &setup.agents.agentao.python, &saved)
        }
    };
    // The first line of a summary goes in parentheses; the rest (acp check findings, conform's
    // table) indented under it.
    let (verdict, line) = match outcome {
        Ok(summary) => {
            let (first, rest) = summary.split_once('\n').unwrap_or((summary.as_str(), ""));
            let rest: String = rest.lines().map(|l| format!("\n    {l}")).collect();
            (Verdict::Pass, format!("PASS {name} ({first}){rest}"))
        }
        Err(why) => (Verdict::Fail, format!("FAIL {name}: {}", indent_rest(&why))),
    };
    ScenarioResult { name, verdict, line }
}

/// A fresh directory for the scenario, with `home/` and `workspace/`.
fn scenario_dir(setup: &Setup, scenario: Production) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let dir = setup.dir.join(scenario.slug());
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
    }
    let (home, workspace) = (dir.join("home"), dir.join("workspace"));
    for d in [&home, &workspace] {
        fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    Ok((dir, home, workspace))
}

fn client_scenario(
    setup: &Setup,
    scenario: Production,
    agent: Agent,
    protocol_version: u32,
    answers: u32,
    kind: Kind,
) -> Result<String, String> {
    let client = setup.client.as_ref().map_err(|why| format!("our client is not available: {}", first_line(why)))?;
    let acp = setup.acp.as_ref().map_err(|why| format!("acp is not available: {}", first_line(why)))?;
    let (dir, home, workspace) = scenario_dir(setup, scenario)?;
    let env = agent.environment(&home, &setup.model_url())?;
    let tap = dir.join("tap.jsonl");
    let nonce = nonce();
    if kind == Kind::FsWrite {
        let existing = workspace.join(format!("{nonce}.txt"));
        fs::write(&existing, "to be replaced\n").map_err(|e| format!("cannot write {}: {e}", existing.display()))?;
    }

    let argv = client_argv(setup, (client, acp), agent, (protocol_version, kind), &nonce, &tap);

    let mut command = setup.command(&argv, &workspace, &env, &dir);
    let described = describe(&command);
    let (model_log, log_start) = setup.model_log(&dir);
    let run = run_with_timeout(&mut command, TIMEOUT).map_err(|why| format!("cannot run `{described}`: {why}"))?;
    let _ = fs::write(dir.join("client.out"), &run.stdout);
    let _ = fs::write(dir.join("client.err"), &run.stderr);
    let elapsed = run.elapsed;
    let fail = |why: String| {
        format!(
            "{why} ({:.1} s)\n{}\n    stand-in model requests:\n{}",
            elapsed.as_secs_f64(),
            details(&described, &run),
            indented_tail(&model_log_since(&model_log, log_start))
        )
    };

    let transcript = judge_client_run(&run, kind).map_err(fail)?;
    let turn = Turn { agent, kind, tap: &tap, workspace: &workspace, nonce: &nonce, stderr: &run.stderr };
    let tool_check = turn.check(&transcript, &read_since(&model_log, log_start)).map_err(fail)?;
    let negotiated = negotiated_version(&tap).map_err(fail)?;
    if negotiated != answers {
        return Err(fail(format!("the agent answered protocol version {negotiated}, expected {answers}")));
    }
    let ext = agent.ext_schema().map(|rel| setup.root.join(rel));
    let check = check_transcript(acp, &tap, ext.as_deref());
    // v2: the state a client keeps, replayed by `acp state`, against the transcript itself.
    let state = if negotiated == 2 {
        format!("; {}", super::state_check::check(acp, &tap, transcript.stop_reason.as_deref()).map_err(fail)?)
    } else {
        String::new()
    };
    let summary = format!(
        "{} updates, stopReason {}{tool_check}, v{negotiated}{}, {:.1} s; {}{state}",
        transcript.updates.len(),
        transcript.stop_reason.as_deref().unwrap_or("null"),
        setup.offline(),
        elapsed.as_secs_f64(),
        check.summary
    );
    if check.failed {
        return Err(format!("acp check found problems in {}: {summary}\n{}", tap.display(), check.listing()));
    }
    Ok(if check.findings.is_empty() { summary } else { format!("{summary}\n{}", check.listing()) })
}

/// Our client's command line for a scenario: the version it asks for, the prompt and what else
/// the kind of turn needs, then `acp tap` logging to `tap` in front of the agent.
fn client_argv(
    setup: &Setup,
    (client, acp): (&Path, &Path),
    agent: Agent,
    (protocol_version, kind): (u32, Kind),
    nonce: &str,
    tap: &Path,
) -> Argv {
    // Always named: our client asks for its newest version by default, and codex answers 2.
    let mut argv: Argv = vec![path_arg(client), "--protocol-version".into(), protocol_version.to_string()];
    if kind == Kind::Authenticated {
        argv.extend(["--auth".into(), agent.auth_method().unwrap_or_default().into()]);
    }
    let prompt = match kind {
        Kind::Plain | Kind::Authenticated => PLAIN_PROMPT.to_string(),
        Kind::Tool => tool_prompt(nonce),
        Kind::FsWrite => fs_prompt(nonce),
        Kind::Cancelled => SLOW_PROMPT.to_string(),
        Kind::Vendor => agentao::vendor_prompt(),
    };
    argv.extend(["--prompt".into(), prompt]);
    if kind == Kind::Vendor {
        argv.extend(agentao::vendor_args(nonce));
    }
    if kind == Kind::Cancelled {
        argv.extend(["--cancel-after".into(), CANCEL_AFTER.as_millis().to_string()]);
    }
    argv.extend(["--".into(), path_arg(acp), "tap".into(), "--log".into(), path_arg(tap), "--".into()]);
    argv.extend(agent.argv(&setup.agents));
    argv
}

/// What a client scenario's turn left besides its updates: the transcript, the workspace, our
/// client's stderr.
struct Turn<'a> {
    agent: Agent,
    kind: Kind,
    tap: &'a Path,
    workspace: &'a Path,
    nonce: &'a str,
    stderr: &'a str,
}

impl Turn<'_> {
    /// What the kind of turn must show beyond its stop reason and text (`model_log`: the
    /// stand-in's lines of the scenario); the summary's words for it.
    fn check(&self, transcript: &Transcript, model_log: &str) -> Result<String, String> {
        Ok(match self.kind {
            Kind::Tool => {
                let written = fs::read_to_string(self.workspace.join(TOOL_OUTPUT)).unwrap_or_default();
                check_tool_turn(transcript, &written, self.nonce)?;
                // Both agents ask before running a command that writes (gemini: not a read-only
                // command; codex: the stand-in asks to leave the sandbox).
                let requests = agent_requests(self.tap)?;
                if !requests.iter().any(|m| m == "session/request_permission") {
                    return Err(format!("the agent asked no session/request_permission (its requests: {requests:?})"));
                }
                format!(", permission asked, {TOOL_OUTPUT} written")
            }
            Kind::Authenticated => {
                let method = self.agent.auth_method().unwrap_or_default();
                check_authenticated(self.tap, method)?;
                format!(", authenticated with {method}")
            }
            Kind::FsWrite => {
                let written = fs::read_to_string(self.workspace.join(format!("{}.txt", self.nonce))).ok();
                check_fs_turn(self.tap, written.as_deref())?;
                ", fs/write_text_file served".to_string()
            }
            Kind::Cancelled => {
                // The cancel must have cut a model stream short, not come before the agent asked.
                if !was_stalled(model_log) {
                    return Err("the stand-in stalled no stream before the turn ended".into());
                }
                ", a stalled stream cut short".to_string()
            }
            Kind::Vendor => agentao::check_vendor_turn(self.tap, model_log, self.stderr, self.nonce)?,
            Kind::Plain => String::new(),
        })
    }
}

/// The judgement on the client's run: exit 0 and its output read; then per kind, the stop reason
/// and what the agent said.
fn judge_client_run(run: &Finished, kind: Kind) -> Result<Transcript, String> {
    if run.timed_out {
        return Err(format!("timed out after {} s (killed)", TIMEOUT.as_secs()));
    }
    let status = run.status.ok_or_else(|| "client exit status unknown".to_string())?;
    if !status.success() {
        return Err(match run.stderr.lines().rev().map(str::trim).find(|line| !line.is_empty()) {
            Some(line) => format!("client exited with {status}: {line}"),
            None => format!("client exited with {status}"),
        });
    }
    let transcript = parse_client_output(&run.stdout)?;
    check_kind(&transcript, kind, run.elapsed)?;
    Ok(transcript)
}

/// The stop reason and text a kind of turn must end with.
fn check_kind(transcript: &Transcript, kind: Kind, elapsed: Duration) -> Result<(), String> {
    let stop = transcript.stop_reason.as_deref().unwrap_or("null");
    let expected = if kind == Kind::Cancelled { "cancelled" } else { "end_turn" };
    if stop != expected {
        return Err(format!("stopReason {stop}, expected {expected}"));
    }
    match kind {
        Kind::Plain | Kind::Authenticated if !transcript.agent_text().contains(FIXED_TEXT) => Err(format!(
            "the agent's text {:?} does not contain the stand-in's reply {FIXED_TEXT:?}",
            transcript.agent_text()
        )),
        Kind::Cancelled if elapsed >= CANCELLED_WITHIN => Err(format!(
            "the cancelled turn took {:.1} s, expected under {} s",
            elapsed.as_secs_f64(),
            CANCELLED_WITHIN.as_secs()
        )),
        _ => Ok(()),
    }
}

/// A tool turn: the agent reported a tool call, and the command wrote the nonce.
fn check_tool_turn(transcript: &Transcript, written: &str, nonce: &str) -> Result<(), String> {
    let is_tool = |u: &&Value| {
        matches!(u.get("sessionUpdate").and_then(Value::as_str), Some("tool_call") | Some("tool_call_update"))
    };
    if !transcript.updates.iter().any(|u| is_tool(&u)) {
        return Err("no tool_call or tool_call_update among the updates".into());
    }
    if written.trim() != nonce {
        return Err(format!("{TOOL_OUTPUT} holds {:?}, expected {nonce:?}: the command did not run", written.trim()));
    }
    Ok(())
}

/// An fs turn: the agent asked our client to write (not its own fallback), and the file holds
/// what the model asked for.
fn check_fs_turn(tap: &Path, written: Option<&str>) -> Result<(), String> {
    let methods = agent_requests(tap)?;
    if !methods.iter().any(|m| m == "fs/write_text_file") {
        return Err(format!("the agent sent no fs/write_text_file (its requests: {methods:?})"));
    }
    match written {
        Some(text) if text == WRITTEN_TEXT => Ok(()),
        Some(text) => Err(format!("the file holds {text:?}, expected {WRITTEN_TEXT:?}")),
        None => Err("the file was not written".into()),
    }
}

/// The client's `authenticate` request with `method` was answered with a result (v1 only: v2
/// calls it `auth/login`).
fn check_authenticated(tap: &Path, method: &str) -> Result<(), String> {
    let records = read_tap(tap)?;
    let from = |r: &Value, side: &str| r.get("from").and_then(Value::as_str) == Some(side);
    let request = records
        .iter()
        .filter(|r| from(r, "client"))
        .find(|r| r.pointer("/message/method").and_then(Value::as_str) == Some("authenticate"))
        .ok_or("the client sent no authenticate request")?;
    let asked = request.pointer("/message/params/methodId").and_then(Value::as_str);
    if asked != Some(method) {
        return Err(format!("authenticate asked for {asked:?}, expected {method:?}"));
    }
    let id = request.pointer("/message/id");
    let answer = records
        .iter()
        .filter(|r| from(r, "agent"))
        .find(|r| r.pointer("/message/id") == id && r.pointer("/message/method").is_none())
        .ok_or("the agent never answered authenticate")?;
    match answer.pointer("/message/result") {
        Some(_) => Ok(()),
        None => Err(format!("authenticate was answered {}", answer.get("message").unwrap_or(&Value::Null))),
    }
}

/// The methods of the agent's requests in a tap transcript, in order.
fn agent_requests(tap: &Path) -> Result<Vec<String>, String> {
    Ok(read_tap(tap)?
        .into_iter()
        .filter(|record| record.get("from").and_then(Value::as_str) == Some("agent"))
        .filter(|record| record.pointer("/message/id").is_some())
        .filter_map(|record| record.pointer("/message/method").and_then(Value::as_str).map(str::to_string))
        .collect())
}

/// The protocol version of the agent's `initialize` answer in a tap transcript.
fn negotiated_version(tap: &Path) -> Result<u32, String> {
    read_tap(tap)?
        .into_iter()
        .filter(|record| record.get("from").and_then(Value::as_str) == Some("agent"))
        .find_map(|record| record.pointer("/message/result/protocolVersion").and_then(Value::as_u64))
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("no initialize answer with a protocolVersion in {}", tap.display()))
}

/// What `acp check` said about a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CheckReport {
    /// Its last line (`N messages: … ok, …`), or why it could not run.
    summary: String,
    /// Each message it did not find `ok` (or `extension`), with its first detail line.
    findings: Vec<String>,
    /// It exited 1: a message is an `error` or a MUST rule is broken. Such a transcript fails its
    /// scenario; `lossy` messages and SHOULD findings are listed only.
    failed: bool,
}

impl CheckReport {
    fn listing(&self) -> String {
        self.findings.iter().map(|f| format!("acp check: {f}")).collect::<Vec<_>>().join("\n")
    }
}

/// `acp check` on a transcript, with the agent's extension schema (`--ext`) when it has one.
fn check_transcript(acp: &Path, tap: &Path, ext: Option<&Path>) -> CheckReport {
    let mut command = Command::new(acp);
    command.arg("check");
    if let Some(ext) = ext {
        command.arg("--ext").arg(ext);
    }
    command.arg(tap);
    match run_with_timeout(&mut command, Duration::from_secs(60)) {
        Ok(run) => CheckReport {
            failed: run.status.and_then(|s| s.code()) != Some(0),
            ..read_check_output(&run.stdout, &run.stderr)
        },
        Err(why) => CheckReport { summary: format!("acp check did not run: {why}"), findings: vec![], failed: true },
    }
}

/// Reads `acp check`'s text output: a line per message ending in its status, indented detail
/// lines under it, a summary line last.
fn read_check_output(stdout: &str, stderr: &str) -> CheckReport {
    const SHOWN: usize = 160;
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    // The summary starts with the transcript's path, which the scenario line names already.
    let summary = match lines.last() {
        Some(last) => last.trim().split_once(": ").map_or(*last, |(_, rest)| rest).to_string(),
        None => format!("acp check printed nothing: {}", first_line(stderr.trim())),
    };
    let mut findings = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        let numbered = line.split_whitespace().next().is_some_and(|w| w.chars().all(|c| c.is_ascii_digit()));
        let status = line.rsplit(char::is_whitespace).next().unwrap_or_default();
        if numbered && !matches!(status, "ok" | "extension") {
            let squeezed = line.split_whitespace().collect::<Vec<_>>().join(" ");
            let detail = lines.get(i + 1).filter(|next| next.starts_with("         ")).map(|d| d.trim());
            let text = match detail {
                Some(detail) => format!("{squeezed}: {detail}"),
                None => squeezed,
            };
            findings.push(shorten(&text, SHOWN));
        } else if numbered {
            // A message `ok` as a message may still carry SHOULD findings of the rules.
            let squeezed = line.split_whitespace().collect::<Vec<_>>().join(" ");
            let details = lines[i + 1..].iter().take_while(|next| next.starts_with("         "));
            for rule in details.map(|d| d.trim()).filter(|d| d.starts_with("rule ")) {
                findings.push(shorten(&format!("{squeezed}: {rule}"), SHOWN));
            }
        }
        i += 1;
    }
    CheckReport { summary: format!("acp check: {summary}"), findings, failed: false }
}

fn conform_scenario(setup: &Setup, scenario: Production, agent: Agent) -> Result<String, String> {
    let acp = setup.acp.as_ref().map_err(|why| format!("acp is not available: {}", first_line(why)))?;
    let (dir, home, workspace) = scenario_dir(setup, scenario)?;
    let env = agent.environment(&home, &setup.model_url())?;
    let mut argv: Argv =
        vec![path_arg(acp), "conform".into(), "--tool-prompt".into(), conform_tool_prompt(agent).into()];
    argv.extend(["--cancel-prompt".into(), SLOW_PROMPT.into()]);
    if let Some(method) = agent.auth_method() {
        argv.extend(["--auth".into(), method.into()]);
    }
    // Its vendor messages (Agentao's `initialize` `_meta`) checked against its extension schema.
    if let Some(ext) = agent.ext_schema() {
        argv.extend(["--ext".into(), path_arg(&setup.root.join(ext))]);
    }
    argv.extend(["--timeout".into(), CONFORM_WAIT_SECS.to_string(), "--".into()]);
    argv.extend(agent.argv(&setup.agents));
    let mut command = setup.command(&argv, &workspace, &env, &dir);
    let described = describe(&command);
    let run =
        run_with_timeout(&mut command, CONFORM_TIMEOUT).map_err(|why| format!("cannot run `{described}`: {why}"))?;
    let saved = setup.dir.join(format!("conform-{}.txt", agent.label()));
    write(&saved, &run.stdout)?;
    let table: String = run.stdout.lines().filter(|l| !l.trim().is_empty()).map(|l| format!("{l}\n")).collect();
    let elapsed = run.elapsed.as_secs_f64();
    if run.timed_out {
        return Err(format!("timed out after {} s (killed)\n{}", CONFORM_TIMEOUT.as_secs(), details(&described, &run)));
    }
    let failed = failed_musts(&run.stdout);
    let known = agent.known_must_failures();
    let only_known = !failed.is_empty() && failed.iter().all(|rule| known.iter().any(|(id, _)| id == rule));
    match run.status.and_then(|s| s.code()) {
        Some(0) => Ok(format!(
            "every MUST passes{}, {elapsed:.1} s; {}\n{}",
            setup.offline(),
            saved.display(),
            table.trim_end()
        )),
        Some(1) if only_known => {
            let why: Vec<&str> =
                known.iter().filter(|(id, _)| failed.contains(&id.to_string())).map(|(_, why)| *why).collect();
            Ok(format!(
                "every MUST passes but the agent's known violation(s) {} ({}){}, {elapsed:.1} s; {}\n{}",
                failed.join(", "),
                why.join("; "),
                setup.offline(),
                saved.display(),
                table.trim_end()
            ))
        }
        code => {
            let meaning = match code {
                Some(1) => "a MUST rule fails",
                Some(2) => "the agent could not be started (or conform's arguments were refused)",
                Some(3) => "no session could be created",
                _ => "unexpected exit status",
            };
            Err(format!(
                "acp conform exited with {code:?}: {meaning} ({elapsed:.1} s; {})\n{}\n    command: {described}\n    stderr:\n{}",
                saved.display(),
                table.trim_end(),
                indented_tail(&run.stderr)
            ))
        }
    }
}

/// The ids of the MUST rules an `acp conform` table reports as failing (`    FAIL  MUST    id …`).
fn failed_musts(table: &str) -> Vec<String> {
    table
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some("FAIL"), Some("MUST"), Some(id)) => Some(id.to_string()),
                _ => None,
            }
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// Helpers

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A word no earlier run can have left behind.
fn nonce() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
    format!("nonce-{:x}-{}", nanos, std::process::id())
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Whether the stand-in's log lines show a request it stalled (`slow`).
fn was_stalled(log: &str) -> bool {
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .any(|entry| entry.get("stalling").and_then(Value::as_bool) == Some(true))
}

/// The stand-in's log from byte `start` on (the scenario's own requests).
fn read_since(path: &Path, start: u64) -> String {
    let bytes = fs::read(path).unwrap_or_default();
    let start = usize::try_from(start).unwrap_or(usize::MAX).min(bytes.len());
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// [`read_since`] with each line cut to a width a failure report can show.
fn model_log_since(path: &Path, start: u64) -> String {
    read_since(path, start).lines().map(|line| shorten(line, 300)).collect::<Vec<_>>().join("\n")
}

fn shorten(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failing_musts_are_read_from_the_conform_table() {
        let table = "    PASS  MUST    init.version                     10 checks\n\
                     \x20   FAIL  SHOULD  rpc.parse-error                  [v1 main] …\n\
                     \x20   FAIL  MUST    session.load-replay              [v1 main, line 51] …\n\
                     \x20                                                  \"The Agent MUST replay …\"\n\
                     \x20   SKIP  MUST    turn.v2-cancelled                the agent negotiated 1\n";
        assert_eq!(failed_musts(table), ["session.load-replay"]);
        assert!(Agent::Gemini.known_must_failures().iter().any(|(id, _)| *id == "session.load-replay"));
        assert!(Agent::Codex.known_must_failures().is_empty());
        let agentao: Vec<&str> = Agent::Agentao.known_must_failures().iter().map(|(id, _)| *id).collect();
        assert_eq!(agentao, ["init.version", "turn.v1-cancelled", "rpc.reply"]);
    }

    #[test]
    fn names_are_unique_and_say_production() {
        let names: Vec<String> = PRODUCTION.iter().map(Production::name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert!(names.iter().all(|n| n.starts_with("production: ")));
        assert!(names.contains(&"production: our-client -> gemini v2 (answers v1)".to_string()));
        assert!(names.contains(&"production: our-client -> codex v2, cancelled".to_string()));
        assert!(names.contains(&"production: acp conform -> gemini".to_string()));
        assert!(names.contains(&"production: our-client -> agentao v1, vendor methods".to_string()));
        assert!(names.contains(&"production: schema/ext/agentao.json against agentao's exported schema".to_string()));
        let slugs: Vec<String> = PRODUCTION.iter().map(Production::slug).collect();
        assert!(slugs.contains(&"our-client-gemini-v2-answers-v1".to_string()), "{slugs:?}");
        let mut unique = slugs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), slugs.len());
    }

    fn transcript(lines: &str) -> Transcript {
        parse_client_output(lines).unwrap()
    }

    #[test]
    fn plain_and_cancelled_turns() {
        let text = format!(
            "{{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{{\"type\":\"text\",\"text\":\"Warning\\n{}\"}}}}\n{{\"stopReason\":\"end_turn\"}}\n",
            FIXED_TEXT
        );
        let quick = Duration::from_secs(1);
        assert!(check_kind(&transcript(&text), Kind::Plain, quick).is_ok());
        let other = "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}\n{\"stopReason\":\"end_turn\"}";
        assert!(check_kind(&transcript(other), Kind::Authenticated, quick).unwrap_err().contains("stand-in's reply"));
        let cancelled = transcript("{\"stopReason\":\"cancelled\"}");
        assert!(check_kind(&cancelled, Kind::Cancelled, quick).is_ok());
        assert!(check_kind(&cancelled, Kind::Cancelled, CANCELLED_WITHIN).unwrap_err().contains("expected under"));
        assert!(check_kind(&cancelled, Kind::Plain, quick).unwrap_err().contains("expected end_turn"));
        assert!(check_kind(&transcript(&text), Kind::Cancelled, quick).unwrap_err().contains("expected cancelled"));
    }

    #[test]
    fn a_tool_turn_needs_a_tool_call_and_the_file() {
        let with_tool =
            transcript("{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"t\"}\n{\"stopReason\":\"end_turn\"}");
        assert!(check_tool_turn(&with_tool, "nonce-1\n", "nonce-1").is_ok());
        assert!(check_tool_turn(&with_tool, "", "nonce-1").unwrap_err().contains("did not run"));
        let without = transcript("{\"sessionUpdate\":\"plan\",\"entries\":[]}\n{\"stopReason\":\"end_turn\"}");
        assert!(check_tool_turn(&without, "nonce-1", "nonce-1").unwrap_err().contains("no tool_call"));
        assert!(tool_prompt("n-1").ends_with("tool:run echo n-1 > tool-output.txt"));
    }

    #[test]
    fn an_fs_turn_needs_the_clients_write() {
        let dir = std::env::temp_dir().join(format!("acp-interop-fs-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let tap = dir.join("tap.jsonl");
        let read = "{\"from\":\"agent\",\"message\":{\"id\":0,\"method\":\"fs/read_text_file\",\"params\":{}}}\n";
        let update = "{\"from\":\"agent\",\"message\":{\"method\":\"fs/write_text_file\",\"params\":{}}}\n";
        fs::write(&tap, format!("{read}{update}")).unwrap();
        let err = check_fs_turn(&tap, Some(WRITTEN_TEXT)).unwrap_err();
        assert!(err.contains("no fs/write_text_file") && err.contains("fs/read_text_file"), "{err}");
        let write = "{\"from\":\"agent\",\"message\":{\"id\":1,\"method\":\"fs/write_text_file\",\"params\":{}}}\n";
        fs::write(&tap, format!("{read}{write}")).unwrap();
        assert!(check_fs_turn(&tap, Some(WRITTEN_TEXT)).is_ok());
        assert!(check_fs_turn(&tap, Some("other")).unwrap_err().contains("expected"));
        assert!(check_fs_turn(&tap, None).unwrap_err().contains("not written"));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_authenticated_turn_needs_an_answered_authenticate() {
        let dir = std::env::temp_dir().join(format!("acp-interop-auth-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let tap = dir.join("tap.jsonl");
        let ask = "{\"from\":\"client\",\"message\":{\"id\":1,\"method\":\"authenticate\",\"params\":{\"methodId\":\"api-key\"}}}\n";
        let vendor =
            "{\"from\":\"agent\",\"message\":{\"id\":1,\"method\":\"session/request_permission\",\"params\":{}}}\n";
        let ok = "{\"from\":\"agent\",\"message\":{\"id\":1,\"result\":{}}}\n";
        let refused =
            "{\"from\":\"agent\",\"message\":{\"id\":1,\"error\":{\"code\":-32603,\"message\":\"no key\"}}}\n";
        fs::write(&tap, format!("{ask}{vendor}{ok}")).unwrap();
        assert!(check_authenticated(&tap, "api-key").is_ok());
        assert!(check_authenticated(&tap, "gemini-api-key").unwrap_err().contains("expected"));
        fs::write(&tap, format!("{ask}{refused}")).unwrap();
        assert!(check_authenticated(&tap, "api-key").unwrap_err().contains("no key"));
        fs::write(&tap, ask).unwrap();
        assert!(check_authenticated(&tap, "api-key").unwrap_err().contains("never answered"));
        fs::write(&tap, ok).unwrap();
        assert!(check_authenticated(&tap, "api-key").unwrap_err().contains("no authenticate"));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stalled_request_in_the_log() {
        let stalled = "{\"n\":1,\"path\":\"/v1/responses\",\"decision\":\"slow\",\"stalling\":true}\n";
        let answered = "{\"n\":2,\"path\":\"/v1/responses\",\"decision\":\"text\"}\n";
        assert!(was_stalled(&format!("{answered}{stalled}")));
        assert!(!was_stalled(answered));
        assert!(!was_stalled("not json \"stalling\":true"));
    }

    #[test]
    fn reads_the_negotiated_version() {
        let dir = std::env::temp_dir().join(format!("acp-interop-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let tap = dir.join("tap.jsonl");
        fs::write(
            &tap,
            concat!(
                "{\"from\":\"client\",\"message\":{\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":2}}}\n",
                "{\"from\":\"agent\",\"message\":{\"id\":0,\"result\":{\"protocolVersion\":1,\"authMethods\":[]}}}\n",
            ),
        )
        .unwrap();
        assert_eq!(negotiated_version(&tap).unwrap(), 1);
        fs::write(&tap, "{\"from\":\"client\",\"message\":{\"params\":{\"protocolVersion\":2}}}\n").unwrap();
        assert!(negotiated_version(&tap).unwrap_err().contains("no initialize answer"));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn lists_what_acp_check_did_not_find_ok() {
        let out = concat!(
            "tap.jsonl\n",
            "    1  client → agent  request initialize (id 0)  ok\n",
            "    4  agent → client  response session/new (id 1)  lossy\n",
            "         result.models: received {}, re-encoded (absent)\n",
            "    5  agent → client  notification _auth/status_update  extension\n",
            "    6  agent → client  notification session/update  error\n",
            "    7  agent → client  response session/new (id 0)  ok\n",
            "         warning: id: 0 is still in use by `initialize` (line 1)\n",
            "         rule rpc.v1-unique-ids (SHOULD, agent): 0 is still in use\n",
            "tap.jsonl: 7 messages: 4 ok, 1 extension, 1 error, 1 lossy, 0 unmatched; 1 warning; 1 rule violation (protocol version 1)\n",
        );
        let report = read_check_output(out, "");
        assert_eq!(
            report.findings,
            [
                "4 agent → client response session/new (id 1) lossy: result.models: received {}, re-encoded (absent)",
                "6 agent → client notification session/update error",
                "7 agent → client response session/new (id 0) ok: rule rpc.v1-unique-ids (SHOULD, agent): 0 is still in use",
            ]
        );
        assert!(report.summary.starts_with("acp check: 7 messages: 4 ok"), "{}", report.summary);
        assert!(read_check_output("", "boom").summary.contains("printed nothing: boom"));
    }
}
