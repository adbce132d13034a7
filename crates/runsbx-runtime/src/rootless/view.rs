//! The config.json libcontainer sees rootless, bound over the real one.
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};

use super::{cgroup_path, delegated, require_shim};
use crate::delegation;
use crate::error::{Result, RuntimeError};

/// The bundle's config.json as libcontainer must see it rootless:
/// `linux.cgroupsPath` replaced by an absolute path of runsbx's own (see the
/// module doc). Bound over the real file in this process's private mount
/// namespace; removed on drop. Nobody else sees it, and the file on disk is
/// never written.
pub struct ConfigView {
    target: PathBuf,
    copy: PathBuf,
}

/// `raw` with the `linux.cgroupsPath` a rootless container must have.
pub fn rootless_config(raw: &serde_json::Value, id: &str) -> Result<serde_json::Value> {
    require_shim()?;
    let mut raw = raw.clone();
    let path = match delegated() {
        Some(_) => delegation::shim_path(id),
        None => cgroup_path(id),
    };
    raw["linux"]["cgroupsPath"] = serde_json::Value::String(path);
    Ok(raw)
}

impl ConfigView {
    pub fn bind(
        bundle_dir: &Path,
        raw: &serde_json::Value,
        state_root: &Path,
        id: &str,
    ) -> Result<Self> {
        Self::over(bundle_dir, &rootless_config(raw, id)?, state_root, id)
    }

    /// Shows libcontainer `raw` as the bundle's config.json, through a bind
    /// that must be made in a private mount namespace of this process (the
    /// shim, or the one of prebind.rs). The copy is named so that
    /// `remove_stale_reports` removes it when its process died half-way.
    pub fn over(
        bundle_dir: &Path,
        raw: &serde_json::Value,
        state_root: &Path,
        id: &str,
    ) -> Result<Self> {
        let copy = crate::layout::config_view(state_root, id, std::process::id());
        let text = serde_json::to_vec(raw).map_err(|e| RuntimeError::Spec(e.to_string()))?;
        if let Err(e) = fs::write(&copy, text) {
            // A full state root fails the write after the file exists.
            let _ = fs::remove_file(&copy);
            return Err(RuntimeError::io(format!("write {}", copy.display()), e));
        }
        let target = bundle_dir.join("config.json");
        let view = Self { target, copy };
        mount::<Path, Path, str, str>(Some(&view.copy), &view.target, None, MsFlags::MS_BIND, None)
            .map_err(|e| {
                RuntimeError::sys(
                    format!("bind config view over {}", view.target.display()),
                    e,
                )
            })?;
        Ok(view)
    }
}

impl Drop for ConfigView {
    fn drop(&mut self) {
        let _ = umount2(&self.target, MntFlags::MNT_DETACH);
        let _ = fs::remove_file(&self.copy);
    }
}

/// The file in a [`ConfigCopy`]'s directory naming the real bundle.
const REAL_BUNDLE: &str = "real-bundle";

/// The config.json `create` shows libcontainer, in a bundle directory of
/// runsbx's own (`ROOT/.ID.PID.bundle/`) handed to libcontainer in place of
/// the real one, with `root.path` made absolute; removed on drop, once
/// libcontainer has read it and forked. Unlike [`ConfigView`], nothing is
/// mounted: a container that binds the bundle's config.json sees the file
/// as written, and one without a mount namespace of its own gets its
/// caller's. libcontainer records this directory as the bundle, so `create`
/// writes the real one back into the state (`Runtime::create`).
pub struct ConfigCopy {
    dir: PathBuf,
}

impl ConfigCopy {
    pub fn write(
        raw: &serde_json::Value,
        rootfs: &Path,
        bundle: &Path,
        state_root: &Path,
        id: &str,
    ) -> Result<Self> {
        let dir = Self::dir_for(state_root, id);
        let mut raw = raw.clone();
        raw["root"]["path"] = serde_json::Value::String(rootfs.display().to_string());
        let text = serde_json::to_vec(&raw).map_err(|e| RuntimeError::Spec(e.to_string()))?;
        fs::create_dir(&dir)
            .map_err(|e| RuntimeError::io(format!("create {}", dir.display()), e))?;
        let copy = Self { dir };
        let file = copy.dir.join("config.json");
        fs::write(&file, text)
            .map_err(|e| RuntimeError::io(format!("write {}", file.display()), e))?;
        let file = copy.dir.join(REAL_BUNDLE);
        fs::write(&file, bundle.as_os_str().as_encoded_bytes())
            .map_err(|e| RuntimeError::io(format!("write {}", file.display()), e))?;
        Ok(copy)
    }

    /// The real bundle of a copy's directory, as libcontainer records it
    /// while a create runs (`None`: `dir` is no copy in `state_root`, or it
    /// is gone). The name is looked at first: `state` asks on every call.
    pub fn real_bundle(dir: &Path, state_root: &Path) -> Option<PathBuf> {
        let name = dir.file_name()?.to_str()?;
        if !crate::layout::is_config_copy(name) {
            return None;
        }
        // A bundle of the user's that happens to have such a name.
        if fs::canonicalize(dir.parent()?).ok()? != fs::canonicalize(state_root).ok()? {
            return None;
        }
        let text = fs::read(dir.join(REAL_BUNDLE)).ok()?;
        Some(PathBuf::from(std::ffi::OsString::from_vec(text)))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where this process's copy for `id` is (or will be) written.
    pub fn dir_for(state_root: &Path, id: &str) -> PathBuf {
        crate::layout::config_copy(state_root, id, std::process::id())
    }

    /// Where a prestart or createRuntime hook's shim writes why it failed
    /// (hooks.rs), inside the copy's directory: gone with it.
    pub fn hook_report(state_root: &Path, id: &str) -> PathBuf {
        Self::dir_for(state_root, id).join("hook-error")
    }
}

impl Drop for ConfigCopy {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}
