//! Sizes as the flags and the spec write them.

/// runsbx's one size parser: `512M`, `1G`, `1048576`, `64K` (binary units)
/// into bytes. Zero is a size here (an rlimit of 0 is meaningful); callers
/// that need a positive one say so (runsbx_runtime::guard::parse_size).
pub fn parse_bytes(s: &str) -> Option<u64> {
    let (num, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1u64 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// A memory size as runc's `update` flags take it (docker's RAMInBytes):
/// a decimal number, an optional space, an optional binary unit
/// `k m g t p` (either case), an optional `i` and an optional `b`:
/// `100M`, `100MB`, `100MiB`, `1.5g`, `512 k`, `4096`. Wider than
/// [`parse_bytes`] because containerd and podman pass these on unchanged;
/// `-1` (no limit) is the caller's to handle.
pub fn parse_ram(s: &str) -> Option<i64> {
    let digits = |t: &str| t.bytes().take_while(u8::is_ascii_digit).count();
    let int_len = digits(s);
    if int_len == 0 {
        return None;
    }
    let (int, mut rest) = s.split_at(int_len);
    let mut frac = "";
    if let Some(r) = rest.strip_prefix('.') {
        let n = digits(r);
        if n == 0 {
            return None;
        }
        (frac, rest) = r.split_at(n);
    }
    rest = rest.strip_prefix(' ').unwrap_or(rest);
    let shift = match rest.bytes().next().map(|b| b.to_ascii_lowercase()) {
        Some(b'k') => 10,
        Some(b'm') => 20,
        Some(b'g') => 30,
        Some(b't') => 40,
        Some(b'p') => 50,
        _ => 0,
    };
    if shift > 0 {
        rest = &rest[1..];
    }
    rest = rest.strip_prefix(['i', 'I']).unwrap_or(rest);
    rest = rest.strip_prefix(['b', 'B']).unwrap_or(rest);
    if !rest.is_empty() || frac.len() > 18 {
        return None;
    }
    // (int . frac) * 2^shift, truncated, in integers: no float rounding.
    let scale = 10u128.pow(frac.len() as u32);
    let whole = int.parse::<u128>().ok()?.checked_mul(scale)?;
    let part = if frac.is_empty() {
        0
    } else {
        frac.parse::<u128>().ok()?
    };
    let bytes = whole.checked_add(part)?.checked_mul(1u128 << shift)? / scale;
    i64::try_from(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::parse_ram;

    #[test]
    fn ram_sizes_as_runc_reads_them() {
        let rows: &[(&str, Option<i64>)] = &[
            ("4096", Some(4096)),
            ("0", Some(0)),
            ("100M", Some(100 << 20)),
            ("100m", Some(100 << 20)),
            ("100MB", Some(100 << 20)),
            ("100MiB", Some(100 << 20)),
            ("100mib", Some(100 << 20)),
            ("512 k", Some(512 << 10)),
            ("1.5g", Some(3 << 29)),
            ("1.5", Some(1)),
            ("2T", Some(2 << 40)),
            ("1P", Some(1 << 50)),
            ("10b", Some(10)),
            ("", None),
            ("M", None),
            ("-1", None),
            ("-5M", None),
            ("1.", None),
            (".5M", None),
            ("1.2.3", None),
            ("10X", None),
            ("10MM", None),
            ("10 ", Some(10)),
            (" 10", None),
            ("10  M", None),
            ("8192P", None),
            ("99999999999999999999", None),
        ];
        for (text, want) in rows {
            assert_eq!(parse_ram(text), *want, "parse_ram({text:?})");
        }
    }
}
