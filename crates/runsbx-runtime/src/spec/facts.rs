//! What a spec asks for, answered once. The pure answers (namespaces,
//! binds, read-only, mappings: libcontainer 0.7's) live in
//! `runsbx_policy::spec_facts`, where the Landlock policy asks them too;
//! they are re-exported here beside the ones that need the host or the
//! runtime's own reading of config.json (limits, runc's reading of a
//! config).
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use libcontainer::oci_spec::runtime::{LinuxNamespaceType, LinuxResources, Spec};
pub use runsbx_policy::spec_facts::*;

/// Compares a namespace file with runsbx's own (device and inode).
pub fn is_host_namespace(path: &Path, kind: LinuxNamespaceType) -> bool {
    let own = format!("/proc/self/ns/{kind}");
    match (std::fs::metadata(path), std::fs::metadata(own)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// One kind of limit `linux.resources` asks for (named in errors) with the
/// cgroup v2 controllers it needs.
pub type Limit = (&'static str, Vec<String>);

/// The limits in `linux.resources` that need a cgroup. Device rules are not
/// among them: an unprivileged container cannot create device nodes at all
/// (libcontainer bind-mounts the few it needs), as runc also treats them.
pub fn requested_limits(spec: &Spec) -> Vec<Limit> {
    resources(spec).map(limits_of).unwrap_or_default()
}

fn limits_of(r: &LinuxResources) -> Vec<Limit> {
    let mut out: Vec<Limit> = Vec::new();
    let mut push = |what, controllers: &[&str]| {
        out.push((what, controllers.iter().map(|c| c.to_string()).collect()));
    };
    if let Some(m) = r.memory() {
        if m.limit().is_some()
            || m.reservation().is_some()
            || m.swap().is_some()
            || m.kernel().is_some()
            || m.kernel_tcp().is_some()
            || m.swappiness().is_some()
            || m.disable_oom_killer().is_some()
        {
            push("memory limits", &["memory"]);
        }
    }
    if r.pids().is_some() {
        push("a pids limit", &["pids"]);
    }
    if let Some(c) = r.cpu() {
        if c.shares().is_some()
            || c.quota().is_some()
            || c.period().is_some()
            || c.realtime_runtime().is_some()
            || c.realtime_period().is_some()
            || c.idle().is_some()
        {
            push("cpu limits", &["cpu"]);
        }
        if c.cpus().is_some() || c.mems().is_some() {
            push("cpuset limits", &["cpuset"]);
        }
    }
    if r.block_io().is_some() {
        push("block I/O limits", &["io"]);
    }
    if r.hugepage_limits().as_ref().is_some_and(|h| !h.is_empty()) {
        push("hugepage limits", &["hugetlb"]);
    }
    if r.network().is_some() {
        // cgroup v2 has no net_cls/net_prio: never offered.
        push("network classes", &["net_cls", "net_prio"]);
    }
    if r.rdma().as_ref().is_some_and(|h| !h.is_empty()) {
        push("rdma limits", &["rdma"]);
    }
    if let Some(u) = r.unified().as_ref().filter(|h| !h.is_empty()) {
        // `memory.max` needs memory; `cgroup.*` files are the core's.
        let mut needs: Vec<&str> = u
            .keys()
            .filter_map(|k| k.split_once('.').map(|(c, _)| c))
            .filter(|c| *c != "cgroup")
            .collect();
        needs.sort_unstable();
        needs.dedup();
        push("unified cgroup settings", &needs);
    }
    out
}

#[cfg(test)]
#[path = "facts_tests.rs"]
mod tests;

/// `raw` (a config.json) as libcontainer must read it to do what runc does
/// with the file; `None` when it needs no change:
/// - no empty `path` on a `linux.namespaces` entry (runc: none, a new
///   namespace; libcontainer would open "" and fail);
/// - a device rule's `access` of its `r`, `w`, `m` only (runc ignores any
///   other letter; libcgroups wrote e.g. "rwa" to devices.deny, EINVAL);
/// - no capability name this build does not know, in any set (runc 1.2
///   ignores them with a warning, as runsbx does; oci-spec refuses the
///   whole file). Ignoring one grants nothing: a capability that is not
///   listed is not given;
/// - a mount destination that is not absolute taken from the container's
///   `/` (runc 1.2 does so with a warning; the spec says it must be
///   absolute), and one under the bundle's rootfs as a host path taken as
///   the container's path (runc does so too). Every check of runsbx then
///   sees the path the mount lands on.
pub fn as_runc_reads(raw: &serde_json::Value, bundle: &Path) -> Option<serde_json::Value> {
    let caps = without_unknown_capabilities(raw);
    runc_reads_rest(caps.as_ref().unwrap_or(raw), bundle).or(caps)
}

const CAP_SETS: [&str; 5] = [
    "bounding",
    "effective",
    "inheritable",
    "permitted",
    "ambient",
];

fn known_capability(name: &str) -> bool {
    serde_json::from_value::<libcontainer::oci_spec::runtime::Capability>(name.into()).is_ok()
}

/// The capability names of `raw`'s process that this build does not know.
pub fn unknown_capabilities(raw: &serde_json::Value) -> Vec<&str> {
    let Some(caps) = raw.pointer("/process/capabilities") else {
        return Vec::new();
    };
    CAP_SETS
        .iter()
        .filter_map(|set| caps.get(set)?.as_array())
        .flatten()
        .filter_map(|c| c.as_str())
        .filter(|c| !known_capability(c))
        .collect()
}

fn without_unknown_capabilities(raw: &serde_json::Value) -> Option<serde_json::Value> {
    if unknown_capabilities(raw).is_empty() {
        return None;
    }
    let mut raw = raw.clone();
    for set in CAP_SETS {
        if let Some(list) = raw["process"]["capabilities"]
            .get_mut(set)
            .and_then(|l| l.as_array_mut())
        {
            list.retain(|c| c.as_str().is_none_or(known_capability));
        }
    }
    Some(raw)
}

fn runc_reads_rest(raw: &serde_json::Value, bundle: &Path) -> Option<serde_json::Value> {
    let empty_path = |n: &serde_json::Value| n.get("path").and_then(|p| p.as_str()) == Some("");
    let access = |d: &serde_json::Value| {
        let a = d.get("access")?.as_str()?;
        let kept: String = a.chars().filter(|c| matches!(c, 'r' | 'w' | 'm')).collect();
        (kept != a).then_some(kept)
    };
    let rootfs = raw
        .pointer("/root/path")
        .and_then(|p| p.as_str())
        .map(|p| bundle.join(p).display().to_string());
    let relative = |m: &serde_json::Value| {
        let d = m.get("destination")?.as_str()?;
        let inside = rootfs.as_deref().and_then(|r| d.strip_prefix(r));
        match inside {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                Some(format!("/{}", rest.trim_start_matches('/')))
            }
            _ => (!d.starts_with('/')).then(|| format!("/{d}")),
        }
    };
    let namespaces = raw.pointer("/linux/namespaces").and_then(|l| l.as_array());
    let devices = raw
        .pointer("/linux/resources/devices")
        .and_then(|l| l.as_array());
    let mounts = raw.pointer("/mounts").and_then(|l| l.as_array());
    if !namespaces.is_some_and(|l| l.iter().any(empty_path))
        && !devices.is_some_and(|l| l.iter().any(|d| access(d).is_some()))
        && !mounts.is_some_and(|l| l.iter().any(|m| relative(m).is_some()))
    {
        return None;
    }
    let mut raw = raw.clone();
    if let Some(list) = raw.pointer_mut("/mounts").and_then(|l| l.as_array_mut()) {
        for m in list.iter_mut() {
            if let Some(absolute) = relative(m) {
                m["destination"] = absolute.into();
            }
        }
    }
    if let Some(list) = raw
        .pointer_mut("/linux/namespaces")
        .and_then(|l| l.as_array_mut())
    {
        for n in list.iter_mut().filter(|n| empty_path(n)) {
            n.as_object_mut()?.remove("path");
        }
    }
    if let Some(list) = raw
        .pointer_mut("/linux/resources/devices")
        .and_then(|l| l.as_array_mut())
    {
        for d in list.iter_mut() {
            if let Some(kept) = access(d) {
                d["access"] = kept.into();
            }
        }
    }
    Some(raw)
}

/// runc's device rules for a container with a cgroup: deny every device,
/// then the spec's rules, then the devices every container gets (runc's
/// `AllowedDevices`: mknod of any device, /dev/null, zero, full, random,
/// urandom, tty, ptmx, the ptys, tun). libcgroups writes only the spec's
/// rules into a new cgroup, which inherits its parent's `a *:* rwm`.
///
/// Stops: a bundle without a deny-all rule (runsbx spec's once, a
/// hand-written one) leaving every host device open to the container's
/// root through the device cgroup: with CAP_MKNOD (podman's and docker's
/// default) it could make a node for the host's disk and read or write it.
pub fn with_runc_device_rules(raw: &serde_json::Value) -> serde_json::Value {
    let rule = |typ: &str, major: Option<i64>, minor: Option<i64>, access: &str| {
        let mut r = serde_json::json!({ "allow": true, "type": typ, "access": access });
        if let Some(m) = major {
            r["major"] = m.into();
        }
        if let Some(m) = minor {
            r["minor"] = m.into();
        }
        r
    };
    let mut rules = vec![serde_json::json!({ "allow": false, "access": "rwm" })];
    rules.extend(
        raw.pointer("/linux/resources/devices")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
            .cloned(),
    );
    rules.extend([
        rule("c", None, None, "m"),
        rule("b", None, None, "m"),
        rule("c", Some(1), Some(3), "rwm"),
        rule("c", Some(1), Some(8), "rwm"),
        rule("c", Some(1), Some(7), "rwm"),
        rule("c", Some(5), Some(0), "rwm"),
        rule("c", Some(1), Some(5), "rwm"),
        rule("c", Some(1), Some(9), "rwm"),
        rule("c", Some(136), None, "rwm"),
        rule("c", Some(5), Some(2), "rwm"),
        rule("c", Some(10), Some(200), "rwm"),
    ]);
    let mut raw = raw.clone();
    if !raw["linux"].is_object() {
        raw["linux"] = serde_json::json!({});
    }
    if !raw["linux"]["resources"].is_object() {
        raw["linux"]["resources"] = serde_json::json!({});
    }
    raw["linux"]["resources"]["devices"] = serde_json::Value::Array(rules);
    raw
}
