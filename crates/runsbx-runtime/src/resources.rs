//! `update`: a change of a container's resources, merged into the ones it
//! runs with as runc 1.1 merges them. Pure: the cgroup is written in
//! cgroup.rs, the record kept in container/sidecar.rs.

use std::collections::HashMap;

use libcontainer::oci_spec::runtime::{
    LinuxBlockIo, LinuxCpu, LinuxMemory, LinuxPids, LinuxResources,
};

/// What `update` changes. `None`, and zero as in runc, keep a value (but
/// for `cpu_burst` and `cpu_idle`, where runc writes a 0 it is given).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ResourceUpdate {
    pub memory: Option<i64>,
    pub memory_swap: Option<i64>,
    pub memory_reservation: Option<i64>,
    pub kernel_memory: Option<i64>,
    pub kernel_memory_tcp: Option<i64>,
    pub cpu_shares: Option<u64>,
    pub cpu_period: Option<u64>,
    pub cpu_quota: Option<i64>,
    pub cpu_burst: Option<u64>,
    pub cpu_idle: Option<i64>,
    pub cpu_rt_period: Option<u64>,
    pub cpu_rt_runtime: Option<i64>,
    pub cpuset_cpus: Option<String>,
    pub cpuset_mems: Option<String>,
    pub pids_limit: Option<i64>,
    pub blkio_weight: Option<u16>,
    /// cgroup v2 files by name (`--resources` only); replaces the record's.
    pub unified: Option<HashMap<String, String>>,
}

impl ResourceUpdate {
    /// `--resources`: a runtime-spec `linux.resources` object, as
    /// containerd's shim writes it. Only what runc's update changes is
    /// taken; containerd sends the container's whole resources, so the
    /// rest (devices, hugepageLimits, network, rdma, swappiness,
    /// disableOOMKiller) is the container's own and stays as it is.
    pub fn from_json(text: &[u8]) -> Result<Self, String> {
        let value: serde_json::Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
        if !value.is_object() {
            return Err("expected a JSON object (linux.resources)".into());
        }
        let r: LinuxResources = serde_path_to_error::deserialize(value)
            .map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
        if let Some(idle) = r.cpu().as_ref().and_then(|c| c.idle()) {
            check_idle(idle).map_err(|e| format!("cpu.idle {e}"))?;
        }
        Ok(Self::from_resources(&r))
    }

    #[allow(deprecated)] // memory.kernel: runc's --kernel-memory still sets it
    fn from_resources(r: &LinuxResources) -> Self {
        let m = r.memory().unwrap_or_default();
        let c = r.cpu().clone().unwrap_or_default();
        Self {
            memory: m.limit(),
            memory_swap: m.swap(),
            memory_reservation: m.reservation(),
            kernel_memory: m.kernel(),
            kernel_memory_tcp: m.kernel_tcp(),
            cpu_shares: c.shares(),
            cpu_period: c.period(),
            cpu_quota: c.quota(),
            cpu_burst: c.burst(),
            cpu_idle: c.idle(),
            cpu_rt_period: c.realtime_period(),
            cpu_rt_runtime: c.realtime_runtime(),
            cpuset_cpus: c.cpus().clone(),
            cpuset_mems: c.mems().clone(),
            pids_limit: r.pids().map(|p| p.limit()),
            blkio_weight: r.block_io().as_ref().and_then(|b| b.weight()),
            unified: r.unified().clone(),
        }
    }
}

/// A cgroup's `cpu.idle`: 0 or 1, the only values the kernel takes
/// (`sched_group_set_idle`; it answers EINVAL to others, which runc passes
/// on). Refused before anything is written.
pub fn check_idle(value: i64) -> Result<(), String> {
    match value {
        0 | 1 => Ok(()),
        _ => Err(format!("{value}: must be 0 or 1")),
    }
}

/// `value` unless it is zero (runc's "unchanged"), else `old`.
fn keep<T: Default + PartialEq>(value: Option<T>, old: Option<T>) -> Option<T> {
    value.filter(|v| *v != T::default()).or(old)
}

/// `base` (the resources the container runs with) with `u` applied: a
/// field `u` gives, non-zero, replaces the old one; every other field
/// stays. As runc, a memory limit of -1 without a swap value lifts swap
/// too (cgroup v1 refuses a memory limit above memory+swap).
#[allow(deprecated)] // memory.kernel
pub fn merge(base: Option<&LinuxResources>, u: &ResourceUpdate) -> LinuxResources {
    let mut r = base.cloned().unwrap_or_default();

    let mut m: LinuxMemory = r.memory().unwrap_or_default();
    let swap = match (u.memory, u.memory_swap) {
        (Some(-1), None) => Some(-1),
        (_, swap) => swap,
    };
    m.set_limit(keep(u.memory, m.limit()));
    m.set_swap(keep(swap, m.swap()));
    m.set_reservation(keep(u.memory_reservation, m.reservation()));
    m.set_kernel(keep(u.kernel_memory, m.kernel()));
    m.set_kernel_tcp(keep(u.kernel_memory_tcp, m.kernel_tcp()));
    if m != LinuxMemory::default() {
        r.set_memory(Some(m));
    }

    let mut c: LinuxCpu = r.cpu().clone().unwrap_or_default();
    c.set_shares(keep(u.cpu_shares, c.shares()));
    c.set_period(keep(u.cpu_period, c.period()));
    c.set_quota(keep(u.cpu_quota, c.quota()));
    // 0 is a value, as in runc (`--cpu-burst 0` turns the burst off; runc
    // writes whatever burst it is given): not "unchanged".
    c.set_burst(u.cpu_burst.or(c.burst()));
    c.set_idle(u.cpu_idle.or(c.idle())); // 0 is a value: leave SCHED_IDLE
    c.set_realtime_period(keep(u.cpu_rt_period, c.realtime_period()));
    c.set_realtime_runtime(keep(u.cpu_rt_runtime, c.realtime_runtime()));
    c.set_cpus(keep(u.cpuset_cpus.clone(), c.cpus().clone()));
    c.set_mems(keep(u.cpuset_mems.clone(), c.mems().clone()));
    if c != LinuxCpu::default() {
        r.set_cpu(Some(c));
    }

    if let Some(limit) = u.pids_limit.filter(|l| *l != 0) {
        let mut p = LinuxPids::default();
        p.set_limit(limit);
        r.set_pids(Some(p));
    }

    if let Some(w) = u.blkio_weight.filter(|w| *w != 0) {
        let mut b: LinuxBlockIo = r.block_io().clone().unwrap_or_default();
        b.set_weight(Some(w));
        r.set_block_io(Some(b));
    }

    if u.unified.is_some() {
        r.set_unified(u.unified.clone());
    }
    r
}

/// What `update` writes to the cgroup: the merged resources without the
/// device rules (as runc's update skips them). Rewriting a v1 device list
/// starts with a deny of everything, so the container's own devices would
/// fail for a moment; update never changes them anyway. Hugepage, network
/// and RDMA limits are not update's either, and stay as create wrote them.
pub fn to_apply(merged: &LinuxResources) -> LinuxResources {
    let mut r = LinuxResources::default();
    r.set_memory(*merged.memory());
    r.set_cpu(merged.cpu().clone());
    r.set_pids(*merged.pids());
    r.set_block_io(merged.block_io().clone());
    r.set_unified(merged.unified().clone());
    r
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;
