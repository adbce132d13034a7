//! The create lock, `<root>/.<id>.create`.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Result, RuntimeError};
use crate::layout::{self, Entry};

impl CreateLock {
    pub(super) fn take(root: &Path, id: &str) -> Result<Self> {
        let mut lock =
            Self::try_take(root, id)?.ok_or_else(|| RuntimeError::Exists(id.to_string()))?;
        let marker = fs::File::open(&lock.path)
            .map_err(|e| RuntimeError::io(format!("open {}", lock.path.display()), e))?;
        lock._marker = Some(marker);
        Ok(lock)
    }

    /// `Ok(None)` when another process holds it: a create of `id` in flight.
    pub(super) fn try_take(root: &Path, id: &str) -> Result<Option<Self>> {
        match Self::open_and_lock(root, id, true)? {
            LockFile::Taken(lock) => Ok(Some(lock)),
            LockFile::Held | LockFile::Absent => Ok(None),
        }
    }

    /// The lock when the file is there; without creating it (a delete of a
    /// container whose create finished pays one failed open).
    pub(super) fn try_take_existing(root: &Path, id: &str) -> Result<LockFile> {
        Self::open_and_lock(root, id, false)
    }

    fn open_and_lock(root: &Path, id: &str, create: bool) -> Result<LockFile> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let path = crate::layout::create_lock(root, id);
        let open = |new: bool| {
            fs::OpenOptions::new()
                .create_new(new)
                .write(true)
                .mode(0o600)
                .open(&path)
        };
        // One open on the usual path of each: a create finds no file, a
        // delete of a finished create's container none either.
        let opened = match open(create) {
            Ok(file) => Ok((file, !create)),
            Err(e) if create && e.kind() == std::io::ErrorKind::AlreadyExists => {
                open(false).map(|file| (file, true))
            }
            Err(e) => Err(e),
        };
        let (file, existed) = match opened {
            Ok(opened) => opened,
            Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(LockFile::Absent)
            }
            // Its holder removed it between our two opens: it was in flight.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockFile::Held),
            Err(e) => return Err(RuntimeError::io(format!("open {}", path.display()), e)),
        };
        let whole_file = libc::flock {
            l_type: libc::F_WRLCK as libc::c_short,
            l_whence: libc::SEEK_SET as libc::c_short,
            l_start: 0,
            l_len: 0,
            l_pid: 0,
        };
        match nix::fcntl::fcntl(file.as_raw_fd(), nix::fcntl::FcntlArg::F_SETLK(&whole_file)) {
            Ok(_) => {}
            Err(nix::errno::Errno::EACCES | nix::errno::Errno::EAGAIN) => {
                return Ok(LockFile::Held)
            }
            Err(e) => return Err(RuntimeError::sys(format!("lock {}", path.display()), e)),
        }
        // A create that finished meanwhile unlinked the file we locked: it
        // then made the container (or failed), so treat the id as taken.
        let now = fs::metadata(&path);
        if !create
            && now
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            // Its holder finished and removed it meanwhile.
            return Ok(LockFile::Absent);
        }
        let same = match (now, file.metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if !same {
            // Not `then_some`: a Self built here would unlink the new file on drop.
            return Ok(LockFile::Held);
        }
        Ok(LockFile::Taken(Self {
            path,
            file,
            existed,
            keep: false,
            _marker: None,
        }))
    }

    /// Its descriptors (the lock, and the marker when taken for a create),
    /// which the create's init closes before it waits for `start`.
    pub(super) fn descriptors(&self) -> Vec<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        let marker = self._marker.as_ref().map(|m| m.as_raw_fd());
        std::iter::once(self.file.as_raw_fd())
            .chain(marker)
            .collect()
    }

    /// For a create that fails because the container exists: a file that
    /// was there before may be a dead create's, whose orphans hold it until
    /// a delete finds them by it, so it stays.
    pub(super) fn keep_if_left(&mut self) {
        self.keep = self.existed;
    }
}

/// Held by `create` from its "already exists" check until the state dir is
/// complete or removed. Stops: two `create`s of one id at the same moment
/// both passing the check, sharing one state dir and cgroup, and the loser's
/// clean-up removing the winner's container (tests/bad_input.rs
/// `duplicate_id_under_concurrent_create`). A lock on `<root>/.<id>.create`,
/// not a marker file, so a create killed half-way leaves nothing that blocks
/// the id (the kernel drops the lock with the process).
///
/// A POSIX record lock, not flock(2): it is not inherited across fork, so
/// the init libcontainer forks does not hold it on after its create died,
/// and `delete` can tell a create in flight from one killed half-way
/// (tests/faults.rs `sigkill_during_create_and_run`).
///
/// `create` also keeps the file open read-only (`_marker`). Both of its
/// descriptors are inherited: libcontainer's intermediate process holds
/// them until it exits, init until the end of its set-up (the executor's
/// `validate` closes them, so that a created container's init holds
/// nothing of the create's, as runc's does not). After a create was killed
/// half-way, `delete` finds what is left of it by that pair
/// ([`CreateLock::kill_orphans`]); an init past its set-up is found by
/// state.json, its cgroup, or died with its foreground runsbx.
pub(super) struct CreateLock {
    pub(super) path: PathBuf,
    pub(super) file: fs::File,
    /// The file was there before: left by a create that died (one that
    /// finished or failed removed it), whose orphans may still hold it, or
    /// made by a concurrent opener.
    pub(super) existed: bool,
    /// Leave the file on drop: it may be the only way to find a dead
    /// create's orphans ([`CreateLock::keep_if_left`]).
    pub(super) keep: bool,
    pub(super) _marker: Option<fs::File>,
}

/// What `<root>/.<id>.create` says about creates of an id.
pub(super) enum LockFile {
    /// No file: no create of the id runs, and none died half-way.
    Absent,
    /// A create of the id runs.
    Held,
    Taken(CreateLock),
}

impl Drop for CreateLock {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        // Unlinked while still locked; the lock goes with the file.
        let _ = fs::remove_file(&self.path);
    }
}

/// Removes the report FIFO (`.<id>.report`) that a create of `id` killed
/// before moving it into the state dir left in the root, and the
/// config views of execs (`.<id>.<pid>.config.json`) and config copies of
/// creates (`.<id>.<pid>.bundle/`, rootless/view.rs) killed half-way. Call it holding the id's [`CreateLock`], so no
/// live create owns a report; a view is left while its process lives (an
/// exec holds no lock).
pub(super) fn remove_stale_reports(root: &Path, id: &str) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(what) = name.to_str().and_then(|n| layout::entry_of(id, n)) else {
            continue;
        };
        let pid = match what {
            Entry::Report => {
                let _ = fs::remove_file(entry.path());
                continue;
            }
            Entry::CreateLock => continue,
            Entry::ConfigView(pid) | Entry::ConfigCopy(pid) => pid,
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            // A config copy (rootless::ConfigCopy) is a directory.
            let _ = fs::remove_file(entry.path()).or_else(|_| fs::remove_dir_all(entry.path()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // POSIX record locks are per process, so a lock held by another
    // process (`LockFile::Held`) is covered by tests/bad_input.rs and
    // tests/faults.rs, not here.

    #[test]
    fn take_makes_the_file_and_drop_removes_it() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join(".c1.create");
        let lock = CreateLock::take(root.path(), "c1").unwrap();
        assert!(!lock.existed && lock._marker.is_some());
        assert!(path.exists());
        drop(lock);
        assert!(!path.exists());
    }

    #[test]
    fn existing_only_finds_a_file_that_is_there() {
        let root = tempfile::tempdir().unwrap();
        assert!(matches!(
            CreateLock::try_take_existing(root.path(), "c1").unwrap(),
            LockFile::Absent
        ));
        assert!(!root.path().join(".c1.create").exists(), "made nothing");
        fs::write(root.path().join(".c1.create"), "").unwrap();
        match CreateLock::try_take_existing(root.path(), "c1").unwrap() {
            LockFile::Taken(lock) => assert!(lock.existed && lock._marker.is_none()),
            _ => panic!("a stale file is taken"),
        }
        assert!(!root.path().join(".c1.create").exists(), "removed on drop");
    }

    #[test]
    fn a_stale_file_stays_when_the_create_finds_the_container() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join(".c1.create");
        fs::write(&path, "").unwrap();
        let mut lock = CreateLock::try_take(root.path(), "c1").unwrap().unwrap();
        assert!(lock.existed);
        lock.keep_if_left();
        drop(lock);
        assert!(path.exists(), "a dead create's orphans are found by it");
        // A file this create made itself goes even then.
        fs::remove_file(&path).unwrap();
        let mut lock = CreateLock::take(root.path(), "c1").unwrap();
        lock.keep_if_left();
        drop(lock);
        assert!(!path.exists());
    }

    #[test]
    fn stale_reports_and_dead_views_go() {
        let root = tempfile::tempdir().unwrap();
        let dead = i32::MAX; // above pid_max: no such process
        let me = std::process::id();
        let names = [
            ".c1.report".to_string(),
            ".c1.77.report".into(),
            format!(".c1.{dead}.config.json"),
            format!(".c1.{me}.config.json"),
            ".c1.x.report".into(),
            ".c2.report".into(),
            ".c1.create".into(),
        ];
        for n in &names {
            fs::write(root.path().join(n), "").unwrap();
        }
        remove_stale_reports(root.path(), "c1");
        let left: Vec<bool> = names.iter().map(|n| root.path().join(n).exists()).collect();
        // `.c1.77.report` is the report of a create of `c1.77`.
        assert_eq!(left, [false, true, false, true, true, true, true]);
    }
}
