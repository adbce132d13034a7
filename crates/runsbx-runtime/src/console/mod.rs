//! The terminal of a container whose `process.terminal` is true.
//!
//! Detached (`create`, `run --detach`), the caller names a console socket
//! and libcontainer sends the pty master there; without one there is no
//! one to send it to, and runsbx refuses before it touches anything
//! ([`check`]). In the foreground (`run`), runsbx makes the console socket
//! itself ([`ConsoleSocket`]), takes the master, and relays between it and
//! its own stdio (relay.rs), as runc does.
//!
//! Stops: the caller's terminal going into the container as its stdio. A
//! workload holding the caller's terminal can inject input into the
//! caller's shell (TIOCSTI where the kernel allows it), read what the user
//! types after the run, and change the terminal's settings for good. With
//! a pty of the container's own devpts, the workload sees only that pty;
//! the caller's terminal stays in runsbx, which copies bytes.

mod relay;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) use relay::clear_onlcr;
pub use relay::Attached;

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error(
        "process.terminal is true: runsbx cannot allocate a tty when it detaches without \
         --console-socket"
    )]
    NeedsSocket,
    #[error(
        "--console-socket: used only for a terminal (process.terminal true) when runsbx \
         detaches (create, run --detach, exec --detach)"
    )]
    SocketUnused,
    #[error("console socket {}: {err}", path.display())]
    Socket { path: PathBuf, err: std::io::Error },
    #[error("console socket: {0}")]
    Master(String),
    #[error("terminal: {context}: {err}")]
    Terminal {
        context: &'static str,
        err: std::io::Error,
    },
}

/// How long the pty master may take to arrive once libcontainer's build has
/// returned: init sends it before it reports ready, so it is normally there.
const MASTER_WAIT: Duration = Duration::from_secs(5);

/// The console-socket rules of runc (its `checkTerminal`), checked before
/// anything is made: a terminal needs a console socket when runsbx
/// detaches, and a console socket is for a detached run with a terminal
/// only (in the foreground runsbx makes its own).
pub fn check(terminal: bool, detach: bool, socket_given: bool) -> Result<(), ConsoleError> {
    match (terminal, detach, socket_given) {
        (true, true, false) => Err(ConsoleError::NeedsSocket),
        (true, true, true) | (_, _, false) => Ok(()),
        _ => Err(ConsoleError::SocketUnused),
    }
}

/// A console socket runsbx listens on for a foreground run's pty master,
/// in a directory of its own (mode 0700) in the state root, which is
/// root's (or the rootless caller's) and refused when anyone else can
/// write it (`ensure_root`). Removed on drop.
pub struct ConsoleSocket {
    dir: tempfile::TempDir,
    listener: UnixListener,
}

impl ConsoleSocket {
    pub fn listen(state_root: &Path) -> Result<Self, ConsoleError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |err| ConsoleError::Socket { path, err }
        };
        let dir = tempfile::Builder::new()
            .prefix(".console-")
            .tempdir_in(state_root)
            .map_err(err(state_root))?;
        let path = dir.path().join("sock");
        let listener = UnixListener::bind(&path).map_err(err(&path))?;
        // Close-on-exec (std's default), so no hook or child inherits it.
        Ok(Self { dir, listener })
    }

    /// Where libcontainer is to connect.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// The pty master init sent, once libcontainer's build has returned.
    pub fn receive(self) -> Result<OwnedFd, ConsoleError> {
        let master = |m: &str| ConsoleError::Master(m.to_string());
        let fd = self.listener.as_fd();
        if !readable(fd, MASTER_WAIT) {
            return Err(master("init never connected"));
        }
        let (conn, _) = self.listener.accept().map_err(|err| ConsoleError::Socket {
            path: self.path(),
            err,
        })?;
        // Stops: a master planted by another process that reached the
        // socket: only a connection made by this process (libcontainer's
        // connect, in build) is taken. The directory's mode keeps others
        // out already; this holds if it did not.
        let cred = nix::sys::socket::getsockopt(&conn, nix::sys::socket::sockopt::PeerCredentials)
            .map_err(|e| master(&format!("peer credentials: {e}")))?;
        if cred.pid() != std::process::id() as i32 {
            return Err(master(&format!(
                "connected by pid {}, not by runsbx",
                cred.pid()
            )));
        }
        if !readable(conn.as_fd(), MASTER_WAIT) {
            return Err(master("init sent no pty master"));
        }
        let got = recv_fd(conn.as_fd()).map_err(|e| master(&format!("receive: {e}")))?;
        let got = got.ok_or_else(|| master("init closed it without sending a pty master"))?;
        // Stops: relaying the caller's terminal to something that is not a
        // pty master (only a master answers TIOCGPTN).
        crate::sys::tty::pty_number(got.as_fd())
            .map_err(|e| master(&format!("what init sent is not a pty master: {e}")))?;
        Ok(got)
    }
}

/// Starts relaying `master`, when there is one, with `monitor` resizing
/// the pty on SIGWINCH. Called once `monitor` exists (the signals runsbx
/// forwards are blocked) and before the workload runs.
pub fn relay(
    master: Option<OwnedFd>,
    monitor: crate::monitor::Monitor,
) -> Result<(crate::monitor::Monitor, Option<Attached>), ConsoleError> {
    let Some(master) = master else {
        return Ok((monitor, None));
    };
    let tty = Attached::start(master)?;
    Ok((monitor.on_winch(tty.resizer()?), Some(tty)))
}

/// Whether `fd` polls readable within `wait`.
fn readable(fd: std::os::fd::BorrowedFd<'_>, wait: Duration) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX);
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    matches!(poll(&mut fds, timeout), Ok(n) if n > 0)
}

/// One descriptor passed with SCM_RIGHTS on `conn` (close-on-exec on
/// arrival, so no child runsbx forks inherits it); `None` at EOF.
fn recv_fd(conn: std::os::fd::BorrowedFd<'_>) -> nix::Result<Option<OwnedFd>> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
    let mut buf = [0u8; 64];
    let mut iov = [std::io::IoSliceMut::new(&mut buf)];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let msg = recvmsg::<()>(
        conn.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    let mut fds = Vec::new();
    for c in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(got) = c {
            fds.extend(got.into_iter().map(crate::sys::fds::own));
        }
    }
    // More than one: the extras are closed as `fds` drops.
    Ok(fds.into_iter().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runcs_console_socket_rules() {
        // (terminal, detach, socket given) -> allowed
        for (t, d, s, ok) in [
            (true, true, false, false),
            (true, true, true, true),
            (true, false, false, true),
            (true, false, true, false),
            (false, true, true, false),
            (false, false, true, false),
            (false, true, false, true),
            (false, false, false, true),
        ] {
            assert_eq!(check(t, d, s).is_ok(), ok, "{t} {d} {s}");
        }
    }

    #[test]
    fn a_pty_master_comes_through_and_anything_else_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let pty = nix::pty::openpty(None, None).unwrap();
        for (fd, ok) in [(pty.master.as_fd(), true), (pty.slave.as_fd(), false)] {
            let sock = ConsoleSocket::listen(root.path()).unwrap();
            let conn = std::os::unix::net::UnixStream::connect(sock.path()).unwrap();
            nix::sys::socket::sendmsg::<()>(
                conn.as_raw_fd(),
                &[std::io::IoSlice::new(b"/dev/ptmx")],
                &[nix::sys::socket::ControlMessage::ScmRights(&[
                    fd.as_raw_fd()
                ])],
                nix::sys::socket::MsgFlags::empty(),
                None,
            )
            .unwrap();
            let got = sock.receive();
            assert_eq!(got.is_ok(), ok, "{:?}", got.err());
            if let Ok(m) = got {
                let flags = nix::fcntl::fcntl(m.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFD);
                assert_eq!(flags.unwrap() & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
            }
        }
        // The socket's directory goes with it.
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
}
