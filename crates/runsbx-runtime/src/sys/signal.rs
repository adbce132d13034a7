//! Signal dispositions of a container's init before it execs.

/// The signals whose default action ends a process (and which a program
/// commonly sends to stop one): SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
/// SIGUSR2.
const ENDING: [libc::c_int; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

extern "C" fn end(sig: libc::c_int) {
    // SAFETY: _exit is async-signal-safe and touches no memory of ours.
    unsafe { libc::_exit(128 + sig) }
}

/// Makes the calling process end on the `ENDING` signals, through a
/// handler: the init of a pid namespace ignores any signal it has no
/// handler for (but SIGKILL and SIGSTOP from an ancestor namespace), so a
/// created container's init, waiting for `start`, would outlive `kill ID
/// TERM` (runc's init, a Go program, has handlers). execve resets a handled
/// signal to its default: the workload starts with the dispositions it
/// would have had.
pub fn end_on_terminating_signals() -> std::io::Result<()> {
    for sig in ENDING {
        // SAFETY: a zeroed sigaction is valid; the handler only calls _exit.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = end as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: `act` is a valid sigaction for the call; the old one is
        // not asked for.
        if unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
