//! Who holds a permit: a process, named by its pid and its start time.
//!
//! A pid alone does not name a process for long: once a process dies its pid is free and
//! the kernel hands it to a later process. Linux records when each process started (field
//! 22 of `/proc/<pid>/stat`, clock ticks since boot), and a (pid, start time) pair is not
//! reused within a boot. A permit record in a region keeps both, so a permit held by a
//! dead process is recognised as such even when its pid now belongs to someone else.
//!
//! [`Owner::is_alive`] decides, in this order:
//!
//! 1. pid 0 is never a process: dead;
//! 2. this process's own pid: alive if the start time is unknown or ours (a record with
//!    our pid and another start time was left by an earlier process with this pid);
//! 3. `kill(pid, 0)` answers `ESRCH`: no such process, dead;
//! 4. `/proc/<pid>/stat` says zombie (`Z`) or dead (`X`): the process has exited and only
//!    waits to be reaped, dead;
//! 5. its start time differs from the recorded one (both known): the pid was reused, dead;
//! 6. otherwise alive. A process whose `/proc` entry cannot be read (a `/proc` mounted with
//!    `hidepid`) but that `kill` finds is alive: reclaim errs on the side of keeping a
//!    permit, never on the side of freeing one that is still held.
//!
//! Pids are only comparable inside one pid namespace: a region records the namespace of
//! its creator and refuses processes of another (see [`pid_namespace`]).
//!
//! The identity of this process is read once and cached; a `fork` child forgets it (a
//! `pthread_atfork` handler), so a child records its own pid.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Once;

/// A process: pid and start time (clock ticks since boot, as `/proc/<pid>/stat` gives it;
/// 0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The process id.
    pub pid: u32,
    /// When it started, in clock ticks since boot; 0 if unknown.
    pub start: u64,
}

static PID: AtomicU32 = AtomicU32::new(0);
static START: AtomicU64 = AtomicU64::new(0);
static AT_FORK: Once = Once::new();

extern "C" fn forget_identity_in_child() {
    PID.store(0, Ordering::Relaxed);
}

impl Owner {
    /// This process (cached; recomputed in a `fork` child).
    #[inline]
    pub fn me() -> Owner {
        let pid = PID.load(Ordering::Acquire);
        if pid != 0 {
            return Owner {
                pid,
                start: START.load(Ordering::Relaxed),
            };
        }
        Owner::learn()
    }

    #[cold]
    fn learn() -> Owner {
        AT_FORK.call_once(|| {
            // SAFETY: registers a plain `extern "C"` function with no captured state; the
            // handler only stores to an atomic, which is async-signal-safe and safe in the
            // single-threaded child of `fork`.
            unsafe {
                libc::pthread_atfork(None, None, Some(forget_identity_in_child));
            }
        });
        let pid = std::process::id();
        let start = proc_stat(pid).map_or(0, |s| s.start);
        START.store(start, Ordering::Relaxed);
        PID.store(pid, Ordering::Release);
        Owner { pid, start }
    }

    /// Whether this owner is still a running process (see the module docs for the rules).
    pub fn is_alive(self) -> bool {
        if self.pid == 0 {
            return false;
        }
        let me = Owner::me();
        if self.pid == me.pid {
            return self.start == 0 || self.start == me.start;
        }
        let Ok(pid) = libc::pid_t::try_from(self.pid) else {
            return false;
        };
        // SAFETY: signal 0 performs the existence and permission checks only; no signal is
        // sent.
        let rc = unsafe { libc::kill(pid, 0) };
        if rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
            return false;
        }
        match proc_stat(self.pid) {
            Some(s) if s.state == b'Z' || s.state == b'X' => false,
            Some(s) if self.start != 0 && s.start != 0 && s.start != self.start => false,
            _ => true,
        }
    }
}

/// What `/proc/<pid>/stat` says about a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// The state letter (`R`, `S`, `D`, `Z`, ...).
    pub state: u8,
    /// Start time, clock ticks since boot.
    pub start: u64,
}

/// Read `/proc/<pid>/stat`; `None` if it cannot be read or parsed.
pub fn proc_stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parse the text of a `/proc/<pid>/stat` file. The command name (field 2) is in
/// parentheses and may itself hold spaces and parentheses, so fields are counted from the
/// last `)`: field 3 is the state, field 22 the start time.
pub fn parse_stat(text: &[u8]) -> Option<ProcStat> {
    let close = text.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(text.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    // Fields 4..=21 come between the state and the start time.
    let start = fields.nth(18)?.parse().ok()?;
    Some(ProcStat { state, start })
}

/// The pid namespace of this process (the inode number of `/proc/self/ns/pid`), or 0 when
/// it cannot be read.
pub fn pid_namespace() -> u64 {
    std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .and_then(|p| {
            let s = p.to_string_lossy().into_owned();
            let inner = s.strip_prefix("pid:[")?.strip_suffix(']')?;
            inner.parse().ok()
        })
        .unwrap_or(0)
}

/// A number naming this boot (a hash of `/proc/sys/kernel/random/boot_id`), or 0 when it
/// cannot be read. Monotonic instants and process start times are only comparable within
/// one boot.
pub fn boot_id() -> u64 {
    std::fs::read("/proc/sys/kernel/random/boot_id")
        .map(|b| guards_core::hash::fnv1a64(b.trim_ascii()))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_with_a_tricky_name() {
        // 52 fields; the name holds a space and a parenthesis.
        let mut line = String::from("4242 (we ird) name) S");
        for i in 4..=52 {
            line.push_str(&format!(" {}", if i == 22 { 987_654 } else { i }));
        }
        let s = parse_stat(line.as_bytes()).unwrap();
        assert_eq!(
            s,
            ProcStat {
                state: b'S',
                start: 987_654
            }
        );
        assert_eq!(parse_stat(b"12 (x) R 1 2"), None);
        assert_eq!(parse_stat(b"garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_its_impostors_are_not() {
        let me = Owner::me();
        assert_eq!(me.pid, std::process::id());
        assert!(me.start > 0, "Linux gives every process a start time");
        assert!(me.is_alive());
        assert!(Owner { start: 0, ..me }.is_alive());
        assert!(!Owner {
            start: me.start + 1,
            ..me
        }
        .is_alive());
        assert!(!Owner { pid: 0, start: 0 }.is_alive());
        // pid_max is at most 2^22 on Linux: this pid cannot exist.
        assert!(!Owner {
            pid: (1 << 22) + 7,
            start: 0
        }
        .is_alive());
        // pid 1 exists (init); a wrong start time means a reused pid.
        let init = proc_stat(1).map(|s| s.start);
        if let Some(start) = init {
            assert!(Owner { pid: 1, start }.is_alive());
            assert!(!Owner {
                pid: 1,
                start: start + 1
            }
            .is_alive());
        }
    }

    #[test]
    fn namespace_and_boot_are_known_on_linux() {
        assert_ne!(pid_namespace(), 0);
        assert_ne!(boot_id(), 0);
        assert_eq!(boot_id(), boot_id());
    }
}
