//! A cache of discoveries, so that a REPL that starts the same interpreter
//! once per step pays for asking it about itself only once. Discovering a
//! pyenv Python costs a few hundred milliseconds (the shim is a bash script
//! that runs the interpreter); a cache hit costs a few stats.
//!
//! An entry is used only when everything discovery depended on still holds:
//! the same command name, PATH, working directory (for relative names) and
//! `--ro` list; `find_program` still resolving the name to the same file;
//! and that file (and a Python's real executable, and each directory on its
//! `sys.path`, which a package install or removal changes) unchanged: same
//! device, inode, size, mtime and ctime; and the entry written by a runsbx
//! that discovers the same way ([`FORMAT`]). Anything else is a miss, and the entry is
//! rewritten.
//!
//! Stops: a poisoned cache adding binds to every later sandbox. The cache
//! lives in runsbx's private state root, which `runsbx sandbox` refuses as
//! (or inside, or around) a workdir; entries not owned by the caller's uid,
//! writable by group or others, with a second hard link, or in a directory
//! that is not the caller's alone, are ignored.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::discover::{discover_in, find_program, Discovery};
use crate::error::BundleError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> Option<Self> {
        let m = fs::metadata(path).ok()?;
        Some(Self {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

/// Bumped whenever what discovery finds for the same inputs changes, so that
/// entries written by an older runsbx are misses.
const FORMAT: u32 = 4;

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    #[serde(default)]
    format: u32,
    name: String,
    path_env: String,
    cwd: PathBuf,
    extra_ro: Vec<PathBuf>,
    found: PathBuf,
    stamps: Vec<(PathBuf, Stamp)>,
    /// The discovery with `args` holding only what replaces the name.
    discovery: Discovery,
}

fn key(name: &str, path_env: &str, cwd: &Path, extra_ro: &[PathBuf]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (name, path_env, cwd, extra_ro).hash(&mut h);
    format!("{:016x}.json", h.finish())
}

/// [`discover_in`], answered from `dir` when a valid entry exists, and
/// stored there otherwise. Cache failures never fail the discovery.
pub fn discover_cached(
    cmd: &[String],
    path_env: &str,
    extra_ro: &[PathBuf],
    cwd: &Path,
    dir: &Path,
) -> Result<Discovery, BundleError> {
    let Some(name) = cmd.first() else {
        return discover_in(cmd, path_env, extra_ro, cwd);
    };
    let file = dir.join(key(name, path_env, cwd, extra_ro));
    if let Some(d) = lookup(&file, cmd, path_env, extra_ro, cwd) {
        return Ok(d);
    }
    let d = discover_in(cmd, path_env, extra_ro, cwd)?;
    let _ = store(&file, cmd, path_env, extra_ro, cwd, &d);
    Ok(d)
}

fn lookup(
    file: &Path,
    cmd: &[String],
    path_env: &str,
    extra_ro: &[PathBuf],
    cwd: &Path,
) -> Option<Discovery> {
    let meta = fs::symlink_metadata(file).ok()?;
    // SAFETY-relevant: only a file we own and nobody else can write, in a
    // directory of ours nobody else can write (or swap entries in), and
    // with no second name: a hard link elsewhere, e.g. in a directory that
    // was once a sandbox's workdir, would let its workload rewrite it.
    let dir = fs::symlink_metadata(file.parent()?).ok()?;
    if !owned_and_private(&meta) || !meta.is_file() || meta.nlink() != 1 {
        return None;
    }
    if !owned_and_private(&dir) || !dir.is_dir() {
        return None;
    }
    let entry: Entry = serde_json::from_slice(&fs::read(file).ok()?).ok()?;
    if entry.format != FORMAT
        || entry.name != cmd[0]
        || entry.path_env != path_env
        || entry.cwd != cwd
        || entry.extra_ro != extra_ro
    {
        return None;
    }
    if find_program(&cmd[0], path_env, cwd).ok()? != entry.found {
        return None;
    }
    if entry
        .stamps
        .iter()
        .any(|(p, s)| Stamp::of(p).as_ref() != Some(s))
    {
        return None;
    }
    let mut d = entry.discovery;
    d.args.extend(cmd[1..].iter().cloned());
    Some(d)
}

fn store(
    file: &Path,
    cmd: &[String],
    path_env: &str,
    extra_ro: &[PathBuf],
    cwd: &Path,
    d: &Discovery,
) -> std::io::Result<()> {
    let found = find_program(&cmd[0], path_env, cwd).map_err(std::io::Error::other)?;
    let mut watched = vec![found.clone(), fs::canonicalize(&found)?, d.argv0.clone()];
    if let Some(py) = &d.python {
        watched.push(py.executable.clone());
        // Installing or removing a package changes its import directory.
        watched.extend(py.path.iter().filter(|p| p.is_dir()).cloned());
    }
    if let Some(script) = &d.script {
        watched.push(script.clone());
    }
    let stamps = watched
        .into_iter()
        .filter_map(|p| Stamp::of(&p).map(|s| (p, s)))
        .collect();
    let mut prefix = d.clone();
    prefix.args.truncate(d.args.len() + 1 - cmd.len());
    let entry = Entry {
        format: FORMAT,
        name: cmd[0].clone(),
        path_env: path_env.to_string(),
        cwd: cwd.to_path_buf(),
        extra_ro: extra_ro.to_vec(),
        found,
        stamps,
        discovery: prefix,
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(file.parent().unwrap_or(Path::new(".")))?;
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(&serde_json::to_vec(&entry)?)?;
    fs::rename(&tmp, file)
}

/// Owned by the caller's uid, not writable by group or others.
fn owned_and_private(m: &fs::Metadata) -> bool {
    m.uid() == current_uid() && m.permissions().mode() & 0o022 == 0
}

fn current_uid() -> u32 {
    // /proc/self is ours: its owner is our effective uid.
    fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_after_miss_and_invalidated_by_change() {
        let t = tempfile::tempdir().unwrap();
        let bin = t.path().join("bin");
        fs::create_dir(&bin).unwrap();
        let prog = bin.join("prog");
        fs::copy("/bin/true", &prog).unwrap();
        let path_env = bin.to_str().unwrap();
        let cache = t.path().join("cache");
        let cmd = vec!["prog".to_string(), "a".to_string()];
        let first = discover_cached(&cmd, path_env, &[], t.path(), &cache).unwrap();
        assert_eq!(fs::read_dir(&cache).unwrap().count(), 1);
        let cmd2 = vec!["prog".to_string(), "b".to_string(), "c".to_string()];
        let second = discover_cached(&cmd2, path_env, &[], t.path(), &cache).unwrap();
        assert_eq!(second.ro_paths, first.ro_paths);
        assert_eq!(second.args[1..], ["b", "c"]);
        assert_eq!(second, discover_in(&cmd2, path_env, &[], t.path()).unwrap());
        // Replacing the program invalidates the entry.
        fs::remove_file(&prog).unwrap();
        fs::copy("/usr/bin/busybox", &prog).unwrap_or_else(|_| fs::copy("/bin/ls", &prog).unwrap());
        let third = discover_cached(&cmd2, path_env, &[], t.path(), &cache).unwrap();
        assert_eq!(third, discover_in(&cmd2, path_env, &[], t.path()).unwrap());
        let entry = fs::read_dir(&cache)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        assert!(lookup(&entry, &cmd2, path_env, &[], t.path()).is_some());
        // An entry with a second name is ignored.
        let other = t.path().join("other-name");
        fs::hard_link(&entry, &other).unwrap();
        assert!(lookup(&entry, &cmd2, path_env, &[], t.path()).is_none());
        fs::remove_file(&other).unwrap();
        // So is one in a directory others may write.
        fs::set_permissions(&cache, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(lookup(&entry, &cmd2, path_env, &[], t.path()).is_none());
        fs::set_permissions(&cache, fs::Permissions::from_mode(0o700)).unwrap();
        assert!(lookup(&entry, &cmd2, path_env, &[], t.path()).is_some());
        // A group-writable entry is ignored.
        for e in fs::read_dir(&cache).unwrap() {
            let p = e.unwrap().path();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o666)).unwrap();
            assert!(lookup(&p, &cmd2, path_env, &[], t.path()).is_none());
        }
    }
}
