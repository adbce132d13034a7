//! Audit records as text fields: `key=value` pairs, with the values a
//! process controls (paths, names) hex-decoded only where the kernel
//! encoded them.
use crate::sys::audit::RawRecord;

/// A parsed record: type, serial, fields in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub kind: u16,
    pub serial: u64,
    pub fields: Vec<(String, String)>,
}

impl Record {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Fields whose values the kernel logs as untrusted strings: quoted when
/// plain, hex-encoded when they contain a space, quote or control byte.
const UNTRUSTED: &[&str] = &["path", "comm", "exe", "name", "ocomm", "cwd"];

/// Parses `audit(1729738800.268:30): key=value key="quoted value" ...`.
pub fn parse(raw: &RawRecord) -> Option<Record> {
    let rest = raw.text.strip_prefix("audit(")?;
    let (stamp, body) = rest.split_once("):")?;
    let serial = stamp.rsplit_once(':')?.1.parse().ok()?;
    let mut fields = Vec::new();
    let mut s = body.trim_start();
    while !s.is_empty() {
        let Some((key, after)) = s.split_once('=') else {
            break;
        };
        let key = key.trim().to_string();
        let (value, next) = if let Some(q) = after.strip_prefix('"') {
            match q.find('"') {
                Some(end) => (q[..end].to_string(), &q[end + 1..]),
                None => (q.to_string(), ""),
            }
        } else {
            let end = after.find(' ').unwrap_or(after.len());
            let v = &after[..end];
            let v = if UNTRUSTED.contains(&key.as_str()) {
                unhex(v).unwrap_or_else(|| v.to_string())
            } else {
                v.to_string()
            };
            (v, &after[end..])
        };
        fields.push((key, value));
        s = next.trim_start();
    }
    Some(Record {
        kind: raw.kind,
        serial,
        fields,
    })
}

fn unhex(v: &str) -> Option<String> {
    if v.is_empty() || !v.len().is_multiple_of(2) || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..v.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&v[i..i + 2], 16).ok())
        .collect();
    Some(String::from_utf8_lossy(&bytes?).into_owned())
}
