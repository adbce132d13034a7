//! Reading a bundle: config.json as raw JSON (for fields oci-spec drops, such
//! as `process.landlock`) and as a typed Spec, with errors that name the
//! bundle and the field. Also the sandbox policy runsbx derives from it.

use std::fs;
use std::path::{Path, PathBuf};

use libcontainer::oci_spec::runtime::{LinuxSeccomp, Spec};
use runsbx_policy::landlock::{self, LandlockDefault, LandlockPolicy};
use runsbx_policy::seccomp::{self, SeccompProgram};
use serde::{Deserialize, Serialize};

use crate::error::{Result, RuntimeError};

pub mod device_paths;
pub mod facts;
pub mod proc_mounts;
pub mod validate;

pub use validate::{validate, Validated};

/// Refuses config files above this size before parsing them.
const MAX_CONFIG_BYTES: u64 = 16 << 20;

pub struct Bundle {
    pub dir: PathBuf,
    pub raw: serde_json::Value,
    pub spec: Spec,
}

/// Why `raw` is not a Spec, with the path of the offending field
/// (`linux.seccomp.syscalls[0].action`): the difference between a usable
/// error and a riddle. Parsed again only on failure: path tracking doubles
/// the deserializer's code, which every start would otherwise page in.
#[cold]
fn spec_error(raw: &serde_json::Value) -> RuntimeError {
    match serde_path_to_error::deserialize::<_, Spec>(raw) {
        Ok(_) => RuntimeError::Spec("config.json does not describe a container".into()),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." {
                RuntimeError::Spec(inner.to_string())
            } else {
                RuntimeError::Spec(format!("{path}: {inner}"))
            }
        }
    }
}

impl Bundle {
    pub fn load(dir: &Path) -> Result<Self> {
        let dir = fs::canonicalize(dir).map_err(|e| RuntimeError::Bundle {
            path: dir.to_path_buf(),
            reason: e.to_string(),
        })?;
        let config = dir.join("config.json");
        let meta = fs::metadata(&config).map_err(|e| RuntimeError::Bundle {
            path: dir.clone(),
            reason: format!("config.json: {e}"),
        })?;
        if meta.len() > MAX_CONFIG_BYTES {
            return Err(RuntimeError::Spec(format!(
                "{} bytes is larger than the {} byte limit",
                meta.len(),
                MAX_CONFIG_BYTES
            )));
        }
        let text =
            fs::read(&config).map_err(|e| RuntimeError::io(config.display().to_string(), e))?;
        let raw: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| RuntimeError::Spec(e.to_string()))?;
        // As runc reads it (facts::as_runc_reads); `raw` stays the file.
        let read = facts::as_runc_reads(&raw, &dir);
        let relative = raw["mounts"].as_array().into_iter().flatten().enumerate();
        for (i, d) in relative.filter_map(|(i, m)| Some((i, m["destination"].as_str()?))) {
            if !d.starts_with('/') {
                tracing::warn!("mounts[{i}].destination {d:?} is not absolute; taken as \"/{d}\"");
            }
        }
        let unknown = facts::unknown_capabilities(&raw);
        if !unknown.is_empty() {
            // runc's words and list form, which tools (youki's contest)
            // compare: each name once, sorted, unquoted.
            let names: std::collections::BTreeSet<&str> = unknown.into_iter().collect();
            let names: Vec<&str> = names.into_iter().collect();
            tracing::warn!(
                "ignoring unknown or unavailable capabilities: [{}]",
                names.join(" ")
            );
        }
        let spec = match Spec::deserialize(read.as_ref().unwrap_or(&raw)) {
            Ok(spec) => spec,
            Err(_) => return Err(spec_error(&raw)),
        };
        let bundle = Self { dir, raw, spec };
        bundle.check()?;
        Ok(bundle)
    }

    /// What libcontainer would find late or not at all, checked before any
    /// state is written.
    fn check(&self) -> Result<()> {
        let version = self.spec.version();
        if !version.starts_with("1.") {
            return Err(RuntimeError::Spec(format!(
                "ociVersion {version:?} is not supported (runsbx supports 1.x)"
            )));
        }
        let root = self
            .spec
            .root()
            .as_ref()
            .ok_or_else(|| RuntimeError::Spec("root is missing".into()))?;
        let rootfs = self.dir.join(root.path());
        match fs::metadata(&rootfs) {
            // Refused as runc refuses it ("not an absolute path, or a
            // symlink"): a rootfs reached through a symlink is not the
            // directory the bundle's author looked at when it was checked.
            Ok(_) if fs::canonicalize(&rootfs).ok().as_deref() != Some(&lexical(&rootfs)) => {
                return Err(RuntimeError::Spec(format!(
                    "root.path {}: goes through a symlink; give the real path ({})",
                    rootfs.display(),
                    fs::canonicalize(&rootfs).unwrap_or_default().display()
                )))
            }
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(RuntimeError::Spec(format!(
                    "root.path {}: not a directory",
                    rootfs.display()
                )))
            }
            Err(e) => {
                return Err(RuntimeError::Spec(format!(
                    "root.path {}: {e}",
                    rootfs.display()
                )))
            }
        }
        check_dev_not_a_symlink(&self.dir, &rootfs)?;
        let process = self
            .spec
            .process()
            .as_ref()
            .ok_or_else(|| RuntimeError::Spec("process is missing".into()))?;
        if process.args().as_ref().is_none_or(|a| a.is_empty()) {
            return Err(RuntimeError::Spec("process.args is empty".into()));
        }
        // libcontainer refuses any profile (even "") on a host without
        // AppArmor, but where the module is absent it says only "io error:
        // No such file or directory".
        if let Some(profile) = process.apparmor_profile() {
            if let Some(why) = apparmor_unavailable(Path::new(APPARMOR_ENABLED)) {
                return Err(RuntimeError::Spec(format!(
                    "process.apparmorProfile {profile:?}: {why}"
                )));
            }
        }
        let Some(linux) = self.spec.linux() else {
            return Err(RuntimeError::Spec("linux is missing".into()));
        };
        crate::hooks::check(&self.spec).map_err(RuntimeError::Spec)?;
        // Two entries of one type: libcontainer would silently keep the last,
        // and a reader of the first (runsbx's own sealing decision, a human)
        // would believe another.
        let mut seen = std::collections::HashSet::new();
        for (i, ns) in linux.namespaces().iter().flatten().enumerate() {
            if !seen.insert(ns.typ()) {
                return Err(RuntimeError::Spec(format!(
                    "linux.namespaces[{i}]: a second {:?} namespace",
                    ns.typ()
                )));
            }
        }
        for (i, m) in self.spec.mounts().iter().flatten().enumerate() {
            // A missing bind source: libcontainer would only say "failed to
            // prepare rootfs", from init. (A relative source is resolved by
            // libcontainer against runsbx's cwd, not the bundle: left to it.)
            // One under the rootfs may be made by a mount listed before it
            // (runc's suite: `mount order`): libcontainer resolves it then.
            let bind = facts::is_bind(m);
            let source = m
                .source()
                .as_deref()
                .filter(|s| s.is_absolute() && !s.starts_with(&rootfs));
            if let (true, Some(source)) = (bind, source) {
                if let Err(e) = fs::symlink_metadata(source) {
                    return Err(RuntimeError::Spec(format!(
                        "mounts[{i}].source {}: {e}",
                        source.display()
                    )));
                }
            }
        }
        crate::prebind::check_idmaps(&self.spec, &self.dir)?;
        crate::copyup::check(&self.spec)?;
        proc_mounts::check(&self.spec, &rootfs)?;
        device_paths::check(&self.spec)?;
        Ok(())
    }

    pub fn rootfs(&self) -> PathBuf {
        let root = self.spec.root().as_ref().expect("checked in load");
        self.dir.join(root.path())
    }

    /// `raw` with `mode=` added to each tmpfs mount that has none and whose
    /// destination is a directory of the rootfs: that directory's mode, as
    /// runc leaves a tmpfs (it chmods the new tmpfs to the mode the directory
    /// had; without it the kernel's default is 1777, writable by every uid).
    /// A destination reached through a symlink is left as it is. `None`:
    /// nothing to add.
    pub fn with_tmpfs_modes(&self, raw: &serde_json::Value) -> Option<serde_json::Value> {
        use std::os::unix::fs::PermissionsExt;
        let rootfs = self.rootfs();
        let mut out: Option<serde_json::Value> = None;
        for (i, m) in self.spec.mounts().iter().flatten().enumerate() {
            let options = m.options().as_deref().unwrap_or_default();
            if m.typ().as_deref() != Some("tmpfs") || options.iter().any(|o| o.starts_with("mode="))
            {
                continue;
            }
            let rel = m.destination().strip_prefix("/").unwrap_or(m.destination());
            // No symlink on the way: each component checked without following.
            let mut path = rootfs.clone();
            let mut meta = None;
            for part in rel.components() {
                path.push(part);
                meta = fs::symlink_metadata(&path).ok().filter(|m| m.is_dir());
                if meta.is_none() {
                    break;
                }
            }
            let Some(meta) = meta else { continue };
            let mode = meta.permissions().mode() & 0o7777;
            let raw = out.get_or_insert_with(|| raw.clone());
            let Some(list) = raw["mounts"][i]["options"].as_array_mut() else {
                raw["mounts"][i]["options"] = serde_json::json!([format!("mode={mode:o}")]);
                continue;
            };
            list.push(format!("mode={mode:o}").into());
        }
        out
    }
}

/// The parameter libcontainer reads to decide whether AppArmor is on.
const APPARMOR_ENABLED: &str = "/sys/module/apparmor/parameters/enabled";

/// Why a profile cannot be applied on this host, by libcontainer's test
/// (`enabled` reads `Y`); `None` when it can.
fn apparmor_unavailable(enabled: &Path) -> Option<String> {
    match fs::read_to_string(enabled) {
        Ok(v) if v.starts_with('Y') => None,
        Ok(v) => Some(format!(
            "AppArmor is disabled on this host ({} reads {:?})",
            enabled.display(),
            v.trim()
        )),
        Err(e) => Some(format!(
            "AppArmor is not enabled on this host ({}: {e})",
            enabled.display()
        )),
    }
}

/// Refuses a rootfs whose `/dev` is a symlink.
///
/// Stops: a malicious image with `/dev -> /some/host/dir` (or
/// `../../host/dir`) making the runtime delete and create files on the host
/// (CVE-2026-41579 in runc, CVE-2026-47766 in crun). libcontainer 0.7, in
/// init before pivot_root and as init's user (host root without a user
/// namespace), creates `dev/fd`, `dev/stdin`, `dev/stdout`, `dev/stderr`,
/// `dev/kcore` and `dev/ptmx` with plain paths joined onto the rootfs
/// (`rootfs/symlink.rs`: `rootfs.join("dev/ptmx")`, after `remove_file` of
/// it), so the host resolves `dev` and follows it wherever it points; its
/// mounts and device nodes are resolved inside the rootfs, these are not.
/// Layer: the bundle gate, before any fork, shared with `check`. A relative
/// symlink that stays inside the rootfs would be harmless, but no image needs
/// one, and telling the two apart is what went wrong before: refused alike.
/// Not covered: a process that rewrites the rootfs while `create` runs (a
/// racing container sharing it) could still swap `dev` after this check;
/// the fix for that belongs in libcontainer (docs/security.md, "Proposals
/// for libcontainer"). Checked by: `cve::cve_2026_41579_*` in tests/cve.rs.
fn check_dev_not_a_symlink(bundle: &Path, rootfs: &Path) -> Result<()> {
    let dev = rootfs.join("dev");
    match fs::symlink_metadata(&dev) {
        Ok(m) if m.file_type().is_symlink() => Err(RuntimeError::Bundle {
            path: bundle.to_path_buf(),
            reason: format!(
                "rootfs: /dev is a symlink (to {}); the runtime creates /dev's entries \
                 through it, outside the rootfs (CVE-2026-41579); make /dev a directory",
                fs::read_link(&dev).unwrap_or_default().display()
            ),
        }),
        _ => Ok(()),
    }
}

/// `path` with `.` and `..` resolved by name, as Go's filepath.Clean does.
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The layers runsbx itself applies in the container's init, in the form
/// saved in the state dir so `exec` applies the same to new processes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SandboxPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp: Option<LinuxSeccomp>,
    /// Landlock layers, enforced in order: the operator's default, then
    /// the bundle's own policy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub landlock: Vec<LandlockPolicy>,
}

impl SandboxPolicy {
    /// Reads both layers from the bundle, refusing what cannot be enforced:
    /// a profile that fails to compile stops the container here, before
    /// anything exists (libcontainer without libseccomp would ignore it).
    pub fn from_bundle(bundle: &Bundle, operator: &LandlockDefault) -> Result<Self> {
        let own = landlock::from_config(&bundle.raw)?;
        Self::new(&bundle.spec, own, operator)
    }

    /// Both layers for `spec`, whose own Landlock policy is `own`.
    pub fn new(
        spec: &Spec,
        own: Option<LandlockPolicy>,
        operator: &LandlockDefault,
    ) -> Result<Self> {
        let seccomp = spec.linux().as_ref().and_then(|l| l.seccomp().clone());
        let landlock = operator.layers(spec, own);
        // The kernel's ABI is checked here, on the host, so that a policy it
        // cannot honour fails before any state exists. Init checks again.
        for layer in &landlock {
            crate::landlock::preflight(layer).map_err(|e| RuntimeError::Spec(e.to_string()))?;
        }
        Ok(Self { seccomp, landlock })
    }

    pub fn compile_seccomp(&self) -> Result<Option<SeccompProgram>> {
        Ok(self.seccomp.as_ref().map(seccomp::compile).transpose()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apparmor_is_usable_only_when_enabled_reads_y() {
        let tmp = tempfile::tempdir().unwrap();
        let enabled = tmp.path().join("enabled");
        let why = apparmor_unavailable(&enabled).unwrap();
        assert!(
            why.starts_with("AppArmor is not enabled on this host ("),
            "{why}"
        );
        assert!(why.contains("No such file or directory"), "{why}");
        fs::write(&enabled, "N\n").unwrap();
        assert_eq!(
            apparmor_unavailable(&enabled).unwrap(),
            format!(
                "AppArmor is disabled on this host ({} reads \"N\")",
                enabled.display()
            )
        );
        fs::write(&enabled, "Y\n").unwrap();
        assert_eq!(apparmor_unavailable(&enabled), None);
    }

    #[test]
    fn a_dev_symlink_is_refused_whatever_it_points_at() {
        let tmp = tempfile::tempdir().unwrap();
        let rootfs = tmp.path().join("rootfs");
        fs::create_dir_all(&rootfs).unwrap();
        // Missing or a directory: libcontainer's business.
        assert!(check_dev_not_a_symlink(tmp.path(), &rootfs).is_ok());
        fs::create_dir(rootfs.join("dev")).unwrap();
        assert!(check_dev_not_a_symlink(tmp.path(), &rootfs).is_ok());
        fs::remove_dir(rootfs.join("dev")).unwrap();
        // Out of the rootfs, or inside it: refused alike.
        for target in ["/tmp/host", "../../host", "devices"] {
            let _ = fs::remove_file(rootfs.join("dev"));
            std::os::unix::fs::symlink(target, rootfs.join("dev")).unwrap();
            let err = check_dev_not_a_symlink(tmp.path(), &rootfs)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("rootfs: /dev is a symlink (to {target})")),
                "{err}"
            );
            assert!(err.contains("CVE-2026-41579"), "{err}");
        }
    }
}
