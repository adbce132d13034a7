//! The egress allowlist of `runsbx sandbox --allow-net`: which hosts and
//! ports the sandbox's HTTP proxy may connect to, and which addresses a name
//! may resolve to. Pure: hosts and addresses in, a decision or a reason out.
//! The proxy that applies it is runsbx_runtime::egress.
//!
//! The rules, each against one trick:
//! - A host is one canonical value before it is matched: ASCII lower case,
//!   one trailing dot removed. Non-ASCII names are refused (give an IDN as
//!   punycode), so no Unicode normalization can make two spellings match.
//! - Anything the C library would read as an IPv4 address is an IP literal,
//!   whatever its spelling (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`),
//!   and a name whose last label is a number but not such an address is
//!   refused. Stops: an IP literal passed as a "name" to getaddrinfo, which
//!   parses it as inet_aton does and skips DNS and the allowlist's names.
//! - An IP literal matches only an IP entry of the allowlist, never a name:
//!   allowing `pypi.org` does not allow its addresses typed by hand (which
//!   reach whatever else is served there).
//! - A name matches an exact entry, or a `*.suffix` entry when it has at
//!   least one more label (`*.example.com` is not `example.com`), and the
//!   port must be one the entry names (80 and 443 when it names none).
//! - Every address a name resolves to must be public unicast (not loopback,
//!   private, link-local with the cloud metadata address, CGNAT, multicast,
//!   documentation, 6to4/Teredo/NAT64 forms of those...) and not one of the
//!   host's own, unless it lies in a range the caller allowed
//!   (`--allow-net-range`). One forbidden address refuses the name, so a
//!   resolver answer that mixes a public and a private address (DNS
//!   rebinding) cannot pick the private one later.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The port the proxy listens on inside the sandbox's network namespace
/// (127.0.0.1 there; the namespace is the sandbox's own, so it is free).
pub const PROXY_PORT: u16 = 3128;

/// The environment that points the workload's HTTP clients at the proxy
/// (curl, pip, requests and urllib read the lower-case names, some tools
/// the upper-case ones). NO_PROXY is empty: no host is reached around it.
pub fn proxy_env() -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{PROXY_PORT}");
    ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]
        .into_iter()
        .map(|k| (k.to_string(), url.clone()))
        .chain(["NO_PROXY", "no_proxy"].map(|k| (k.to_string(), String::new())))
        .collect()
}

/// Ports an entry without `:PORT` allows.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// A host as a request or a flag names it, canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Host::Ip(a) => write!(f, "{a}"),
        }
    }
}

/// Parses a host (`[v6]` bracketed) into its canonical form, or says why
/// it is refused.
pub fn parse_host(s: &str) -> Result<Host, String> {
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        // std's parser takes no zone id (`%eth0`) and no IPv4 trick forms.
        let a: Ipv6Addr = inner
            .parse()
            .map_err(|_| format!("{s:?} is not an IPv6 address"))?;
        return Ok(Host::Ip(IpAddr::V6(a).to_canonical()));
    }
    if !s.is_ascii() {
        return Err(format!("{s:?}: a non-ASCII name (give it as punycode)"));
    }
    let lower = s.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if name.is_empty() {
        return Err("an empty host".into());
    }
    if name.contains(':') {
        return Err(format!("{s:?}: an IPv6 address must be in brackets"));
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    if ends_in_number(last) {
        return parse_ipv4_any(name)
            .map(|a| Host::Ip(IpAddr::V4(a)))
            .ok_or_else(|| format!("{s:?}: looks like an IPv4 address but is not one"));
    }
    if name.len() > 253 {
        return Err(format!("{s:?}: a name longer than 253 characters"));
    }
    for label in name.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(format!("{s:?}: not a valid host name"));
        }
    }
    Ok(Host::Name(name.to_string()))
}

/// A label the URL standard and inet_aton read as a number: digits, or
/// `0x` and hex digits.
fn ends_in_number(label: &str) -> bool {
    let hex = label
        .strip_prefix("0x")
        .or_else(|| label.strip_prefix("0X"));
    match hex {
        Some(h) => h.bytes().all(|b| b.is_ascii_hexdigit()),
        None => !label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// IPv4 as inet_aton reads it: one to four parts, each decimal, octal
/// (leading 0) or hex (0x); the last part fills the remaining bytes.
pub fn parse_ipv4_any(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut nums = Vec::with_capacity(4);
    for p in &parts {
        let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or(p.strip_prefix("0X")) {
            (h, 16)
        } else if p.len() > 1 && p.starts_with('0') {
            (&p[1..], 8)
        } else {
            (*p, 10)
        };
        if digits.is_empty() && radix != 16 {
            return None;
        }
        let v = if digits.is_empty() {
            0
        } else {
            u64::from_str_radix(digits, radix).ok()?
        };
        nums.push(v);
    }
    let (last, head) = nums.split_last()?;
    if head.iter().any(|&n| n > 255) {
        return None;
    }
    let rest_bits = 8 * (4 - head.len() as u32);
    if *last >= 1u64 << rest_bits {
        return None;
    }
    let mut v: u64 = 0;
    for (i, n) in head.iter().enumerate() {
        v |= n << (24 - 8 * i as u32);
    }
    Some(Ipv4Addr::from((v | last) as u32))
}

/// One `--allow-net` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub pattern: Pattern,
    pub ports: Vec<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// `example.com`
    Exact(String),
    /// `*.example.com`, stored without `*.`
    Subdomains(String),
    /// `192.0.2.1`, `[2001:db8::1]`
    Ip(IpAddr),
}

/// Splits `HOST[:PORT]` (`[v6]:PORT`); the port as given.
pub fn split_host_port(s: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if s.starts_with('[') {
        match s.find(']') {
            Some(i) => match &s[i + 1..] {
                "" => (&s[..=i], None),
                rest => match rest.strip_prefix(':') {
                    Some(p) => (&s[..=i], Some(p)),
                    None => return Err(format!("{s:?}: expected [IPV6]:PORT")),
                },
            },
            None => return Err(format!("{s:?}: no closing ]")),
        }
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = port
        .map(|p| match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
            _ => Err(format!("{s:?}: {p:?} is not a port (1-65535)")),
        })
        .transpose()?;
    Ok((host, port))
}

impl Rule {
    /// `HOST[:PORT]`, `*.SUFFIX[:PORT]`, `IP[:PORT]`, `[IPV6][:PORT]`.
    pub fn parse(s: &str) -> Result<Rule, String> {
        let (host, port) = split_host_port(s)?;
        let pattern = match host.strip_prefix("*.") {
            Some(suffix) => match parse_host(suffix)? {
                Host::Name(n) => Pattern::Subdomains(n),
                Host::Ip(_) => return Err(format!("{s:?}: a wildcard needs a name after *.")),
            },
            None if host.contains('*') => {
                return Err(format!("{s:?}: `*.` is the only wildcard, at the start"))
            }
            None => match parse_host(host)? {
                Host::Name(n) => Pattern::Exact(n),
                Host::Ip(a) => Pattern::Ip(a),
            },
        };
        let ports = match port {
            Some(p) => vec![p],
            None => DEFAULT_PORTS.to_vec(),
        };
        Ok(Rule { pattern, ports })
    }

    fn matches(&self, host: &Host, port: u16) -> bool {
        self.ports.contains(&port) && self.matches_host(host)
    }

    fn matches_host(&self, host: &Host) -> bool {
        match (&self.pattern, host) {
            (Pattern::Exact(p), Host::Name(n)) => p == n,
            (Pattern::Subdomains(p), Host::Name(n)) => n
                .strip_suffix(p.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (Pattern::Ip(p), Host::Ip(a)) => p == a,
            _ => false,
        }
    }
}

/// An address range, `ADDR/BITS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub bits: u8,
}

impl Cidr {
    /// `ADDR/BITS` or a single address; the address in std's strict form.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (a, bits) = match s.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .parse()
            .map_err(|_| format!("{s:?}: not an address range (10.0.0.0/8, fd00::/8)"))?;
        let addr = addr.to_canonical();
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            Some(b) => b
                .parse::<u8>()
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(|| format!("{s:?}: prefix length must be 0-{max}"))?,
            None => max,
        };
        Ok(Cidr { addr, bits })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let masked = |v: u128, width: u32| {
            let shift = width - u32::from(self.bits);
            if shift >= 128 {
                0
            } else {
                v >> shift
            }
        };
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                masked(u32::from(a).into(), 32) == masked(u32::from(b).into(), 32)
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => masked(a.into(), 128) == masked(b.into(), 128),
            _ => false,
        }
    }
}

/// Ranges that are not public unicast, with the name a refusal gives.
/// IPv4-mapped IPv6 addresses are classified as their IPv4 address.
const SPECIAL: &[(&str, &str)] = &[
    ("0.0.0.0/8", "this network"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared address space (CGNAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local (cloud metadata)"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/96", "IPv4-compatible (deprecated)"),
    ("64:ff9b::/96", "NAT64"),
    ("64:ff9b:1::/48", "NAT64"),
    ("100::/64", "discard"),
    ("2001::/23", "IETF protocol assignments (Teredo)"),
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4"),
    ("fc00::/7", "unique local (private)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
];

/// Why `ip` is not a public unicast address, if it is not.
pub fn special(ip: IpAddr) -> Option<&'static str> {
    let ip = ip.to_canonical();
    SPECIAL
        .iter()
        .find(|(range, _)| Cidr::parse(range).expect("valid table").contains(ip))
        .map(|(_, why)| *why)
}

/// The whole egress policy: the entries, and the ranges allowed although
/// not public.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    pub rules: Vec<Rule>,
    pub ranges: Vec<Cidr>,
}

impl Allowlist {
    /// `--allow-net` and `--allow-net-range` values.
    pub fn parse(entries: &[String], ranges: &[String]) -> Result<Allowlist, String> {
        Ok(Allowlist {
            rules: entries
                .iter()
                .map(|e| Rule::parse(e).map_err(|m| format!("--allow-net {m}")))
                .collect::<Result<_, _>>()?,
            ranges: ranges
                .iter()
                .map(|r| Cidr::parse(r).map_err(|m| format!("--allow-net-range {m}")))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Whether `host:port` is on the list; the reason when not.
    pub fn permits(&self, host: &Host, port: u16) -> Result<(), String> {
        if self.rules.iter().any(|r| r.matches(host, port)) {
            return Ok(());
        }
        let named = self.rules.iter().any(|r| r.matches_host(host));
        Err(match (host, named) {
            (_, true) => format!("port {port} of {host} is not in --allow-net"),
            (Host::Ip(_), false) => {
                format!("{host} is an IP address not in --allow-net (allow names, or the address itself)")
            }
            (Host::Name(_), false) => format!("{host} is not in --allow-net"),
        })
    }

    /// Whether the proxy may connect to `ip` (one the host resolved, or a
    /// literal the list allows); `own`: the host's own addresses.
    pub fn address_ok(&self, ip: IpAddr, own: &[IpAddr]) -> Result<(), String> {
        let ip = ip.to_canonical();
        if self.ranges.iter().any(|r| r.contains(ip)) {
            return Ok(());
        }
        if let Some(why) = special(ip) {
            return Err(format!(
                "{ip} is {why}, not a public address (--allow-net-range allows a range)"
            ));
        }
        if own.iter().any(|o| o.to_canonical() == ip) {
            return Err(format!(
                "{ip} is an address of this host (--allow-net-range allows it)"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "egress_tests.rs"]
mod tests;
