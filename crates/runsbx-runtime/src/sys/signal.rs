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
/// would have had. A signal the caller ignores (`nohup`: SIGHUP) is left
/// ignored, as Go leaves it, so the workload inherits that too.
pub fn end_on_terminating_signals() -> std::io::Result<()> {
    for sig in ENDING {
        // SAFETY: zeroed sigactions are valid; the handler only calls _exit.
        let (mut act, mut old): (libc::sigaction, libc::sigaction) =
            unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        // SAFETY: a null new action only reads the current one into `old`.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if old.sa_sigaction == libc::SIG_IGN {
            continue;
        }
        act.sa_sigaction = end as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: `act` is a valid sigaction for the call; the old one is
        // not asked for.
        if unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
