//! What the tests share: whether a process still runs, by its pid.

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Long enough for a loaded machine; the tests wait for an outcome, they do not time it.
pub const LIMIT: Duration = Duration::from_secs(20);

/// True while `pid` runs. A zombie does not count: a killed grandchild is reparented to init,
/// which may be slow to reap it (or, in a container, never do).
pub fn running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // `PID (COMMAND) STATE …`; the command may hold spaces and parentheses, the state follows the last `)`.
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, None | Some("Z") | Some("X"))
}

/// Waits (bounded by [`LIMIT`]) until `pid` no longer runs; whether it stopped.
pub fn stops(pid: u32) -> bool {
    let deadline = Instant::now() + LIMIT;
    while running(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The pids a script printed, one a line.
pub fn pids(text: &str) -> Vec<u32> {
    text.lines().filter_map(|line| line.trim().parse().ok()).collect()
}
