//! wait4(2): reaping a child together with its resource usage (peak RSS,
//! CPU time), which waitpid does not return.

use std::io;
use std::time::Duration;

use nix::unistd::Pid;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Peak resident set size over the process's life, in bytes.
    pub max_rss: u64,
    pub user: Duration,
    pub system: Duration,
}

/// A reaped child: its raw wait status and usage.
#[derive(Debug, Clone, Copy)]
pub struct Reaped {
    pub status: i32,
    pub usage: Usage,
}

fn tv(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

/// Reaps `pid` if it has ended (or waits for it when `block`); `None` while
/// it still runs. Stopped/continued notifications are not requested.
pub fn wait4(pid: Pid, block: bool) -> io::Result<Option<Reaped>> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: status and ru point to live locals for the duration of the call.
        let rc = unsafe { libc::wait4(pid.as_raw(), &mut status, flags, &mut ru) };
        if rc == 0 {
            return Ok(None);
        }
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(err);
        }
        return Ok(Some(Reaped {
            status,
            usage: Usage {
                max_rss: (ru.ru_maxrss.max(0) as u64) * 1024,
                user: tv(ru.ru_utime),
                system: tv(ru.ru_stime),
            },
        }));
    }
}
