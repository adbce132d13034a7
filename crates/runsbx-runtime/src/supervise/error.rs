use std::os::fd::RawFd;
use std::path::PathBuf;

use crate::error::RuntimeError;

/// Why a supervised run, its set-up or its report failed. Each message is
/// one line; the CLI prints the chain after its own prefix.
#[derive(Debug, thiserror::Error)]
pub enum SuperviseError {
    /// Boxed: a RuntimeError is large, and most runs end without one.
    #[error(transparent)]
    Runtime(Box<RuntimeError>),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("libcontainer reported no pid for init")]
    NoPid,
    /// What guard::posture found off, one item each.
    #[error("posture check failed, not running: {}", .0.join("; "))]
    Posture(Vec<String>),
    /// guard::posture could not read the process.
    #[error("{0}")]
    PostureUnreadable(String),
    #[error("--status-fd {0}: must not be stdin, stdout or stderr")]
    StatusFdStdio(RawFd),
    #[error("--status-fd {fd}: not an open descriptor")]
    StatusFd {
        fd: RawFd,
        #[source]
        source: std::io::Error,
    },
    #[error("--report {}", path.display())]
    Report {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--pid-file {}", path.display())]
    PidFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A refusal or failure that is its own one-line message (a relative
    /// `--workdir`, a `--bundle` without root.path, a mount point ...).
    #[error("{0}")]
    Message(String),
}

impl From<RuntimeError> for SuperviseError {
    fn from(e: RuntimeError) -> Self {
        Self::Runtime(Box::new(e))
    }
}

/// The error and its causes on one line, `a: b: c`, as the CLI prints a
/// chain (and as `--report` has always recorded it).
pub fn render(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_joins_the_chain_as_the_cli_prints_it() {
        let e = SuperviseError::Report {
            path: "/r.json".into(),
            source: std::io::Error::from_raw_os_error(libc::ELOOP),
        };
        assert!(render(&e).starts_with("--report /r.json: Too many levels of symbolic links"));
        let e = SuperviseError::Posture(vec!["seccomp off".into(), "caps kept".into()]);
        assert_eq!(
            render(&e),
            "posture check failed, not running: seccomp off; caps kept"
        );
    }

    #[test]
    fn the_status_fd_refuses_stdio() {
        for fd in 0..=2 {
            let e = crate::supervise::status_file(fd).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("--status-fd {fd}: must not be stdin, stdout or stderr")
            );
        }
    }
}
