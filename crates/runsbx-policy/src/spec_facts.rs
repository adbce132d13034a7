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
use std::path::Path;

use oci_spec::runtime::{
    LinuxIdMapping, LinuxNamespace, LinuxNamespaceType, LinuxResources, Mount, Spec,
};

/// What the container gets for one namespace type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NsFact<'a> {
    /// Listed without a path: libcontainer unshares a new one.
    New,
    /// Listed with a path: libcontainer joins it.
    Joined(&'a Path),
    /// Not listed: the container stays in runsbx's (the host's).
    Host,
}

/// The entry of `kind` in a namespace list, as libcontainer picks it.
pub fn namespace_in(list: &[LinuxNamespace], kind: LinuxNamespaceType) -> NsFact<'_> {
    match list.iter().rev().find(|n| n.typ() == kind) {
        None => NsFact::Host,
        Some(n) => match n.path() {
            // runc (and the runtime-spec's "not specified") take an empty
            // path as none; libcontainer is shown the entry without it
            // (`as_runc_reads`).
            None => NsFact::New,
            Some(p) if p.as_os_str().is_empty() => NsFact::New,
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

/// A bind mount: its content is the host's `source`.
pub fn is_bind(m: &Mount) -> bool {
    m.typ().as_deref() == Some("bind")
        || m.options()
            .iter()
            .flatten()
            .any(|o| o == "bind" || o == "rbind")
}

/// A mount or device path as libcontainer will take it: `/dev/./net//tun`
/// -> `/dev/net/tun`, `..` climbing but never above `/`.
pub fn normalize(p: &Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// Whether the spec mounts a procfs on /proc.
pub fn mounts_proc(spec: &Spec) -> bool {
    spec.mounts().iter().flatten().any(|m| {
        m.typ().as_deref() == Some("proc")
            && m.destination()
                .components()
                .eq(Path::new("/proc").components())
    })
}

/// Whether a mount is read-only: the last of `ro`/`rw` wins; neither means rw.
pub fn is_readonly(m: &Mount) -> bool {
    options_readonly(m.options().iter().flatten().map(String::as_str))
}

/// [`is_readonly`] on the options alone, for callers holding raw JSON.
pub fn options_readonly<'a>(options: impl DoubleEndedIterator<Item = &'a str>) -> bool {
    options_last(options, "ro", "rw").unwrap_or(false)
}

/// Which of a pair of mount options that cancel each other (`ro`/`rw`,
/// `noexec`/`exec`) comes last: `Some(true)` for `yes`, `None` for neither.
pub fn options_last<'a>(
    options: impl DoubleEndedIterator<Item = &'a str>,
    yes: &str,
    no: &str,
) -> Option<bool> {
    options.rev().find_map(|o| match o {
        o if o == yes => Some(true),
        o if o == no => Some(false),
        _ => None,
    })
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
