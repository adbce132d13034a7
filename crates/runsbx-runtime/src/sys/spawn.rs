//! fork(2) with an error channel: the child runs a set-up closure that
//! ends in execve; if it fails instead, its message comes back to the
//! parent through a close-on-exec pipe, and the parent reaps the child.
//! An exec that succeeds closes the pipe with nothing written.

use std::convert::Infallible;
use std::io::{Read, Write};

use nix::unistd::{fork, pipe2, ForkResult, Pid};

/// Forks; the child runs `setup`, which must not return unless it failed.
/// Call only while the process is single-threaded: the child may allocate.
pub fn spawn(setup: impl FnOnce() -> Result<Infallible, String>) -> Result<Pid, String> {
    let (read_end, write_end) =
        pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {}", e.desc()))?;
    // SAFETY: runsbx is single-threaded here (the caller's contract), so the
    // child may run ordinary code, allocation included, until it execs.
    match unsafe { fork() }.map_err(|e| format!("fork: {}", e.desc()))? {
        ForkResult::Child => {
            drop(read_end);
            let Err(msg) = setup();
            let mut w = std::fs::File::from(write_end);
            let _ = w.write_all(msg.as_bytes());
            // SAFETY: _exit ends the child without running the parent's
            // atexit handlers or flushing its copied stdio buffers.
            unsafe { libc::_exit(125) }
        }
        ForkResult::Parent { child } => {
            drop(write_end);
            let mut msg = String::new();
            let _ = std::fs::File::from(read_end).read_to_string(&mut msg);
            if msg.is_empty() {
                return Ok(child);
            }
            let _ = nix::sys::wait::waitpid(child, None);
            Err(msg)
        }
    }
}
