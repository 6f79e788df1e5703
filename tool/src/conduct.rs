//! `acp conduct agent [--trace FILE] [--listen ADDR] COMPONENT…`: a chain of proxies in front of
//! an agent, presented as one agent ([`acp_rpc::conductor`]), on stdio or, with `--listen`, to
//! every client of a Streamable HTTP / WebSocket listener (a chain per client connection). The
//! listener refuses web pages but those of `--allow-origin`, `Host` names but the bound
//! address's and `--allow-host`'s, and, beyond loopback, starts only with `--token-file` (every
//! request then needs that bearer token) or `--insecure-no-auth`.
//!
//! The form is the official conductor's (`agent-client-protocol-conductor agent "proxy1" "agent"`,
//! agent-client-protocol-conductor 5.0.0 src/lib.rs:170-200): the role the conductor plays
//! (`agent`) first, then each component as one command-line string, so that a chain written for
//! one runs under the other by changing the program's name.
//!
//! Each COMPONENT is split into a program and its arguments as a POSIX shell splits words
//! (quotes and backslashes; no expansion, no pipes; leading `NAME=value` words set the
//! component's environment, as in a shell and in the official conductor), with the `shlex` crate: small, with no
//! dependencies, maintained by the comex/rust-shlex authors since 2015, and already in this
//! workspace's lockfile (through the build tools), so it adds no new crate. The official
//! conductor's `AcpAgent::from_str` splits the same way (it uses `shell-words`).
//!
//! `SIGTERM`, `SIGINT` and `SIGHUP` end the chain as the end of input does (stdins closed, the
//! grace, then signals), so a client that signals the conductor still leaves no component
//! behind, if it gives the conductor the time.

use acp_rpc::conductor::{Component, Conductor};
use std::path::PathBuf;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

/// The arguments of `acp conduct agent`.
pub struct Options {
    /// `--trace FILE`.
    pub trace: Option<PathBuf>,
    /// `--listen ADDR`.
    pub listen: Option<String>,
    /// Who may use the listener.
    pub access: Access,
    /// The components, one command-line string each, the agent last.
    pub components: Vec<String>,
}

/// Who may use `--listen`'s listener: `--allow-origin`, `--allow-host`, `--token-file`,
/// `--insecure-no-auth`.
#[derive(Debug, Default)]
pub struct Access {
    /// Origins of the web pages served (none by default).
    pub origins: Vec<String>,
    /// `Host` names served besides the bound address's.
    pub hosts: Vec<String>,
    /// The bearer token every request must carry, in this file.
    pub token_file: Option<PathBuf>,
    /// Beyond loopback without a token.
    pub insecure_no_auth: bool,
}

/// Runs the chain until the editor (on stdio) leaves, or the listener is stopped by a signal.
/// Exit status: 0 after a clean end; 1 when the chain failed (a component could not start or
/// ended early); 2 for arguments that cannot be used.
pub fn run(options: Options) -> ExitCode {
    let components = match components(&options.components) {
        Ok(components) => components,
        Err(e) => {
            eprintln!("acp conduct: {e}");
            return ExitCode::from(2);
        }
    };
    let mut conductor = Conductor::new(components);
    if let Some(trace) = options.trace {
        conductor = conductor.trace(trace);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("acp conduct: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let served = runtime.block_on(async move {
        let stop = CancellationToken::new();
        tokio::spawn(stop_on_signal(stop.clone()));
        match options.listen {
            Some(addr) => listen(conductor, &addr, options.access, stop).await,
            None => conductor.serve_stdio_until(stop).await,
        }
    });
    // Not a plain drop: after a signal the read of stdin (a blocking thread) may never return,
    // and dropping the runtime would wait for it. Everything that mattered has ended by now.
    runtime.shutdown_background();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        // A listener it may not open: beyond loopback without a credential, a port it may not bind.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!("acp conduct: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("acp conduct: {e}");
            ExitCode::from(1)
        }
    }
}

/// Splits each COMPONENT as a shell splits words.
fn components(lines: &[String]) -> Result<Vec<Component>, String> {
    lines
        .iter()
        .map(|line| {
            let words =
                shlex::split(line).ok_or_else(|| format!("cannot split {line:?} into words (an open quote?)"))?;
            // Leading `NAME=value` words set the environment, as in a shell and in the official
            // conductor (`AcpAgent::from_args`, agent-client-protocol 5.0.0 src/acp_agent.rs:1025-1035).
            let assignments = words.iter().take_while(|w| assignment(w).is_some()).count();
            let (program, args) =
                words[assignments..].split_first().ok_or_else(|| format!("component {line:?} names no program"))?;
            let component = Component::new(program, args);
            Ok(words[..assignments].iter().filter_map(|w| assignment(w)).fold(component, |c, (k, v)| c.env(k, v)))
        })
        .collect()
}

/// `NAME=value` with a shell variable's name: an assignment.
fn assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = (first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some((name, value))
}

/// Serves a chain per client connection on `addr` until `stop` fires, to whom `access` lets
/// in. Beyond loopback without a token or `--insecure-no-auth`: an error naming the flag,
/// before anything is served.
async fn listen(conductor: Conductor, addr: &str, access: Access, stop: CancellationToken) -> std::io::Result<()> {
    let mut server = conductor.server().allow_origins(access.origins).allow_hosts(access.hosts);
    if let Some(file) = &access.token_file {
        server = server.auth(acp_rpc::net::server::Auth::bearer_file(file)?);
    }
    if access.insecure_no_auth {
        server = server.insecure_no_auth();
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() && access.token_file.is_none() && !access.insecure_no_auth {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("refusing to listen on {bound} without a credential: give --token-file FILE (or --insecure-no-auth to let anyone who reaches the port drive the agent)"),
        ));
    }
    // As the echo agent example says it: the tests and scripts read the URL from here.
    eprintln!("listening on http://{bound}");
    let handle = server.handle();
    tokio::spawn(async move {
        stop.cancelled().await;
        handle.shutdown().await;
    });
    server.serve(listener).await
}

/// Fires `stop` on `SIGTERM`, `SIGINT` or `SIGHUP`.
async fn stop_on_signal(stop: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int), Ok(mut hup)) =
            (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::hangup()))
        else {
            // No handlers: the signals keep their default action.
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    stop.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_split_as_a_shell_splits_words() {
        let lines = vec![r#"python3 "my proxy.py" --prefix '> '"#.to_string(), "agent".to_string()];
        let chain = components(&lines).expect("valid");
        assert_eq!(chain[0], Component::new("python3", ["my proxy.py", "--prefix", "> "]));
        assert_eq!(chain[1], Component::new("agent", Vec::<String>::new()));
        assert!(components(&["'open".to_string()]).is_err());
        assert!(components(&["   ".to_string()]).is_err());
        assert!(components(&["A=1 B=2".to_string()]).is_err(), "assignments only: no program");
    }

    #[test]
    fn leading_assignments_set_the_environment() {
        let chain = components(&["A=1 _B='x y' agent C=3 --flag".to_string()]).expect("valid");
        assert_eq!(chain[0], Component::new("agent", ["C=3", "--flag"]).env("A", "1").env("_B", "x y"));
        let chain = components(&["1A=x agent".to_string()]).expect("valid");
        assert_eq!(chain[0], Component::new("1A=x", ["agent"]), "not a variable's name: the program");
    }
}
