//! File helpers shared by the commands that write trees (`codegen`, `schema history`): the files
//! under a directory, and writing a file only when its bytes change (so that cargo and editors
//! see no change where there is none).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Every file under `dir`, relative to it; a missing `dir` has none.
pub fn files_under(dir: &Path) -> Result<BTreeSet<PathBuf>, String> {
    let mut found = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let entries = match fs::read_dir(&current) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot list {}: {e}", current.display())),
        };
        for entry in entries {
            let path = entry.map_err(|e| format!("cannot list {}: {e}", current.display()))?.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(dir) {
                found.insert(rel.to_path_buf());
            }
        }
    }
    Ok(found)
}

/// Writes `bytes` to `path` (creating its directory) unless the file already holds them.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
