//! The peak resident memory of the processes a run starts below its first program (Linux,
//! `/proc`): a conductor and the components it spawned, under the client that xtask started.
//! [`Sampler`] polls, every few milliseconds, every process whose parent chain reaches xtask
//! through one of xtask's children, and keeps each one's `VmHWM` (its own peak, which only
//! grows); the sum over those processes is the chain's memory. xtask's direct children (the
//! client) are left out: both conductors are driven by the same client.

use std::collections::HashMap;
use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the process table is read.
const EVERY: Duration = Duration::from_millis(10);

/// A running sampler; [`Sampler::finish`] stops it and gives the sum.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<HashMap<u32, u64>>,
}

impl Sampler {
    /// Starts polling the grandchildren (and their descendants) of this process.
    pub fn start() -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let me = std::process::id();
            let mut peaks: HashMap<u32, u64> = HashMap::new();
            while !flag.load(Ordering::Relaxed) {
                for (pid, kib) in below_children(me) {
                    let peak = peaks.entry(pid).or_default();
                    *peak = (*peak).max(kib);
                }
                std::thread::sleep(EVERY);
            }
            peaks
        });
        Sampler { stop, thread }
    }

    /// Stops polling: the sum of the peaks seen, in KiB, and how many processes they were.
    pub fn finish(self) -> (u64, usize) {
        self.stop.store(true, Ordering::Relaxed);
        let peaks = self.thread.join().unwrap_or_default();
        (peaks.values().sum(), peaks.len())
    }
}

/// `(pid, VmHWM in KiB)` of each process below a child of `root` (not the children themselves).
fn below_children(root: u32) -> Vec<(u32, u64)> {
    let parents: HashMap<u32, u32> = processes().collect();
    let depth_below = |mut pid: u32| -> Option<usize> {
        let mut depth = 0;
        while let Some(&parent) = parents.get(&pid) {
            if parent == root {
                return Some(depth);
            }
            depth += 1;
            pid = parent;
            if depth > 64 {
                return None;
            }
        }
        None
    };
    parents
        .keys()
        .filter(|&&pid| depth_below(pid).is_some_and(|d| d >= 1))
        .filter_map(|&pid| Some((pid, peak_kib(pid)?)))
        .collect()
}

/// Every process as `(pid, parent pid)`.
fn processes() -> impl Iterator<Item = (u32, u32)> {
    fs::read_dir("/proc").into_iter().flatten().flatten().filter_map(|entry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
        Some((pid, parent_of(&stat)?))
    })
}

/// The parent pid in `/proc/PID/stat`: the field after the state, which follows the command name
/// in parentheses (itself free to hold spaces and parentheses, hence the last `)`).
fn parent_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// `VmHWM` of `/proc/PID/status`, in KiB.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| line.strip_prefix("VmHWM:")?.trim().strip_suffix("kB")?.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_parent_past_a_name_with_parentheses() {
        assert_eq!(parent_of("42 (a (b) c) S 7 42 42 0 -1"), Some(7));
        assert_eq!(parent_of("garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sees_a_grandchild_and_its_memory() {
        let sampler = Sampler::start();
        // sh (a child) runs sleep (a grandchild) and waits for it.
        let status = std::process::Command::new("sh").args(["-c", "sleep 0.3; true"]).status().unwrap();
        assert!(status.success());
        let (kib, count) = sampler.finish();
        assert!(count >= 1, "the grandchild was not seen");
        assert!(kib > 0);
    }
}
