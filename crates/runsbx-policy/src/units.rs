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
