//! `runsbx sandbox --allow-net`: an HTTP proxy served by runsbx, on the host
//! side, for a sandbox that has no network of its own.
//!
//! The listener is made inside the sandbox's network namespace
//! (netns::listen_in: `127.0.0.1:PROXY_PORT` there, the only listening
//! socket the namespace ever holds) and served from runsbx's threads in the
//! host's namespaces. Each accepted connection carries one request:
//! `CONNECT host:port` (a byte tunnel, TLS stays end to end) or an
//! `http://` URL (forwarded with `Connection: close`). The policy is
//! runsbx_policy::egress: the name and port must be allowed, the name is
//! resolved here, on the host, and every address must be public unless a
//! range is allowed; the proxy then connects to one of exactly the
//! addresses it checked (no second lookup a resolver could answer
//! differently). Every decision is an [`Event`]: on the status fd as it
//! happens, in the report, and as a line on stderr after the run when
//! refused.
//!
//! Inside a tunnel the proxy reads one thing, the TLS ClientHello the
//! tunnel must start with ([`tls`]): its server name (SNI) must be the
//! CONNECT target, or the tunnel is cut; so is a tunnel that starts with
//! anything else (plain HTTP goes through the forwarding path, which
//! checks Host).
//!
//! Not covered, by design: the rest of what flows inside an allowed tunnel
//! (TLS is not intercepted: the HTTP Host inside it is the workload's, so a
//! front end that routes on it can reach another of its sites: domain
//! fronting; so can an Encrypted Client Hello whose outer name is the
//! allowed one), and what the workload sends to an allowed host
//! (exfiltration there is allowed traffic). The byte and connection limits
//! bound it.

pub mod http;
mod serve;
pub mod tls;

use std::fs::File;
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use runsbx_policy::egress::Allowlist;
use serde::Serialize;

/// The proxy's limits (docs/sandbox.md, "Network").
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once; more are refused (503).
    pub concurrent: usize,
    /// Requests over the whole run; more are refused.
    pub requests: u64,
    /// Bytes relayed over the whole run, both ways; a connection that
    /// crosses it is closed.
    pub bytes: u64,
    /// A connection with no byte either way for this long is closed.
    pub idle: Duration,
    /// Connecting to the upstream.
    pub connect: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            concurrent: 32,
            requests: 4096,
            bytes: 4 << 30,
            idle: Duration::from_secs(120),
            connect: Duration::from_secs(10),
        }
    }
}

/// What the proxy enforces.
#[derive(Debug, Clone, Default)]
pub struct Proxy {
    pub allow: Allowlist,
    pub limits: Limits,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Connected; the event is written when the connection ends.
    Allowed,
    /// The policy or a limit said no; nothing was connected.
    Refused,
    /// Allowed, but the name did not resolve or no address answered.
    Failed,
}

/// One request and what the proxy did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    pub decision: Decision,
    /// `CONNECT`, `GET`, ...; empty when no request head could be read.
    pub method: String,
    /// As canonical as the request allowed (the raw target otherwise).
    pub host: String,
    pub port: u16,
    /// What the name resolved to, or the address connected to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Bytes from the workload to the upstream, and back.
    pub bytes_out: u64,
    pub bytes_in: u64,
}

impl Event {
    /// The line printed after the run for a refused or failed request.
    pub fn line(&self) -> String {
        let what = match self.decision {
            Decision::Allowed => "allowed",
            Decision::Refused => "refused",
            Decision::Failed => "failed",
        };
        let target = match self.method.as_str() {
            "" => String::new(),
            m => format!(" {m} {}:{}", self.host, self.port),
        };
        let reason = self.reason.as_deref().unwrap_or("");
        printable(&format!("net: {what}{target}: {reason}"))
    }
}

/// Most bytes of an event's method, host or reason; the rest is cut, with
/// [`clip`]'s marker.
pub const MAX_FIELD: usize = 256;

/// Cuts `s` to [`MAX_FIELD`] bytes (at a character boundary), the last
/// ones saying how many more there were.
fn clip(s: &mut String) {
    if s.len() <= MAX_FIELD {
        return;
    }
    // Room for the marker: "... (N bytes more)" with N below 10^13.
    let mut end = MAX_FIELD - 32;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let more = s.len() - end;
    s.truncate(end);
    s.push_str(&format!("... ({more} bytes more)"));
}

impl Event {
    /// Stops: a workload inflating its supervisor's status fd, the report
    /// and stderr with huge events (a 16 KiB request target, in the host
    /// and again in the reason, times [`MAX_EVENTS`]): every text field is
    /// cut to [`MAX_FIELD`] bytes.
    fn clipped(mut self) -> Event {
        clip(&mut self.method);
        clip(&mut self.host);
        if let Some(r) = self.reason.as_mut() {
            clip(r);
        }
        self
    }
}

/// `s` with every character but printable ASCII escaped (`\u{202e}`).
/// Stops: a request target or header that rewrites the terminal the line
/// is read on (escape sequences, C1 controls, bidi overrides that show a
/// refused host as another).
fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            ' '..='~' => out.push(c),
            _ => out.extend(c.escape_default()),
        }
    }
    out
}

/// Events kept in the report; the counts cover every one.
pub const MAX_EVENTS: usize = 1000;

/// `--report`'s `net`: every decision of the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    pub allowed: u64,
    pub refused: u64,
    pub failed: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// The first [`MAX_EVENTS`] events.
    pub events: Vec<Event>,
    /// Events beyond those.
    pub events_dropped: u64,
}

/// The shared state of one run's proxy.
struct Shared {
    proxy: Proxy,
    /// The host's own addresses, refused like private ones.
    own: Vec<IpAddr>,
    report: Mutex<Report>,
    status: Mutex<Option<File>>,
    /// The status fd once took no line within [`STATUS_WAIT`].
    status_stalled: AtomicBool,
    open: AtomicUsize,
    requests: AtomicU64,
    bytes: AtomicU64,
    stopping: AtomicBool,
    /// Every open socket of every connection, to shut at the end.
    sockets: Mutex<Vec<(u64, TcpStream)>>,
    next_id: AtomicU64,
    /// Threads the proxy may still start before one fails (negative: no
    /// limit): tests of the OS refusing a thread.
    #[cfg(test)]
    spawns_left: std::sync::atomic::AtomicI64,
}

impl Shared {
    /// Keeps a handle on a connection's socket, to shut it at the end.
    fn track(&self, id: u64, s: &TcpStream) {
        if let Ok(c) = s.try_clone() {
            self.sockets
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((id, c));
        }
    }

    /// Records `e`: counted, and, among the first [`MAX_EVENTS`], kept
    /// and written to the status fd at once. Stops: a workload flooding
    /// its supervisor's status fd (or runsbx's memory) with refused
    /// requests; the counts still cover every one.
    fn record(&self, e: Event) {
        let e = e.clipped();
        let line = {
            let mut r = self.report.lock().unwrap_or_else(|p| p.into_inner());
            match e.decision {
                Decision::Allowed => r.allowed += 1,
                Decision::Refused => r.refused += 1,
                Decision::Failed => r.failed += 1,
            }
            r.bytes_out += e.bytes_out;
            r.bytes_in += e.bytes_in;
            if r.events.len() >= MAX_EVENTS {
                r.events_dropped += 1;
                return;
            }
            let mut v = serde_json::to_value(&e).unwrap_or_default();
            v["event"] = "net".into();
            r.events.push(e);
            v.to_string() + "\n"
        };
        self.write_status(&line);
    }

    /// Writes `line` to the status fd, outside the report's lock, if the
    /// fd takes it within [`STATUS_WAIT`]; once it did not, no more lines
    /// go there (they stay in the report). Stops: a status-fd reader that
    /// stops reading (a full pipe) wedging every connection's thread, the
    /// accept loop, and runsbx at finish, behind a blocked write(2).
    fn write_status(&self, line: &str) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::io::Write;
        use std::os::fd::AsFd;
        if self.status_stalled.load(Ordering::SeqCst) {
            return;
        }
        let mut status = self.status.lock().unwrap_or_else(|p| p.into_inner());
        let Some(f) = status.as_mut() else {
            return;
        };
        let mut fds = [PollFd::new(f.as_fd(), PollFlags::POLLOUT)];
        let wait = PollTimeout::try_from(STATUS_WAIT).unwrap_or(PollTimeout::ZERO);
        if !matches!(poll(&mut fds, wait), Ok(n) if n > 0) {
            self.status_stalled.store(true, Ordering::SeqCst);
            return;
        }
        // One write(2): a reader never sees half a line.
        let _ = f.write_all(line.as_bytes());
    }
}

/// How long a `net` line waits for the status fd to take it.
const STATUS_WAIT: Duration = Duration::from_secs(1);

/// The proxy at work; [`Serving::finish`] ends it and returns the report.
pub struct Serving {
    shared: Arc<Shared>,
    listener: TcpListener,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// Serves `listener` (made by netns::listen_in) from threads of its
    /// own; decisions also go to `status` (a copy of the status fd). Call
    /// it only once init is forked (see jupyter::relay::Relay::serve).
    pub fn serve(self, listener: TcpListener, status: Option<File>) -> std::io::Result<Serving> {
        self.serve_with(listener, status, crate::sys::ifaddrs::addresses())
    }

    /// [`Proxy::serve`] with the host's own addresses as listed.
    fn serve_with(
        self,
        listener: TcpListener,
        status: Option<File>,
        own: std::io::Result<Vec<IpAddr>>,
    ) -> std::io::Result<Serving> {
        // A name resolving to one of these reaches a service of the host that
        // listens on its public address. Stops: that service reached when
        // the list cannot be read (fail closed: no proxy, not one that
        // refuses none of them).
        let own = own.map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("listing the host's own addresses (getifaddrs): {e}"),
            )
        })?;
        let shared = Arc::new(Shared {
            proxy: self,
            own,
            report: Mutex::new(Report::default()),
            status: Mutex::new(status),
            status_stalled: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            sockets: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
            #[cfg(test)]
            spawns_left: (-1).into(),
        });
        let l = listener.try_clone()?;
        let s = shared.clone();
        let accept = serve::spawn_quiet(move || serve::accept_loop(l, s))
            .map_err(|e| std::io::Error::new(e.kind(), format!("starting its thread: {e}")))?;
        Ok(Serving {
            shared,
            listener,
            accept: Some(accept),
        })
    }
}

impl Serving {
    /// Stops accepting, closes the connections still open (the workload
    /// has ended: nothing reads them), waits for their events, and
    /// returns every decision.
    pub fn finish(mut self) -> Report {
        self.stop();
        let r = self.shared.report.lock().unwrap_or_else(|p| p.into_inner());
        r.clone()
    }

    fn stop(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        use std::os::fd::AsRawFd;
        // Wakes the accept thread (EINVAL); the socket is the sandbox's.
        let _ =
            nix::sys::socket::shutdown(self.listener.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        let _ = accept.join();
        for (_, s) in self
            .shared
            .sockets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while self.shared.open.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// A run that failed after the proxy started (posture check, start): no
/// thread outlives it.
impl Drop for Serving {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    /// The proxy on a host port (no namespace needed), allowing `entries`
    /// and the loopback range.
    fn proxy(entries: &[String], limits: Limits) -> (Serving, u16) {
        let allow = Allowlist::parse(entries, &["127.0.0.0/8".into()]).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let s = Proxy { allow, limits }.serve(l, None).unwrap();
        (s, port)
    }

    /// A server that sends `reply` to each connection after reading once.
    fn upstream(reply: &'static [u8]) -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut c in l.incoming().flatten() {
                let mut buf = [0u8; 1024];
                let _ = c.read(&mut buf);
                let _ = c.write_all(reply);
            }
        });
        port
    }

    fn ask(port: u16, req: String) -> String {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        out
    }

    #[test]
    fn forwards_one_request_and_reports_its_bytes() {
        let up = upstream(b"HTTP/1.0 200 OK\r\n\r\nhi");
        let (s, port) = proxy(&[format!("localhost:{up}")], Limits::default());
        let got = ask(
            port,
            format!("GET http://localhost:{up}/x HTTP/1.1\r\n\r\n"),
        );
        assert_eq!(got, "HTTP/1.0 200 OK\r\n\r\nhi");
        let got = ask(
            port,
            format!("GET http://127.0.0.1:{up}/x HTTP/1.1\r\n\r\n"),
        );
        assert!(got.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{got}");
        assert!(got.ends_with("runsbx: 127.0.0.1 is an IP address not in --allow-net (allow names, or the address itself)\n"), "{got}");
        let r = s.finish();
        assert_eq!((r.allowed, r.refused, r.failed), (1, 1, 0), "{r:?}");
        let e = &r
            .events
            .iter()
            .find(|e| e.decision == Decision::Allowed)
            .unwrap();
        assert_eq!(e.bytes_in, 21);
        assert!(e.bytes_out > 0);
        assert_eq!(e.addresses, vec![IpAddr::from([127, 0, 0, 1])]);
    }

    #[test]
    fn the_byte_limit_cuts_and_says_so() {
        let up = upstream(b"HTTP/1.0 200 OK\r\n\r\n0123456789012345678901234567890123456789");
        let limits = Limits {
            bytes: 100,
            ..Limits::default()
        };
        let (s, port) = proxy(&[format!("localhost:{up}")], limits);
        let got = ask(
            port,
            format!(
                "GET http://localhost:{up}/x HTTP/1.1\r\nX-Pad: {}\r\n\r\n",
                "p".repeat(80)
            ),
        );
        assert!(got.len() < 59, "{got}");
        let r = s.finish();
        let reason = r.events[0].reason.as_deref().unwrap_or_default();
        assert!(reason.contains("limit of 100 bytes"), "{r:?}");
    }

    #[test]
    fn the_stderr_line_is_printable_ascii() {
        let e = Event::refused("GET", "a\u{202e}moc.b", "x\u{9b}31m\x1b[2J\té".into());
        assert_eq!(
            e.line(),
            "net: refused GET a\\u{202e}moc.b:0: x\\u{9b}31m\\u{1b}[2J\\t\\u{e9}"
        );
    }

    #[test]
    fn events_are_clipped() {
        let long = format!("é{}", "x".repeat(20_000));
        let e = Event::refused("CONNECT", &long, format!("{long:?}")).clipped();
        assert!(e.host.len() <= MAX_FIELD, "{}", e.host.len());
        assert!(e.host.ends_with("x... (19778 bytes more)"), "{}", e.host);
        assert!(e.reason.as_ref().unwrap().len() <= MAX_FIELD);
        assert_eq!(e.clone().clipped(), e);
        // Through the proxy: a 16 KiB target is one short event.
        let (s, port) = proxy(&[], Limits::default());
        let got = ask(
            port,
            format!("GET http://{}/ HTTP/1.1\r\n\r\n", "a".repeat(15_000)),
        );
        assert!(got.starts_with("HTTP/1.1 40"), "{got}");
        let r = s.finish();
        let e = &r.events[0];
        assert!(
            e.host.len() + e.reason.as_ref().unwrap().len() < 2 * MAX_FIELD + 60,
            "{e:?}"
        );
    }

    #[test]
    fn no_list_of_the_hosts_addresses_no_proxy() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let err = std::io::Error::from_raw_os_error(libc::ENOMEM);
        let Err(e) = Proxy::default().serve_with(l, None, Err(err)) else {
            panic!("the proxy started");
        };
        assert_eq!(
            e.to_string(),
            "listing the host's own addresses (getifaddrs): Cannot allocate memory (os error 12)"
        );
    }

    /// Stops: a status-fd reader that stops reading wedging the proxy.
    #[test]
    fn a_status_fd_nobody_reads_does_not_wedge_the_proxy() {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let (_r, w) = nix::unistd::pipe().unwrap();
        // Fill the pipe, then make writes block again.
        fcntl(w.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).unwrap();
        let mut w = File::from(w);
        while w.write(&[0u8; 4096]).is_ok() {}
        fcntl(w.as_raw_fd(), FcntlArg::F_SETFL(OFlag::empty())).unwrap();
        let allow = Allowlist::parse(&[], &[]).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let s = Proxy {
            allow,
            limits: Limits::default(),
        }
        .serve(l, Some(w))
        .unwrap();
        let start = std::time::Instant::now();
        for _ in 0..3 {
            let got = ask(port, "GET http://a.com/ HTTP/1.1\r\n\r\n".into());
            assert!(got.starts_with("HTTP/1.1 403 "), "{got}");
        }
        let r = s.finish();
        assert_eq!(r.refused, 3, "{r:?}");
        assert!(start.elapsed() < STATUS_WAIT * 2, "{:?}", start.elapsed());
    }

    /// Stops: a slow upload cut because the upstream, reading it, sent
    /// nothing back for the idle limit (the limit was per direction).
    #[test]
    fn the_idle_limit_counts_bytes_either_way() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let up = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut c in l.incoming().flatten() {
                let mut got = Vec::new();
                let mut buf = [0u8; 1024];
                while !got.ends_with(b"0123456789") {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = c.write_all(b"HTTP/1.0 200 OK\r\n\r\ndone");
            }
        });
        let limits = Limits {
            idle: Duration::from_millis(300),
            ..Limits::default()
        };
        let (s, port) = proxy(&[format!("localhost:{up}")], limits);
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            c,
            "POST http://localhost:{up}/ HTTP/1.1\r\nContent-Length: 10\r\n\r\n"
        )
        .unwrap();
        // A byte every 100 ms for a second: the upload is never idle.
        for b in b"0123456789" {
            std::thread::sleep(Duration::from_millis(100));
            c.write_all(&[*b]).unwrap();
        }
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        assert_eq!(out, "HTTP/1.0 200 OK\r\n\r\ndone");
        // Nothing either way for the limit: cut.
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            c,
            "POST http://localhost:{up}/ HTTP/1.1\r\nContent-Length: 10\r\n\r\n"
        )
        .unwrap();
        let start = std::time::Instant::now();
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        assert_eq!(out, "");
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        let r = s.finish();
        assert_eq!((r.allowed, r.refused), (2, 0), "{r:?}");
    }

    /// Stops: runsbx aborting (panic=abort in release) when the workload
    /// has exhausted threads: the connection is refused or cut instead,
    /// with an event.
    #[test]
    fn no_thread_for_a_connection_refuses_or_cuts_it() {
        let up = upstream(b"HTTP/1.0 200 OK\r\n\r\nhi");
        let (s, port) = proxy(&[format!("localhost:{up}")], Limits::default());
        let req = format!("GET http://localhost:{up}/x HTTP/1.1\r\n\r\n");
        // The accept loop's thread for the connection.
        s.shared.spawns_left.store(0, Ordering::SeqCst);
        let got = ask(port, req.clone());
        assert!(got.starts_with("HTTP/1.1 503 "), "{got}");
        assert!(got.contains("no thread to serve it"), "{got}");
        // The relay's second thread.
        s.shared.spawns_left.store(1, Ordering::SeqCst);
        assert_eq!(ask(port, req), "");
        let r = s.finish();
        assert_eq!((r.failed, r.refused), (1, 1), "{r:?}");
        assert!(
            r.events[1]
                .reason
                .as_deref()
                .unwrap()
                .starts_with("cut: no thread to relay it"),
            "{r:?}"
        );
    }

    /// Stops: the first bytes of a ClientHello passed on unchecked when
    /// the client goes quiet or half-closes before the rest.
    #[test]
    fn a_partial_client_hello_is_cut() {
        let up = upstream(b"reply");
        let limits = Limits {
            idle: Duration::from_millis(300),
            ..Limits::default()
        };
        let (s, port) = proxy(&[format!("localhost:{up}")], limits);
        let to = format!("localhost:{up}");
        let h = tls::tests::hello(&["localhost"], 1);
        assert_eq!(tunnel(port, &to, &h[..20]), b"");
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(c, "CONNECT {to} HTTP/1.1\r\n\r\n").unwrap();
        c.write_all(&h[..20]).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        assert_eq!(out, b"HTTP/1.1 200 Connection established\r\n\r\n");
        let r = s.finish();
        assert_eq!((r.allowed, r.refused), (0, 2), "{r:?}");
        // The quiet client's read times out, or the upstream's does first
        // and ends the tunnel: a cut either way.
        for r in reasons(&r) {
            assert!(
                r.starts_with("reading the tunnel's TLS ClientHello")
                    || r == "the tunnel ended inside its TLS ClientHello",
                "{r}"
            );
        }
    }

    /// The reasons of `r`'s events.
    fn reasons(r: &Report) -> Vec<&str> {
        r.events
            .iter()
            .filter_map(|e| e.reason.as_deref())
            .collect()
    }

    /// Sends `first` into a tunnel to `target`; what came back after the
    /// proxy's 200.
    fn tunnel(port: u16, target: &str, first: &[u8]) -> Vec<u8> {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(c, "CONNECT {target} HTTP/1.1\r\n\r\n").unwrap();
        c.write_all(first).unwrap();
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        let ok = b"HTTP/1.1 200 Connection established\r\n\r\n";
        assert!(out.starts_with(ok), "{out:?}");
        out.split_off(ok.len())
    }

    /// Stops: plain HTTP inside `CONNECT allowed:80` naming another site in
    /// its Host header (the forwarding path's Host check skipped), any
    /// other protocol on an allowed port, and a ClientHello without a
    /// server name for a name (the front end picks its default site).
    #[test]
    fn a_tunnel_carries_a_tls_client_hello_only() {
        let up = upstream(b"reply");
        let entries = [format!("localhost:{up}"), format!("127.0.0.1:{up}")];
        let (s, port) = proxy(&entries, Limits::default());
        let to = format!("localhost:{up}");
        let plain = b"GET / HTTP/1.1\r\nHost: other-site.com\r\n\r\n";
        assert_eq!(tunnel(port, &to, plain), b"");
        assert_eq!(tunnel(port, &to, b"SSH-2.0-x\r\n"), b"");
        let no_sni = tls::tests::hello(&[], 0);
        assert_eq!(tunnel(port, &to, &no_sni), b"");
        assert_eq!(
            tunnel(port, &to, &tls::tests::hello(&["localhost"], 1)),
            b"reply"
        );
        // An IP literal has no name to send: a ClientHello without one
        // passes, plain bytes do not.
        let ip = format!("127.0.0.1:{up}");
        assert_eq!(tunnel(port, &ip, &no_sni), b"reply");
        assert_eq!(tunnel(port, &ip, plain), b"");
        let r = s.finish();
        assert_eq!((r.allowed, r.refused), (2, 4), "{r:?}");
        let reasons = reasons(&r);
        assert!(reasons.contains(&"the tunnel's first bytes are not a TLS ClientHello (CONNECT carries TLS only; plain HTTP goes as GET http://...)"), "{reasons:?}");
        assert!(
            reasons.contains(
                &"a TLS ClientHello without a server name (SNI), the CONNECT target localhost"
            ),
            "{reasons:?}"
        );
    }
}
