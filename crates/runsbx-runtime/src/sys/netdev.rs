//! Work inside another process's network namespace: setns(2) into its user
//! and network namespaces in a forked child, then either bring a device up
//! (ioctl(SIOCSIFFLAGS)) or make a listening TCP socket there and pass it
//! back over a unix socket pair (SCM_RIGHTS). The child does only syscalls
//! (no allocation, no locks), so forking from a threaded runsbx is safe,
//! and it exits at once: the caller's own namespaces never change. A socket
//! keeps the network namespace it was made in, so the caller then serves,
//! from its own namespaces, a port that exists only in the container's.

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::sched::CloneFlags;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

/// The step that failed in the child, with its errno.
#[derive(Debug, PartialEq, Eq)]
pub struct Failed {
    pub step: &'static str,
    pub errno: Errno,
}

// The child's steps; it sends the failed one (1-based, 0 for none) and
// its errno back. 1 and 2 are the setns steps every job starts with.
const SETNS: [&str; 2] = [
    "setns to the user namespace",
    "setns to the network namespace",
];
const UP: [&str; 3] = ["socket", "ioctl(SIOCGIFFLAGS)", "ioctl(SIOCSIFFLAGS)"];
const LISTEN: [&str; 3] = ["socket", "bind", "listen"];

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
    in_netns(user, net, &UP, || bring_up(&mut ifr)).map(drop)
}

/// A TCP socket listening on `addr:port` in the network namespace `net`
/// (joined as [`set_up_in`] does), close-on-exec.
pub fn listen_in(
    user: Option<BorrowedFd>,
    net: BorrowedFd,
    addr: Ipv4Addr,
    port: u16,
) -> Result<OwnedFd, Failed> {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(addr).to_be(),
        },
        sin_zero: [0; 8],
    };
    in_netns(user, net, &LISTEN, || listen(&sin))?.ok_or(Failed {
        step: "receive the socket",
        errno: Errno::EBADMSG,
    })
}

/// Forks a child that joins `user` (when given) and `net`, runs `work`
/// (whose failing step is 1-based into `steps`) and sends back its answer
/// and the descriptor `work` returned, if any.
fn in_netns<F>(
    user: Option<BorrowedFd>,
    net: BorrowedFd,
    steps: &'static [&'static str],
    work: F,
) -> Result<Option<OwnedFd>, Failed>
where
    F: FnOnce() -> Result<Option<RawFd>, (u8, Errno)>,
{
    let (parent_end, child_end) = nix::sys::socket::socketpair(
        nix::sys::socket::AddressFamily::Unix,
        nix::sys::socket::SockType::Stream,
        None,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|errno| Failed {
        step: "socketpair",
        errno,
    })?;
    // The control buffer, prepared before the fork: the child allocates nothing.
    let mut cbuf = [0u64; 4];
    // SAFETY: the child below calls only async-signal-safe syscalls on
    // memory prepared before the fork, then _exit; it never returns.
    match unsafe { fork() }.map_err(|errno| Failed {
        step: "fork",
        errno,
    })? {
        ForkResult::Child => {
            drop(parent_end);
            let answer = join(user, net)
                .and_then(|()| work().map_err(|(step, e)| (step + SETNS.len() as u8, e)));
            let (step, errno, fd) = match answer {
                Ok(fd) => (0u8, 0i32, fd),
                Err((step, e)) => (step, e as i32, None),
            };
            let mut msg = [0u8; 5];
            msg[0] = step;
            msg[1..].copy_from_slice(&errno.to_ne_bytes());
            send(child_end.as_raw_fd(), &msg, fd, &mut cbuf);
            // SAFETY: _exit(2) never returns and runs no atexit handler.
            unsafe { libc::_exit(0) }
        }
        ForkResult::Parent { child } => {
            drop(child_end);
            let mut msg = [0u8; 5];
            let got = recv(parent_end.as_raw_fd(), &mut msg, &mut cbuf);
            let status = waitpid(child, None);
            let failed = |step, errno| Err(Failed { step, errno });
            match (got, status) {
                (Ok((5, fd)), Ok(WaitStatus::Exited(_, 0))) if msg[0] == 0 => Ok(fd),
                (Ok((5, _)), _) if msg[0] != 0 => {
                    let i = usize::from(msg[0] - 1);
                    let step = SETNS
                        .iter()
                        .chain(steps)
                        .nth(i)
                        .or(steps.last())
                        .copied()
                        .unwrap_or("the child");
                    let errno = i32::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]);
                    failed(step, Errno::from_raw(errno))
                }
                (Err(e), _) => failed("read the child's answer", e),
                (_, Err(e)) => failed("wait for the child", e),
                _ => failed("the child", Errno::ECHILD),
            }
        }
    }
}

fn join(user: Option<BorrowedFd>, net: BorrowedFd) -> Result<(), (u8, Errno)> {
    if let Some(user) = user {
        nix::sched::setns(user, CloneFlags::CLONE_NEWUSER).map_err(|e| (1, e))?;
    }
    nix::sched::setns(net, CloneFlags::CLONE_NEWNET).map_err(|e| (2, e))
}

/// Sends `msg`, with `fd` as SCM_RIGHTS when given; no allocation.
fn send(sock: RawFd, msg: &[u8; 5], fd: Option<RawFd>, cbuf: &mut [u64; 4]) {
    let mut iov = libc::iovec {
        iov_base: msg.as_ptr() as *mut libc::c_void,
        iov_len: msg.len(),
    };
    // SAFETY: msghdr is plain old data; zeroed is valid, filled below.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    if let Some(fd) = fd {
        // SAFETY: CMSG_SPACE is arithmetic; the buffer (32 bytes, aligned
        // for cmsghdr) holds one cmsghdr and one int (24 bytes on x86_64).
        unsafe {
            hdr.msg_control = cbuf.as_mut_ptr().cast();
            hdr.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
            let c = libc::CMSG_FIRSTHDR(&hdr);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
        }
    }
    // SAFETY: sendmsg(2) on a valid header whose buffers live for the call.
    unsafe { libc::sendmsg(sock, &hdr, 0) };
}

/// Receives the child's answer and the descriptor sent with it, if any.
fn recv(
    sock: RawFd,
    msg: &mut [u8; 5],
    cbuf: &mut [u64; 4],
) -> Result<(usize, Option<OwnedFd>), Errno> {
    let mut iov = libc::iovec {
        iov_base: msg.as_mut_ptr().cast(),
        iov_len: msg.len(),
    };
    // SAFETY: as in send.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = cbuf.as_mut_ptr().cast();
    hdr.msg_controllen = std::mem::size_of_val(cbuf);
    // SAFETY: recvmsg(2) into buffers that live for the call; the received
    // descriptor is close-on-exec.
    let n = unsafe { libc::recvmsg(sock, &mut hdr, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(Errno::last());
    }
    let mut fd = None;
    // SAFETY: walking the control messages the kernel just wrote.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let raw = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<RawFd>());
                fd = Some(OwnedFd::from_raw_fd(raw));
            }
            c = libc::CMSG_NXTHDR(&hdr, c);
        }
    }
    Ok((n as usize, fd))
}

fn unsafe_zeroed_ifreq() -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    unsafe { std::mem::zeroed() }
}

/// Brings the device in `ifr` up; the step number (1-based into UP).
fn bring_up(ifr: &mut libc::ifreq) -> Result<Option<RawFd>, (u8, Errno)> {
    // SAFETY: socket(2) with constant arguments.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return Err((1, Errno::last()));
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write the ifreq they are
    // given, which lives for the whole call.
    if unsafe { libc::ioctl(sock, libc::SIOCGIFFLAGS, ifr as *mut libc::ifreq) } < 0 {
        return Err((2, Errno::last()));
    }
    // SAFETY: ifr_flags is the union member SIOCGIFFLAGS just filled.
    unsafe { ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    // SAFETY: as above.
    if unsafe { libc::ioctl(sock, libc::SIOCSIFFLAGS, ifr as *mut libc::ifreq) } < 0 {
        return Err((3, Errno::last()));
    }
    Ok(None)
}

/// A listening TCP socket on `sin`; the step number (1-based into LISTEN).
fn listen(sin: &libc::sockaddr_in) -> Result<Option<RawFd>, (u8, Errno)> {
    // SAFETY: socket(2) with constant arguments.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return Err((1, Errno::last()));
    }
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: bind(2) on a sockaddr_in that lives for the call.
    if unsafe { libc::bind(sock, (sin as *const libc::sockaddr_in).cast(), len) } < 0 {
        return Err((2, Errno::last()));
    }
    // SAFETY: listen(2) on the socket made above.
    if unsafe { libc::listen(sock, 128) } < 0 {
        return Err((3, Errno::last()));
    }
    Ok(Some(sock))
}
