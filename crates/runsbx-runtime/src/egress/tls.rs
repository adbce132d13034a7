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
pub fn client_hello(buf: &[u8]) -> Hello {
    // TLS record: type 22 (handshake), version 3.x, length.
    match buf {
        [] => return Hello::Partial,
        [22, ..] => {}
        _ => return Hello::NotTls,
    }
    if buf.len() < 5 {
        return Hello::Partial;
    }
    if buf[1] != 3 {
        return Hello::NotTls;
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
    // a proxy that guessed would let a second name hide in the rest.
    let mut c = Cur(c.take(len)?);
    c.take(2 + 32)?; // version, random
    c.vec8()?; // session id
    c.vec16()?; // cipher suites
    c.vec8()?; // compression methods
    if c.0.is_empty() {
        return Some(Hello::Tls(None)); // no extensions
    }
    let mut ext = Cur(c.vec16()?);
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
        let mut list = Cur(Cur(body).vec16()?);
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
}
