//! Bringing a network device up inside another process's network namespace:
//! setns(2) into its user and network namespaces in a forked child, then
//! ioctl(SIOCSIFFLAGS). The child does only syscalls (no allocation, no
//! locks), so forking from a threaded runsbx is safe, and it exits at once:
//! the caller's own namespaces never change.

use std::os::fd::{AsRawFd, BorrowedFd};

use nix::sched::CloneFlags;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

/// The step that failed in the child, with its errno.
#[derive(Debug, PartialEq, Eq)]
pub struct Failed {
    pub step: &'static str,
    pub errno: nix::errno::Errno,
}

// The child's steps; it sends the failed one (1-based, 0 for none) and
// its errno back through a pipe.
const STEPS: [&str; 5] = [
    "setns to the user namespace",
    "setns to the network namespace",
    "socket",
    "ioctl(SIOCGIFFLAGS)",
    "ioctl(SIOCSIFFLAGS)",
];

/// Sets IFF_UP on `dev` in the network namespace `net`, after joining the
/// user namespace `user` when given (rootless: only there does the caller
/// hold CAP_NET_ADMIN over that network namespace).
pub fn set_up_in(user: Option<BorrowedFd>, net: BorrowedFd, dev: &str) -> Result<(), Failed> {
    let mut ifr: libc::ifreq = unsafe_zeroed_ifreq();
    let name = dev.as_bytes();
    assert!(name.len() < libc::IFNAMSIZ, "device name too long");
    for (d, s) in ifr.ifr_name.iter_mut().zip(name) {
        *d = *s as libc::c_char;
    }
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|errno| Failed {
        step: "pipe",
        errno,
    })?;
    // SAFETY: the child below calls only async-signal-safe syscalls on
    // memory prepared before the fork, then _exit; it never returns.
    match unsafe { fork() }.map_err(|errno| Failed {
        step: "fork",
        errno,
    })? {
        ForkResult::Child => {
            drop(rd);
            let (step, errno) = match child(user, net, &mut ifr) {
                Ok(()) => (0u8, 0i32),
                Err((step, e)) => (step, e as i32),
            };
            let mut msg = [0u8; 5];
            msg[0] = step;
            msg[1..].copy_from_slice(&errno.to_ne_bytes());
            // SAFETY: write(2) and _exit(2) on a valid fd and buffer.
            unsafe {
                libc::write(wr.as_raw_fd(), msg.as_ptr().cast(), msg.len());
                libc::_exit(0)
            }
        }
        ForkResult::Parent { child } => {
            drop(wr);
            let mut msg = [0u8; 5];
            let got = nix::unistd::read(rd.as_raw_fd(), &mut msg);
            let status = waitpid(child, None);
            let failed = |step, errno| Err(Failed { step, errno });
            match (got, status) {
                (Ok(5), Ok(WaitStatus::Exited(_, 0))) if msg[0] == 0 => Ok(()),
                (Ok(5), _) if msg[0] != 0 => {
                    let step = STEPS[usize::from(msg[0] - 1).min(STEPS.len() - 1)];
                    let errno = i32::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]);
                    failed(step, nix::errno::Errno::from_raw(errno))
                }
                (Err(e), _) => failed("read the child's answer", e),
                (_, Err(e)) => failed("wait for the child", e),
                _ => failed("the child", nix::errno::Errno::ECHILD),
            }
        }
    }
}

fn unsafe_zeroed_ifreq() -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    unsafe { std::mem::zeroed() }
}

/// The child's work; the step number (1-based into STEPS) on failure.
fn child(
    user: Option<BorrowedFd>,
    net: BorrowedFd,
    ifr: &mut libc::ifreq,
) -> Result<(), (u8, nix::errno::Errno)> {
    if let Some(user) = user {
        nix::sched::setns(user, CloneFlags::CLONE_NEWUSER).map_err(|e| (1, e))?;
    }
    nix::sched::setns(net, CloneFlags::CLONE_NEWNET).map_err(|e| (2, e))?;
    // SAFETY: socket(2) with constant arguments.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return Err((3, nix::errno::Errno::last()));
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write the ifreq they are
    // given, which lives for the whole call.
    if unsafe { libc::ioctl(sock, libc::SIOCGIFFLAGS, ifr as *mut libc::ifreq) } < 0 {
        return Err((4, nix::errno::Errno::last()));
    }
    // SAFETY: ifr_flags is the union member SIOCGIFFLAGS just filled.
    unsafe { ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    // SAFETY: as above.
    if unsafe { libc::ioctl(sock, libc::SIOCSIFFLAGS, ifr as *mut libc::ifreq) } < 0 {
        return Err((5, nix::errno::Errno::last()));
    }
    Ok(())
}
