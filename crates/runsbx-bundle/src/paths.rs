//! Path helpers shared by discovery and generation: lexical normalization and
//! reduction of a set of bind paths to a minimal, mount-ordered list.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// Makes `p` absolute against `cwd` and removes `.`, `..` and repeated
/// separators without touching the filesystem.
///
/// Lexical `..` is what the container sees: its rootfs holds no symlinks of
/// its own, so `/a/bin/../lib` there is `/a/lib` whatever `/a/bin` is on the host.
pub fn normalize(p: &Path, cwd: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

/// Reduces `paths` (absolute, normalized) to a minimal list in mount order.
///
/// A path lexically inside a directory of the set is reached through that
/// directory's bind, so it gets no bind of its own. If it resolves (on the
/// host) outside that directory, it is a symlink chain that the container will
/// follow too, so its resolved target is bound instead: a bind on a symlink
/// inside a read-only bind would not work. The result is sorted by components,
/// so a parent directory is always mounted before anything below it.
pub fn minimize(paths: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut set = paths.clone();
    // Each round replaces paths by canonical ones, which cannot be replaced
    // again, so this ends; the bound is a guard.
    for _ in 0..8 {
        let dirs: Vec<(PathBuf, PathBuf)> = set
            .iter()
            .filter(|p| p.is_dir())
            .map(|p| (p.clone(), canon(p)))
            .collect();
        let mut next = BTreeSet::new();
        for p in &set {
            let covering = dirs.iter().find(|(d, _)| d != p && p.starts_with(d));
            match covering {
                None => {
                    next.insert(p.clone());
                }
                Some((_, dc)) => {
                    let pc = canon(p);
                    if !pc.starts_with(dc) {
                        next.insert(pc);
                    }
                }
            }
        }
        if next == set {
            break;
        }
        set = next;
    }
    let mut out: Vec<PathBuf> = set.into_iter().collect();
    out.sort_by(|a, b| a.components().cmp(b.components()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_table() {
        let cwd = Path::new("/home/u");
        for (input, want) in [
            ("/a/b/../c", "/a/c"),
            ("/a/./b//c/", "/a/b/c"),
            ("x/y", "/home/u/x/y"),
            ("../../..", "/"),
            ("/", "/"),
            (
                "/root/.pyenv/versions/3/bin/../lib",
                "/root/.pyenv/versions/3/lib",
            ),
        ] {
            assert_eq!(
                normalize(Path::new(input), cwd),
                PathBuf::from(want),
                "{input}"
            );
        }
    }

    #[test]
    fn minimize_drops_children_of_bound_dirs_and_orders_parents_first() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("lib/sub")).unwrap();
        std::fs::write(root.join("lib/sub/f"), b"").unwrap();
        std::fs::write(root.join("other"), b"").unwrap();
        std::os::unix::fs::symlink(root.join("other"), root.join("lib/link")).unwrap();
        let set: BTreeSet<PathBuf> = [
            root.join("lib/sub/f"),
            root.join("lib"),
            root.join("other"),
            root.join("lib/link"),
        ]
        .into_iter()
        .collect();
        let got = minimize(&set);
        // lib/sub/f is inside lib; lib/link leaves lib's tree, so its target
        // is bound (it already was).
        assert_eq!(got, vec![root.join("lib"), root.join("other")]);
        let set: BTreeSet<PathBuf> = [root.join("lib/link"), root.join("lib")]
            .into_iter()
            .collect();
        assert_eq!(minimize(&set), vec![root.join("lib"), root.join("other")]);
    }
}
