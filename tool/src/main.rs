//! `acp`: check recorded ACP traffic, or watch it live, against the protocol's generated types.

use acp_rpc::rules::Tier;
use acp_tool::check::{Summary, Transcript};
use acp_types::Version;
use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

mod conduct;
mod mock_client;

#[derive(Parser)]
#[command(name = "acp", version, about = "Validate Agent Client Protocol traffic against the protocol schemas")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check transcripts: one JSON-RPC message, or one {"from": "client"|"agent", "message": …} record, per line.
    ///
    /// Every message is decoded with the method tables of the version negotiated by `initialize`
    /// and re-encoded; each gets `ok`, `extension`, `error` (with the JSON path and the reason),
    /// `lossy` (re-encoding changes the JSON) or `unmatched` (a response to no request), and the
    /// protocol rules it breaks (`acp conform` lists them). Exit
    /// status: 1 when any message is `error` (or a MUST rule is broken at the end), 2 when a file
    /// cannot be read, 0 otherwise.
    ///
    /// Chains: a record with `"link": K` (`acp conduct --trace`) belongs to link K, each link a
    /// conversation of its own; the official conductor's `--trace` events are read the same way.
    /// The message a `proxy/successor` envelope wraps is checked as its own conversation's, and
    /// reported at its path inside the envelope (`params.params.…`).
    Check {
        /// Transcript files (`-` reads standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Decode with this protocol version instead of the negotiated one (the transcript may then
        /// start after `initialize`).
        #[arg(long, value_name = "N", value_parser = parse_version)]
        protocol_version: Option<Version>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// An extension schema (an ACP-layout JSON Schema of `_`-prefixed vendor methods, such as
        /// `schema/ext/agentao.json`; repeatable): messages of the methods it describes are
        /// validated against it, `ok` or `error` with the JSON path, instead of `extension`.
        #[arg(long, value_name = "EXT.json")]
        ext: Vec<PathBuf>,
    },
    /// Draw transcripts as an interactive sequence diagram: one self-contained HTML file (no
    /// network), a lane per party, a row per message with `acp check`'s verdict and findings,
    /// request ↔ response links, turns, tool calls; filters, search, each message's JSON.
    ///
    /// Reads what `acp check` reads (chain transcripts and the official conductor's `--trace`
    /// included). Several files: one page, a file at a time. Exit status 2 when a file cannot be
    /// read or the page written, 0 otherwise (findings do not change it: `acp check` judges).
    View {
        /// Transcript files (`-` reads standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The page (`-`: standard output); by default the first FILE with extension `.html`.
        #[arg(short, long, value_name = "OUT.html")]
        output: Option<PathBuf>,
        /// Decode with this protocol version instead of the negotiated one.
        #[arg(long, value_name = "N", value_parser = parse_version)]
        protocol_version: Option<Version>,
        /// An extension schema (as for `acp check --ext`; repeatable): vendor messages it
        /// describes are checked against it.
        #[arg(long, value_name = "EXT.json")]
        ext: Vec<PathBuf>,
    },
    /// Replay transcripts into the state a client keeps, by the rules of the schema's `x-state`
    /// annotations, and print it as JSON: `{"sessions": {ID: {TARGET: …}}}`.
    ///
    /// Targets are the schema's names (`agentMessage`, `toolCall`, `plan`, `state`, `usage`, …):
    /// collections as objects keyed by id in the order first seen, appended fields as arrays of
    /// what was appended (a message's `content`: its content blocks), other targets as their
    /// value; an agent-scoped target (`authStatus`) under `"agent"`. Messages no annotation
    /// describes (an unknown update) are listed under the session's `unapplied`. Only v2 has
    /// `x-state`: exit status 1 for a transcript of another version, 2 when a file cannot be read.
    State {
        /// Transcript files (`-` reads standard input), replayed in order as one.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The state after line N (lines counted across the files, from 1).
        #[arg(long, value_name = "N")]
        at: Option<usize>,
        /// The protocol version, for a transcript that starts after `initialize`.
        #[arg(long, value_name = "N", value_parser = parse_version)]
        protocol_version: Option<Version>,
    },
    /// Run an agent behind this process, forwarding every byte unchanged in both directions and
    /// checking both directions live.
    ///
    /// The client talks to `acp tap` on its stdin/stdout; problems go to stderr. Closing either side
    /// closes the other; the agent's exit status becomes this command's. Placed between a
    /// conductor and a proxy (`agent-client-protocol-conductor agent "acp tap -- PROXY" AGENT`),
    /// it checks `proxy/initialize` and the messages `proxy/successor` envelopes wrap.
    Tap {
        /// Write the transcript here, one {"from", "message"} record per line.
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
        /// When the session ends, write it here as an `acp view` page.
        #[arg(long, value_name = "OUT.html")]
        html: Option<PathBuf>,
        /// Decode with this protocol version instead of the negotiated one.
        #[arg(long, value_name = "N", value_parser = parse_version)]
        protocol_version: Option<Version>,
        /// An extension schema (as for `acp check --ext`; repeatable): vendor messages it
        /// describes are checked against it.
        #[arg(long, value_name = "EXT.json")]
        ext: Vec<PathBuf>,
        /// The agent command and its arguments.
        #[arg(last = true, required = true, value_name = "AGENT_CMD")]
        agent: Vec<String>,
    },
    /// Drive an agent as a client through scenarios that exercise every protocol rule binding
    /// an agent, and print PASS / FAIL / SKIP per rule with the evidence.
    ///
    /// A fresh agent process per scenario: version negotiation (1, 2, 65535, 0), unknown and `_`
    /// methods, notifications, a line that is not JSON, two sessions, a prompt turn, a tool turn
    /// (with --tool-prompt: permissions allowed, `fs/*` served in a scratch directory, `terminal/*`
    /// commands run there), what the agent advertises (`session/load` with its replay, list,
    /// resume, close, fork, set_mode, set_config_option, image/audio/embedded prompts), a
    /// cancelled turn (with --cancel-prompt), and a v1 client that advertises nothing (the agent
    /// must not call `fs/*` or `terminal/*`).
    ///
    /// Exit status: 0 every MUST rule exercised passes; 1 a MUST rule fails; 2 the agent cannot be
    /// started (or the arguments are wrong); 3 the agent could not be brought to a session
    /// (`session/new` or authentication refused: the report gives the error and the agent's
    /// `authMethods`; 3 wins over 1).
    ///
    /// With --client, judges a client instead: `acp conform --client -- CLIENT_CMD… {agent}`.
    /// The tool stands in for the agent: the client is started once per scenario (and protocol
    /// version) with the stand-in's command where `{agent}` stands (a lone `{agent}` argument
    /// becomes its words; inside an argument, as for `--agent "CMD"`, the command as one
    /// shell-quoted string) and the --prompt text where `{prompt}` stands: the client is expected
    /// to send that one prompt, e.g. `acp conform --client -- my-client --prompt {prompt} -- {agent}`.
    /// The stand-in answers the prompt with a `_` notification, a `_` request, the turn's
    /// updates and a permission request, and judges every rule that binds a client. Exit
    /// status: 0, 1 as above; 2 the client cannot be started or never starts {agent}; 3 it
    /// never sent its prompt.
    Conform {
        /// Judge a client (the command after --, with {agent} and {prompt} in it).
        #[arg(long, conflicts_with_all = ["cancel_prompt", "tool_prompt", "auth"])]
        client: bool,
        /// Drive only this protocol version (default: every version the agent supports).
        #[arg(long, value_name = "N", value_parser = parse_version)]
        protocol_version: Option<Version>,
        /// The text of the prompt turn.
        #[arg(long, value_name = "TEXT", default_value = "hello")]
        prompt: String,
        /// A prompt that keeps the agent busy: sent, then cancelled after 300 ms (without it the
        /// cancellation rules SKIP).
        #[arg(long, value_name = "TEXT")]
        cancel_prompt: Option<String>,
        /// A prompt that makes the agent ask for permission and use `fs/*` and `terminal/*`
        /// (`{cwd}` in it stands for the session's directory); without it the client-request rules
        /// SKIP unless the plain prompt uses tools.
        #[arg(long, value_name = "TEXT")]
        tool_prompt: Option<String>,
        /// `authenticate` (v2: `auth/login`) with this method id from the agent's `authMethods`
        /// right after `initialize`, in every scenario that creates a session.
        #[arg(long, value_name = "METHOD_ID")]
        auth: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Seconds every wait lasts at most.
        #[arg(long, value_name = "SECS", default_value_t = 5.0)]
        timeout: f64,
        /// An extension schema (as for `acp check --ext`; repeatable): the agent's vendor
        /// messages are checked against it (not with --client).
        #[arg(long, value_name = "EXT.json", conflicts_with = "client")]
        ext: Vec<PathBuf>,
        /// The agent command and its arguments (with --client: the client's).
        #[arg(last = true, required = true, value_name = "AGENT_CMD")]
        agent: Vec<String>,
    },
    /// Serve a scripted mock agent on stdio, for the tests of clients (in any language).
    ///
    /// Without --script it echoes each prompt back as one agent message and ends the turn
    /// `end_turn`. The script (JSON) scripts each prompt's turn: updates, tool calls, permission
    /// requests, `fs/*` and `terminal/*` calls, delays, errors, the stop reason, what a cancel
    /// does (format: the docs of `acp_rpc::mock::MockAgent`). Exit status: 2 for a script that
    /// cannot be used (the message names the JSON pointer of the problem), 1 when the connection
    /// failed, 0 once the client closed stdin.
    #[command(name = "mock-agent")]
    MockAgent {
        /// The script (JSON).
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        /// Speak only this protocol version (by default 1 and 2, as the client's `initialize` asks).
        #[arg(long, value_name = "N", value_parser = parse_version)]
        protocol_version: Option<Version>,
    },
    /// The agent `acp conform --client` starts in a client's place of `{agent}`: relays its
    /// stdin and stdout to the conform process over a Unix socket.
    #[command(name = "conform-stand-in", hide = true)]
    ConformStandIn {
        #[arg(long)]
        socket: PathBuf,
    },
    /// Drive an agent as a scripted client (the test kit's mock client): the script (JSON) says
    /// the version to ask for, what to advertise, the sessions and prompts (and cancels), the
    /// permission answers, the in-memory files and the terminals' outputs.
    ///
    /// Prints each turn's `session/update`s, one JSON line each, then `{"stopReason": …}`. Exit
    /// status: 0 every turn ended; 1 the run failed (an error, a protocol failure, the agent
    /// ended); 2 the script is unusable (the error names its JSON pointer) or the agent cannot
    /// be started.
    MockClient {
        /// The script (JSON; the format: the documentation of `acp_rpc::mock::ClientScript`).
        #[arg(long, value_name = "FILE")]
        script: PathBuf,
        /// The agent command and its arguments.
        #[arg(last = true, required = true, value_name = "AGENT_CMD")]
        agent: Vec<String>,
    },
    /// Run a chain of proxies in front of an agent and present it as one agent (the official
    /// conductor's form: `agent COMPONENT…`).
    Conduct {
        #[command(subcommand)]
        role: ConductRole,
    },
}

#[derive(Subcommand)]
enum ConductRole {
    /// Present the chain as an agent: on stdin/stdout, or with --listen to every client of a
    /// Streamable HTTP / WebSocket listener (a chain per client connection).
    ///
    /// Each COMPONENT is one command line (split into words as a shell does; leading NAME=value
    /// words set its environment), the agent last;
    /// every other component is a proxy (`proxy/initialize`, `proxy/successor`). When the editor
    /// closes its side (or on SIGTERM, SIGINT, SIGHUP), every component's stdin is closed, each
    /// is given 1 s to exit, then its process group is sent SIGTERM and, 500 ms later, SIGKILL.
    /// Exit status: 0 after a clean end, 1 when a component could not start or ended early, 2
    /// for unusable arguments.
    Agent {
        /// Record every message of every link, one {"from", "link", "message"} record per line
        /// (`acp check` reads it); with --listen, FILE.N for the Nth client connection.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        /// Serve HTTP and WebSocket on ADDR (e.g. 127.0.0.1:0; prints `listening on URL` to
        /// stderr once bound) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// With --listen: also serve web pages of ORIGIN (`https://app.example`, scheme, host
        /// and port; repeatable). Requests with any other Origin header are refused 403.
        #[arg(long, value_name = "ORIGIN", requires = "listen")]
        allow_origin: Vec<String>,
        /// With --listen: also serve requests whose Host is NAME (or NAME:PORT; repeatable),
        /// besides the bound address's names (`localhost`, `127.0.0.1`, `[::1]` on loopback).
        #[arg(long, value_name = "NAME", requires = "listen")]
        allow_host: Vec<String>,
        /// With --listen: every request needs `Authorization: Bearer TOKEN`, TOKEN the content of
        /// FILE (white space around it ignored). Required beyond loopback.
        #[arg(long, value_name = "FILE", requires = "listen")]
        token_file: Option<PathBuf>,
        /// With --listen beyond loopback: serve without --token-file, to anyone who reaches the
        /// port.
        #[arg(long, requires = "listen")]
        insecure_no_auth: bool,
        /// The components, first to last, each one command line: "proxy --flag" "agent".
        #[arg(required = true, value_name = "COMPONENT")]
        components: Vec<String>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// One line per message (conform: per rule), indented lines for problems, a summary line.
    Text,
    /// One JSON object per message, then one `{"file", "summary"}` object per file (conform: one
    /// object with the rules, the negotiations and the transcripts).
    Json,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Check { files, protocol_version, format, ext } => check(&files, protocol_version, format, &ext),
        Command::Tap { log, html, protocol_version, ext, agent } => match load_ext("tap", &ext) {
            Ok(ext) => acp_tool::tap::run(log, html, protocol_version, ext, agent),
            Err(code) => code,
        },
        Command::View { files, output, protocol_version, ext } => match load_ext("view", &ext) {
            Ok(ext) => acp_tool::view::run(&files, output, protocol_version, ext),
            Err(code) => code,
        },
        Command::State { files, at, protocol_version } => acp_tool::state::run(&files, at, protocol_version),
        Command::MockClient { script, agent } => mock_client::run(&script, &agent),
        Command::Conduct {
            role:
                ConductRole::Agent { trace, listen, allow_origin, allow_host, token_file, insecure_no_auth, components },
        } => {
            let access = conduct::Access { origins: allow_origin, hosts: allow_host, token_file, insecure_no_auth };
            conduct::run(conduct::Options { trace, listen, access, components })
        }
        Command::MockAgent { script, protocol_version } => acp_tool::mock_agent::run(acp_tool::mock_agent::Options {
            script: script.as_deref(),
            version: protocol_version,
        }),
        Command::ConformStandIn { socket } => acp_tool::conform::client::stand_in(&socket),
        Command::Conform {
            client,
            protocol_version,
            prompt,
            cancel_prompt,
            tool_prompt,
            auth,
            format,
            timeout,
            ext,
            agent,
        } => {
            let timeout = match std::time::Duration::try_from_secs_f64(timeout) {
                Ok(t) if !t.is_zero() => t,
                _ => {
                    eprintln!("acp conform: --timeout must be a positive number of seconds");
                    return ExitCode::from(2);
                }
            };
            if client {
                return acp_tool::conform::client::run(acp_tool::conform::client::Options {
                    versions: protocol_version.map_or_else(|| Version::ALL.to_vec(), |v| vec![v]),
                    prompt,
                    timeout,
                    json: format == Format::Json,
                    client: agent,
                });
            }
            let ext = match load_ext("conform", &ext) {
                Ok(ext) => ext,
                Err(code) => return code,
            };
            acp_tool::conform::run(acp_tool::conform::Options {
                versions: protocol_version.map_or_else(|| Version::ALL.to_vec(), |v| vec![v]),
                prompt,
                cancel_prompt,
                tool_prompt,
                auth,
                timeout,
                json: format == Format::Json,
                agent,
                ext,
            })
        }
    }
}

/// A `--protocol-version` number: one of the versions compiled in, or a usage error.
fn parse_version(text: &str) -> Result<Version, String> {
    let known: Vec<u16> = Version::ALL.iter().map(|v| v.number()).collect();
    text.parse::<u16>()
        .ok()
        .and_then(Version::from_number)
        .ok_or(format!("not a protocol version this tool knows ({known:?})"))
}

/// `--ext EXT.json…` of `acp COMMAND`, loaded (`None` for none); exit status 2 when one cannot be.
fn load_ext(command: &str, ext: &[PathBuf]) -> Result<Option<std::sync::Arc<acp_tool::check::ExtSchemas>>, ExitCode> {
    if ext.is_empty() {
        return Ok(None);
    }
    match acp_tool::check::ExtSchemas::load(ext) {
        Ok(schemas) => Ok(Some(std::sync::Arc::new(schemas))),
        Err(e) => {
            eprintln!("acp {command}: --ext {e}");
            Err(ExitCode::from(2))
        }
    }
}

fn check(files: &[PathBuf], version: Option<Version>, format: Format, ext: &[PathBuf]) -> ExitCode {
    let ext = match load_ext("check", ext) {
        Ok(ext) => ext,
        Err(code) => return code,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut any_error = false;
    for file in files {
        let name = file.display().to_string();
        let bytes = match acp_tool::input::read(file) {
            Ok(bytes) => bytes,
            Err(e) => {
                let _ = out.flush();
                eprintln!("acp check: cannot read {name}: {e}");
                return ExitCode::from(2);
            }
        };
        any_error |= check_file(&mut out, &name, &bytes, version, format, ext.as_ref());
    }
    if out.flush().is_err() {
        return ExitCode::from(2);
    }
    if any_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Checks one transcript (`bytes`, read from `name`), writing a line per message and a summary
/// line (or their JSON); whether it has an error (an invalid message, a MUST broken).
fn check_file(
    out: &mut impl Write,
    name: &str,
    bytes: &[u8],
    version: Option<Version>,
    format: Format,
    ext: Option<&std::sync::Arc<acp_tool::check::ExtSchemas>>,
) -> bool {
    // One conversation, or one per link of a chain transcript.
    let mut checker = Transcript::new(version);
    if let Some(ext) = ext {
        checker = checker.with_ext(ext.clone());
    }
    let mut summary = Summary::default();
    if format == Format::Text {
        let _ = writeln!(out, "{name}");
    }
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let report = checker.check_line(i + 1, line);
        summary.add(&report);
        let _ = match format {
            Format::Text => writeln!(out, "{report}"),
            Format::Json => {
                let mut value = serde_json::to_value(&report).unwrap_or_default();
                if let Some(object) = value.as_object_mut() {
                    object.insert("file".into(), name.into());
                }
                writeln!(out, "{value}")
            }
        };
    }
    // What never happened: a turn that never ended, a line never answered.
    let end = checker.finish();
    summary.violations += end.len();
    if format == Format::Text {
        for violation in &end {
            let _ = writeln!(out, "  end  {violation}");
        }
    }
    let any_error = summary.error > 0 || end.iter().any(|v| v.tier == Tier::Must);
    // A chain: each link negotiates its own version.
    let links = checker.link_versions();
    let version = checker.versions_text();
    let _ = match format {
        Format::Text => writeln!(out, "{name}: {summary} ({version})"),
        Format::Json => writeln!(
            out,
            "{}",
            serde_json::json!({
                "file": name,
                "protocolVersion": checker.version().map(Version::number),
                "links": links
                    .iter()
                    .map(|(link, v)| serde_json::json!({"link": link, "protocolVersion": v.map(Version::number)}))
                    .collect::<Vec<_>>(),
                "summary": summary,
                "violations": end,
            })
        ),
    };
    any_error
}
