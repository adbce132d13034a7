//! What libcontainer's forked processes (intermediate and init) said before
//! a create failed, brought back to the caller so the one error line names
//! the real cause.
//!
//! Why: an error in init crosses libcontainer's channel as its top-level
//! `Display` only (`err.to_string()` in its init and intermediate
//! processes), so every mount failure arrives as "failed to prepare
//! rootfs", without the mount, the path or the errno. libcontainer logs the
//! whole chain just before (`failed to canonicalize ...: Permission denied
//! (os error 13)`, `failed to mount Mount { destination: ... }: io error`),
//! through the tracing subscriber that the fork copied. The binary's
//! subscriber hands every libcontainer error event to [`note`]; while a
//! [`Capture`] is active, a process other than the one that started it (a
//! child of the fork) writes the text to a pipe, and the create reads it
//! back once libcontainer has returned.
//!
//! Best effort and never in the way: a full pipe drops lines, a create that
//! succeeds throws them away, and the child writes with one `write(2)` on
//! an inherited, non-blocking, close-on-exec descriptor (the workload never
//! sees it: init execs only after setup succeeded, and exec closes it).

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

use libcontainer::oci_spec::runtime::{Mount, Spec};
use nix::fcntl::OFlag;

use crate::error::{Result, RuntimeError};

/// The write end of the active capture's pipe, or -1.
static FD: AtomicI32 = AtomicI32::new(-1);
/// The pid of the process that started the capture: its own events are not
/// written (they only repeat what libcontainer returns to it).
static OWNER: AtomicI32 = AtomicI32::new(0);

/// Called by the binary's tracing layer for each libcontainer error event.
pub fn note(msg: &str) {
    let fd = FD.load(Ordering::Acquire);
    if fd < 0 || std::process::id() as i32 == OWNER.load(Ordering::Acquire) {
        return;
    }
    let mut line = msg.replace('\n', " ");
    line.push('\n');
    // One write of at most PIPE_BUF bytes is atomic: lines never interleave.
    let bytes = &line.as_bytes()[..line.len().min(4000)];
    let _ = nix::unistd::write(crate::sys::fds::borrow(fd), bytes);
}

/// An active capture; [`Capture::finish`] ends it and returns the lines.
pub struct Capture {
    read: OwnedFd,
    write: Option<OwnedFd>,
}

impl Capture {
    pub fn start() -> Result<Self> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)
            .map_err(|e| RuntimeError::sys("pipe for libcontainer's setup log", e))?;
        OWNER.store(std::process::id() as i32, Ordering::Release);
        FD.store(write.as_raw_fd(), Ordering::Release);
        Ok(Self {
            read,
            write: Some(write),
        })
    }

    /// The lines the children wrote, in order.
    pub fn finish(mut self) -> Vec<String> {
        FD.store(-1, Ordering::Release);
        drop(self.write.take());
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        // Non-blocking: what is there now. libcontainer logs before it sends
        // its error, so a failed create's lines are all in the pipe already.
        while let Ok(n @ 1..) = nix::unistd::read(self.read.as_raw_fd(), &mut buf) {
            bytes.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if self.write.is_some() {
            FD.store(-1, Ordering::Release);
        }
    }
}

/// The detail to add to a failed create's error, from the lines its
/// children logged: the spec mount that failed (by index, type, source and
/// destination, matched against `spec`), the operation and the errno. The
/// innermost line (the first logged) names the operation and its path when
/// it is below the mount; when the mount's own line is the innermost, the
/// operation is the mount itself and the errno comes from the `err=` field
/// of a later line. `None` when the children said nothing useful.
pub fn describe(lines: &[String], spec: &Spec) -> Option<String> {
    let first = lines.first()?;
    let mounts: &[Mount] = spec.mounts().as_deref().unwrap_or(&[]);
    let failed = lines.iter().find_map(|l| {
        let rest = l.strip_prefix("failed to mount ")?;
        mounts
            .iter()
            .enumerate()
            .find(|(_, m)| rest.starts_with(&format!("{m:?}: ")))
    });
    let errno = lines.iter().find_map(|l| errno_in(l));
    let with_errno = |text: &str| match (errno_in(text), errno) {
        (Some(_), _) | (None, None) => named(text),
        (None, Some(e)) => format!("{text}: {}", render(e)),
    };
    let own_line = first.starts_with("failed to mount Mount {");
    let cause = match own_line {
        true => with_errno("mount"),
        false => with_errno(first.strip_prefix("failed to ").unwrap_or(first)),
    };
    Some(match failed {
        Some((i, m)) => {
            let typ = m.typ().as_deref().unwrap_or("bind");
            let source = m
                .source()
                .as_ref()
                .map(|s| s.display().to_string())
                .unwrap_or_else(|| "none".into());
            format!(
                "mounts[{i}] ({typ} {source} on {}): {cause}",
                m.destination().display()
            )
        }
        None => cause,
    })
}

fn render(e: nix::errno::Errno) -> String {
    format!("{} ({e:?}, os error {})", e.desc(), e as i32)
}

/// The errno a line carries: `(os error 13)` of an io::Error, `Nix(EINVAL)`
/// or `errno: EINVAL` of a debug-printed nix error, `code: 13` of an
/// io::Error's debug form.
fn errno_in(text: &str) -> Option<nix::errno::Errno> {
    let number = |after: &str| -> Option<i32> {
        let i = text.find(after)? + after.len();
        let digits: String = text[i..].chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    if let Some(n) = number("(os error ").or_else(|| number("code: ")) {
        return Some(nix::errno::Errno::from_raw(n));
    }
    for marker in ["Nix(", "errno: ", "Errno("] {
        if let Some(i) = text.find(marker) {
            let name: String = text[i + marker.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if let Some(e) = errno_by_name(&name) {
                return Some(e);
            }
        }
    }
    None
}

fn errno_by_name(name: &str) -> Option<nix::errno::Errno> {
    if !name.starts_with('E') {
        return None;
    }
    (1..4096)
        .map(nix::errno::Errno::from_raw)
        .find(|e| format!("{e:?}") == name)
}

/// `... Permission denied (os error 13)` -> `... Permission denied (EACCES,
/// os error 13)`.
fn named(text: &str) -> String {
    let Some(at) = text.rfind("(os error ") else {
        return text.to_string();
    };
    let num = text[at + "(os error ".len()..].trim_end_matches(')');
    match num.parse::<i32>() {
        Ok(n) => {
            let name = format!("{:?}", nix::errno::Errno::from_raw(n));
            format!("{}({name}, os error {n})", &text[..at])
        }
        Err(_) => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        serde_json::from_value(serde_json::json!({
            "ociVersion": "1.0.2",
            "root": {"path": "rootfs"},
            "mounts": [
                {"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/usr/bin/python3", "type": "bind",
                 "source": "/root/.pyenv/versions/3.11.7/bin/python3.11",
                 "options": ["bind", "ro", "nosuid", "nodev"]}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn names_the_mount_and_the_errno() {
        let s = spec();
        let m = &s.mounts().as_ref().unwrap()[1];
        let lines = vec![
            "failed to canonicalize \"/root/.pyenv/versions/3.11.7/bin/python3.11\": Permission denied (os error 13)".to_string(),
            format!("failed to mount {m:?}: io error"),
            "failed to prepare rootfs err=Mount(Io(Os { code: 13 }))".to_string(),
        ];
        assert_eq!(
            describe(&lines, &s).unwrap(),
            "mounts[1] (bind /root/.pyenv/versions/3.11.7/bin/python3.11 on /usr/bin/python3): \
             canonicalize \"/root/.pyenv/versions/3.11.7/bin/python3.11\": \
             Permission denied (EACCES, os error 13)"
        );
    }

    #[test]
    fn a_failed_mount_syscall_takes_its_errno_from_the_error_chain() {
        let mut s = spec();
        let mut mounts = s.mounts().clone().unwrap();
        mounts[1].set_typ(Some("tmpfs".into()));
        mounts[1].set_source(Some("tmpfs".into()));
        s.set_mounts(Some(mounts.clone()));
        let lines = vec![
            format!("failed to mount {:?}: syscall", mounts[1]),
            "failed to prepare rootfs err=Mount(Syscall(Nix(EINVAL)))".to_string(),
        ];
        assert_eq!(
            describe(&lines, &s).unwrap(),
            "mounts[1] (tmpfs tmpfs on /usr/bin/python3): mount: Invalid argument (EINVAL, os error 22)"
        );
    }

    #[test]
    fn without_a_mount_line_the_innermost_cause() {
        let lines = vec!["failed to create device: No such file or directory (os error 2)".into()];
        assert_eq!(
            describe(&lines, &spec()).unwrap(),
            "create device: No such file or directory (ENOENT, os error 2)"
        );
        assert!(describe(&[], &spec()).is_none());
    }
}
