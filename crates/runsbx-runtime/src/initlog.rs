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
use std::path::{Path, PathBuf};
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

/// What a mount destination is in the rootfs when that is why a mount was
/// refused: `Some("/proc is a symlink to /x")` for the first component of
/// `dest` that is a symlink or not a directory, `None` otherwise.
pub type Inspect<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// The detail to add to a failed create's error, from the lines its
/// children logged: the spec mount that failed (by index, type, source and
/// destination, matched against `spec`), the operation and the errno. The
/// innermost line (the first logged) names the operation and its path when
/// it is below the mount; when the mount's own line is the innermost, the
/// operation is the mount itself and the errno comes from the `err=` field
/// of a later line. A line whose cause is only in its `err=` field (a
/// debug-printed error: `err=SetCaps(CapsError("capset failure: ..."))`)
/// gives that cause's text. A proc or sysfs mount libcontainer refused
/// because its destination is not an ordinary directory is found by asking
/// `inspect` what is there. `None` when the children said nothing useful.
pub fn describe(lines: &[String], spec: &Spec, inspect: Inspect) -> Option<String> {
    let first = lines.first()?;
    let mounts: &[Mount] = spec.mounts().as_deref().unwrap_or(&[]);
    let logged = lines.iter().find_map(|l| {
        let rest = l.strip_prefix("failed to mount ")?;
        // By destination, type and source: the options libcontainer was
        // shown may differ from the file's (a tmpfs's mode=, create.rs).
        mounts.iter().enumerate().find(|(_, m)| {
            let head = format!(
                "Mount {{ destination: {:?}, typ: {:?}, source: {:?}, ",
                m.destination(),
                m.typ(),
                m.source()
            );
            rest.starts_with(&head)
        })
    });
    let errno = lines.iter().find_map(|l| errno_in(l));
    let with_errno = |text: &str| match (errno_in(text), errno) {
        (Some(_), _) | (None, None) => named(text),
        (None, Some(e)) => format!("{text}: {}", render(e)),
    };
    let own_line = first.starts_with("failed to mount Mount {");
    let cause = match (own_line, field_cause(first)) {
        (true, _) => with_errno("mount"),
        (false, Some((op, inner))) => format!("{op}: {}", with_errno(&inner)),
        (false, None) => with_errno(first.strip_prefix("failed to ").unwrap_or(first)),
    };
    let failed = match logged {
        Some((i, m)) => Some((i, m, None)),
        None => not_a_directory(&cause, mounts, inspect),
    };
    Some(match failed {
        Some((i, m, what)) => {
            let typ = m.typ().as_deref().unwrap_or("bind");
            let source = m
                .source()
                .as_ref()
                .map(|s| s.display().to_string())
                .unwrap_or_else(|| "none".into());
            let what = what
                .map(|w| format!("{w} in the rootfs: "))
                .unwrap_or_default();
            format!(
                "mounts[{i}] ({typ} {source} on {}): {what}{cause}",
                m.destination().display()
            )
        }
        None => cause,
    })
}

/// libcontainer's `call exec sched_setattr error: N` (N an errno, from
/// init's `process.scheduler`) in words; for EPERM in a cpuset
/// (SCHED_DEADLINE needs every CPU of the system in its affinity,
/// sched_setattr(2)), runc 1.2's words. `None`: not that failure.
pub fn scheduler_failure(message: &str, spec: &Spec) -> Option<String> {
    let marker = "sched_setattr error: ";
    let at = message.find(marker)? + marker.len();
    let digits: String = message[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let errno = nix::errno::Errno::from_raw(digits.parse().ok()?);
    let policy = spec
        .process()
        .as_ref()
        .and_then(|p| p.scheduler().as_ref())
        .map(|s| format!(" {}", s.policy()))
        .unwrap_or_default();
    let cpus = spec
        .linux()
        .as_ref()
        .and_then(|l| l.resources().as_ref())
        .and_then(|r| r.cpu().as_ref())
        .and_then(|c| c.cpus().clone())
        .filter(|c| !c.is_empty());
    Some(match (errno, cpus) {
        (nix::errno::Errno::EPERM, Some(cpus)) => format!(
            "process.scheduler{policy}: process scheduler can't be used together with \
             AllowedCPUs (linux.resources.cpu.cpus {cpus:?}); sched_setattr: {}",
            render(errno)
        ),
        _ => format!(
            "process.scheduler{policy}: sched_setattr: {}",
            render(errno)
        ),
    })
}

/// libcontainer refuses a proc or sysfs mount whose destination is not an
/// ordinary directory (a symlink could point the mount elsewhere:
/// CVE-2019-19921) with a message that names neither the mount nor what is
/// there; finds the first mount of that type whose destination `inspect`
/// objects to.
fn not_a_directory<'m>(
    cause: &str,
    mounts: &'m [Mount],
    inspect: Inspect,
) -> Option<(usize, &'m Mount, Option<String>)> {
    let at = cause.find("must be mounted on ordinary directory")?;
    let typ = cause[..at].trim_end().rsplit(' ').next()?.trim_matches('"');
    mounts.iter().enumerate().find_map(|(i, m)| {
        if m.typ().as_deref() != Some(typ) {
            return None;
        }
        inspect(m.destination()).map(|what| (i, m, Some(what)))
    })
}

/// `failed to OP err=Variant(Inner("TEXT"))` -> `(OP, TEXT)`: the operation
/// and the first string in a debug-printed error, where libcontainer logs
/// the cause it does not return.
fn field_cause(line: &str) -> Option<(String, String)> {
    let (head, value) = line.split_once(" err=")?;
    let op = head.strip_prefix("failed to ").unwrap_or(head).to_string();
    let quoted = &value[value.find('"')? + 1..];
    let mut text = String::new();
    let mut chars = quoted.chars();
    loop {
        match chars.next()? {
            '"' => break,
            '\\' => match chars.next()? {
                'n' => text.push(' '),
                't' => text.push(' '),
                c => text.push(c),
            },
            c => text.push(c),
        }
    }
    Some((op, text))
}

/// What stands at `dest` (a mount destination) in `rootfs` when it is not
/// a directory, for [`describe`]: the first component that is a symlink
/// (and where it points) or something other than a directory. Looks, never
/// follows: it only explains a refusal libcontainer already made.
pub fn inspect_destination(rootfs: &Path, dest: &Path) -> Option<String> {
    let mut inside = PathBuf::from("/");
    for part in dest.components() {
        let std::path::Component::Normal(name) = part else {
            continue;
        };
        inside.push(name);
        let host = rootfs.join(inside.strip_prefix("/").ok()?);
        let meta = std::fs::symlink_metadata(&host).ok()?;
        if meta.file_type().is_symlink() {
            return Some(match std::fs::read_link(&host) {
                Ok(to) => format!("{} is a symlink to {}", inside.display(), to.display()),
                Err(_) => format!("{} is a symlink", inside.display()),
            });
        }
        if !meta.is_dir() {
            return Some(format!("{} is not a directory", inside.display()));
        }
    }
    None
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

    fn nothing(_: &Path) -> Option<String> {
        None
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
            describe(&lines, &s, &nothing).unwrap(),
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
            describe(&lines, &s, &nothing).unwrap(),
            "mounts[1] (tmpfs tmpfs on /usr/bin/python3): mount: Invalid argument (EINVAL, os error 22)"
        );
    }

    #[test]
    fn without_a_mount_line_the_innermost_cause() {
        let lines = vec!["failed to create device: No such file or directory (os error 2)".into()];
        assert_eq!(
            describe(&lines, &spec(), &nothing).unwrap(),
            "create device: No such file or directory (ENOENT, os error 2)"
        );
        assert!(describe(&[], &spec(), &nothing).is_none());
    }

    /// The cause libcontainer logs only in its `err=` field: capset's EPERM
    /// when the spec asks for an inheritable capability it drops from the
    /// bounding set (contest's process_capabilities_bounding).
    #[test]
    fn a_debug_printed_error_gives_its_text_and_errno_name() {
        let lines = vec![
            "failed to drop capabilities err=SetCaps(CapsError(\"capset failure: Operation not permitted (os error 1)\"))".to_string(),
            "failed to initialize container process: failed syscall".to_string(),
        ];
        assert_eq!(
            describe(&lines, &spec(), &nothing).unwrap(),
            "drop capabilities: capset failure: Operation not permitted (EPERM, os error 1)"
        );
    }

    /// A proc mount refused because its destination is a symlink names the
    /// mount and the symlink (contest's prohibit_symlink).
    #[test]
    fn a_refused_proc_mount_names_the_mount_and_what_is_there() {
        let lines = vec![
            "failed to prepare rootfs err=Mount(Other(\"filesystem proc must be mounted on ordinary directory\"))".to_string(),
        ];
        let inspect = |dest: &Path| {
            (dest == Path::new("/proc")).then(|| "/proc is a symlink to /elsewhere".to_string())
        };
        assert_eq!(
            describe(&lines, &spec(), &inspect).unwrap(),
            "mounts[0] (proc proc on /proc): /proc is a symlink to /elsewhere in the rootfs: \
             prepare rootfs: filesystem proc must be mounted on ordinary directory"
        );
        // Nothing odd found: the cause alone.
        assert_eq!(
            describe(&lines, &spec(), &nothing).unwrap(),
            "prepare rootfs: filesystem proc must be mounted on ordinary directory"
        );
    }

    #[test]
    fn inspect_destination_reports_the_first_symlink_or_non_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("real/fs")).unwrap();
        std::os::unix::fs::symlink("/real", root.join("sys")).unwrap();
        std::fs::write(root.join("file"), b"").unwrap();
        assert_eq!(
            inspect_destination(root, Path::new("/sys/fs/cgroup")).as_deref(),
            Some("/sys is a symlink to /real")
        );
        assert_eq!(
            inspect_destination(root, Path::new("/file")).as_deref(),
            Some("/file is not a directory")
        );
        assert_eq!(inspect_destination(root, Path::new("/real/fs")), None);
        assert_eq!(inspect_destination(root, Path::new("/missing")), None);
    }

    /// runc 1.2's "scheduler vs cpus": SCHED_DEADLINE in a cpuset.
    #[test]
    fn a_refused_scheduler_is_named_and_a_cpuset_blamed_as_runc() {
        let with = |cpus: Option<&str>| -> Spec {
            let mut v = serde_json::json!({
                "ociVersion": "1.0.2",
                "process": { "cwd": "/", "user": { "uid": 0, "gid": 0 },
                    "scheduler": { "policy": "SCHED_DEADLINE", "runtime": 42000 } }
            });
            if let Some(c) = cpus {
                v["linux"] = serde_json::json!({ "resources": { "cpu": { "cpus": c } } });
            }
            serde_json::from_value(v).unwrap()
        };
        let message = "call exec sched_setattr error: 1";
        assert_eq!(
            scheduler_failure(message, &with(Some("0"))).unwrap(),
            "process.scheduler SCHED_DEADLINE: process scheduler can't be used together with \
             AllowedCPUs (linux.resources.cpu.cpus \"0\"); sched_setattr: Operation not \
             permitted (EPERM, os error 1)"
        );
        assert_eq!(
            scheduler_failure("call exec sched_setattr error: 22", &with(None)).unwrap(),
            "process.scheduler SCHED_DEADLINE: sched_setattr: Invalid argument (EINVAL, os error 22)"
        );
        assert_eq!(
            scheduler_failure("failed to prepare rootfs", &with(None)),
            None
        );
    }
}
