//! Reading a transcript named on the command line: a file, or `-` for standard input.

use std::io::Read;
use std::path::Path;

/// The bytes of `path` (`-`: all of standard input).
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut bytes)?;
    } else {
        std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}
