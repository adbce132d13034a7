//! The proxy's threads: one accepts, one serves each connection (two while
//! a tunnel relays both ways).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow};
use runsbx_policy::egress::{parse_host, Host};

use super::http::{self, Head, Target};
use super::tls::{self, Hello};
use super::{Decision, Event, Shared};

/// Spawns `f` on a thread that blocks every signal (so a signal to runsbx
/// reaches the thread that forwards it), as do the threads it spawns.
pub(super) fn spawn_quiet<F>(f: F) -> io::Result<thread::JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    let mut old = SigSet::empty();
    let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&SigSet::all()), Some(&mut old));
    let t = thread::Builder::new().name("runsbx-proxy".into()).spawn(f);
    let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    t
}

pub(super) fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let client = listener.accept();
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok((client, _)) = client else {
            // Out of descriptors or memory: wait rather than spin.
            thread::sleep(std::time::Duration::from_millis(10));
            continue;
        };
        let limits = shared.proxy.limits;
        if shared.open.fetch_add(1, Ordering::SeqCst) >= limits.concurrent {
            shared.open.fetch_sub(1, Ordering::SeqCst);
            refuse(
                &shared,
                client,
                "503 Service Unavailable",
                Event::refused(
                    "",
                    "",
                    format!("more than {} connections at once", limits.concurrent),
                ),
            );
            continue;
        }
        // A second handle, to answer the client if no thread can serve it.
        let spare = client.try_clone();
        let s = shared.clone();
        let spawned = builder(&shared).and_then(|b| {
            b.spawn(move || {
                let id = s.next_id.fetch_add(1, Ordering::SeqCst);
                one(&s, client, id);
                s.sockets
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retain(|(i, _)| *i != id);
                s.open.fetch_sub(1, Ordering::SeqCst);
            })
        });
        if let Err(e) = spawned {
            shared.open.fetch_sub(1, Ordering::SeqCst);
            if let Ok(c) = spare {
                let mut e = Event::refused("", "", format!("no thread to serve it: {e}"));
                e.decision = Decision::Failed;
                refuse(&shared, c, "503 Service Unavailable", e);
            }
        }
    }
}

/// A builder for one of the proxy's threads. Its `spawn` returns the OS's
/// refusal where `thread::spawn` and `Scope::spawn` panic: the workload can
/// exhaust threads, and a release build aborts on panic (runsbx would die
/// without report or cleanup). Under test, `Shared::spawns_left` makes it
/// fail on purpose.
fn builder(shared: &Shared) -> io::Result<thread::Builder> {
    #[cfg(test)]
    if shared.spawns_left.fetch_sub(1, Ordering::SeqCst) == 0 {
        return Err(io::Error::other("no thread (test)"));
    }
    #[cfg(not(test))]
    let _ = shared;
    Ok(thread::Builder::new())
}

impl Event {
    pub(super) fn refused(method: &str, host: &str, reason: String) -> Event {
        Event {
            decision: Decision::Refused,
            method: method.into(),
            host: host.into(),
            port: 0,
            addresses: Vec::new(),
            reason: Some(reason),
            bytes_out: 0,
            bytes_in: 0,
        }
    }
}

/// Answers `status` with the reason as the body, and records `e`.
fn refuse(shared: &Shared, mut client: TcpStream, status: &str, e: Event) {
    let body = format!("runsbx: {}\n", e.reason.as_deref().unwrap_or("refused"));
    let _ = write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    shared.record(e);
}

/// Serves one connection: one request.
fn one(shared: &Shared, mut client: TcpStream, id: u64) {
    let limits = shared.proxy.limits;
    let _ = client.set_read_timeout(Some(limits.idle));
    let _ = client.set_write_timeout(Some(limits.idle));
    shared.track(id, &client);
    let (head, rest) = match read_head(&mut client) {
        Ok(v) => v,
        // Nothing was asked (a port check, `selftest`'s probe): no event.
        Err(None) => return,
        Err(Some(reason)) => {
            return refuse(
                shared,
                client,
                "400 Bad Request",
                Event::refused("", "", reason),
            )
        }
    };
    let mut event = Event::refused(&head.method, &head.target, String::new());
    let (target, body, mut upstream) = match decide(shared, &head, &mut event) {
        Ok(v) => v,
        Err(status) => return refuse(shared, client, status, event),
    };
    let _ = upstream.set_read_timeout(Some(limits.idle));
    let _ = upstream.set_write_timeout(Some(limits.idle));
    shared.track(id, &upstream);
    let (opened, head_bytes) = match head.method.as_str() {
        "CONNECT" => (
            client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n"),
            0,
        ),
        _ => {
            let h = http::upstream_head(&head, &target);
            shared.bytes.fetch_add(h.len() as u64, Ordering::SeqCst);
            (upstream.write_all(&h), h.len() as u64)
        }
    };
    if opened.is_err() {
        return shared.record(event);
    }
    let what = match head.method.as_str() {
        "CONNECT" => Relay::Tunnel(&target.host),
        _ => Relay::Body(body),
    };
    let (out, inn, cut) = relay(shared, client, upstream, rest, what);
    event.bytes_out = head_bytes + out;
    event.bytes_in = inn;
    if let Some(why) = cut {
        event.decision = Decision::Refused;
        event.reason = Some(why);
    }
    if shared.bytes.load(Ordering::SeqCst) > limits.bytes {
        event.reason = Some(format!(
            "cut: the run's limit of {} bytes relayed was reached",
            limits.bytes
        ));
    }
    shared.record(event);
}

/// The policy applied to one request: its target, the body length it may
/// send, and the upstream connected to; or the HTTP status of the refusal,
/// whose reason is in `event` (filled in as the checks go).
fn decide(
    shared: &Shared,
    head: &Head,
    event: &mut Event,
) -> Result<(Target, u64, TcpStream), &'static str> {
    let limits = shared.proxy.limits;
    let mut refuse = |status, reason: String| {
        event.reason = Some(reason);
        Err(status)
    };
    let target = match head.target() {
        Ok(t) => t,
        Err(reason) => return refuse("400 Bad Request", reason),
    };
    event.host = target.host.to_string();
    event.port = target.port;
    // Checked before anything is resolved: a refused name is never looked
    // up (a lookup is itself a way to signal out, through DNS).
    if let Err(reason) = shared.proxy.allow.permits(&target.host, target.port) {
        return refuse("403 Forbidden", reason);
    }
    if shared.requests.fetch_add(1, Ordering::SeqCst) >= limits.requests {
        let reason = format!("more than {} requests in this run", limits.requests);
        return refuse("403 Forbidden", reason);
    }
    let body = match head.method.as_str() {
        "CONNECT" => 0,
        _ => match http::body_length(head) {
            Ok(n) => n,
            Err(reason) => return refuse("400 Bad Request", reason),
        },
    };
    let addrs = match resolve(&target) {
        Ok(a) => a,
        Err(reason) => {
            event.decision = Decision::Failed;
            return refuse("502 Bad Gateway", reason);
        }
    };
    event.addresses = addrs.iter().map(SocketAddr::ip).collect();
    // Every address, not only the one connected to: a resolver answer that
    // mixes a public and a private address refuses the name.
    for a in &addrs {
        if let Err(reason) = shared.proxy.allow.address_ok(a.ip(), &shared.own) {
            return refuse(
                "403 Forbidden",
                format!("{} resolves to {reason}", target.host),
            );
        }
    }
    // Exactly the addresses checked above: no second lookup.
    let upstream = addrs
        .iter()
        .find_map(|a| TcpStream::connect_timeout(a, limits.connect).ok());
    let Some(upstream) = upstream else {
        event.decision = Decision::Failed;
        return refuse(
            "502 Bad Gateway",
            "no address of the host accepted a connection".into(),
        );
    };
    if let Ok(peer) = upstream.peer_addr() {
        event.addresses = vec![peer.ip()];
    }
    event.decision = Decision::Allowed;
    event.reason = None;
    Ok((target, body, upstream))
}

/// The request head, parsed, and the bytes read past it; `Err(None)` when
/// the client closed without sending a byte.
fn read_head(client: &mut TcpStream) -> Result<(Head, Vec<u8>), Option<String>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = http::head_end(&buf) {
            let head = http::parse_head(&buf[..end - 2])?;
            return Ok((head, buf[end..].to_vec()));
        }
        if buf.len() > http::MAX_HEAD {
            return Err(Some(format!(
                "a request head over {} bytes",
                http::MAX_HEAD
            )));
        }
        match client.read(&mut chunk) {
            Ok(0) if buf.is_empty() => return Err(None),
            Ok(0) => return Err(Some("the connection closed inside the request head".into())),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(Some(format!("reading the request: {e}"))),
        }
    }
}

/// Every address of `t`: a literal as it is, a name through the host's
/// resolver.
fn resolve(t: &Target) -> Result<Vec<SocketAddr>, String> {
    match &t.host {
        Host::Ip(a) => Ok(vec![SocketAddr::new(*a, t.port)]),
        Host::Name(n) => {
            let addrs: Vec<SocketAddr> = (n.as_str(), t.port)
                .to_socket_addrs()
                .map_err(|e| format!("{n} does not resolve: {e}"))?
                .map(|a| SocketAddr::new(a.ip().to_canonical(), a.port()))
                .collect();
            match addrs.is_empty() {
                true => Err(format!("{n} resolves to no address")),
                false => Ok(addrs),
            }
        }
    }
}

/// Relays until both sides are done: the workload's bytes upstream (for a
/// forwarded request `Body(n)`: n bytes, then no more; for a tunnel, all of
/// them once its first bytes pass [`tunnel_start`]), the upstream's back.
/// Returns (out, in, why the tunnel was cut).
fn relay(
    shared: &Shared,
    client: TcpStream,
    upstream: TcpStream,
    early: Vec<u8>,
    what: Relay,
) -> (u64, u64, Option<String>) {
    let (Ok(mut client_r), Ok(upstream_w)) = (client.try_clone(), upstream.try_clone()) else {
        return (0, 0, None);
    };
    // Reads wake every quarter of the idle limit to look at the other
    // direction's last byte (socket options: shared by the clones).
    let idle = Idle::new(shared.proxy.limits.idle);
    let tick = (idle.limit / 4).max(std::time::Duration::from_millis(1));
    let _ = client.set_read_timeout(Some(tick));
    let _ = upstream.set_read_timeout(Some(tick));
    let idle = &idle;
    thread::scope(|s| {
        let up = builder(shared).and_then(|b| {
            b.spawn_scoped(s, || match what {
                // Stops: a second request pipelined after the first, sent to
                // this upstream without a check.
                Relay::Body(len) => {
                    let mut r = io::Cursor::new(early).chain(client_r).take(len);
                    (copy(shared, &mut r, &upstream_w, idle), None)
                }
                Relay::Tunnel(host) => {
                    let first = match tunnel_start(early, &mut client_r, host, idle) {
                        Ok(first) => first,
                        Err(why) => {
                            let _ = upstream_w.shutdown(std::net::Shutdown::Both);
                            let _ = client_r.shutdown(std::net::Shutdown::Both);
                            return (0, Some(why));
                        }
                    };
                    let mut r = io::Cursor::new(first).chain(client_r);
                    let n = copy(shared, &mut r, &upstream_w, idle);
                    let _ = upstream_w.shutdown(std::net::Shutdown::Write);
                    (n, None)
                }
            })
        });
        let up = match up {
            Ok(up) => up,
            Err(e) => {
                let _ = client.shutdown(std::net::Shutdown::Both);
                let _ = upstream.shutdown(std::net::Shutdown::Both);
                return (0, 0, Some(format!("cut: no thread to relay it: {e}")));
            }
        };
        let inn = copy(shared, &mut &upstream, &client, idle);
        let _ = client.shutdown(std::net::Shutdown::Both);
        let _ = upstream.shutdown(std::net::Shutdown::Both);
        let (out, cut) = up.join().unwrap_or((0, None));
        (out, inn, cut)
    })
}

/// When a relayed connection last carried a byte, either way: its idle
/// limit counts from there. Stops: an upload (or a download) cut while
/// bytes flow, because the other direction was quiet for the limit.
struct Idle {
    start: Instant,
    /// Milliseconds from `start` to the last byte.
    last: AtomicU64,
    limit: std::time::Duration,
}

impl Idle {
    fn new(limit: std::time::Duration) -> Idle {
        Idle {
            start: Instant::now(),
            last: AtomicU64::new(0),
            limit,
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A byte went one way.
    fn touch(&self) {
        self.last.store(self.now(), Ordering::SeqCst);
    }

    /// Whether `e`, a read's error, ends the connection: any error but a
    /// read timeout (one tick), and a timeout once no byte went either
    /// way for the limit.
    fn ends(&self, e: &io::Error) -> bool {
        let tick = matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        );
        let quiet = self.now().saturating_sub(self.last.load(Ordering::SeqCst));
        !tick || u128::from(quiet) >= self.limit.as_millis()
    }
}

/// What the workload may send upstream after the request head.
enum Relay<'a> {
    /// A forwarded request's body of this many bytes.
    Body(u64),
    /// A CONNECT tunnel to this host.
    Tunnel(&'a Host),
}

/// The tunnel's first bytes, read until a whole TLS ClientHello is in:
/// returned to be sent on, or refused (the tunnel is then cut).
///
/// Stops: a tunnel to an allowed name whose TLS server name (SNI) is
/// another host, which a shared front end (a CDN, a cloud load balancer)
/// would route to; and a tunnel that carries anything but TLS: plain HTTP
/// inside `CONNECT allowed:80` with `Host: other-site` (the Host check of
/// the forwarding path skipped), or any other protocol on an allowed port.
/// A ClientHello without a server name is refused for a name (the front
/// end would pick a default site); an IP-literal target has no name to
/// send (RFC 6066 forbids an address in SNI), so there it may omit it.
/// Does not stop the same trick one layer down (an HTTP Host header inside
/// the encrypted stream), nor an Encrypted Client Hello whose outer name
/// is the allowed one: docs/sandbox.md, "Network".
fn tunnel_start(
    mut buf: Vec<u8>,
    client: &mut TcpStream,
    host: &Host,
    idle: &Idle,
) -> Result<Vec<u8>, String> {
    let mut chunk = [0u8; 4096];
    loop {
        match tls::client_hello(&buf) {
            Hello::NotTls => {
                return Err("the tunnel's first bytes are not a TLS ClientHello (CONNECT carries TLS only; plain HTTP goes as GET http://...)".into())
            }
            Hello::Tls(None) => {
                return match host {
                    Host::Ip(_) => Ok(buf),
                    Host::Name(_) => Err(format!(
                        "a TLS ClientHello without a server name (SNI), the CONNECT target {host}"
                    )),
                }
            }
            Hello::Tls(Some(name)) => {
                let sni =
                    parse_host(&name).map_err(|e| format!("the TLS server name (SNI): {e}"))?;
                if &sni != host {
                    return Err(format!(
                        "the TLS server name (SNI) is {sni}, the CONNECT target {host}"
                    ));
                }
                return Ok(buf);
            }
            Hello::Malformed => {
                return Err("a malformed TLS ClientHello (not one, or two server names)".into())
            }
            Hello::Partial if buf.len() >= tls::MAX_HELLO => {
                return Err(format!("a TLS ClientHello over {} bytes", tls::MAX_HELLO))
            }
            // Stops: a partial ClientHello passed on when the client goes
            // quiet (the idle timeout) or half-closes: the bytes the
            // check never saw whole would reach the server unchecked.
            Hello::Partial => match client.read(&mut chunk) {
                // Nothing sent at all: nothing passes either.
                Ok(0) if buf.is_empty() => return Ok(buf),
                Ok(0) => return Err("the tunnel ended inside its TLS ClientHello".into()),
                Ok(n) => {
                    idle.touch();
                    buf.extend_from_slice(&chunk[..n]);
                }
                Err(e) if !idle.ends(&e) => {}
                Err(e) => return Err(format!("reading the tunnel's TLS ClientHello: {e}")),
            },
        }
    }
}

/// Copies until EOF, an error, or the run's byte limit; the bytes copied.
fn copy(shared: &Shared, r: &mut impl Read, mut w: &TcpStream, idle: &Idle) -> u64 {
    let max = shared.proxy.limits.bytes;
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0u64;
    loop {
        let got = match r.read(&mut buf) {
            Ok(0) => return n,
            Ok(g) => g,
            Err(e) if !idle.ends(&e) => continue,
            Err(_) => return n,
        };
        idle.touch();
        if shared.bytes.fetch_add(got as u64, Ordering::SeqCst) + got as u64 > max {
            return n;
        }
        if w.write_all(&buf[..got]).is_err() {
            return n;
        }
        n += got as u64;
    }
}
