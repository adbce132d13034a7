use anyhow::Result;
use runsbx_runtime::CreateOptions;

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

pub fn run(ctx: &Ctx, a: Create) -> Result<()> {
    let c = ctx.rt.create(options(&a.id, &a.flags, true))?;
    if let (Some(sock), Some(pid)) = (&a.flags.pidfd_socket, c.pid()) {
        runsbx_runtime::send_pidfd(sock, pid)?;
    }
    Ok(())
}
