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
    Rootless(#[from] crate::rootless::RootlessError),
    #[error(transparent)]
    Executable(#[from] crate::explain::ExecutableError),
    /// An error raised by the container's init just before exec, carried back
    /// by the report channel.
    #[error("{0}")]
    Init(String),
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
