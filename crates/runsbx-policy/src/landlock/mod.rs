//! The Landlock policy model: what the workload may touch once its init has
//! restricted itself, independent of any kernel.
//!
//! A policy comes from the bundle (`process.landlock`, or the annotation
//! `run.sbx.landlock` for engines that can only set annotations: see
//! [`from_config`]), from `runsbx gen` ([`LandlockPolicy::sandbox`]), or from
//! the operator ([`LandlockDefault`], [`auto`]). The JSON format is documented
//! in `docs/landlock.md`. Enforcement lives in `runsbx-runtime::landlock`.
//!
//! What Landlock covers: path-based filesystem access (after mounts, in the
//! container's view), TCP bind/connect by port, abstract unix sockets and
//! signals leaving the domain. What it does not: UDP, raw, MPTCP and vsock
//! sockets, io_uring, syscalls in general (seccomp and the network namespace
//! cover those); files opened before the restriction (fd hygiene covers those).
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

pub mod access;
mod auto;
mod parse;
mod rights;

pub use auto::{
    auto, proc_pins, LandlockDefault, PROC_FILES, PROC_SELF, PROC_SELF_PIN, PROC_SELF_RESOLVED,
};
pub use parse::{from_config, ANNOTATION};
pub use rights::{can_log, FsRight, NetRight, ScopeRight, AUDIT_ABI};

/// A validated Landlock policy. Build one with [`from_config`],
/// [`LandlockPolicy::from_json`], [`LandlockPolicy::sandbox`] or [`auto`]; a
/// value assembled by hand should go through [`LandlockPolicy::validate`]
/// (enforcement does so again).
///
/// (De)serializes as the `process.landlock` JSON object, validating on the way in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Value", into = "serde_json::Value")]
pub struct LandlockPolicy {
    /// Filesystem rights denied everywhere except where a rule grants them.
    pub handled_fs: BTreeSet<FsRight>,
    /// Network rights denied on every port except where a rule grants them.
    pub handled_net: BTreeSet<NetRight>,
    /// IPC the domain may not direct outside itself.
    pub scoped: BTreeSet<ScopeRight>,
    /// Grants on file hierarchies, resolved inside the container.
    pub path_beneath: Vec<PathBeneathRule>,
    /// Grants on TCP ports.
    pub net_port: Vec<NetPortRule>,
    /// `enableBestEffort`: drop what the kernel cannot restrict instead of
    /// refusing to start.
    pub best_effort: bool,
}

/// `rules.pathBeneath[]`: `allowed` on each path and everything beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathBeneathRule {
    pub allowed: BTreeSet<FsRight>,
    pub paths: Vec<PathBuf>,
}

/// `rules.networkPort[]`: `allowed` on each TCP port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetPortRule {
    pub allowed: BTreeSet<NetRight>,
    pub ports: Vec<u16>,
}

/// A policy that cannot be used, with the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LandlockError {
    /// A field is malformed: wrong type, unknown name, bad value.
    #[error("landlock: {field}: {problem}")]
    Invalid { field: String, problem: String },
    /// Both sources are set and say different things.
    #[error(
        "landlock: process.landlock and annotation \"{ANNOTATION}\" are both set and differ; \
         set only one"
    )]
    Conflict,
}

impl LandlockError {
    pub(crate) fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        LandlockError::Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

impl LandlockPolicy {
    /// Parses the `process.landlock` JSON object. `source` names it in errors
    /// (for example `process.landlock`).
    pub fn from_json(value: &serde_json::Value, source: &str) -> Result<Self, LandlockError> {
        parse::policy(value, source)
    }

    /// The `process.landlock` JSON form; [`from_config`] reads it back unchanged.
    pub fn to_json(&self) -> serde_json::Value {
        parse::to_json(self)
    }

    /// The minimum Landlock ABI that can enforce everything this policy names
    /// (1 for a policy that names only ABI 1 rights).
    pub fn required_abi(&self) -> u8 {
        let fs = self.handled_fs.iter().map(|r| r.abi());
        let net = self.handled_net.iter().map(|r| r.abi());
        let scoped = self.scoped.iter().map(|r| r.abi());
        fs.chain(net).chain(scoped).max().unwrap_or(1).max(1)
    }

    /// Everything the policy names (handled rights and scopes) that a
    /// kernel of ABI `abi` cannot restrict, with the ABI each one needs.
    pub fn beyond_abi(&self, abi: u8) -> Vec<(&'static str, u8)> {
        let fs = self.handled_fs.iter().map(|r| (r.name(), r.abi()));
        let net = self.handled_net.iter().map(|r| (r.name(), r.abi()));
        let scoped = self.scoped.iter().map(|r| (r.name(), r.abi()));
        fs.chain(net)
            .chain(scoped)
            .filter(|(_, needs)| *needs > abi)
            .collect()
    }

    /// Checks what the JSON parser checks, for a value built in code: it
    /// handles something, grants only handled rights, on absolute paths
    /// without `.`/`..` components, with no empty rule.
    pub fn validate(&self) -> Result<(), LandlockError> {
        if self.handled_fs.is_empty() && self.handled_net.is_empty() && self.scoped.is_empty() {
            return Err(LandlockError::invalid(
                "handledAccess",
                "the policy restricts nothing: handle at least one right or set a scope",
            ));
        }
        for (i, rule) in self.path_beneath.iter().enumerate() {
            let field = format!("rules.pathBeneath[{i}]");
            if rule.allowed.is_empty() {
                return Err(LandlockError::invalid(
                    format!("{field}.allowedAccess"),
                    "empty",
                ));
            }
            if let Some(r) = rule.allowed.iter().find(|r| !self.handled_fs.contains(r)) {
                return Err(LandlockError::invalid(
                    format!("{field}.allowedAccess"),
                    format!("\"{r}\" is not in handledAccess.handledAccessFS"),
                ));
            }
            if rule.paths.is_empty() {
                return Err(LandlockError::invalid(format!("{field}.paths"), "empty"));
            }
            for (j, path) in rule.paths.iter().enumerate() {
                check_path(path)
                    .map_err(|p| LandlockError::invalid(format!("{field}.paths[{j}]"), p))?;
            }
        }
        for (i, rule) in self.net_port.iter().enumerate() {
            let field = format!("rules.networkPort[{i}]");
            if rule.allowed.is_empty() {
                return Err(LandlockError::invalid(
                    format!("{field}.allowedAccess"),
                    "empty",
                ));
            }
            if let Some(r) = rule.allowed.iter().find(|r| !self.handled_net.contains(r)) {
                return Err(LandlockError::invalid(
                    format!("{field}.allowedAccess"),
                    format!("\"{r}\" is not in handledAccess.handledAccessNetwork"),
                ));
            }
            if rule.ports.is_empty() {
                return Err(LandlockError::invalid(format!("{field}.ports"), "empty"));
            }
        }
        Ok(())
    }

    /// Rules whose grant is widened by a rule on an ancestor path: Landlock
    /// unions grants down the tree, so a read-only rule beneath a read-write
    /// one is read-write in effect. Returns (narrow path, ancestor path) pairs,
    /// for callers (such as `runsbx gen`) that want to refuse such layouts.
    pub fn widened(&self) -> Vec<(PathBuf, PathBuf)> {
        let mut out = Vec::new();
        for narrow in &self.path_beneath {
            for wide in &self.path_beneath {
                if wide.allowed.is_subset(&narrow.allowed) {
                    continue;
                }
                for p in &narrow.paths {
                    for a in &wide.paths {
                        if p != a && p.starts_with(a) {
                            out.push((p.clone(), a.clone()));
                        }
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// Why `path` cannot name a hierarchy in a rule, if it cannot.
fn check_path(path: &Path) -> Result<(), String> {
    let shown = path.display();
    if !path.is_absolute() {
        return Err(format!("\"{shown}\" is not absolute"));
    }
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(format!(
            "\"{}\" contains a NUL byte",
            shown.to_string().escape_default()
        ));
    }
    if path
        .components()
        .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
    {
        return Err(format!("\"{shown}\" has a \".\" or \"..\" component"));
    }
    Ok(())
}

impl TryFrom<serde_json::Value> for LandlockPolicy {
    type Error = LandlockError;
    fn try_from(value: serde_json::Value) -> Result<Self, Self::Error> {
        parse::policy(&value, "landlock")
    }
}

impl From<LandlockPolicy> for serde_json::Value {
    fn from(policy: LandlockPolicy) -> Self {
        parse::to_json(&policy)
    }
}

#[cfg(test)]
mod tests;
