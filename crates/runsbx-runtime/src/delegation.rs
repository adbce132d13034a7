//! A delegated cgroup v2 subtree for rootless runsbx (docs/rootless.md,
//! "Delegated cgroups").
//!
//! Delegated means: the caller's own v2 cgroup (the `0::` line of
//! /proc/self/cgroup), its `cgroup.procs` and its `cgroup.subtree_control`
//! are owned by the caller's uid, so the kernel lets it create children
//! there and move its own processes into them.
//!
//! Layout: each container's cgroup is a child of the caller's cgroup,
//! `<caller cgroup>/runsbx-<id>`. The caller's cgroup always holds a
//! process (runsbx itself, and usually the caller's shell), so cgroup v2's
//! "no internal processes" rule forbids enabling domain controllers in its
//! `cgroup.subtree_control`; a child still gets the controllers already
//! enabled there. A sibling layout (beside the caller's cgroup, under its
//! parent) would escape that rule but needs the parent delegated too, and
//! moving a process there crosses the root of the shim's cgroup namespace,
//! which the kernel refuses (ENOENT). So: containers always get a cgroup
//! (ps, kill --all, pause, delete work on it); limits only where the
//! controllers they need are already enabled for the caller's children
//! ([`check_limits`] says which are missing otherwise).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The caller's delegated cgroup, found by [`detect`].
#[derive(Debug, Clone, PartialEq)]
pub struct Delegation {
    /// Where the cgroup v2 hierarchy is mounted on the host.
    pub mount: PathBuf,
    /// The caller's cgroup, absolute in that hierarchy (validated).
    pub cgroup: String,
    /// Its `cgroup.controllers`: what it may offer its children.
    pub controllers: Vec<String>,
    /// Its `cgroup.subtree_control`: what its children get.
    pub subtree_control: Vec<String>,
}

impl Delegation {
    /// The caller's cgroup directory on the host.
    pub fn dir(&self) -> PathBuf {
        host_dir(&self.mount, &self.cgroup)
    }

    /// A container's cgroup, absolute in the hierarchy (recorded in its
    /// runsbx.json).
    pub fn container_cgroup(&self, id: &str) -> String {
        join(&self.cgroup, &child_name(id))
    }
}

/// The name of a container's cgroup below the delegated one; `id` is
/// already validated (no `/`, not `.` or `..`).
pub fn child_name(id: &str) -> String {
    format!("runsbx-{id}")
}

/// `cgroupsPath` as libcontainer sees it inside the shim, where the
/// delegated cgroup is mounted on /sys/fs/cgroup.
pub fn shim_path(id: &str) -> String {
    format!("/{}", child_name(id))
}

fn join(parent: &str, name: &str) -> String {
    match parent {
        "/" => format!("/{name}"),
        p => format!("{p}/{name}"),
    }
}

fn host_dir(mount: &Path, cgroup: &str) -> PathBuf {
    mount.join(cgroup.trim_start_matches('/'))
}

/// The caller's v2 cgroup from the text of /proc/self/cgroup, if valid.
pub fn v2_path(proc_self_cgroup: &str) -> Option<String> {
    let path = proc_self_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))?;
    valid_path(path).then(|| path.to_string())
}

/// Absolute, and no `.`/`..`/empty components. Stops: a path such as
/// `/../..` (a cgroup outside our cgroup namespace reads so) or one naming
/// a directory outside the hierarchy making runsbx bind-mount and write
/// there. The `(deleted)` suffix of a removed cgroup fails too (a space).
pub fn valid_path(path: &str) -> bool {
    if path == "/" {
        return true;
    }
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    rest.split('/').all(|c| {
        !c.is_empty()
            && c != "."
            && c != ".."
            && c.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
    })
}

/// Owner and kind of one path, read without following a symlink.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Owned {
    pub uid: u32,
    pub is_dir: bool,
    pub is_file: bool,
}

impl Owned {
    fn read(path: &Path) -> Option<Self> {
        // Not following symlinks stops: a link planted in a cgroupfs view
        // (or in a non-cgroup mount passed off as one) making runsbx write
        // `cgroup.procs` somewhere else.
        let m = fs::symlink_metadata(path).ok()?;
        Some(Self {
            uid: m.uid(),
            is_dir: m.file_type().is_dir(),
            is_file: m.file_type().is_file(),
        })
    }
}

/// The delegation rule, pure: the directory and both files exist as such
/// and belong to `uid`.
pub fn delegated(
    uid: u32,
    dir: Option<Owned>,
    procs: Option<Owned>,
    subtree: Option<Owned>,
) -> bool {
    matches!(dir, Some(d) if d.is_dir && d.uid == uid)
        && matches!(procs, Some(p) if p.is_file && p.uid == uid)
        && matches!(subtree, Some(s) if s.is_file && s.uid == uid)
}

/// [`delegated`], read from a cgroup directory on the host.
fn delegated_dir(uid: u32, dir: &Path) -> bool {
    let ours = |name: &str| Owned::read(&dir.join(name));
    delegated(
        uid,
        Owned::read(dir),
        ours("cgroup.procs"),
        ours("cgroup.subtree_control"),
    )
}

/// The cgroup v2 hierarchy: /sys/fs/cgroup on a unified host,
/// /sys/fs/cgroup/unified on a hybrid one; `None` on a v1-only host.
pub fn v2_mount() -> Option<PathBuf> {
    use nix::sys::statfs::{statfs, CGROUP2_SUPER_MAGIC};
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| statfs(p).is_ok_and(|s| s.filesystem_type() == CGROUP2_SUPER_MAGIC))
}

fn words(path: &Path) -> Option<Vec<String>> {
    let text = fs::read_to_string(path).ok()?;
    Some(text.split_whitespace().map(str::to_string).collect())
}

/// The caller's delegated cgroup, or `None` (not v2, not owned, unreadable).
pub fn detect(uid: u32) -> Option<Delegation> {
    let mount = v2_mount()?;
    let cgroup = v2_path(&fs::read_to_string("/proc/self/cgroup").ok()?)?;
    let dir = host_dir(&mount, &cgroup);
    if !delegated_dir(uid, &dir) {
        return None;
    }
    // Our own pid must be listed there: proves that the mount and
    // /proc/self/cgroup agree (a cgroup namespace or a bind mount of a
    // subtree could make the same path name another cgroup).
    let me = std::process::id().to_string();
    let procs = fs::read_to_string(dir.join("cgroup.procs")).ok()?;
    if !procs.lines().any(|l| l == me) {
        return None;
    }
    Some(Delegation {
        controllers: words(&dir.join("cgroup.controllers"))?,
        subtree_control: words(&dir.join("cgroup.subtree_control"))?,
        mount,
        cgroup,
    })
}

/// The parent of a cgroup path (`""` for a relative one, never valid).
pub fn parent_of(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) => "/",
        Some((p, _)) => p,
        None => "",
    }
}

/// For a command on an existing container whose runsbx.json records the
/// cgroup `container` (absolute in the hierarchy): the host directory of
/// its parent, the delegated cgroup, to show in the shim. Checked again
/// (valid path, owned by `uid`, no symlink): runsbx.json is the caller's
/// own file, but a cgroup may have changed hands since.
///
/// `Ok(None)` when the parent is gone (the caller's session ended): the
/// container's cgroup went with it (a cgroup with children cannot be
/// removed), so there is nothing to show and `delete` can still clear the
/// state.
pub fn parent_dir(uid: u32, container: &str) -> Result<Option<PathBuf>, DelegationError> {
    let parent = parent_of(container);
    if !valid_path(container) || container == "/" || !valid_path(parent) {
        return Err(DelegationError::InvalidPath(container.to_string()));
    }
    let mount = v2_mount().ok_or(DelegationError::NoCgroupV2)?;
    let dir = host_dir(&mount, parent);
    if fs::symlink_metadata(&dir).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(None);
    }
    if !delegated_dir(uid, &dir) {
        return Err(DelegationError::NotDelegated {
            parent: parent.to_string(),
            uid,
        });
    }
    Ok(Some(dir))
}

/// Why a delegated cgroup cannot be used, or cannot hold the limits asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelegationError {
    #[error("recorded cgroup {0:?} is not a valid cgroup path")]
    InvalidPath(String),
    #[error("this host has no cgroup v2 hierarchy")]
    NoCgroupV2,
    #[error("the container's cgroup parent {parent} is not (or no longer) delegated to uid {uid}")]
    NotDelegated { parent: String, uid: u32 },
    /// Controllers the delegated cgroup does not offer at all.
    #[error(
        "linux.resources asks for {asks}: the delegated cgroup {cgroup} does not offer the {} {} \
         (available: {available})",
        .missing.join(", "),
        if .missing.len() == 1 { "controller" } else { "controllers" }
    )]
    Missing {
        asks: String,
        cgroup: String,
        missing: Vec<String>,
        available: String,
    },
    /// Controllers it offers but does not enable for its children.
    #[error(
        "linux.resources asks for {asks}: the {} {} not enabled in {cgroup}/cgroup.subtree_control, \
         and cannot be while that cgroup holds processes (runsbx runs in it; cgroup v2's \
         no-internal-processes rule)",
        .disabled.join(", "),
        if .disabled.len() == 1 { "controller is" } else { "controllers are" }
    )]
    Disabled {
        asks: String,
        disabled: Vec<String>,
        cgroup: String,
    },
}

/// Limits need controllers: `wanted` pairs what the spec asks for (as
/// named in errors) with the controllers it needs. Every needed controller
/// must be offered by the delegated cgroup and already enabled for its
/// children (it cannot be enabled here: see the module doc).
pub fn check_limits(d: &Delegation, wanted: &[(&str, Vec<String>)]) -> Result<(), DelegationError> {
    let asks = wanted
        .iter()
        .map(|(w, _)| *w)
        .collect::<Vec<_>>()
        .join(", ");
    let mut missing: Vec<&str> = Vec::new();
    let mut disabled: Vec<&str> = Vec::new();
    for c in wanted.iter().flat_map(|(_, c)| c) {
        if !d.controllers.contains(c) {
            if !missing.contains(&c.as_str()) {
                missing.push(c);
            }
        } else if !d.subtree_control.contains(c) && !disabled.contains(&c.as_str()) {
            disabled.push(c);
        }
    }
    let owned = |v: &[&str]| v.iter().map(|c| c.to_string()).collect();
    if !missing.is_empty() {
        let available = match d.controllers.is_empty() {
            true => "none".to_string(),
            false => d.controllers.join(" "),
        };
        return Err(DelegationError::Missing {
            asks,
            cgroup: d.cgroup.clone(),
            missing: owned(&missing),
            available,
        });
    }
    if !disabled.is_empty() {
        return Err(DelegationError::Disabled {
            asks,
            disabled: owned(&disabled),
            cgroup: d.cgroup.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mine(is_dir: bool) -> Option<Owned> {
        Some(Owned {
            uid: 1000,
            is_dir,
            is_file: !is_dir,
        })
    }

    #[test]
    fn parses_and_validates_the_v2_line() {
        let text = "4:memory:/x\n0::/user.slice/user-1000.slice/session-3.scope\n";
        assert_eq!(
            v2_path(text).as_deref(),
            Some("/user.slice/user-1000.slice/session-3.scope")
        );
        assert_eq!(v2_path("0::/\n").as_deref(), Some("/"));
        for bad in [
            "0::/a/../b",
            "0::/..",
            "0::a/b",
            "0::/a//b",
            "0::/a/",
            "0::/a/./b",
            "0::/a (deleted)",
            "0::",
            "4:memory:/a",
        ] {
            assert_eq!(v2_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn delegated_needs_all_three_owned_and_of_the_right_kind() {
        assert!(delegated(1000, mine(true), mine(false), mine(false)));
        let other = Some(Owned {
            uid: 0,
            is_dir: false,
            is_file: true,
        });
        assert!(!delegated(1000, mine(true), other, mine(false)));
        assert!(!delegated(1000, mine(true), mine(false), other));
        assert!(!delegated(1000, mine(true), mine(false), None));
        // A symlink (neither dir nor file) is never delegated.
        let link = Some(Owned {
            uid: 1000,
            is_dir: false,
            is_file: false,
        });
        assert!(!delegated(1000, link, mine(false), mine(false)));
        assert!(!delegated(1000, mine(true), link, mine(false)));
    }

    fn deleg(controllers: &[&str], subtree: &[&str]) -> Delegation {
        Delegation {
            mount: "/sys/fs/cgroup/unified".into(),
            cgroup: "/runsbx-test".into(),
            controllers: controllers.iter().map(|s| s.to_string()).collect(),
            subtree_control: subtree.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn paths_of_containers() {
        let d = deleg(&[], &[]);
        assert_eq!(d.dir(), Path::new("/sys/fs/cgroup/unified/runsbx-test"));
        assert_eq!(d.container_cgroup("c1"), "/runsbx-test/runsbx-c1");
        assert_eq!(shim_path("c1"), "/runsbx-c1");
        let root = Delegation {
            cgroup: "/".into(),
            ..d
        };
        assert_eq!(root.container_cgroup("c1"), "/runsbx-c1");
        assert!(parent_dir(0, "/a/../b").is_err());
        assert!(parent_dir(0, "/").is_err());
        assert!(parent_dir(0, "relative").is_err());
    }

    #[test]
    fn limits_name_what_is_missing() {
        let mem = [("memory limits", vec!["memory".to_string()])];
        let err = check_limits(&deleg(&["hugetlb"], &[]), &mem)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "linux.resources asks for memory limits: the delegated cgroup /runsbx-test does not \
             offer the memory controller (available: hugetlb)"
        );
        let err = check_limits(&deleg(&[], &[]), &mem)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("(available: none)"), "{err}");
        let err = check_limits(&deleg(&["memory", "pids"], &["pids"]), &mem)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "the memory controller is not enabled in /runsbx-test/cgroup.subtree_control"
            ),
            "{err}"
        );
        check_limits(&deleg(&["memory"], &["memory"]), &mem).unwrap();
        check_limits(&deleg(&[], &[]), &[]).unwrap();
    }
}
