//! What the integration tests of `acp-rpc` (`tests/`) and of the `acp` tool (`tool/tests/`)
//! share: the examples of `acp-rpc` as programs to run. A dev-dependency only.

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/examples/NAME` (an example of `acp-rpc`), built on demand.
pub fn example(name: &str) -> PathBuf {
    let dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent()?.parent().map(|d| d.join("examples")))
        .expect("target dir");
    let path = dir.join(name);
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--package", "acp-rpc", "--example", name])
            .status()
            .expect("cargo");
        assert!(status.success(), "cannot build example {name}");
    }
    path
}
