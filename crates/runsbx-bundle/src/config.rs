//! A sandbox's config, typed from generation to disk: the OCI [`Spec`]
//! (seccomp in `linux.seccomp`) and runsbx's own `process.landlock`, which
//! oci_spec has no field for. Edited through methods; serialized once, by
//! [`write_bundle`](crate::write_bundle) or [`SandboxConfig::to_json`].

use std::path::Path;

use oci_spec::runtime::{LinuxMemoryBuilder, LinuxPidsBuilder, LinuxResources, Mount, Spec};
use runsbx_policy::landlock::LandlockPolicy;
use serde_json::Value;

use crate::error::BundleError;

#[derive(Debug, Clone)]
pub struct SandboxConfig {
    spec: Spec,
    landlock: Option<LandlockPolicy>,
}

impl SandboxConfig {
    pub fn new(spec: Spec, landlock: Option<LandlockPolicy>) -> Self {
        Self { spec, landlock }
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    pub fn landlock(&self) -> Option<&LandlockPolicy> {
        self.landlock.as_ref()
    }

    /// The parts, for a runtime that takes them apart.
    pub fn into_parts(self) -> (Spec, Option<LandlockPolicy>) {
        (self.spec, self.landlock)
    }

    /// `process.cwd`: the workdir.
    pub fn cwd(&self) -> &Path {
        self.spec
            .process()
            .as_ref()
            .map_or(Path::new("/"), |p| p.cwd().as_path())
    }

    /// `process.args`.
    pub fn args(&self) -> &[String] {
        self.spec
            .process()
            .as_ref()
            .and_then(|p| p.args().as_deref())
            .unwrap_or_default()
    }

    pub fn mounts(&self) -> &[Mount] {
        self.spec.mounts().as_deref().unwrap_or_default()
    }

    /// Removes the mounts `take` selects and returns them in order; the
    /// others keep theirs.
    pub fn take_mounts(&mut self, take: impl Fn(&Mount) -> bool) -> Vec<Mount> {
        let Some(mounts) = self.spec.mounts().clone() else {
            return Vec::new();
        };
        let (taken, rest): (Vec<_>, Vec<_>) = mounts.into_iter().partition(|m| take(m));
        self.spec.set_mounts(Some(rest));
        taken
    }

    /// Adds `option` to the `proc` mount at `/proc`.
    pub fn add_proc_option(&mut self, option: &str) {
        let Some(mounts) = self.spec.mounts_mut() else {
            return;
        };
        for m in mounts.iter_mut() {
            if m.typ().as_deref() == Some("proc") && m.destination() == Path::new("/proc") {
                let mut options = m.options().clone().unwrap_or_default();
                options.push(option.to_string());
                m.set_options(Some(options));
            }
        }
    }

    /// `linux.resources.memory`: `bytes` of memory and as much swap (so
    /// none beyond the memory).
    pub fn limit_memory(&mut self, bytes: i64) -> Result<(), BundleError> {
        let memory = LinuxMemoryBuilder::default()
            .limit(bytes)
            .swap(bytes)
            .build()
            .map_err(|e| crate::generate::bad_spec(e.to_string()))?;
        self.resources().set_memory(Some(memory));
        Ok(())
    }

    /// `linux.resources.pids`.
    pub fn limit_pids(&mut self, limit: i64) -> Result<(), BundleError> {
        let pids = LinuxPidsBuilder::default()
            .limit(limit)
            .build()
            .map_err(|e| crate::generate::bad_spec(e.to_string()))?;
        self.resources().set_pids(Some(pids));
        Ok(())
    }

    fn resources(&mut self) -> &mut LinuxResources {
        // The generated spec always has `linux`; its resources start empty.
        let linux = self.spec.linux_mut().get_or_insert_with(Default::default);
        linux.resources_mut().get_or_insert_with(Default::default)
    }

    /// The config.json text's value: the spec, with `process.landlock`.
    pub fn to_json(&self) -> Result<Value, BundleError> {
        let mut config = serde_json::to_value(&self.spec)
            .map_err(|e| crate::generate::bad_spec(e.to_string()))?;
        if let Some(l) = &self.landlock {
            config["process"]["landlock"] = l.to_json();
        }
        Ok(config)
    }
}
