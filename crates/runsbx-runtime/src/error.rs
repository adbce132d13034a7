use std::path::PathBuf;

use libcontainer::error::LibcontainerError;
use runsbx_policy::landlock::LandlockError;
use runsbx_policy::seccomp::SeccompError;

/// Every failure of the runtime core. Messages are one line and name the
/// object (container id, path, spec field) so the CLI can print them as-is.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("invalid container id {id:?}: {reason}")]
    InvalidId { id: String, reason: &'static str },
    #[error("container {0:?} does not exist")]
    NotFound(String),
    #[error("container {0:?} already exists")]
    Exists(String),
    #[error("container {id:?} is {status}: {action} needs it {wanted}")]
    WrongState {
        id: String,
        status: &'static str,
        action: &'static str,
        wanted: &'static str,
    },
    #[error("bundle {path}: {reason}")]
    Bundle { path: PathBuf, reason: String },
    #[error("config.json: {0}")]
    Spec(String),
    #[error(transparent)]
    Seccomp(#[from] SeccompError),
    #[error(transparent)]
    Landlock(#[from] LandlockError),
    #[error(transparent)]
    Rootless(#[from] RootlessError),
    /// A prestart or createRuntime hook failed (hooks.rs).
    #[error(transparent)]
    Hook(#[from] crate::hooks::HookError),
    #[error(transparent)]
    Console(#[from] crate::console::ConsoleError),
    /// An error raised by the container's init just before exec, carried back
    /// by the report channel (or, for `--no-userns`, by the spawned child).
    #[error("{0}")]
    Init(String),
    /// Another runsbx holds the id's create lock.
    #[error("{action} {id}: another runsbx is creating or deleting it")]
    Busy { id: String, action: &'static str },
    /// The state root is not runsbx's own (see `Runtime::ensure_root`).
    #[error(
        "state root {}: must be a directory owned by uid {euid} and writable by nobody else",
        .root.display()
    )]
    UnsafeRoot { root: PathBuf, euid: u32 },
    /// A cgroup operation failed; `err` is libcgroups' message.
    #[error("{context}: {err}")]
    Cgroup { context: String, err: String },
    /// A rootless create found its delegated cgroup already there.
    #[error(
        "rootless: cgroup {0} already exists (another container of this id, or left by a killed \
         runsbx: rmdir it once empty)"
    )]
    CgroupExists(String),
    /// `pause`/`resume` of a container made without a cgroup.
    #[error(
        "container {id:?} has no cgroup to {what} (made by a rootless runsbx without a delegated \
         cgroup, or a foreground run of a bundle without linux.resources and linux.cgroupsPath: \
         give it a cgroupsPath to have one; see `run` in docs/runsbx.1.md and docs/rootless.md)"
    )]
    NoCgroup { id: String, what: &'static str },
    /// A cgroup-free create whose init is not PID 1 of its own namespace.
    #[error(
        "init is not PID 1 of a pid namespace of its own, but config.json asked for one when \
         runsbx checked it (changed meanwhile?); not running without a cgroup"
    )]
    NotNamespaceInit,
    #[error("kill {0}: no pid in state")]
    NoPid(String),
    #[error("container {0:?}: init still alive 5 s after SIGKILL; not deleting")]
    StillAlive(String),
    /// A libcontainer failure with the detail its forked processes logged
    /// (initlog.rs).
    #[error("{message}: {detail}")]
    Logged { message: String, detail: String },
    /// /proc said something runsbx cannot use (pidns.rs).
    #[error("{0}")]
    Proc(String),
    /// A mount step runsbx makes itself failed (prebind.rs).
    #[error("{context}: {} ({err:?})", .err.desc())]
    Mount { context: String, err: nix::Error },
    /// `--no-userns` refused (direct.rs).
    #[error("--no-userns: {0}; not running")]
    Direct(String),
    // The causes below are rendered into the message rather than exposed as
    // `source()`, so that printing the error chain does not repeat them.
    #[error("{}{}", prefix(.context), chain(.err))]
    Libcontainer {
        context: String,
        err: LibcontainerError,
    },
    #[error("{context}: {err}")]
    Io {
        context: String,
        err: std::io::Error,
    },
    #[error("{context}: {}", .err.desc())]
    Sys { context: String, err: nix::Error },
}

pub type Result<T> = std::result::Result<T, RuntimeError>;

/// Why rootless runsbx could not enter, join or use its shim.
#[derive(Debug, thiserror::Error)]
pub enum RootlessError {
    /// The kernel refused the user namespace ([`crate::rootless::refusal`] says why).
    #[error("{0}")]
    Refused(String),
    /// A later step of entering the shim failed; `hint` names a likely LSM.
    #[error("rootless: user namespace: {what}: {}{hint}", .errno.desc())]
    Step {
        what: &'static str,
        errno: nix::errno::Errno,
        hint: String,
    },
    /// The container's recorded cgroup is not usable.
    #[error("rootless: cgroup: {0}")]
    Cgroup(crate::delegation::DelegationError),
    #[error(
        "rootless: the container's user namespace was not made by a rootless runsbx of uid {uid}; \
         exec it as the user that created it"
    )]
    NotOurs { uid: u32 },
    /// `exec` as root could not join the container's user namespace.
    #[error("exec: {what}: {}; not running", .errno.desc())]
    Join {
        what: &'static str,
        errno: nix::errno::Errno,
    },
    #[error("rootless: not in runsbx's user namespace (internal error); not running")]
    NotInShim,
}

impl RuntimeError {
    pub fn io(context: impl Into<String>, err: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            err,
        }
    }

    pub fn sys(context: impl Into<String>, err: nix::Error) -> Self {
        Self::Sys {
            context: context.into(),
            err,
        }
    }

    pub fn cgroup(context: impl Into<String>, err: impl std::fmt::Display) -> Self {
        Self::Cgroup {
            context: context.into(),
            err: err.to_string(),
        }
    }

    pub fn lc(context: impl Into<String>, err: LibcontainerError) -> Self {
        Self::Libcontainer {
            context: context.into(),
            err,
        }
    }
}

fn prefix(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!("{context}: ")
    }
}

/// libcontainer's errors are layered and their top-level text is often
/// generic ("io error"); the useful part is in the sources. Joins the chain,
/// skipping links that only repeat what the next one says.
fn chain(err: &LibcontainerError) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&dyn std::error::Error> = Some(err);
    while let Some(e) = cur {
        let text = e.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = e.source();
    }
    let text = parts.join(": ");
    // An error from the container's init arrives wrapped in libcontainer's
    // boilerplate; the text after its last marker is the real cause.
    const INIT_MARKER: &str = "error in executing process : ";
    match text.rfind(INIT_MARKER) {
        Some(i) => text[i + INIT_MARKER.len()..].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variants that replaced `Init(format!(..))` print what it printed.
    #[test]
    fn typed_errors_keep_their_messages() {
        let id = "c1";
        let cases = [
            (
                RuntimeError::Busy {
                    id: id.into(),
                    action: "delete",
                },
                format!("delete {id}: another runsbx is creating or deleting it"),
            ),
            (
                RuntimeError::UnsafeRoot {
                    root: "/run/x".into(),
                    euid: 7,
                },
                "state root /run/x: must be a directory owned by uid 7 and writable by nobody else"
                    .into(),
            ),
            (
                RuntimeError::cgroup(format!("kill {id}: thaw"), "EBUSY"),
                format!("kill {id}: thaw: EBUSY"),
            ),
            (
                RuntimeError::CgroupExists("/a/b".into()),
                "rootless: cgroup /a/b already exists (another container of this id, or left by a \
                 killed runsbx: rmdir it once empty)"
                    .into(),
            ),
            (
                RuntimeError::NoCgroup {
                    id: id.into(),
                    what: "freeze it",
                },
                format!(
                    "container {id:?} has no cgroup to freeze it (made by a rootless runsbx without \
                     a delegated cgroup, or a foreground run of a bundle without linux.resources \
                     and linux.cgroupsPath: give it a cgroupsPath to have one; see `run` in \
                     docs/runsbx.1.md and docs/rootless.md)"
                ),
            ),
            (
                RuntimeError::NotNamespaceInit,
                "init is not PID 1 of a pid namespace of its own, but config.json asked for one \
                 when runsbx checked it (changed meanwhile?); not running without a cgroup"
                    .into(),
            ),
            (
                RuntimeError::NoPid(id.into()),
                format!("kill {id}: no pid in state"),
            ),
            (
                RuntimeError::StillAlive(id.into()),
                format!("container {id:?}: init still alive 5 s after SIGKILL; not deleting"),
            ),
            (
                RuntimeError::Logged {
                    message: "m".into(),
                    detail: "d".into(),
                },
                "m: d".into(),
            ),
            (
                RuntimeError::Mount {
                    context: "mounts[2]".into(),
                    err: nix::errno::Errno::EPERM,
                },
                "mounts[2]: Operation not permitted (EPERM)".into(),
            ),
            (
                RuntimeError::Direct("x".into()),
                "--no-userns: x; not running".into(),
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }
}
