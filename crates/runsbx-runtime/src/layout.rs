//! The names runsbx gives a container's files in its state root, made and
//! parsed here only:
//!
//! - `ID/`: libcontainer's state dir, with runsbx.json (container/sidecar.rs);
//! - `.ID.create`: the create lock (container/lock.rs);
//! - `.ID.report`: init's report FIFO while a create runs (report.rs);
//! - `.ID.PID.config.json`: the config an exec shows libcontainer
//!   (rootless/view.rs), PID the exec's runsbx;
//! - `.ID.PID.bundle/`: the config copy a create shows libcontainer
//!   (rootless/view.rs), PID the create's runsbx;
//! - `ID/exec-PID/`: the state root an exec into a created container shows
//!   libcontainer (container/exec.rs), PID the exec's runsbx.
//!
//! Ids may hold dots and digits (`a`, `a.1`, `a.1.2` are all valid), so a
//! name is only ever parsed against a given id, and the forms are such that
//! none of one id's names reads as a name of another id: cleaning up after
//! `a` must never take the live report of a create of `a.123`.

use std::path::{Path, PathBuf};

/// What a name in the state root is to a given id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    CreateLock,
    Report,
    ConfigView(u32),
    ConfigCopy(u32),
}

pub fn state_dir(root: &Path, id: &str) -> PathBuf {
    root.join(id)
}

pub fn create_lock(root: &Path, id: &str) -> PathBuf {
    root.join(format!(".{id}.create"))
}

pub fn report(root: &Path, id: &str) -> PathBuf {
    root.join(format!(".{id}.report"))
}

pub fn config_view(root: &Path, id: &str, pid: u32) -> PathBuf {
    root.join(format!(".{id}.{pid}.config.json"))
}

pub fn config_copy(root: &Path, id: &str, pid: u32) -> PathBuf {
    root.join(format!(".{id}.{pid}.bundle"))
}

pub fn exec_root(root: &Path, id: &str, pid: u32) -> PathBuf {
    state_dir(root, id).join(format!("exec-{pid}"))
}

/// What `name` (a file name in the state root) is to container `id`, if
/// anything.
pub fn entry_of(id: &str, name: &str) -> Option<Entry> {
    let rest = name
        .strip_prefix('.')?
        .strip_prefix(id)?
        .strip_prefix('.')?;
    match rest {
        "create" => return Some(Entry::CreateLock),
        "report" => return Some(Entry::Report),
        _ => {}
    }
    // `.ID.PID.<kind>`: PID is digits alone, so `.a.1.2.bundle` (a copy of
    // `a.1`'s) is nothing of `a`'s.
    let (pid, kind) = rest.split_once('.')?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let pid = pid.parse().ok()?;
    match kind {
        "config.json" => Some(Entry::ConfigView(pid)),
        "bundle" => Some(Entry::ConfigCopy(pid)),
        _ => None,
    }
}

/// The id whose create lock `name` is.
pub fn lock_owner(name: &str) -> Option<&str> {
    name.strip_prefix('.')?.strip_suffix(".create")
}

/// Whether `name` has the form of a config copy (of some id's).
pub fn is_config_copy(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".bundle")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_its_own_ids_and_no_others() {
        let root = Path::new("/r");
        let ids = [
            "a",
            "a.1",
            "a.1.2",
            "a.config",
            "a.report",
            "1",
            "a.1.bundle",
        ];
        for id in ids {
            let made = [
                (create_lock(root, id), Entry::CreateLock),
                (report(root, id), Entry::Report),
                (config_view(root, id, 123), Entry::ConfigView(123)),
                (config_copy(root, id, 45), Entry::ConfigCopy(45)),
            ];
            for (path, entry) in made {
                let name = path.file_name().unwrap().to_str().unwrap();
                for other in ids {
                    let got = entry_of(other, name);
                    if other == id {
                        assert_eq!(got, Some(entry), "{name} for {id}");
                    } else {
                        assert_eq!(got, None, "{name} of {id} read as {other}'s");
                    }
                }
            }
        }
    }

    #[test]
    fn other_names_are_nothing() {
        for name in [
            "a",
            ".a",
            ".a.",
            ".a.x.bundle",
            ".a..bundle",
            ".a.1.json",
            "..a.report",
        ] {
            assert_eq!(entry_of("a", name), None, "{name}");
        }
        assert_eq!(lock_owner(".a.1.create"), Some("a.1"));
        assert_eq!(lock_owner("a.create"), None);
        assert!(is_config_copy(".a.12.bundle"));
        assert!(!is_config_copy("bundle"));
    }
}
