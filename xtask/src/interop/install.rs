//! Installing the official peers into `.cache/interop/`: the TypeScript SDK (npm), the Python SDK
//! (a venv from PyPI, and its sdist for the example agent) and the Rust SDK (its crate fetched by
//! `interop/rust/`, its examples built); `install_venv` also makes the production agents' venvs. Each step leaves a marker naming the version it
//! installed, so that a second run reuses the cache.

use crate::{files, process};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The npm package of the official TypeScript SDK, installed at exactly [`TS_SDK_VERSION`].
pub const TS_SDK_PACKAGE: &str = "@agentclientprotocol/sdk";
/// Version of [`TS_SDK_PACKAGE`].
pub const TS_SDK_VERSION: &str = "2.4.0";
/// The SDK's peer dependency `zod` (`^3.25.76 || ^4.0.0`), pinned so that runs are repeatable.
pub const ZOD_VERSION: &str = "4.6.7";
/// The `ws` package, for the network drivers (`interop/ts/net-*.mjs`): Node 20 has no WebSocket
/// of its own, and the SDK's Node adapter takes a `ws` `WebSocketServer`. The SDK develops and
/// tests against `ws` `^8.18.0`.
pub const WS_VERSION: &str = "8.18.3";
/// The PyPI distribution of the official Python SDK, installed at exactly [`PY_SDK_VERSION`].
pub const PY_SDK_PACKAGE: &str = "agent-client-protocol";
/// Version of [`PY_SDK_PACKAGE`].
pub const PY_SDK_VERSION: &str = "0.12.1";
/// The crates.io crate of the official Rust SDK. Its published source ships the examples run
/// here, and a `Cargo.lock` that pins their build (`--locked`).
pub const RS_SDK_CRATE: &str = "agent-client-protocol";
/// Version of [`RS_SDK_CRATE`]; `interop/rust/Cargo.toml` pins the same one, and
/// `interop/rust/Cargo.lock` the crates fetched with it.
pub const RS_SDK_VERSION: &str = "5.0.0";
/// The features the four examples need (`v2_session_coordination` is not run).
pub const RS_SDK_FEATURES: &str = "process,stdio,unstable_protocol_v2";
/// The examples built: the agent and the one-shot client of each protocol version.
pub const RS_SDK_EXAMPLES: [&str; 4] =
    ["simple_agent", "simple_agent_v2", "yolo_one_shot_client", "v2_one_shot_client"];

/// The MCP SDK package the TypeScript SDK's `fromMcpServer` serves (its optional peer
/// dependency, `^2.4.0`), installed at exactly [`MCP_SERVER_VERSION`].
pub const MCP_SERVER_PACKAGE: &str = "@modelcontextprotocol/server";
/// Version of [`MCP_SERVER_PACKAGE`] and [`MCP_CLIENT_PACKAGE`].
pub const MCP_SERVER_VERSION: &str = "2.4.0";
/// The MCP SDK's client, with which `interop/ts/mcp-http-agent.mjs` calls HTTP MCP servers.
pub const MCP_CLIENT_PACKAGE: &str = "@modelcontextprotocol/client";
/// The installed TypeScript SDK.
#[derive(Debug, Clone)]
pub(crate) struct TsPeer {
    /// `.cache/interop/node`, passed to the drivers as `ACP_INTEROP_NODE_DIR`.
    pub(crate) node_dir: PathBuf,
}

/// The installed Python SDK.
#[derive(Debug, Clone)]
pub(super) struct PyPeer {
    /// The venv's interpreter.
    pub(super) python: PathBuf,
    /// `examples/echo_agent.py` of the unpacked sdist.
    pub(super) echo_agent: PathBuf,
}

/// Installs the TypeScript SDK and `ws` into `cache/node` (or reuses them); `cargo xtask bench`
/// runs the network drivers from there too.
pub(crate) fn install_ts(cache: &Path) -> Result<TsPeer, String> {
    let node_dir = cache.join("node");
    let pinned = [
        (TS_SDK_PACKAGE, TS_SDK_VERSION),
        ("zod", ZOD_VERSION),
        ("ws", WS_VERSION),
        (MCP_SERVER_PACKAGE, MCP_SERVER_VERSION),
        (MCP_CLIENT_PACKAGE, MCP_SERVER_VERSION),
    ];
    install_npm_project(&node_dir, "acp-rpc-interop-peers", &pinned, &[])?;
    Ok(TsPeer { node_dir })
}

/// An npm project in `dir` named `name` with exactly the `pinned` packages, installed with
/// `npm install` and `extra` arguments, or reused: a marker (`.installed`) names what was
/// installed, and each package's installed version is read back.
pub(crate) fn install_npm_project(
    dir: &Path,
    name: &str,
    pinned: &[(&str, &str)],
    extra: &[&str],
) -> Result<(), String> {
    let modules = dir.join("node_modules");
    let marker = dir.join(".installed");
    let listed: Vec<String> = pinned.iter().map(|(package, version)| format!("{package}@{version}")).collect();
    let stamp =
        format!("{}\n", listed.iter().map(String::as_str).chain(extra.iter().copied()).collect::<Vec<_>>().join(" "));
    let installed = |package: &str| installed_npm_version(&modules.join(package).join("package.json"));
    let versions_ok = || pinned.iter().all(|(package, version)| installed(package).as_deref() == Some(*version));
    if fs::read_to_string(&marker).ok().as_deref() == Some(stamp.as_str()) && versions_ok() {
        return Ok(());
    }

    let started = Instant::now();
    eprintln!("interop: installing {} into {}", listed.join(", "), dir.display());
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let _ = fs::remove_file(&marker);
    let dependencies: serde_json::Map<String, Value> =
        pinned.iter().map(|(package, version)| (package.to_string(), Value::from(*version))).collect();
    let manifest = serde_json::json!({
        "name": name,
        "private": true,
        "description": "Written by `cargo xtask interop`; do not edit.",
        "dependencies": dependencies,
    });
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())? + "\n";
    let path = dir.join("package.json");
    fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut npm = process::npm();
    npm.args(["install", "--no-audit", "--no-fund", "--loglevel=error"]).args(extra).current_dir(dir);
    process::capture(&mut npm)?;
    for (package, version) in pinned {
        let found = installed(package);
        if found.as_deref() != Some(*version) {
            return Err(format!(
                "npm install left {package} at {found:?} in {}, expected {version}",
                modules.display()
            ));
        }
    }
    fs::write(&marker, stamp).map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    eprintln!("interop: installed {} in {:.1} s", listed.join(", "), started.elapsed().as_secs_f64());
    Ok(())
}

fn installed_npm_version(package_json: &Path) -> Option<String> {
    let text = fs::read_to_string(package_json).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    value.get("version")?.as_str().map(str::to_string)
}

pub(super) fn install_py(cache: &Path) -> Result<PyPeer, String> {
    let requirement = format!("{PY_SDK_PACKAGE}=={PY_SDK_VERSION}");
    let python = install_venv(&cache.join("venv"), &requirement)?;

    // The wheel has no examples; the source distribution ships examples/echo_agent.py.
    let sdist = cache.join("sdist");
    let stem = format!("{}-{PY_SDK_VERSION}", PY_SDK_PACKAGE.replace('-', "_"));
    let unpacked = sdist.join(&stem);
    let echo_agent = unpacked.join("examples").join("echo_agent.py");
    if !echo_agent.is_file() {
        let started = Instant::now();
        eprintln!("interop: fetching the {requirement} source distribution into {}", sdist.display());
        let mut download = Command::new(&python);
        download
            .args([
                "-m",
                "pip",
                "download",
                "--disable-pip-version-check",
                "--quiet",
                "--no-binary",
                ":all:",
                "--no-deps",
                &requirement,
                "-d",
            ])
            .arg(&sdist);
        process::capture(&mut download)?;
        let archive = sdist.join(format!("{stem}.tar.gz"));
        if !archive.is_file() {
            return Err(format!("pip download did not leave {} (found: {})", archive.display(), list_dir(&sdist)));
        }
        let mut unpack = Command::new(&python);
        unpack.arg("-c").arg(UNPACK_PY).arg(&archive).arg(&sdist);
        process::capture(&mut unpack)?;
        if !echo_agent.is_file() {
            return Err(format!(
                "the {requirement} sdist has no {} (unpacked: {})",
                echo_agent.display(),
                list_dir(&unpacked)
            ));
        }
        eprintln!("interop: unpacked the sdist in {:.1} s", started.elapsed().as_secs_f64());
    }
    Ok(PyPeer { python, echo_agent })
}

/// A venv at `venv` with exactly `requirement` installed by pip (a pinned `name[extras]==version`),
/// or reused: a marker (`.installed`) names the requirement. Returns the venv's interpreter.
pub(super) fn install_venv(venv: &Path, requirement: &str) -> Result<PathBuf, String> {
    let python = venv_python(venv);
    let marker = venv.join(".installed");
    let stamp = format!("{requirement}\n");
    if python.is_file() && fs::read_to_string(&marker).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(python);
    }
    let started = Instant::now();
    eprintln!("interop: installing {requirement} into {}", venv.display());
    let _ = fs::remove_file(&marker);
    if !python.is_file() {
        if let Some(parent) = venv.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let mut create = process::python3();
        create.arg("-m").arg("venv").arg(venv);
        process::capture(&mut create)?;
    }
    let mut pip = Command::new(&python);
    pip.args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet", requirement]);
    process::capture(&mut pip)?;
    fs::write(&marker, stamp).map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    eprintln!("interop: installed {requirement} in {:.1} s", started.elapsed().as_secs_f64());
    Ok(python)
}

/// Unpacks `argv[1]` (a .tar.gz) into `argv[2]`, refusing members outside it where the
/// interpreter supports extraction filters.
const UNPACK_PY: &str = r#"import sys, tarfile
with tarfile.open(sys.argv[1]) as archive:
    if hasattr(tarfile, "data_filter"):
        archive.extractall(sys.argv[2], filter="data")
    else:
        archive.extractall(sys.argv[2])
"#;

/// The built examples of the Rust SDK.
#[derive(Debug, Clone)]
pub(super) struct RsPeer {
    /// `.cache/interop/rust-sdk/target`, where the examples are built (and the official conductor
    /// of the chain scenarios, which shares most of their dependencies: see [`chains`]).
    pub(super) target: PathBuf,
    /// `target/debug/examples`.
    pub(super) examples: PathBuf,
}

impl RsPeer {
    /// The path of one of the built examples.
    pub(super) fn example(&self, name: &str) -> PathBuf {
        self.examples.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
    }
}

/// Fetches the Rust SDK's crate with `cargo metadata --locked` on `interop/rust/` (which depends
/// on it, pinned, and has a lockfile), copies its source into `.cache/interop/rust-sdk/` (cargo's
/// own copy stays untouched) and builds the examples there with the crate's shipped lockfile.
pub(super) fn install_rs(root: &Path, cache: &Path) -> Result<RsPeer, String> {
    let dir = cache.join("rust-sdk");
    let target = dir.join("target");
    let peer = RsPeer { examples: target.join("debug").join("examples"), target: target.clone() };
    let marker = dir.join(".installed");
    let stamp = format!("{RS_SDK_CRATE}@{RS_SDK_VERSION} --features {RS_SDK_FEATURES} {}\n", RS_SDK_EXAMPLES.join(" "));
    if fs::read_to_string(&marker).ok().as_deref() == Some(stamp.as_str())
        && RS_SDK_EXAMPLES.iter().all(|name| peer.example(name).is_file())
    {
        return Ok(peer);
    }

    let started = Instant::now();
    eprintln!("interop: building the {RS_SDK_CRATE} {RS_SDK_VERSION} examples in {}", dir.display());
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let _ = fs::remove_file(&marker);
    let mut metadata = process::cargo();
    metadata
        .args(["metadata", "--locked", "--format-version", "1", "--manifest-path"])
        .arg(root.join("interop").join("rust").join("Cargo.toml"));
    let fetched = crate_dir(&process::capture(&mut metadata)?, RS_SDK_CRATE, RS_SDK_VERSION)?;

    let manifest = copy_crate(&fetched, &dir.join(format!("{RS_SDK_CRATE}-{RS_SDK_VERSION}")))?;

    // No debug info: with it, the build took 60 s and 1.4 GB here; without, 40 s and 0.6 GB.
    let mut build = process::cargo();
    build
        .args(["build", "--quiet", "--locked", "--config", "profile.dev.debug=0", "--features", RS_SDK_FEATURES])
        .args(RS_SDK_EXAMPLES.iter().flat_map(|name| ["--example", name]))
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target);
    process::capture(&mut build)?;
    if let Some(missing) = RS_SDK_EXAMPLES.iter().map(|name| peer.example(name)).find(|path| !path.is_file()) {
        return Err(format!("the build of the {RS_SDK_CRATE} examples left no {}", missing.display()));
    }
    fs::write(&marker, stamp).map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    eprintln!(
        "interop: built the {RS_SDK_CRATE} {RS_SDK_VERSION} examples in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(peer)
}

/// Copies a crate's source from cargo's registry (`fetched`) to `source` and returns the copy's
/// manifest: a copy, so that a build writes nothing into cargo's registry; `[workspace]` is
/// appended to the manifest to keep it out of this repository's workspace, which encloses
/// `.cache/`.
pub(super) fn copy_crate(fetched: &Path, source: &Path) -> Result<PathBuf, String> {
    if source.exists() {
        fs::remove_dir_all(source).map_err(|e| format!("cannot remove {}: {e}", source.display()))?;
    }
    for file in files::files_under(fetched)? {
        let (from, to) = (fetched.join(&file), source.join(&file));
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        fs::copy(&from, &to).map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
    }
    let manifest = source.join("Cargo.toml");
    let text = fs::read_to_string(&manifest).map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    fs::write(&manifest, format!("{text}\n# Added by `cargo xtask interop`.\n[workspace]\n"))
        .map_err(|e| format!("cannot write {}: {e}", manifest.display()))?;
    Ok(manifest)
}

/// The source directory of package `name` at `version` in `cargo metadata` output.
pub(super) fn crate_dir(metadata: &str, name: &str, version: &str) -> Result<PathBuf, String> {
    let value: Value = serde_json::from_str(metadata).map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    let packages = value.get("packages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let manifest = packages
        .iter()
        .filter(|p| p.get("name").and_then(Value::as_str) == Some(name))
        .filter(|p| p.get("version").and_then(Value::as_str) == Some(version))
        .find_map(|p| p.get("manifest_path").and_then(Value::as_str))
        .ok_or_else(|| format!("cargo metadata lists no {name} {version}"))?;
    Path::new(manifest).parent().map(Path::to_path_buf).ok_or_else(|| format!("bad manifest path {manifest}"))
}

pub(super) fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

fn list_dir(dir: &Path) -> String {
    match fs::read_dir(dir) {
        Ok(entries) => {
            let mut names: Vec<String> =
                entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
            names.sort();
            names.join(", ")
        }
        Err(e) => format!("cannot list {}: {e}", dir.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_crate_in_cargo_metadata() {
        let metadata = r#"{"packages": [
            {"name": "agent-client-protocol", "version": "4.0.0", "manifest_path": "/old/Cargo.toml"},
            {"name": "agent-client-protocol", "version": "5.0.0", "manifest_path": "/reg/agent-client-protocol-5.0.0/Cargo.toml"}
        ]}"#;
        assert_eq!(crate_dir(metadata, RS_SDK_CRATE, "5.0.0").unwrap(), Path::new("/reg/agent-client-protocol-5.0.0"));
        assert!(crate_dir(metadata, RS_SDK_CRATE, "6.0.0").unwrap_err().contains("lists no"));
        assert!(crate_dir("warning", RS_SDK_CRATE, "5.0.0").unwrap_err().contains("no JSON"));
    }

    /// `interop/rust/` fetches the version the examples are built from.
    #[test]
    fn the_fetch_package_pins_the_sdk_version() {
        let dir = crate::project_root().join("interop").join("rust");
        let manifest: toml::Value = toml::from_str(&fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
        let dependency = &manifest["dependencies"][RS_SDK_CRATE]["version"];
        assert_eq!(dependency.as_str(), Some(format!("={RS_SDK_VERSION}").as_str()));
        let lock: toml::Value = toml::from_str(&fs::read_to_string(dir.join("Cargo.lock")).unwrap()).unwrap();
        let locked: Vec<&str> = lock["package"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["name"].as_str() == Some(RS_SDK_CRATE))
            .filter_map(|p| p["version"].as_str())
            .collect();
        assert_eq!(locked, [RS_SDK_VERSION]);
    }
}
