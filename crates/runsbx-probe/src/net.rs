//! Network checks. Which errno comes back says which layer stopped the attempt: EPERM/EACCES from a seccomp filter
//! on socket(), EACCES from Landlock's TCP rules on bind/connect, ENETUNREACH/EADDRNOTAVAIL from an empty network
//! namespace, ECONNREFUSED when the packet got somewhere. Landlock does not cover UDP, MPTCP, raw or vsock sockets,
//! hence their own checks.

use std::net::SocketAddr;

use crate::report::{check_ret, Outcome};

type Res = Result<Outcome, Outcome>;

struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

fn socket(domain: i32, ty: i32, proto: i32) -> Result<Fd, Outcome> {
    // SAFETY: plain integers.
    let fd = unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto) };
    Ok(Fd(check_ret("socket", fd.into())? as i32))
}

/// A `sockaddr_storage` for addr, and its length.
fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*a.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in6 and suitably aligned.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

fn domain(addr: &SocketAddr) -> i32 {
    if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    }
}

/// Non-blocking connect, then up to 3 s for the handshake.
fn connect(fd: &Fd, addr: &SocketAddr) -> Result<i64, Outcome> {
    let (ss, len) = sockaddr(addr);
    // SAFETY: ss holds len valid bytes.
    let ret = unsafe { libc::connect(fd.0, (&ss as *const libc::sockaddr_storage).cast(), len) };
    if ret == 0 {
        return Ok(0);
    }
    let e = crate::report::last_errno();
    if e != libc::EINPROGRESS {
        return Err(Outcome::fail(
            e,
            format!("connect: {}", crate::report::strerror(e)),
        ));
    }
    let mut pfd = libc::pollfd {
        fd: fd.0,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = check_ret("poll", unsafe { libc::poll(&mut pfd, 1, 3000) }.into())?;
    if n == 0 {
        return Err(Outcome::fail(
            libc::ETIMEDOUT,
            "connect: no answer within 3 s",
        ));
    }
    let mut err: libc::c_int = 0;
    let mut elen = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: err and elen are valid out pointers of the right size.
    let r = unsafe {
        libc::getsockopt(
            fd.0,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut elen,
        )
    };
    check_ret("getsockopt SO_ERROR", r.into())?;
    if err != 0 {
        return Err(Outcome::fail(
            err,
            format!("connect: {}", crate::report::strerror(err)),
        ));
    }
    Ok(0)
}

pub fn tcp_connect(addr: &SocketAddr) -> Res {
    let fd = socket(domain(addr), libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0)?;
    connect(&fd, addr)?;
    Ok(Outcome::ok(0, format!("connected to {addr}")))
}

pub fn tcp_bind(addr: &SocketAddr) -> Res {
    let fd = socket(domain(addr), libc::SOCK_STREAM, 0)?;
    let (ss, len) = sockaddr(addr);
    // SAFETY: ss holds len valid bytes.
    check_ret(
        "bind",
        unsafe { libc::bind(fd.0, (&ss as *const libc::sockaddr_storage).cast(), len) }.into(),
    )?;
    // SAFETY: plain integers.
    check_ret("listen", unsafe { libc::listen(fd.0, 1) }.into())?;
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut got: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut glen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: got and glen are valid out pointers.
    unsafe {
        libc::getsockname(
            fd.0,
            (&mut got as *mut libc::sockaddr_storage).cast(),
            &mut glen,
        )
    };
    // sin_port and sin6_port sit at the same offset.
    // SAFETY: got was filled as a sockaddr_in or sockaddr_in6.
    let port = u16::from_be(unsafe {
        (*(&got as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>()).sin_port
    });
    Ok(Outcome::ok(
        port.into(),
        format!("bound and listening on port {port}"),
    ))
}

fn send_one(fd: &Fd, to: Option<&SocketAddr>) -> Result<i64, Outcome> {
    let byte = [0u8; 1];
    let n = match to {
        None => {
            // SAFETY: byte is one readable byte.
            unsafe { libc::send(fd.0, byte.as_ptr().cast(), 1, 0) }
        }
        Some(addr) => {
            let (ss, len) = sockaddr(addr);
            // SAFETY: byte is one readable byte; ss holds len valid bytes.
            unsafe {
                libc::sendto(
                    fd.0,
                    byte.as_ptr().cast(),
                    1,
                    0,
                    (&ss as *const libc::sockaddr_storage).cast(),
                    len,
                )
            }
        }
    };
    check_ret(if to.is_some() { "sendto" } else { "send" }, n as i64)
}

pub fn udp_connect(addr: &SocketAddr) -> Res {
    let fd = socket(domain(addr), libc::SOCK_DGRAM, 0)?;
    let (ss, len) = sockaddr(addr);
    // SAFETY: ss holds len valid bytes.
    check_ret(
        "connect",
        unsafe { libc::connect(fd.0, (&ss as *const libc::sockaddr_storage).cast(), len) }.into(),
    )?;
    let n = send_one(&fd, None)?;
    Ok(Outcome::ok(n, format!("sent {n} byte to {addr}")))
}

pub fn udp_sendto(addr: &SocketAddr) -> Res {
    let fd = socket(domain(addr), libc::SOCK_DGRAM, 0)?;
    let n = send_one(&fd, Some(addr))?;
    Ok(Outcome::ok(n, format!("sent {n} byte to {addr}")))
}

/// Connects an AF_UNIX stream socket; `abstract_` puts a NUL before the name.
fn unix_connect_inner(name: &str, abstract_: bool) -> Res {
    let fd = socket(libc::AF_UNIX, libc::SOCK_STREAM, 0)?;
    // SAFETY: all-zero is a valid sockaddr_un.
    let mut sun: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let offset = usize::from(abstract_);
    let bytes = name.as_bytes();
    if bytes.len() + offset >= sun.sun_path.len() {
        return Err(Outcome::fail(libc::ENAMETOOLONG, "socket name too long"));
    }
    for (i, b) in bytes.iter().enumerate() {
        sun.sun_path[offset + i] = *b as libc::c_char;
    }
    let base = std::mem::size_of::<libc::sa_family_t>();
    // Abstract names are length-delimited; paths end at their NUL.
    let len = base + offset + bytes.len() + usize::from(!abstract_);
    // SAFETY: sun holds len valid bytes.
    let ret = unsafe {
        libc::connect(
            fd.0,
            (&sun as *const libc::sockaddr_un).cast(),
            len as libc::socklen_t,
        )
    };
    check_ret("connect", ret.into())?;
    Ok(Outcome::ok(
        0,
        format!("connected to {}{name}", if abstract_ { "@" } else { "" }),
    ))
}

pub fn unix_connect(path: &str) -> Res {
    unix_connect_inner(path, false)
}

pub fn unix_abstract_connect(name: &str) -> Res {
    unix_connect_inner(name, true)
}

pub fn mptcp(addr: Option<&SocketAddr>) -> Res {
    const IPPROTO_MPTCP: i32 = 262;
    let d = addr.map_or(libc::AF_INET, domain);
    let fd = socket(d, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, IPPROTO_MPTCP)?;
    match addr {
        None => Ok(Outcome::ok(fd.0.into(), "MPTCP socket created")),
        Some(a) => {
            connect(&fd, a)?;
            Ok(Outcome::ok(0, format!("MPTCP connected to {a}")))
        }
    }
}

pub fn socket_kind(domain: i32, ty: i32, proto: i32) -> Res {
    let fd = socket(domain, ty, proto)?;
    Ok(Outcome::ok(
        fd.0.into(),
        format!("socket({domain}, {ty}, {proto}) created"),
    ))
}
