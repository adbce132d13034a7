//! Gathering an [`Explanation`] from a validated bundle and the host.
use crate::spec::Validated;
use std::collections::BTreeSet;
use std::path::Path;

use libcontainer::oci_spec::runtime::{
    LinuxIdMapping, LinuxNamespaceType, LinuxSeccomp, LinuxSeccompAction, Spec,
};
use runsbx_policy::landlock::access::{effective_access, right_names};
use runsbx_policy::seccomp::SeccompProgram;
use serde::Serialize;

use super::*;
use crate::spec::facts::{self, is_host_namespace, NsFact};

/// Host facts [`explain`] needs, gathered by the caller.
pub struct Host {
    pub kernel_abi: Option<u8>,
    /// Whether a namespace path names one of runsbx's own (the host's) namespaces.
    pub is_host_namespace: fn(&Path, LinuxNamespaceType) -> bool,
}

impl Host {
    pub fn current() -> Self {
        Self {
            kernel_abi: crate::landlock::kernel_abi(),
            is_host_namespace,
        }
    }
}

const NS_KINDS: &[LinuxNamespaceType] = &[
    LinuxNamespaceType::User,
    LinuxNamespaceType::Pid,
    LinuxNamespaceType::Network,
    LinuxNamespaceType::Mount,
    LinuxNamespaceType::Ipc,
    LinuxNamespaceType::Uts,
    LinuxNamespaceType::Cgroup,
    LinuxNamespaceType::Time,
];

/// The OCI spelling of a spec value (`network`, `CAP_SYS_ADMIN`, `RLIMIT_NOFILE`).
fn oci_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".into(),
    }
}

pub fn explain(v: &Validated, executable: Executable, host: &Host) -> Explanation {
    let spec = &v.bundle.spec;
    let linux = spec.linux().clone().unwrap_or_default();
    let process = spec.process().clone().unwrap_or_default();

    let namespaces = namespaces(spec, host);
    let has_userns = namespaces
        .iter()
        .any(|n| n.kind == "user" && n.mode != NsMode::Host);
    let joined_userns = namespaces
        .iter()
        .any(|n| n.kind == "user" && matches!(n.mode, NsMode::Joined { .. }));
    let mappings = |m: &Option<Vec<LinuxIdMapping>>| -> Vec<Mapping> {
        m.iter()
            .flatten()
            .map(|m| Mapping {
                container_id: m.container_id(),
                host_id: m.host_id(),
                size: m.size(),
            })
            .collect()
    };
    let uid_mappings = mappings(linux.uid_mappings());
    let uid = process.user().uid();
    let host_uid = host_id(uid, has_userns, joined_userns, &uid_mappings);
    let user = UserFacts {
        uid,
        gid: process.user().gid(),
        additional_gids: process.user().additional_gids().clone().unwrap_or_default(),
        uid_mappings,
        gid_mappings: mappings(linux.gid_mappings()),
        host_uid,
        host_root: host_uid == Some(0),
    };

    let caps = process.capabilities().clone().unwrap_or_default();
    let names = |set: &Option<libcontainer::oci_spec::runtime::Capabilities>| {
        let mut v: Vec<String> = set.iter().flatten().map(oci_name).collect();
        v.sort();
        v
    };
    let capabilities = Capabilities {
        bounding: names(caps.bounding()),
        effective: names(caps.effective()),
        permitted: names(caps.permitted()),
        inheritable: names(caps.inheritable()),
        ambient: names(caps.ambient()),
    };

    let nnp_spec = process.no_new_privileges().unwrap_or(false);
    let no_new_privs = NoNewPrivs {
        spec: nnp_spec,
        // nnp.rs: seccomp alone no longer needs it; Landlock does.
        effective: nnp_spec || !v.policy.landlock.is_empty(),
    };

    let layers = &v.policy.landlock;
    let access = |path: &Path| effective_access(layers, host.kernel_abi, path).map(right_names);
    let root = RootFacts {
        readonly: spec
            .root()
            .as_ref()
            .and_then(|r| r.readonly())
            .unwrap_or(false),
        landlock: access(Path::new("/")),
    };
    let mounts: Vec<MountFacts> = spec
        .mounts()
        .iter()
        .flatten()
        .map(|m| MountFacts {
            destination: m.destination().clone(),
            kind: m.typ().clone(),
            source: m.source().clone(),
            options: m.options().clone().unwrap_or_default(),
            bind: facts::is_bind(m),
            readonly: facts::is_readonly(m),
            landlock: access(m.destination()),
        })
        .collect();

    let landlock = LandlockFacts {
        kernel_abi: host.kernel_abi,
        layers: super::landlock::landlock_layers(layers, v.operator_layer, host.kernel_abi),
    };
    let seccomp = v
        .policy
        .seccomp
        .as_ref()
        .map(|s| seccomp_facts(s, v.seccomp.as_ref()));

    let rlimits = process
        .rlimits()
        .iter()
        .flatten()
        .map(|r| Rlimit {
            kind: oci_name(&r.typ()),
            soft: r.soft(),
            hard: r.hard(),
        })
        .collect();
    let res = linux.resources().clone().unwrap_or_default();
    let memory = res.memory().unwrap_or_default();
    let cpu = res.cpu().clone().unwrap_or_default();
    let cgroup = CgroupLimits {
        memory_limit: memory.limit(),
        memory_swap: memory.swap(),
        pids_limit: res.pids().as_ref().map(|p| p.limit()),
        cpu_shares: cpu.shares(),
        cpu_quota: cpu.quota(),
        cpu_period: cpu.period(),
        cpus: cpu.cpus().clone(),
    };
    let env = process
        .env()
        .iter()
        .flatten()
        .map(|e| e.split('=').next().unwrap_or_default().to_string())
        .collect();
    let proxy_url = runsbx_policy::egress::proxy_env()
        .into_iter()
        .find(|(k, _)| k == "HTTP_PROXY")
        .map(|(k, v)| format!("{k}={v}"));
    let proxy = process
        .env()
        .iter()
        .flatten()
        .find(|e| Some(*e) == proxy_url.as_ref())
        .and_then(|e| e.split_once('=').map(|(_, v)| v.to_string()));

    let mut e = Explanation {
        bundle: v.bundle.dir.clone(),
        rootfs: v.bundle.rootfs(),
        process: ProcessFacts {
            args: process.args().clone().unwrap_or_default(),
            cwd: process.cwd().clone(),
            executable,
        },
        namespaces,
        user,
        capabilities,
        no_new_privs,
        root,
        mounts,
        landlock,
        seccomp,
        rlimits,
        cgroup,
        env,
        proxy,
        warnings: Vec::new(),
    };
    e.warnings = warnings(&e);
    e
}

fn namespaces(spec: &Spec, host: &Host) -> Vec<Namespace> {
    NS_KINDS
        .iter()
        .map(|&kind| {
            let mode = match facts::namespace(spec, kind) {
                NsFact::Host => NsMode::Host,
                NsFact::New => NsMode::New,
                NsFact::Joined(p) => NsMode::Joined {
                    path: p.to_path_buf(),
                    host: (host.is_host_namespace)(p, kind),
                },
            };
            Namespace {
                kind: oci_name(&kind),
                mode,
            }
        })
        .collect()
}

/// The host uid of container uid `uid`. Without a user namespace it is the
/// same number; in a new one, what the mappings say (`None` when no mapping
/// covers it); in a joined one it cannot be told from the spec.
pub fn host_id(uid: u32, has_userns: bool, joined: bool, maps: &[Mapping]) -> Option<u32> {
    if !has_userns {
        return Some(uid);
    }
    if joined {
        return None;
    }
    maps.iter().find_map(|m| {
        let offset = uid.checked_sub(m.container_id)?;
        (offset < m.size).then(|| m.host_id.checked_add(offset))?
    })
}

fn seccomp_facts(s: &LinuxSeccomp, program: Option<&SeccompProgram>) -> SeccompFacts {
    let allows = |a: LinuxSeccompAction| {
        matches!(
            a,
            LinuxSeccompAction::ScmpActAllow | LinuxSeccompAction::ScmpActLog
        )
    };
    let mut allowed = BTreeSet::new();
    let mut denied = BTreeSet::new();
    let mut conditional = 0;
    for rule in s.syscalls().iter().flatten() {
        if rule.args().as_ref().is_some_and(|a| !a.is_empty()) {
            conditional += 1;
            continue;
        }
        let set = if allows(rule.action()) {
            &mut allowed
        } else {
            &mut denied
        };
        set.extend(rule.names().iter().cloned());
    }
    SeccompFacts {
        default_action: oci_name(&s.default_action()),
        default_errno: s.default_errno_ret(),
        architectures: s.architectures().iter().flatten().map(oci_name).collect(),
        allowed_syscalls: allowed.len(),
        denied_syscalls: denied.len(),
        conditional_rules: conditional,
        unknown_syscalls: program
            .map(|p| p.unknown_syscalls.clone())
            .unwrap_or_default(),
    }
}
