//! Hosting a Jupyter kernel in `runsbx sandbox --jupyter FILE`.
//!
//! The client writes a connection file (usually TCP ports on 127.0.0.1) and
//! expects a kernel to serve five ZMQ channels there. The sandbox has its own
//! network namespace, so the kernel cannot listen where the client looks.
//! Instead runsbx:
//! 1. writes the kernel a connection file of its own in the workdir, with the
//!    same key and the `ipc` transport: five unix sockets in the workdir
//!    ([`connection`]);
//! 2. checks that no other unix socket is visible to the sandbox, since the
//!    kernel profile allows `connect` ([`reach`]);
//! 3. listens on the client's endpoints itself and relays each connection,
//!    byte for byte, to the kernel's socket ([`relay`]). ZMTP runs end to
//!    end between client and kernel (the HMAC key never leaves them).
//!
//! The seccomp side is `runsbx_policy::profile::kernel_seccomp`.
pub mod connection;
pub mod kernelspec;
pub mod reach;
pub mod relay;

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum JupyterError {
    #[error("connection file {path}: {reason}")]
    Connection { path: PathBuf, reason: String },
    #[error("{path} is a unix socket the sandbox could connect to (below {bound}): bind a path without sockets")]
    Socket { path: PathBuf, bound: PathBuf },
    #[error("{bound}: more than {limit} entries to check for unix sockets: bind a narrower path")]
    TooLarge { bound: PathBuf, limit: usize },
    #[error("--python {python}: {reason}")]
    Python { python: PathBuf, reason: String },
    #[error("{context}: {err}")]
    Io {
        context: String,
        err: std::io::Error,
    },
}

impl JupyterError {
    fn io(context: impl Into<String>, err: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            err,
        }
    }
}
