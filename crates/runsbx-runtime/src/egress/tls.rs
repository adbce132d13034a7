//! The one thing the proxy reads inside a CONNECT tunnel: the server name
//! (SNI) of a TLS ClientHello, the client's first bytes. Nothing is
//! decrypted; a tunnel that does not start with a whole ClientHello is
//! cut (serve.rs, `tunnel_start`).

/// What the first bytes of a tunnel are.
#[derive(Debug, PartialEq, Eq)]
pub enum Hello {
    /// Not a TLS handshake record: plain bytes.
    NotTls,
    /// A ClientHello still incomplete in the buffer: read more.
    Partial,
    /// A ClientHello, with its server name if it sends one.
    Tls(Option<String>),
    /// A handshake record that is not a well-formed ClientHello.
    Malformed,
}

/// The most bytes read while waiting for a whole ClientHello.
pub const MAX_HELLO: usize = 16 * 1024 + 5;

/// Reads the ClientHello at the start of `buf`.
///
/// Stops: a first record the check would skip but a lenient server reads
/// past (a warning alert first, or a handshake record with version bytes
/// 00 01, both of which Go's crypto/tls accepts, followed by a ClientHello
/// with another name). Only a handshake record (type 22) with version
/// 0x0301 to 0x0304 that holds exactly one whole ClientHello is TLS;
/// anything else is [`Hello::NotTls`] or [`Hello::Malformed`], and the
/// tunnel is cut.
pub fn client_hello(buf: &[u8]) -> Hello {
    match buf {
        [] | [22] | [22, 3] => return Hello::Partial,
        [22, 3, 1..=4, ..] => {}
        _ => return Hello::NotTls,
    }
    if buf.len() < 5 {
        return Hello::Partial;
    }
    let len = usize::from(u16::from_be_bytes([buf[3], buf[4]]));
    let Some(record) = buf.get(5..5 + len) else {
        return Hello::Partial;
    };
    parse_hello(record).unwrap_or(Hello::Malformed)
}

/// A cursor over big-endian fields; None when one runs past the end.
struct Cur<'a>(&'a [u8]);

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<usize> {
        self.take(1).map(|b| usize::from(b[0]))
    }
    fn u16(&mut self) -> Option<usize> {
        self.take(2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(n)
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(n)
    }
}

fn parse_hello(record: &[u8]) -> Option<Hello> {
    let mut c = Cur(record);
    if c.u8()? != 1 {
        return None; // not a ClientHello
    }
    let len = c.take(3)?;
    let len = usize::from(len[0]) << 16 | usize::from(len[1]) << 8 | usize::from(len[2]);
    // A ClientHello split over several records is refused as malformed:
    // no client sends one that large without post-quantum key shares, and
    // a proxy that guessed would let a second name hide in the rest. So is
    // a record holding more than the ClientHello (a second message the
    // check never read).
    let mut c = Cur(c.take(len)?);
    if record.len() != 4 + len {
        return None;
    }
    c.take(2 + 32)?; // version, random
    c.vec8()?; // session id
    c.vec16()?; // cipher suites
    c.vec8()?; // compression methods
    if c.0.is_empty() {
        return Some(Hello::Tls(None)); // no extensions
    }
    let mut ext = Cur(c.vec16()?);
    if !c.0.is_empty() {
        return None; // bytes after the extensions
    }
    let mut name = None;
    while !ext.0.is_empty() {
        let kind = ext.u16()?;
        let body = ext.vec16()?;
        if kind != 0 {
            continue;
        }
        // Stops: two server_name extensions, one for the check and one
        // for the server.
        if name.is_some() {
            return None;
        }
        let mut body = Cur(body);
        let mut list = Cur(body.vec16()?);
        if !body.0.is_empty() {
            return None; // bytes after the name list
        }
        while !list.0.is_empty() {
            let kind = list.u8()?;
            let host = list.vec16()?;
            if kind == 0 {
                if name.is_some() {
                    return None;
                }
                name = Some(String::from_utf8(host.to_vec()).ok()?);
            }
        }
    }
    Some(Hello::Tls(name))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal ClientHello record with `names` in one server_name extension
    /// (none: no extension), `sni_exts` times.
    pub(crate) fn hello(names: &[&str], sni_exts: usize) -> Vec<u8> {
        let mut list = Vec::new();
        for n in names {
            list.push(0u8);
            list.extend((n.len() as u16).to_be_bytes());
            list.extend(n.as_bytes());
        }
        let mut sni = (list.len() as u16).to_be_bytes().to_vec();
        sni.extend(list);
        let mut exts = Vec::new();
        for _ in 0..sni_exts {
            exts.extend([0u8, 0]);
            exts.extend((sni.len() as u16).to_be_bytes());
            exts.extend(&sni);
        }
        exts.extend([0u8, 43, 0, 3, 2, 3, 4]); // supported_versions
        let mut body = vec![3u8, 3];
        body.extend([7u8; 32]);
        body.extend([0u8]); // session id
        body.extend([0u8, 2, 0x13, 0x01]); // one suite
        body.extend([1u8, 0]); // null compression
        body.extend((exts.len() as u16).to_be_bytes());
        body.extend(exts);
        let mut hs = vec![1u8, 0];
        hs.extend((body.len() as u16).to_be_bytes());
        hs.extend(body);
        let mut rec = vec![22u8, 3, 1];
        rec.extend((hs.len() as u16).to_be_bytes());
        rec.extend(hs);
        rec
    }

    #[test]
    fn reads_the_server_name() {
        let h = hello(&["pypi.org"], 1);
        assert_eq!(client_hello(&h), Hello::Tls(Some("pypi.org".into())));
        assert_eq!(client_hello(&hello(&[], 0)), Hello::Tls(None));
        for cut in [0, 3, 5, 20, h.len() - 1] {
            assert_eq!(client_hello(&h[..cut]), Hello::Partial, "{cut}");
        }
        assert_eq!(client_hello(b"GET / HTTP/1.1\r\n"), Hello::NotTls);
        assert_eq!(client_hello(b"SSH-2.0-x"), Hello::NotTls);
    }

    #[test]
    fn two_names_are_malformed() {
        assert_eq!(
            client_hello(&hello(&["a.com", "b.com"], 1)),
            Hello::Malformed
        );
        assert_eq!(client_hello(&hello(&["a.com"], 2)), Hello::Malformed);
        let mut h = hello(&["a.com"], 1);
        h[5] = 2; // ServerHello
        assert_eq!(client_hello(&h), Hello::Malformed);
    }

    /// Stops: a first record a lenient server skips or accepts (Go's
    /// crypto/tls ignores the record version), with the real ClientHello
    /// and another name behind it; and bytes the check never read.
    #[test]
    fn only_a_handshake_record_of_tls_1_0_to_1_3_holding_one_client_hello_is_tls() {
        let h = hello(&["other.com"], 1);
        let mut alert = vec![21u8, 3, 3, 0, 2, 1, 0]; // warning, close_notify
        alert.extend(&h);
        assert_eq!(client_hello(&alert), Hello::NotTls);
        for version in [[0u8, 1], [3, 0], [3, 5], [2, 0]] {
            let mut v = h.clone();
            v[1..3].copy_from_slice(&version);
            assert_eq!(client_hello(&v), Hello::NotTls, "{version:?}");
        }
        for minor in 1..=4 {
            let mut v = h.clone();
            v[2] = minor;
            assert_eq!(client_hello(&v), Hello::Tls(Some("other.com".into())));
        }
        // The ClientHello split over two records.
        let body = &h[5..];
        let mut split = vec![22u8, 3, 1, 0, 10];
        split.extend(&body[..10]);
        split.extend([22u8, 3, 1]);
        split.extend(((body.len() - 10) as u16).to_be_bytes());
        split.extend(&body[10..]);
        assert_eq!(client_hello(&split), Hello::Malformed);
        // A record holding more than the ClientHello.
        let mut more = h.clone();
        more.extend([1u8, 0, 0, 0]);
        let len = (more.len() - 5) as u16;
        more[3..5].copy_from_slice(&len.to_be_bytes());
        assert_eq!(client_hello(&more), Hello::Malformed);
    }
}
