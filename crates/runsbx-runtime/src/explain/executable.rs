//! Finding `process.args[0]` from the host, the way init will.
use std::ffi::OsString;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use libcontainer::oci_spec::runtime::Mount;

use super::Executable;

use crate::spec::facts::is_bind;
use crate::spec::Bundle;

/// Where a container path lies on the host.
enum Located {
    Host(PathBuf),
    /// Under a mount whose content the host cannot see (tmpfs, proc, ...).
    Opaque(String),
}

struct View<'a> {
    rootfs: &'a Path,
    bundle_dir: &'a Path,
    mounts: &'a [Mount],
}

impl View<'_> {
    /// The host path of an absolute, normalised container path: under the
    /// last mount (in spec order) whose destination contains it, as later
    /// mounts hide earlier ones, else under the rootfs.
    fn locate(&self, path: &Path) -> Located {
        for m in self.mounts.iter().rev() {
            let dest = m.destination();
            let Ok(rest) = path.strip_prefix(dest) else {
                continue;
            };
            if !is_bind(m) {
                return Located::Opaque(format!(
                    "{} is under the {} mount at {}",
                    path.display(),
                    m.typ().as_deref().unwrap_or("?"),
                    dest.display()
                ));
            }
            let Some(src) = m.source() else {
                return Located::Opaque(format!("bind at {} has no source", dest.display()));
            };
            let src = self.bundle_dir.join(src);
            return Located::Host(if rest.as_os_str().is_empty() {
                src
            } else {
                src.join(rest)
            });
        }
        Located::Host(self.rootfs.join(path.strip_prefix("/").unwrap_or(path)))
    }

    /// Resolves `path` (absolute) in the container's view, following
    /// symlinks there rather than on the host, and returns the host path of
    /// what it names.
    fn resolve(&self, path: &Path) -> io::Result<std::result::Result<PathBuf, String>> {
        let mut todo: Vec<OsString> = Vec::new();
        push_components(&mut todo, path);
        let mut cur = PathBuf::from("/");
        let mut hops = 0;
        while let Some(c) = todo.pop() {
            if c == ".." {
                cur.pop();
                continue;
            }
            let next = cur.join(&c);
            let host = match self.locate(&next) {
                Located::Host(h) => h,
                Located::Opaque(why) => return Ok(Err(why)),
            };
            let meta = std::fs::symlink_metadata(&host)?;
            if meta.file_type().is_symlink() {
                hops += 1;
                if hops > 40 {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                let target = std::fs::read_link(&host)?;
                if target.is_absolute() {
                    cur = PathBuf::from("/");
                }
                push_components(&mut todo, &target);
            } else {
                if !todo.is_empty() && !meta.is_dir() {
                    return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
                }
                cur = next;
            }
        }
        Ok(match self.locate(&cur) {
            Located::Host(h) => Ok(h),
            Located::Opaque(why) => Err(why),
        })
    }
}

/// Pushes the components of `path` so that popping yields them in order.
fn push_components(todo: &mut Vec<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    todo.extend(parts.into_iter().rev());
}

/// Why `process.args[0]` cannot be executed, in the words init's exec
/// failure would use.
#[derive(Debug, thiserror::Error)]
pub enum ExecutableError {
    #[error("exec: {0:?}: executable file not found in $PATH")]
    NotInPath(String),
    #[error("exec {}: {err}", .path.display())]
    Io { path: PathBuf, err: io::Error },
    #[error("exec {}: not a regular file", .0.display())]
    NotRegular(PathBuf),
    #[error("exec {}: permission denied (no execute bit)", .0.display())]
    NotExecutable(PathBuf),
}

/// Looks for `process.args[0]` as init will (`executor::resolve` and
/// `check_executable`): a name with a `/` is taken as is (relative to the
/// cwd), other names are searched in the container's `PATH`. A missing or
/// non-executable file is an error with init's message; a path the host
/// cannot see into (under a tmpfs or proc mount) is not checked.
pub fn find_executable(bundle: &Bundle) -> Result<Executable, ExecutableError> {
    let spec = &bundle.spec;
    let process = spec.process().as_ref().expect("checked in Bundle::load");
    let args = process.args().clone().unwrap_or_default();
    let name = args.first().cloned().unwrap_or_default();
    let mounts: Vec<Mount> = spec.mounts().clone().unwrap_or_default();
    let view = View {
        rootfs: &bundle.rootfs(),
        bundle_dir: &bundle.dir,
        mounts: &mounts,
    };
    let cwd = Path::new("/").join(process.cwd());
    let (shown, container_path) = if name.contains('/') {
        (PathBuf::from(&name), cwd.join(&name))
    } else {
        let mut found = None;
        for dir in crate::executor::path_var(process)
            .split(':')
            .filter(|d| !d.is_empty())
        {
            let candidate = Path::new(dir).join(&name);
            match view.resolve(&cwd.join(&candidate)) {
                Ok(Ok(host)) if std::fs::metadata(&host).is_ok_and(|m| m.is_file()) => {
                    found = Some((candidate.clone(), cwd.join(&candidate)));
                    break;
                }
                Ok(Err(why)) => return Ok(Executable::NotChecked { reason: why }),
                _ => {}
            }
        }
        found.ok_or_else(|| ExecutableError::NotInPath(name.clone()))?
    };
    let host = match view.resolve(&container_path) {
        Ok(Ok(h)) => h,
        Ok(Err(why)) => return Ok(Executable::NotChecked { reason: why }),
        Err(e) => {
            return Err(ExecutableError::Io {
                path: shown,
                err: e,
            })
        }
    };
    let meta = match std::fs::metadata(&host) {
        Ok(m) => m,
        Err(e) => {
            return Err(ExecutableError::Io {
                path: shown,
                err: e,
            })
        }
    };
    if !meta.is_file() {
        return Err(ExecutableError::NotRegular(shown));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(ExecutableError::NotExecutable(shown));
    }
    Ok(Executable::Found {
        path: container_path,
    })
}
