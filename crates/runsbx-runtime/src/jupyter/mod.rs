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

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use connection::Connection;
use relay::Relay;

#[derive(Debug, thiserror::Error)]
pub enum JupyterError {
    #[error("connection file {path}: {reason}")]
    Connection { path: PathBuf, reason: String },
    #[error("{path} is a unix socket the sandbox could connect to (below {bound}): bind a path without sockets")]
    Socket { path: PathBuf, bound: PathBuf },
    #[error("{bound}: more than {limit} entries to check for unix sockets: bind a narrower path")]
    TooLarge { bound: PathBuf, limit: usize },
    #[error("the kernel's socket {} would be longer than a unix socket path may be ({} bytes): use a shorter --workdir", .0.display(), connection::MAX_SOCKET_PATH)]
    PathTooLong(PathBuf),
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

/// The kernel's connection file, relative to its cwd (the workdir): the
/// argument runsbx gives the kernel's `-f`.
pub const KERNEL_FILE: &str = "runsbx-kernel.json";

/// Everything before the container is created: the reach check over
/// `workdir` and `ro_binds` (the caller leaves out the system
/// directories), the client's endpoints bound, and the kernel's connection file written into
/// the workdir, readable by the workdir's owner (the workload) alone.
pub fn stage(
    conn: &Connection,
    workdir: &Path,
    ro_binds: &[PathBuf],
) -> Result<Relay, JupyterError> {
    for s in connection::kernel_sockets(workdir) {
        if s.as_os_str().len() > connection::MAX_SOCKET_PATH {
            return Err(JupyterError::PathTooLong(s));
        }
    }
    let mut roots = vec![workdir.to_path_buf()];
    roots.extend(ro_binds.iter().cloned());
    reach::no_sockets(&roots, reach::MAX_ENTRIES)?;
    let relay = Relay::bind(conn, workdir)?;
    let file = workdir.join(KERNEL_FILE);
    let text = serde_json::to_string(&conn.for_kernel(workdir)).expect("plain JSON");
    let write = || -> std::io::Result<()> {
        let owner = fs::metadata(workdir)?;
        fs::write(&file, text)?;
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600))?;
        std::os::unix::fs::chown(&file, Some(owner.uid()), Some(owner.gid()))
    };
    write().map_err(|e| JupyterError::io(format!("writing {}", file.display()), e))?;
    Ok(relay)
}
