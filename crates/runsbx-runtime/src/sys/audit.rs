//! The kernel's audit netlink interface, read-only: the multicast group that
//! carries a copy of every audit record (`AUDIT_NLGRP_READLOG`, which needs
//! CAP_AUDIT_READ and no audit daemon), and the `AUDIT_GET` status query.
//! runsbx never changes the audit configuration.
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{
    bind, recv, send, setsockopt, socket, sockopt, AddressFamily, MsgFlags, NetlinkAddr, SockFlag,
    SockProtocol, SockType,
};

/// `AUDIT_NLGRP_READLOG` from `<linux/audit.h>`, as a bind group mask.
const NLGRP_READLOG_MASK: u32 = 1 << 0;
const AUDIT_GET: u16 = 1000;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_HDRLEN: usize = 16;
/// Room for a burst of records while the reader thread is busy.
const RCVBUF: usize = 4 << 20;

/// A socket subscribed to the audit log multicast group.
pub struct ReadLog(OwnedFd);

/// One record: its `AUDIT_*` type and its text (`audit(T:SERIAL): k=v ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecord {
    pub kind: u16,
    pub text: String,
}

/// What a receive brought.
pub enum Received {
    Records(Vec<RawRecord>),
    /// The socket's buffer overflowed: some records were dropped.
    Overrun,
    Timeout,
}

fn audit_socket() -> io::Result<OwnedFd> {
    Ok(socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkAudit,
    )?)
}

impl ReadLog {
    /// Subscribes to the audit log. EPERM means no CAP_AUDIT_READ;
    /// EPROTONOSUPPORT means a kernel without audit.
    pub fn open() -> io::Result<Self> {
        let fd = audit_socket()?;
        bind(fd.as_raw_fd(), &NetlinkAddr::new(0, NLGRP_READLOG_MASK))?;
        if setsockopt(&fd, sockopt::RcvBufForce, &RCVBUF).is_err() {
            let _ = setsockopt(&fd, sockopt::RcvBuf, &RCVBUF);
        }
        Ok(Self(fd))
    }

    /// Waits up to `timeout` for the next datagram and splits it into records.
    pub fn recv(&self, timeout: Duration) -> io::Result<Received> {
        let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(self.0.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(0) => return Ok(Received::Timeout),
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => return Ok(Received::Timeout),
            Err(e) => return Err(e.into()),
        }
        let mut buf = vec![0u8; 64 << 10];
        let n = match recv(self.0.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT) {
            Ok(n) => n,
            Err(nix::errno::Errno::ENOBUFS) => return Ok(Received::Overrun),
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => {
                return Ok(Received::Timeout)
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Received::Records(
            split(&buf[..n])
                .map(|(kind, payload)| RawRecord {
                    kind,
                    text: String::from_utf8_lossy(payload)
                        .trim_end_matches('\0')
                        .to_string(),
                })
                .collect(),
        ))
    }
}

/// Whether the audit subsystem is enabled (`audit_status.enabled` != 0).
/// Needs CAP_AUDIT_CONTROL and the initial pid namespace.
pub fn enabled() -> io::Result<bool> {
    let fd = audit_socket()?;
    bind(fd.as_raw_fd(), &NetlinkAddr::new(0, 0))?;
    let mut req = Vec::with_capacity(NLMSG_HDRLEN);
    req.extend_from_slice(&(NLMSG_HDRLEN as u32).to_ne_bytes());
    req.extend_from_slice(&AUDIT_GET.to_ne_bytes());
    req.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    req.extend_from_slice(&1u32.to_ne_bytes()); // seq
    req.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    send(fd.as_raw_fd(), &req, MsgFlags::empty())?;
    let mut buf = vec![0u8; 8192];
    for _ in 0..4 {
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        if poll(&mut fds, PollTimeout::from(1000u16))? == 0 {
            break;
        }
        let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty())?;
        for (kind, payload) in split(&buf[..n]) {
            match kind {
                // struct audit_status { __u32 mask; __u32 enabled; ... }
                AUDIT_GET if payload.len() >= 8 => {
                    let enabled = u32::from_ne_bytes(payload[4..8].try_into().unwrap());
                    return Ok(enabled != 0);
                }
                NLMSG_ERROR if payload.len() >= 4 => {
                    let err = i32::from_ne_bytes(payload[..4].try_into().unwrap());
                    if err < 0 {
                        return Err(io::Error::from_raw_os_error(-err));
                    }
                }
                _ => {}
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        "no AUDIT_GET reply from the kernel",
    ))
}

/// The netlink messages in a datagram: (type, payload).
fn split(mut buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if buf.len() < NLMSG_HDRLEN {
            return None;
        }
        let len = u32::from_ne_bytes(buf[..4].try_into().unwrap()) as usize;
        let kind = u16::from_ne_bytes(buf[4..6].try_into().unwrap());
        if len < NLMSG_HDRLEN || len > buf.len() {
            // Audit multicast messages may carry a length of just the
            // payload without the header on old kernels; take the rest.
            let payload = &buf[NLMSG_HDRLEN..];
            buf = &[];
            return Some((kind, payload));
        }
        let payload = &buf[NLMSG_HDRLEN..len];
        buf = &buf[((len + 3) & !3).min(buf.len())..];
        Some((kind, payload))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u16, text: &[u8]) -> Vec<u8> {
        let len = (NLMSG_HDRLEN + text.len()) as u32;
        let mut v = Vec::new();
        v.extend_from_slice(&len.to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&[0; 10]);
        v.extend_from_slice(text);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    #[test]
    fn splits_aligned_messages() {
        let mut buf = msg(1423, b"audit(1.2:3): a=b");
        buf.extend(msg(1320, b"audit(1.2:3): "));
        let got: Vec<_> = split(&buf).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], (1423, &b"audit(1.2:3): a=b"[..]));
        assert_eq!(got[1].0, 1320);
    }

    #[test]
    fn short_or_truncated_input_ends_the_walk() {
        assert_eq!(split(&[0; 8]).count(), 0);
        let mut buf = msg(1326, b"audit(1.2:3): x=1");
        buf[0] = 200; // claims more than there is
        let got: Vec<_> = split(&buf).collect();
        assert_eq!(got.len(), 1);
        // The last message's padding may be missing.
        let buf = msg(1326, b"audit(1.2:3): x=12");
        assert_eq!(split(&buf[..buf.len() - 2]).count(), 1);
    }
}
