//! What a spec asks for, answered once: which namespaces are new, joined or
//! the host's, which mounts are binds and which read-only, which resource
//! limits need a cgroup, and the user namespace's id mappings.
//!
//! The answers are libcontainer 0.7's, since it is what creates the
//! container:
//! - namespaces: `Namespaces::try_from` collects the list into a map keyed
//!   by type, so the last entry of a type wins; `unshare_or_setns` unshares
//!   when `path` is absent and otherwise opens the path and joins it, so an
//!   empty path is a join (that fails), not a new namespace. (Bundle::load
//!   refuses two entries of one type; the last-wins rule matters only to
//!   callers that look before loading.)
//! - mounts: `rootfs::utils::is_bind` (type `bind`, or a `bind`/`rbind`
//!   option); `parse_mount` folds the options in order, `ro` setting and
//!   `rw` clearing MS_RDONLY, so the last of them wins.
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use libcontainer::oci_spec::runtime::{
    LinuxIdMapping, LinuxNamespace, LinuxNamespaceType, LinuxResources, Mount, Spec,
};

/// What the container gets for one namespace type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NsFact<'a> {
    /// Listed without a path: libcontainer unshares a new one.
    New,
    /// Listed with a path (even an empty one): libcontainer joins it.
    Joined(&'a Path),
    /// Not listed: the container stays in runsbx's (the host's).
    Host,
}

/// The entry of `kind` in a namespace list, as libcontainer picks it.
pub fn namespace_in(list: &[LinuxNamespace], kind: LinuxNamespaceType) -> NsFact<'_> {
    match list.iter().rev().find(|n| n.typ() == kind) {
        None => NsFact::Host,
        Some(n) => match n.path() {
            None => NsFact::New,
            Some(p) => NsFact::Joined(p),
        },
    }
}

/// The namespace of `kind` the spec gives the container.
pub fn namespace(spec: &Spec, kind: LinuxNamespaceType) -> NsFact<'_> {
    let list = spec
        .linux()
        .as_ref()
        .and_then(|l| l.namespaces().as_deref())
        .unwrap_or_default();
    namespace_in(list, kind)
}

/// Whether the container gets a new namespace of `kind`.
pub fn is_new_namespace(spec: &Spec, kind: LinuxNamespaceType) -> bool {
    namespace(spec, kind) == NsFact::New
}

/// Compares a namespace file with runsbx's own (device and inode).
pub fn is_host_namespace(path: &Path, kind: LinuxNamespaceType) -> bool {
    let own = format!("/proc/self/ns/{kind}");
    match (std::fs::metadata(path), std::fs::metadata(own)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// A bind mount: its content is the host's `source`.
pub fn is_bind(m: &Mount) -> bool {
    m.typ().as_deref() == Some("bind")
        || m.options()
            .iter()
            .flatten()
            .any(|o| o == "bind" || o == "rbind")
}

/// Whether a mount is read-only: the last of `ro`/`rw` wins; neither means rw.
pub fn is_readonly(m: &Mount) -> bool {
    options_readonly(m.options().iter().flatten().map(String::as_str))
}

/// [`is_readonly`] on the options alone, for callers holding raw JSON.
pub fn options_readonly<'a>(options: impl DoubleEndedIterator<Item = &'a str>) -> bool {
    options
        .rev()
        .find_map(|o| match o {
            "ro" => Some(true),
            "rw" => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

/// A bind that ends read-only (what `sandbox` makes itself before create).
pub fn is_readonly_bind(m: &Mount) -> bool {
    is_bind(m) && is_readonly(m)
}

/// The read-only binds of a spec, in order.
pub fn readonly_binds(spec: &Spec) -> impl Iterator<Item = &Mount> {
    spec.mounts()
        .iter()
        .flatten()
        .filter(|m| is_readonly_bind(m))
}

/// The user namespace's uid mappings (empty when there are none).
pub fn uid_mappings(spec: &Spec) -> &[LinuxIdMapping] {
    spec.linux()
        .as_ref()
        .and_then(|l| l.uid_mappings().as_deref())
        .unwrap_or_default()
}

/// The user namespace's gid mappings (empty when there are none).
pub fn gid_mappings(spec: &Spec) -> &[LinuxIdMapping] {
    spec.linux()
        .as_ref()
        .and_then(|l| l.gid_mappings().as_deref())
        .unwrap_or_default()
}

/// Whether container id `id` is inside one of `maps`.
pub fn maps_id(maps: &[LinuxIdMapping], id: u32) -> bool {
    maps.iter().any(|m| {
        id >= m.container_id() && u64::from(id) < u64::from(m.container_id()) + u64::from(m.size())
    })
}

/// `linux.resources`, if any.
pub fn resources(spec: &Spec) -> Option<&LinuxResources> {
    spec.linux().as_ref().and_then(|l| l.resources().as_ref())
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
