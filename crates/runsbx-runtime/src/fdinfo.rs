//! /proc/<pid>/fdinfo/<fd>: the one parser of it (procfs 0.18 has none).

/// The fields of an fdinfo file runsbx reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FdInfo {
    /// `flags:`, octal in the file.
    pub(crate) flags: i32,
    pub(crate) ino: u64,
}

impl FdInfo {
    pub(crate) fn parse(text: &str) -> Option<Self> {
        Some(Self {
            flags: flags(text)?,
            ino: field(text, "ino:")?.parse().ok()?,
        })
    }
}

/// The `flags:` field alone (the posture check needs no inode).
pub(crate) fn flags(text: &str) -> Option<i32> {
    i32::from_str_radix(field(text, "flags:")?, 8).ok()
}

fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
}
