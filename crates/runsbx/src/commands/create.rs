use anyhow::Result;
use runsbx_runtime::{CreateOptions, PidfdSocket};

use super::Ctx;
use crate::cli::{Create, CreateFlags};

pub fn options(id: &str, f: &CreateFlags, detach: bool) -> CreateOptions {
    CreateOptions {
        id: id.to_string(),
        bundle: f.bundle.clone(),
        pid_file: f.pid_file.clone(),
        console_socket: f.console_socket.clone(),
        preserve_fds: f.preserve_fds,
        no_pivot: f.no_pivot,
        detach,
        stdio: None,
        die_with_parent: false,
        foreground: false,
        log_denials: false,
        loopback_down: false,
        keep_affinity: false,
    }
}

/// `--pidfd-socket`, connected before anything is made (runc's order).
pub fn pidfd_socket(f: &CreateFlags) -> Result<Option<PidfdSocket>> {
    Ok(f.pidfd_socket
        .as_deref()
        .map(PidfdSocket::connect)
        .transpose()?)
}

pub fn run(ctx: &Ctx, a: Create) -> Result<()> {
    let pidfd = pidfd_socket(&a.flags)?;
    let c = ctx.rt.create(options(&a.id, &a.flags, true))?.container;
    if let (Some(sock), Some(pid)) = (&pidfd, c.pid()) {
        if let Err(e) = sock.send(pid) {
            // Nothing left behind: the caller never got the container.
            let _ = ctx.rt.delete(&a.id, true);
            return Err(e.into());
        }
    }
    Ok(())
}
