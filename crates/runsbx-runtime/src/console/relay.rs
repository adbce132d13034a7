//! The foreground relay between the caller's stdio and a container's pty
//! master: stdin -> master, master -> stdout, on a thread of its own, until
//! the workload has ended and the master reads EOF (EIO once no process
//! holds the slave). While it runs, a caller's stdin that is a terminal is
//! in raw mode, so that every key (^C, ^Z, ^D) reaches the container's pty,
//! whose line discipline turns it into the workload's signal or EOF; it is
//! put back when the relay ends, whichever way the run ends (not on
//! SIGKILL of runsbx: nothing runs then). The window size goes to the pty
//! at the start and again on each SIGWINCH (`resizer`).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg, Termios};

use super::ConsoleError;
use crate::sys::fds::borrow;

/// After the workload ended, how long the relay waits for more output
/// before it stops: EIO normally comes at once, but a process outside the
/// container's pid namespace may still hold the slave.
const IDLE_AT_END: Duration = Duration::from_millis(500);
/// And how long it relays at most once the workload ended.
const DRAIN_MAX: Duration = Duration::from_secs(3);
/// Input read ahead of what the workload takes, at most.
const PENDING_MAX: usize = 64 * 1024;

/// A running relay; [`Attached::finish`] (or drop) ends it and restores
/// the caller's terminal.
pub struct Attached {
    /// Written to (or closed) to tell the relay the workload ended.
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
    /// A second descriptor of the master, for window sizes.
    master: OwnedFd,
    /// Dropped after the relay thread has ended (field order).
    _raw: Option<RawMode>,
}

impl Attached {
    /// Takes over `master`: sizes it as the caller's terminal, puts a
    /// terminal stdin in raw mode, and starts relaying. Called once the
    /// signals runsbx forwards are blocked (Monitor::new), so the thread
    /// inherits the mask and none of them can end runsbx with the terminal
    /// left raw.
    pub fn start(master: OwnedFd) -> Result<Self, ConsoleError> {
        let term = |context| move |err| ConsoleError::Terminal { context, err };
        let own = master
            .try_clone()
            .map_err(term("duplicate the pty master"))?;
        copy_window_size(own.as_fd());
        clear_onlcr(own.as_fd()).map_err(term("clear ONLCR on the pty"))?;
        let raw = RawMode::stdin().map_err(term("raw mode on stdin"))?;
        // Close-on-exec: a hook runsbx runs (poststart) holding the write
        // end would keep the relay from ever hearing that the run ended.
        let (stop_r, stop_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| {
            ConsoleError::Terminal {
                context: "pipe",
                err: e.into(),
            }
        })?;
        let thread = std::thread::Builder::new()
            .name("pty-relay".into())
            .spawn(move || pump(master, stop_r))
            .map_err(term("start the relay"))?;
        Ok(Self {
            stop: Some(stop_w),
            thread: Some(thread),
            master: own,
            _raw: raw,
        })
    }

    /// What runsbx does on SIGWINCH instead of forwarding it: size the pty
    /// as the caller's terminal now is (the kernel signals the pty's
    /// foreground process group).
    pub fn resizer(&self) -> Result<impl Fn(), ConsoleError> {
        let master = self
            .master
            .try_clone()
            .map_err(|err| ConsoleError::Terminal {
                context: "duplicate the pty master",
                err,
            })?;
        Ok(move || copy_window_size(master.as_fd()))
    }

    /// The workload ended: the relay stops reading stdin (what the caller
    /// types now is the caller's shell's) and relays what is left.
    pub fn workload_ended(&mut self) {
        drop(self.stop.take());
    }

    /// Waits for the relay to have relayed what is left, then restores
    /// the caller's terminal.
    pub fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        // Closing the write end wakes the relay (POLLHUP).
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.end();
    }
}

/// The caller's terminal, for its window size: the first of stdin,
/// stdout, stderr that is one.
fn caller_terminal() -> Option<BorrowedFd<'static>> {
    (0..=2)
        .map(borrow)
        .find(|fd| nix::unistd::isatty(fd.as_raw_fd()).unwrap_or(false))
}

/// Copies the caller's window size to the pty; nothing when the caller has
/// no terminal (the pty keeps 0x0, as for any new pty).
/// The container's side of the pty writes `\n` as it is, not `\r\n`, as
/// under runc (which clears ONLCR on it): the caller's own terminal, raw
/// for the run, or a pipe, gets the workload's bytes unchanged. A master's
/// termios calls act on its slave's settings.
pub(crate) fn clear_onlcr(master: BorrowedFd<'_>) -> std::io::Result<()> {
    let mut t = tcgetattr(master)?;
    t.output_flags.remove(nix::sys::termios::OutputFlags::ONLCR);
    tcsetattr(master, SetArg::TCSANOW, &t)?;
    Ok(())
}

fn copy_window_size(master: BorrowedFd<'_>) {
    if let Some(ws) = caller_terminal().and_then(|t| crate::sys::tty::window_size(t).ok()) {
        if let Err(e) = crate::sys::tty::set_window_size(master, &ws) {
            tracing::debug!("window size to the pty: {e}");
        }
    }
}

/// stdin's terminal settings, put back on drop.
struct RawMode {
    saved: Termios,
}

impl RawMode {
    /// Raw mode on stdin when it is a terminal; `None` when it is not.
    fn stdin() -> std::io::Result<Option<Self>> {
        let stdin = borrow(0);
        if !nix::unistd::isatty(stdin.as_raw_fd()).unwrap_or(false) {
            return Ok(None);
        }
        let saved = tcgetattr(stdin)?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        tcsetattr(stdin, SetArg::TCSANOW, &raw)?;
        Ok(Some(Self { saved }))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Err(e) = tcsetattr(borrow(0), SetArg::TCSANOW, &self.saved) {
            tracing::warn!("could not restore the terminal's settings: {e}");
        }
    }
}

/// The relay loop (see the module doc). The master is non-blocking, so that
/// input the workload does not read never holds up its output.
fn pump(master: OwnedFd, stop: OwnedFd) {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    if let Ok(fl) = fcntl(master.as_raw_fd(), FcntlArg::F_GETFL) {
        let fl = OFlag::from_bits_retain(fl) | OFlag::O_NONBLOCK;
        let _ = fcntl(master.as_raw_fd(), FcntlArg::F_SETFL(fl));
    }
    let (stdin, stdout) = (borrow(0), borrow(1));
    let mut input_open = true;
    let mut output_open = true;
    let mut pending: Vec<u8> = Vec::new();
    let mut ended: Option<Instant> = None;
    let mut buf = [0u8; 16 * 1024];
    let any = PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL;
    loop {
        if ended.is_some_and(|t| t.elapsed() >= DRAIN_MAX) {
            return;
        }
        let mut want = PollFlags::POLLIN;
        if !pending.is_empty() {
            want |= PollFlags::POLLOUT;
        }
        let mut fds = vec![PollFd::new(master.as_fd(), want)];
        let watch_stop = ended.is_none();
        if watch_stop {
            fds.push(PollFd::new(stop.as_fd(), PollFlags::POLLIN));
        }
        let read_input = input_open && ended.is_none() && pending.len() < PENDING_MAX;
        if read_input {
            fds.push(PollFd::new(stdin, PollFlags::POLLIN));
        }
        let timeout = match ended {
            Some(_) => PollTimeout::try_from(IDLE_AT_END).unwrap_or(PollTimeout::MAX),
            None => PollTimeout::NONE,
        };
        match poll(&mut fds, timeout) {
            Ok(0) => return,
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
        let revents: Vec<PollFlags> = fds
            .iter()
            .map(|f| f.revents().unwrap_or(PollFlags::empty()))
            .collect();
        drop(fds);
        if revents[0].intersects(any) {
            match nix::unistd::read(master.as_raw_fd(), &mut buf) {
                // EIO: no process holds the slave any more.
                Ok(0) | Err(Errno::EIO) => return,
                Ok(n) if output_open => output_open = write_all(stdout, &buf[..n]),
                Ok(_) | Err(Errno::EAGAIN) | Err(Errno::EINTR) => {}
                Err(_) => return,
            }
        }
        if revents[0].contains(PollFlags::POLLOUT) {
            match nix::unistd::write(&master, &pending) {
                Ok(n) => drop(pending.drain(..n)),
                Err(Errno::EAGAIN) | Err(Errno::EINTR) => {}
                Err(_) => {
                    pending.clear();
                    input_open = false;
                }
            }
        }
        if watch_stop && revents[1].intersects(any) {
            ended = Some(Instant::now());
        }
        let input = revents.get(if watch_stop { 2 } else { 1 });
        if read_input && input.is_some_and(|r| r.intersects(any)) {
            match nix::unistd::read(stdin.as_raw_fd(), &mut buf) {
                Ok(n) if n > 0 => pending.extend_from_slice(&buf[..n]),
                Err(Errno::EAGAIN) | Err(Errno::EINTR) => {}
                // EOF on stdin: nothing more to send; the workload runs on,
                // as under runc (a pty has no EOF to pass but ^D).
                _ => input_open = false,
            }
        }
    }
}

/// Writes all of `bytes` to the caller's stdout, waiting when it is
/// non-blocking and full; false once it cannot take more (closed, EPIPE).
fn write_all(out: BorrowedFd<'_>, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        match nix::unistd::write(out, bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut fds = [PollFd::new(out, PollFlags::POLLOUT)];
                let _ = poll(&mut fds, PollTimeout::NONE);
            }
            Err(_) => return false,
        }
    }
    true
}
