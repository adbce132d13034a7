//! One session: a `runsbx sandbox` process of its own running the REPL
//! driver, its stdin and stdout the protocol, its status fd the workload's
//! PID and, at the end, the outcome.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// Every spawn holds this while the status pipe's write end is inheritable,
/// so no other session's child inherits it (which would keep its status
/// pipe open after its own runsbx exits).
static SPAWN: Mutex<()> = Mutex::new(());

/// Ends a session: SIGTERM to its runsbx until it is reaped (runsbx then
/// kills the workload and removes the workdir, as `runsbx sandbox` does on
/// SIGTERM), or SIGKILL through the pidfd of a forked session. A signal can
/// never reach a process that reused the pid.
#[derive(Clone)]
pub struct Killer(Arc<Mutex<Option<Target>>>);

pub(super) enum Target {
    Runsbx(i32),
    Forked(Arc<runsbx_runtime::Pidfd>),
}

impl Killer {
    pub(super) fn new(target: Target) -> Self {
        Self(Arc::new(Mutex::new(Some(target))))
    }

    pub fn kill(&self) {
        match &*self.0.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(Target::Runsbx(pid)) => {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(*pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            Some(Target::Forked(pidfd)) => {
                let _ = pidfd.signal(nix::sys::signal::Signal::SIGKILL);
            }
            None => {}
        }
    }

    /// After the process is reaped.
    pub(super) fn disarm(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

pub struct Session {
    pub id: u64,
    pub killer: Killer,
    /// The interpreter's host PID, from the status fd's start event.
    pub pid: i32,
    pub stdin: Option<Box<dyn Write + Send>>,
    pub stdout: BufReader<Box<dyn Read + Send>>,
    runner: Runner,
}

/// What runs a session, and knows how it ended.
enum Runner {
    /// A `runsbx sandbox` of its own.
    Sandbox {
        child: Child,
        status: BufReader<File>,
    },
    /// A process of the fork server (fork.rs).
    Forked(super::fork::Forked),
}

/// A `runsbx GLOBAL... sandbox --status-fd FD ARGS...` with `stdin` and
/// its stdout piped, its stderr relayed to the server's; waits for the
/// workload's PID.
pub(super) fn spawn_sandbox(
    id: u64,
    exe: &Path,
    global: &[String],
    args: &[String],
    stdin: Stdio,
) -> Result<(Child, BufReader<File>, i32)> {
    let mut child;
    let read = {
        let _spawning = SPAWN.lock().unwrap_or_else(|e| e.into_inner());
        // Close-on-exec from the start, and made under the lock: a
        // session spawned meanwhile by another thread must not inherit
        // either end (its runsbx would hold this session's status pipe
        // open, and `finish` would wait for that other session's end).
        let (read, write): (OwnedFd, OwnedFd) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("status pipe")?;
        inheritable(&write)?;
        let spawned = Command::new(exe)
            .args(global)
            .args(["sandbox", "--status-fd"])
            .arg(write.as_raw_fd().to_string())
            .args(args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        drop(write);
        child = spawned.context("spawn runsbx sandbox")?;
        read
    };
    let stderr = child.stderr.take().expect("piped");
    std::thread::spawn(move || relay_stderr(id, stderr));
    let mut status = BufReader::new(File::from(read));
    let mut line = String::new();
    let pid = loop {
        line.clear();
        if status.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.wait();
            bail!("the session's sandbox ended before its workload started");
        }
        let event: Value = serde_json::from_str(&line).unwrap_or_default();
        match event["event"].as_str() {
            Some("start") => break event["pid"].as_i64().unwrap_or(0) as i32,
            Some("exit") => {
                let _ = child.wait();
                bail!(
                    "the session's sandbox failed: {}",
                    event["message"].as_str().unwrap_or("no message")
                );
            }
            _ => {}
        }
    };
    Ok((child, status, pid))
}

impl Session {
    /// Starts `runsbx GLOBAL... sandbox --status-fd FD ARGS...` and waits
    /// for the workload's PID.
    pub fn start(id: u64, exe: &Path, global: &[String], args: &[String]) -> Result<Self> {
        let (mut child, status, pid) = spawn_sandbox(id, exe, global, args, Stdio::piped())?;
        let stdin: Box<dyn Write + Send> = Box::new(child.stdin.take().expect("piped"));
        let stdout: Box<dyn Read + Send> = Box::new(child.stdout.take().expect("piped"));
        Ok(Self {
            id,
            killer: Killer::new(Target::Runsbx(child.id() as i32)),
            pid,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            runner: Runner::Sandbox { child, status },
        })
    }

    /// A session of the fork server: `stream` its stdin and stdout.
    pub(super) fn forked(
        id: u64,
        pid: i32,
        stream: std::os::unix::net::UnixStream,
        forked: super::fork::Forked,
    ) -> Result<Self> {
        let stdin: Box<dyn Write + Send> = Box::new(stream.try_clone().context("session stream")?);
        let stdout: Box<dyn Read + Send> = Box::new(stream);
        Ok(Self {
            id,
            killer: Killer::new(Target::Forked(forked.pidfd.clone())),
            pid,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            runner: Runner::Forked(forked),
        })
    }

    /// Sends one request line and returns the answer line (without its
    /// newline); `None` when the session ended instead.
    pub fn request(&mut self, code: &str) -> Option<String> {
        let mut line = serde_json::json!({ "code": code }).to_string();
        line.push('\n');
        self.stdin.as_mut()?.write_all(line.as_bytes()).ok()?;
        let mut answer = Vec::new();
        match read_line_capped(&mut self.stdout, &mut answer, MAX_LINE) {
            Line::Complete => Some(String::from_utf8_lossy(&answer).trim_end().to_string()),
            Line::Eof => None,
            Line::TooLong => {
                self.kill();
                None
            }
        }
    }

    pub fn kill(&self) {
        self.killer.kill();
    }

    /// Called as a client gets it.
    pub fn handed_out(&self) {
        if let Runner::Forked(f) = &self.runner {
            f.handed_out();
        }
    }

    /// Whether it still runs (a warm session can die in the pool).
    pub fn alive(&mut self) -> bool {
        match &mut self.runner {
            Runner::Sandbox { child, .. } => matches!(child.try_wait(), Ok(None)),
            Runner::Forked(f) => matches!(f.pidfd.exited_within(0), Ok(false)),
        }
    }

    /// Waits for the session to end; returns its exit event (`{}` when
    /// there is none).
    pub fn finish(mut self) -> Value {
        drop(self.stdin.take());
        match self.runner {
            Runner::Sandbox {
                mut child,
                mut status,
            } => {
                let mut outcome = Value::Object(Default::default());
                let mut line = String::new();
                while status.read_line(&mut line).unwrap_or(0) > 0 {
                    if let Ok(v) = serde_json::from_str::<Value>(&line) {
                        if v["event"] == "exit" {
                            outcome = v;
                        }
                    }
                    line.clear();
                }
                self.killer.disarm();
                let _ = child.wait();
                outcome
            }
            Runner::Forked(f) => {
                let outcome = f.finish();
                self.killer.disarm();
                outcome
            }
        }
    }
}

/// Clears close-on-exec on `fd`, for the next child to inherit it.
fn inheritable(fd: &OwnedFd) -> Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    fcntl(fd.as_raw_fd(), FcntlArg::F_SETFD(FdFlag::empty())).context("status pipe: fcntl")?;
    Ok(())
}

/// The session's stderr (runsbx's own lines, and whatever the workload
/// writes to fd 2) on the server's, each line prefixed with the session;
/// capped, so that a workload cannot flood the operator's log.
pub(super) fn relay_stderr(id: u64, stderr: impl Read) {
    const MAX_LINES: usize = 20;
    const SHOWN: usize = 500;
    let mut lines = BufReader::new(stderr);
    let mut line = Vec::new();
    let mut n = 0;
    // Past the first SHOWN bytes of a line, and past MAX_LINES lines, what
    // the workload writes is read and dropped, never kept: a line without
    // end would otherwise grow the server without bound.
    while read_line_truncated(&mut lines, &mut line, SHOWN) {
        n += 1;
        if n <= MAX_LINES {
            // Escaped: the workload's bytes reach the operator's terminal.
            let text: String = String::from_utf8_lossy(&line)
                .trim_end()
                .chars()
                .flat_map(char::escape_debug)
                .collect();
            eprintln!("runsbx: serve: session {id}: {text}");
        } else if n == MAX_LINES + 1 {
            eprintln!("runsbx: serve: session {id}: more on stderr, not shown");
        }
    }
}

/// The longest line taken from a session or a client: past it the session
/// is ended (`output-limit`). What the workload writes is read into the
/// server's memory line by line; without a bound, a line without end would
/// grow the server until the host kills it, and every session with it.
pub const MAX_LINE: usize = 16 << 20;

#[derive(Debug, PartialEq)]
pub enum Line {
    /// A line, with its newline when it had one (the last may not).
    Complete,
    Eof,
    /// Longer than the bound; `buf` holds a part, the rest is unread.
    TooLong,
}

/// One line into `buf` (cleared first), at most `max` bytes. A read error
/// counts as the end.
pub fn read_line_capped(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> Line {
    buf.clear();
    loop {
        let avail = fill(r);
        if avail.is_empty() {
            return if buf.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            };
        }
        let (take, done) = line_end(avail);
        if buf.len() + take > max {
            return Line::TooLong;
        }
        buf.extend_from_slice(&avail[..take]);
        r.consume(take);
        if done {
            return Line::Complete;
        }
    }
}

/// One line, of which at most `keep` bytes go into `buf` (cleared first)
/// and the rest is read and dropped; false at the end.
fn read_line_truncated(r: &mut impl BufRead, buf: &mut Vec<u8>, keep: usize) -> bool {
    buf.clear();
    let mut any = false;
    loop {
        let avail = fill(r);
        if avail.is_empty() {
            return any;
        }
        any = true;
        let (take, done) = line_end(avail);
        let room = keep.saturating_sub(buf.len()).min(take);
        buf.extend_from_slice(&avail[..room]);
        r.consume(take);
        if done {
            return true;
        }
    }
}

/// What `r` holds next; empty at the end or on an error.
fn fill(r: &mut impl BufRead) -> &[u8] {
    while let Err(e) = r.fill_buf() {
        if e.kind() != std::io::ErrorKind::Interrupted {
            return &[];
        }
    }
    r.fill_buf().unwrap_or(&[])
}

/// How much of `avail` to take for the current line, and whether that ends it.
fn line_end(avail: &[u8]) -> (usize, bool) {
    match avail.iter().position(|&b| b == b'\n') {
        Some(i) => (i + 1, true),
        None => (avail.len(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded() {
        let mut r = std::io::Cursor::new(b"ab\ncdef\ngh".to_vec());
        let mut buf = Vec::new();
        assert_eq!(read_line_capped(&mut r, &mut buf, 3), Line::Complete);
        assert_eq!(buf, b"ab\n");
        assert_eq!(read_line_capped(&mut r, &mut buf, 3), Line::TooLong);
        let mut r = std::io::Cursor::new(b"gh".to_vec());
        assert_eq!(read_line_capped(&mut r, &mut buf, 3), Line::Complete);
        assert_eq!(buf, b"gh");
        assert_eq!(read_line_capped(&mut r, &mut buf, 3), Line::Eof);
    }

    #[test]
    fn a_long_line_is_cut_and_the_next_read_whole() {
        let mut r = std::io::BufReader::with_capacity(4, &b"abcdefghij\nxy\n"[..]);
        let mut buf = Vec::new();
        assert!(read_line_truncated(&mut r, &mut buf, 3));
        assert_eq!(buf, b"abc");
        assert!(read_line_truncated(&mut r, &mut buf, 3));
        assert_eq!(buf, b"xy\n");
        assert!(!read_line_truncated(&mut r, &mut buf, 3));
    }
}
