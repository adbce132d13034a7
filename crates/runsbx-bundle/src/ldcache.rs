//! Parsing of `/etc/ld.so.cache`, the table `ldconfig` writes and `ld.so`
//! consults after `DT_RPATH`/`DT_RUNPATH` and before its default directories.
//!
//! Only what lookup needs is read: for each entry, the library name (key), the
//! path the loader would open (value) and the hwcap word (non-zero for
//! `glibc-hwcaps` subdirectory entries). Both layouts glibc has written are
//! accepted: the new one alone (glibc >= 2.32 default), or the old one
//! followed by the new one. A file that is neither yields an empty table, which
//! makes lookup fall through to the default directories as the loader does.

/// One entry of the cache, in file order (which is the loader's preference order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    pub flags: i32,
    pub name: String,
    pub path: String,
    pub hwcap: u64,
}

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
const NEW_HEADER_LEN: usize = 48;
const NEW_ENTRY_LEN: usize = 24;
const OLD_ENTRY_LEN: usize = 12;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

fn cstr_at(b: &[u8], off: usize) -> Option<String> {
    let rest = b.get(off..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    String::from_utf8(rest[..end].to_vec()).ok()
}

/// Parses a cache image. Malformed entries are skipped, never guessed at.
pub fn parse(bytes: &[u8]) -> Vec<CacheEntry> {
    let new = if bytes.starts_with(NEW_MAGIC) {
        bytes
    } else if bytes.starts_with(OLD_MAGIC) {
        // struct cache_file { char magic[11]; uint32 nlibs; file_entry libs[]; }
        // then the new cache, aligned to 8.
        let Some(nlibs) = u32_at(bytes, 12) else {
            return Vec::new();
        };
        let end = 16usize.saturating_add((nlibs as usize).saturating_mul(OLD_ENTRY_LEN));
        let start = end.div_ceil(8) * 8;
        match bytes.get(start..) {
            Some(rest) if rest.starts_with(NEW_MAGIC) => rest,
            _ => return Vec::new(),
        }
    } else {
        return Vec::new();
    };
    // Offsets of strings in the new format are relative to its own header.
    let Some(nlibs) = u32_at(new, 20) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for i in 0..nlibs as usize {
        let off = NEW_HEADER_LEN + i * NEW_ENTRY_LEN;
        let (Some(flags), Some(key), Some(value), Some(hwcap)) = (
            u32_at(new, off),
            u32_at(new, off + 4),
            u32_at(new, off + 8),
            u64_at(new, off + 16),
        ) else {
            break;
        };
        if let (Some(name), Some(path)) = (cstr_at(new, key as usize), cstr_at(new, value as usize))
        {
            out.push(CacheEntry {
                flags: flags as i32,
                name,
                path,
                hwcap,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_cache(entries: &[(i32, &str, &str, u64)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let table_len = NEW_HEADER_LEN + entries.len() * NEW_ENTRY_LEN;
        let mut offs = Vec::new();
        for (_, k, v, _) in entries {
            let ko = table_len + strings.len();
            strings.extend_from_slice(k.as_bytes());
            strings.push(0);
            let vo = table_len + strings.len();
            strings.extend_from_slice(v.as_bytes());
            strings.push(0);
            offs.push((ko as u32, vo as u32));
        }
        let mut b = NEW_MAGIC.to_vec();
        b.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        b.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        b.resize(NEW_HEADER_LEN, 0);
        for ((flags, _, _, hwcap), (ko, vo)) in entries.iter().zip(offs) {
            b.extend_from_slice(&flags.to_le_bytes());
            b.extend_from_slice(&ko.to_le_bytes());
            b.extend_from_slice(&vo.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes());
            b.extend_from_slice(&hwcap.to_le_bytes());
        }
        b.extend_from_slice(&strings);
        b
    }

    #[test]
    fn parses_new_format() {
        let img = new_cache(&[
            (0x303, "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", 0),
            (0x3, "libc.so.6", "/lib/i386-linux-gnu/libc.so.6", 0),
        ]);
        let e = parse(&img);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].name, "libc.so.6");
        assert_eq!(e[0].path, "/lib/x86_64-linux-gnu/libc.so.6");
        assert_eq!(e[0].flags, 0x303);
        assert_eq!(e[1].path, "/lib/i386-linux-gnu/libc.so.6");
    }

    #[test]
    fn parses_old_then_new_format() {
        let new = new_cache(&[(0x303, "libm.so.6", "/lib/libm.so.6", 0)]);
        let mut img = OLD_MAGIC.to_vec();
        img.push(0);
        img.extend_from_slice(&1u32.to_le_bytes());
        img.extend_from_slice(&[0u8; OLD_ENTRY_LEN]);
        img.resize(32, 0); // 16 + 12 = 28, aligned to 32
        img.extend_from_slice(&new);
        let e = parse(&img);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].path, "/lib/libm.so.6");
    }

    #[test]
    fn garbage_and_truncation_yield_nothing_or_a_prefix() {
        assert!(parse(b"").is_empty());
        assert!(parse(b"not a cache at all").is_empty());
        let img = new_cache(&[(0x303, "a.so", "/a.so", 0), (0x303, "b.so", "/b.so", 0)]);
        // Cut inside the string table: entries whose strings are gone are skipped.
        let cut = &img[..img.len() - 3];
        let e = parse(cut);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].name, "a.so");
    }

    #[test]
    fn reads_the_hosts_cache() {
        let Ok(bytes) = std::fs::read("/etc/ld.so.cache") else {
            eprintln!("skipped: no /etc/ld.so.cache on this host");
            return;
        };
        let e = parse(&bytes);
        assert!(
            e.iter().any(|e| e.name == "libc.so.6"),
            "libc.so.6 not in the host's cache"
        );
    }
}
