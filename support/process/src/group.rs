//! A child's process group and the signals that end it, for std's and tokio's children alike.

use std::io;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// How often a waiting end looks whether the group is gone.
pub(crate) const POLL: Duration = Duration::from_millis(20);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Signal {
    Term,
    Kill,
}

/// What the group needs of a child: std's and tokio's `Child` differ in name only.
pub(crate) trait Child {
    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>>;
    fn start_kill(&mut self) -> io::Result<()>;
}

impl Child for std::process::Child {
    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        std::process::Child::try_wait(self)
    }

    fn start_kill(&mut self) -> io::Result<()> {
        self.kill()
    }
}

#[cfg(feature = "tokio")]
impl Child for tokio::process::Child {
    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        tokio::process::Child::try_wait(self)
    }

    fn start_kill(&mut self) -> io::Result<()> {
        tokio::process::Child::start_kill(self)
    }
}

/// The process group of a child started with `process_group(0)`: its id is the child's pid.
/// Elsewhere than on Unix, the child alone.
///
/// Once the group is found empty (`killpg` answered `ESRCH`) or was sent `SIGKILL` (every end
/// that completes did one or the other), it is never signalled again: its id may then belong to
/// an unrelated group (see the crate docs). Not `Copy`, so that no copy of it forgets that.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    #[cfg(unix)]
    id: libc::pid_t,
    /// Found empty: not alive, and nothing is sent to its id any more.
    gone: bool,
    /// Sent `SIGKILL`, which no process can ignore: nothing is sent to its id any more. It may
    /// still be alive until the kernel has ended them.
    killed: bool,
}

impl Group {
    /// The group of a child just started (`pid` its pid); `None` for a pid no group can have.
    pub(crate) fn of(pid: Option<u32>) -> Option<Group> {
        #[cfg(unix)]
        {
            let id = pid.and_then(|pid| libc::pid_t::try_from(pid).ok())?;
            // 0 and 1 would signal our own group or init's: never.
            (id > 1).then_some(Group { id, gone: false, killed: false })
        }
        #[cfg(not(unix))]
        {
            let _ = pid;
            Some(Group { gone: false, killed: false })
        }
    }

    /// The group's id (the direct child's pid).
    #[cfg(unix)]
    pub(crate) fn id(&self) -> i32 {
        self.id
    }

    /// True while the group has a process. The direct child is looked at first: until it is
    /// reaped, the group's id (its pid) cannot be reused, so signalling the group is safe. After
    /// that the id stays the group's while any process is left in it; the first time none is
    /// (`ESRCH`), the group is marked gone for good.
    pub(crate) fn alive(&mut self, child: &mut impl Child) -> bool {
        if self.gone {
            return false;
        }
        if let Ok(None) = child.try_wait() {
            return true;
        }
        #[cfg(unix)]
        let alive = probe(self.id, 0);
        #[cfg(not(unix))]
        let alive = false;
        self.gone = !alive;
        alive
    }

    /// Sends `signal` to the group, unless it is gone or was killed. `Kill` also kills the direct
    /// child, in case it left the group; elsewhere than on Unix it is all `Kill` does, and `Term`
    /// does nothing.
    pub(crate) fn signal(&mut self, child: &mut impl Child, signal: Signal) {
        self.signal_group(signal);
        if signal == Signal::Kill {
            // Fails harmlessly once the child is reaped: std and tokio then send nothing.
            let _ = child.start_kill();
        }
    }

    /// Sends `signal` to the group unless it is gone or was killed (on Unix; elsewhere nothing).
    pub(crate) fn signal_group(&mut self, signal: Signal) {
        if self.ended() {
            return;
        }
        self.killed = signal == Signal::Kill;
        #[cfg(unix)]
        {
            let signal = match signal {
                Signal::Term => libc::SIGTERM,
                Signal::Kill => libc::SIGKILL,
            };
            self.gone = !probe(self.id, signal);
        }
        #[cfg(not(unix))]
        let _ = signal;
    }

    /// True once the group is found gone or was killed: it is never signalled again, so an end
    /// has nothing left to do.
    pub(crate) fn ended(&self) -> bool {
        self.gone || self.killed
    }

    /// Waits (blocking) up to `limit` for the group to be gone; true when it is.
    pub(crate) fn wait_blocking(&mut self, child: &mut impl Child, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if !self.alive(child) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Ends the group without an async runtime: `SIGTERM`, up to `grace` for it to go, then
    /// `SIGKILL` (at once when `grace` is zero). Does not wait for the kernel to end them. Found
    /// gone or killed (every end that completes leaves it so), the group is not signalled again:
    /// ending it again does nothing.
    pub(crate) fn end_blocking(&mut self, child: &mut impl Child, grace: Duration) {
        if !self.ended() && self.alive(child) {
            if !grace.is_zero() {
                self.signal(child, Signal::Term);
            }
            if grace.is_zero() || !self.wait_blocking(child, grace) {
                self.signal(child, Signal::Kill);
            }
        }
    }

    /// Pretends the kernel gave the group's id to another group (`id`), as it may once the
    /// group is gone.
    #[cfg(all(test, unix))]
    pub(crate) fn reuse_id(&mut self, id: libc::pid_t) {
        self.id = id;
    }
}

/// Sends `signal` (0: none, only the check) to the group; false when it has no process left.
/// Through libc's `killpg`: one call, already in the tree (`nix` would add a crate for it).
#[cfg(unix)]
fn probe(group: libc::pid_t, signal: libc::c_int) -> bool {
    // SAFETY: `killpg` takes two integers and touches no memory of this process.
    if unsafe { libc::killpg(group, signal) } == 0 {
        return true;
    }
    // ESRCH: the group is empty; EPERM: a process is left that we may not signal.
    io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}
