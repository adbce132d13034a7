//! Loopback in a fresh network namespace: runc and crun bring `lo` up, so
//! a program in the container can reach 127.0.0.1 (a local server and its
//! client in one container work; a closed port answers ECONNREFUSED, not
//! ENETUNREACH). A joined network namespace is left as its owner set it.
//!
//! Done from the host side after libcontainer's init is ready and before
//! `start`: init has dropped its capabilities by the time runsbx's Executor
//! runs, and libcontainer offers no hook before the drop. No workload code
//! runs yet, so nothing in the container can act on the short-lived child
//! that joins its namespaces. Like runc, a failure fails `create`.

use std::fs::File;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;

use libcontainer::oci_spec::runtime::{LinuxNamespaceType, Spec};
use nix::unistd::Pid;

use crate::error::{Result, RuntimeError};
use crate::spec::facts;

/// Brings `lo` up in the network namespace of `init` when the spec gives
/// the container a new one; the error names the step that failed.
pub fn loopback_up(spec: &Spec, init: Pid) -> Result<()> {
    if !facts::is_new_namespace(spec, LinuxNamespaceType::Network) {
        return Ok(());
    }
    let (net, user) = namespaces(init, "loopback")?;
    crate::sys::netdev::set_up_in(user.as_ref().map(|u| u.as_fd()), net.as_fd(), "lo").map_err(
        |f| RuntimeError::Sys {
            context: format!(
                "bringing up loopback in the container's network namespace: {}",
                f.step
            ),
            err: f.errno,
        },
    )
}

/// A TCP listener on `127.0.0.1:port` in the network namespace of `init`,
/// served from runsbx's own (`--allow-net`'s proxy). Call it once `lo` is
/// up and before the workload starts, so the port listens from its first
/// instruction.
pub fn listen_in(init: Pid, port: u16) -> Result<TcpListener> {
    let (net, user) = namespaces(init, "proxy")?;
    let fd = crate::sys::netdev::listen_in(
        user.as_ref().map(|u| u.as_fd()),
        net.as_fd(),
        Ipv4Addr::LOCALHOST,
        port,
    )
    .map_err(|f| RuntimeError::Sys {
        context: format!(
            "listening on 127.0.0.1:{port} in the container's network namespace: {}",
            f.step
        ),
        err: f.errno,
    })?;
    Ok(TcpListener::from(fd))
}

/// `init`'s network namespace, and its user namespace when it is not
/// runsbx's own (rootless, or a userns spec): setns to one's own fails with
/// EINVAL. `what` prefixes the errors.
fn namespaces(init: Pid, what: &str) -> Result<(File, Option<File>)> {
    let open = |kind: &str| {
        let path = format!("/proc/{init}/ns/{kind}");
        File::open(&path).map_err(|e| RuntimeError::io(format!("{what}: open {path}"), e))
    };
    let net = open("net")?;
    let user = open("user")?;
    let own = std::fs::metadata("/proc/self/ns/user")
        .map_err(|e| RuntimeError::io(format!("{what}: stat /proc/self/ns/user"), e))?;
    let theirs = user
        .metadata()
        .map_err(|e| RuntimeError::io(format!("{what}: stat /proc/{init}/ns/user"), e))?;
    let join_user = (own.dev(), own.ino()) != (theirs.dev(), theirs.ino());
    Ok((net, join_user.then_some(user)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_namespaces(list: serde_json::Value) -> Spec {
        serde_json::from_value(json!({
            "ociVersion": "1.0.2",
            "root": {"path": "rootfs"},
            "linux": {"namespaces": list},
        }))
        .unwrap()
    }

    // No process has pid i32::MAX: a step that looked at /proc would fail.
    const NO_PID: Pid = Pid::from_raw(i32::MAX);

    #[test]
    fn a_joined_or_host_netns_is_not_touched() {
        let joined = with_namespaces(json!([{"type": "network", "path": "/proc/1/ns/net"}]));
        assert!(loopback_up(&joined, NO_PID).is_ok());
        let host = with_namespaces(json!([{"type": "pid"}]));
        assert!(loopback_up(&host, NO_PID).is_ok());
    }

    #[test]
    fn a_new_netns_whose_init_is_gone_fails_naming_the_step() {
        let new = with_namespaces(json!([{"type": "network"}]));
        let err = loopback_up(&new, NO_PID).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("loopback: open /proc/{NO_PID}/ns/net: ")),
            "{err}"
        );
    }
}
