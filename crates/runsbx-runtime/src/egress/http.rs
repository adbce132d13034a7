//! The part of HTTP/1.x the proxy reads: one request head (request line and
//! headers), and the target it names. Pure; the bytes come from the proxy.

use runsbx_policy::egress::{parse_host, split_host_port, Host};

/// Most bytes a request head may have; a longer one is refused.
pub const MAX_HEAD: usize = 16 * 1024;

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// As sent: `host:port` for CONNECT, `http://...` otherwise.
    pub target: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
}

/// Where a request goes, and what the proxy sends upstream for it.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    pub host: Host,
    pub port: u16,
    /// The origin-form path and query (`/simple/pip/`); empty for CONNECT.
    pub path: String,
}

/// The index just past the head's blank line, once `buf` holds it.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a head (without its blank line's final CRLF requirement: the
/// caller found it with [`head_end`]).
pub fn parse_head(raw: &[u8]) -> Result<Head, String> {
    // Stops: header injection and request smuggling through line ends the
    // proxy and the upstream split differently (a bare LF the proxy passes
    // inside one header value, which the server reads as a second header,
    // `Host` included). Only CRLF ends a line; no other control character
    // but tab appears anywhere.
    for (i, &b) in raw.iter().enumerate() {
        let crlf = match b {
            b'\r' => raw.get(i + 1) == Some(&b'\n'),
            b'\n' => i > 0 && raw[i - 1] == b'\r',
            b'\t' => true,
            _ => b >= 0x20 && b != 0x7f,
        };
        if !crlf {
            return Err(format!(
                "a control character (0x{b:02x}) in the request head"
            ));
        }
    }
    let text = std::str::from_utf8(raw).map_err(|_| "a request head that is not UTF-8")?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("a malformed request line {line:?}"));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
        return Err(format!("{version:?} is not HTTP/1.0 or 1.1"));
    }
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(format!("a malformed method {method:?}"));
    }
    let mut headers = Vec::new();
    for l in lines.take_while(|l| !l.is_empty()) {
        // Stops: obsolete line folding, which proxies and servers join
        // differently (a header one of them sees and the other does not).
        let Some((name, value)) = l.split_once(':').filter(|_| !l.starts_with([' ', '\t'])) else {
            return Err(format!("a malformed header line {l:?}"));
        };
        let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if name.is_empty() || !name.bytes().all(tchar) {
            return Err(format!("a malformed header name {name:?}"));
        }
        headers.push((name.to_string(), value.trim().to_string()));
    }
    Ok(Head {
        method: method.into(),
        target: target.into(),
        version: version.into(),
        headers,
    })
}

impl Head {
    /// Every value of header `name` (case-insensitive).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// Where the request goes: CONNECT's `host:port`, or an absolute
    /// `http://` URL's authority; checked against a `Host` header if any.
    pub fn target(&self) -> Result<Target, String> {
        let (authority, path, default_port) = if self.method == "CONNECT" {
            (self.target.as_str(), String::new(), None)
        } else {
            let Some(rest) = self.target.strip_prefix("http://") else {
                return Err(match self.target.starts_with('/') {
                    true => {
                        "a request without an absolute http:// URL (not a proxy request)".into()
                    }
                    false => format!(
                        "{:?}: only http:// URLs are forwarded (https goes through CONNECT)",
                        self.target
                    ),
                });
            };
            let cut = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let path = match &rest[cut..] {
                "" => "/".to_string(),
                p if p.starts_with('?') => format!("/{p}"),
                p => p.to_string(),
            };
            if path.contains('#') {
                return Err("a URL with a fragment".into());
            }
            (&rest[..cut], path, Some(80))
        };
        let (host, port) = authority_of(authority, default_port)?;
        // Stops: a request whose Host header names another site than the
        // one checked (a CDN or a virtual host routes on Host): the header,
        // if sent, must name the same host and port.
        let hosts = self.all("Host");
        if hosts.len() > 1 {
            return Err("more than one Host header".into());
        }
        if let Some(h) = hosts.first() {
            let (hh, hp) = authority_of(h, Some(default_port.unwrap_or(port)))?;
            if (&hh, hp) != (&host, port) {
                return Err(format!(
                    "the Host header names {hh}:{hp}, the request {host}:{port}"
                ));
            }
        }
        Ok(Target { host, port, path })
    }
}

/// `host[:port]` of a URL or CONNECT target; a port is required when
/// `default` is None.
fn authority_of(s: &str, default: Option<u16>) -> Result<(Host, u16), String> {
    if s.contains('@') {
        return Err(format!("{s:?}: credentials in the authority"));
    }
    let (host, port) = split_host_port(s)?;
    let port = port
        .or(default)
        .ok_or_else(|| format!("{s:?}: CONNECT needs HOST:PORT"))?;
    Ok((parse_host(host)?, port))
}

/// Hop-by-hop headers: the proxy's business, not passed upstream.
const HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

/// The head sent upstream for a forwarded request: origin-form target,
/// the client's end-to-end headers, `Connection: close` (one request per
/// connection).
pub fn upstream_head(head: &Head, target: &Target) -> Vec<u8> {
    let mut out = format!("{} {} {}\r\n", head.method, target.path, head.version);
    let mut has_host = false;
    for (n, v) in &head.headers {
        let lower = n.to_ascii_lowercase();
        if HOP.contains(&lower.as_str()) {
            continue;
        }
        has_host |= lower == "host";
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    if !has_host {
        let authority = match target.port {
            80 => target.host.to_string(),
            p => format!("{}:{p}", target.host),
        };
        out.push_str(&format!("Host: {authority}\r\n"));
    }
    out.push_str("Connection: close\r\n\r\n");
    out.into_bytes()
}

/// How many body bytes follow a forwarded request's head, or why it is
/// refused. Stops: a second request smuggled after the first (to the same
/// upstream, without a check): the proxy passes exactly the body the head
/// announces, so chunked bodies and conflicting lengths are refused.
pub fn body_length(head: &Head) -> Result<u64, String> {
    if !head.all("Transfer-Encoding").is_empty() {
        return Err("a request body with Transfer-Encoding (send a Content-Length)".into());
    }
    match head.all("Content-Length").as_slice() {
        [] => Ok(0),
        [v] if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
            v.parse().map_err(|_| format!("Content-Length {v:?}"))
        }
        _ => Err("a malformed or repeated Content-Length".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str) -> Head {
        parse_head(s.as_bytes()).unwrap()
    }

    fn target(s: &str) -> Result<Target, String> {
        head(s).target()
    }

    #[test]
    fn connect_and_absolute_targets() {
        let t = target("CONNECT PyPI.org.:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n").unwrap();
        assert_eq!(t.host, Host::Name("pypi.org".into()));
        assert_eq!(t.port, 443);
        let t = target("GET http://example.com/a?b HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((t.port, t.path.as_str()), (80, "/a?b"));
        let t = target("GET http://example.com:8080?q HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((t.port, t.path.as_str()), (8080, "/?q"));
        let t = target("GET http://0x7f.1/ HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(t.host, Host::Ip("127.0.0.1".parse().unwrap()));
    }

    #[test]
    fn refusals() {
        for (req, why) in [
            ("CONNECT a.com HTTP/1.1\r\n\r\n", "CONNECT needs HOST:PORT"),
            (
                "CONNECT a.com:443 HTTP/1.1\r\nHost: b.com:443\r\n\r\n",
                "the Host header names b.com:443, the request a.com:443",
            ),
            (
                "CONNECT a.com:443 HTTP/1.1\r\nHost: a.com:444\r\n\r\n",
                "the Host header names a.com:444",
            ),
            (
                "GET http://a.com/ HTTP/1.1\r\nHost: b.com\r\n\r\n",
                "the Host header names b.com:80",
            ),
            (
                "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nhost: a.com\r\n\r\n",
                "more than one Host header",
            ),
            ("GET https://a.com/ HTTP/1.1\r\n\r\n", "only http:// URLs"),
            ("GET /x HTTP/1.1\r\n\r\n", "not a proxy request"),
            ("GET http://u:p@a.com/ HTTP/1.1\r\n\r\n", "credentials"),
            ("GET http://a.com/#x HTTP/1.1\r\n\r\n", "fragment"),
        ] {
            let e = target(req).unwrap_err();
            assert!(e.contains(why), "{req:?}: {e}");
        }
        for bad in [
            "GET http://a.com/ HTTP/2\r\n\r\n",
            "GET  http://a.com/ HTTP/1.1\r\n\r\n",
            "get http://a.com/ HTTP/1.1\r\n\r\n",
            "GET http://a.com/ HTTP/1.1\r\nX: y\r\n folded\r\n\r\n",
            "GET http://a.com/ HTTP/1.1\r\nBad Name: y\r\n\r\n",
            "GET http://a.com/ HTTP/1.1\r\nX: a\nHost: b.com\r\n\r\n",
            "GET http://a.com/ HTTP/1.1\r\nX: a\rHost: b.com\r\n\r\n",
            "GET http://a.com/\x00 HTTP/1.1\r\n\r\n",
            "GET http://a.com/ HTTP/1.1\r\nX: \x1b\r\n\r\n",
            "GET http://a.com/ HTTP/1.1\r\nX(y): z\r\n\r\n",
        ] {
            assert!(parse_head(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn forwarded_heads_and_bodies() {
        let h = head("POST http://a.com:81/p HTTP/1.1\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nContent-Length: 3\r\nX-A: b\r\n\r\n");
        let t = h.target().unwrap();
        assert_eq!(
            String::from_utf8(upstream_head(&h, &t)).unwrap(),
            "POST /p HTTP/1.1\r\nContent-Length: 3\r\nX-A: b\r\nHost: a.com:81\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(body_length(&h), Ok(3));
        assert_eq!(body_length(&head("GET http://a/ HTTP/1.1\r\n\r\n")), Ok(0));
        for bad in [
            "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "POST http://a/ HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
        ] {
            assert!(body_length(&head(bad)).is_err(), "{bad:?}");
        }
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nxyz"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
    }
}
