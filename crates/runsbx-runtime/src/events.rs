//! `events`: libcgroups' statistics in the JSON shape runc 1.1 prints
//! (its `types/events.go`), so tools written for `runc events` parse ours.
//! Pure: the cgroup is read in cgroup.rs, the loop is container/events.rs.
//!
//! Go's `omitempty` is mirrored field by field: a zero number or an empty
//! list is left out, a nested object never is. runc's `cpuset` section is
//! not printed (libcgroups does not read it), nor network interfaces
//! (null in runc's output unless the container is given some).

use std::collections::BTreeMap;

use libcgroups::stats as lc;
use serde::Serialize;

/// One line of `events`: `{"type":"stats","id":..,"data":{..}}` or
/// `{"type":"oom","id":..}`.
#[derive(Debug, Serialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Stats>,
}

impl Event {
    pub fn stats(id: &str, s: &lc::Stats) -> Self {
        Self {
            kind: "stats",
            id: id.to_string(),
            data: Some(Stats::from(s)),
        }
    }

    pub fn oom(id: &str) -> Self {
        Self {
            kind: "oom",
            id: id.to_string(),
            data: None,
        }
    }
}

fn zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Serialize)]
pub struct Stats {
    cpu: Cpu,
    memory: Memory,
    pids: Pids,
    blkio: Blkio,
    hugetlb: BTreeMap<String, Hugetlb>,
    /// Intel RDT is not supported: always empty, as runc prints it then.
    intel_rdt: Empty,
    network_interfaces: Option<()>,
}

#[derive(Debug, Serialize)]
struct Empty {}

#[derive(Debug, Serialize)]
struct Cpu {
    usage: CpuUsage,
    throttling: Throttling,
}

#[derive(Debug, Serialize)]
struct CpuUsage {
    #[serde(skip_serializing_if = "zero")]
    total: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    percpu: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    percpu_kernel: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    percpu_user: Vec<u64>,
    kernel: u64,
    user: u64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Throttling {
    #[serde(skip_serializing_if = "zero")]
    periods: u64,
    #[serde(skip_serializing_if = "zero")]
    throttled_periods: u64,
    #[serde(skip_serializing_if = "zero")]
    throttled_time: u64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Memory {
    #[serde(skip_serializing_if = "zero")]
    cache: u64,
    usage: MemoryEntry,
    swap: MemoryEntry,
    kernel: MemoryEntry,
    #[serde(rename = "kernelTCP")]
    kernel_tcp: MemoryEntry,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    raw: BTreeMap<String, u64>,
}

#[derive(Debug, Serialize)]
struct MemoryEntry {
    limit: u64,
    #[serde(skip_serializing_if = "zero")]
    usage: u64,
    #[serde(skip_serializing_if = "zero")]
    max: u64,
    failcnt: u64,
}

#[derive(Debug, Serialize)]
struct Pids {
    #[serde(skip_serializing_if = "zero")]
    current: u64,
    #[serde(skip_serializing_if = "zero")]
    limit: u64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Blkio {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    io_service_bytes_recursive: Vec<BlkioEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    io_serviced_recursive: Vec<BlkioEntry>,
    // runc's spelling, not "ioQueuedRecursive".
    #[serde(skip_serializing_if = "Vec::is_empty", rename = "ioQueueRecursive")]
    io_queued_recursive: Vec<BlkioEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    io_service_time_recursive: Vec<BlkioEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    io_wait_time_recursive: Vec<BlkioEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    io_merged_recursive: Vec<BlkioEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    io_time_recursive: Vec<BlkioEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sectors_recursive: Vec<BlkioEntry>,
}

#[derive(Debug, Serialize)]
struct BlkioEntry {
    #[serde(skip_serializing_if = "zero")]
    major: u64,
    #[serde(skip_serializing_if = "zero")]
    minor: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    op: String,
    #[serde(skip_serializing_if = "zero")]
    value: u64,
}

#[derive(Debug, Serialize)]
struct Hugetlb {
    #[serde(skip_serializing_if = "zero")]
    usage: u64,
    #[serde(skip_serializing_if = "zero")]
    max: u64,
    failcnt: u64,
}

impl From<&lc::Stats> for Stats {
    fn from(s: &lc::Stats) -> Self {
        let u = &s.cpu.usage;
        let t = &s.cpu.throttling;
        let m = &s.memory;
        let entry = |d: &lc::MemoryData| MemoryEntry {
            limit: d.limit,
            usage: d.usage,
            max: d.max_usage,
            failcnt: d.fail_count,
        };
        let blk = |v: &[lc::BlkioDeviceStat]| -> Vec<BlkioEntry> {
            v.iter()
                .map(|d| BlkioEntry {
                    major: d.major,
                    minor: d.minor,
                    op: d.op_type.clone().unwrap_or_default(),
                    value: d.value,
                })
                .collect()
        };
        let b = &s.blkio;
        Self {
            cpu: Cpu {
                usage: CpuUsage {
                    total: u.usage_total,
                    percpu: u.per_core_usage_total.clone(),
                    percpu_kernel: u.per_core_usage_kernel.clone(),
                    percpu_user: u.per_core_usage_user.clone(),
                    kernel: u.usage_kernel,
                    user: u.usage_user,
                },
                throttling: Throttling {
                    periods: t.periods,
                    throttled_periods: t.throttled_periods,
                    throttled_time: t.throttled_time,
                },
            },
            memory: Memory {
                cache: m.cache,
                usage: entry(&m.memory),
                swap: entry(&m.memswap),
                kernel: entry(&m.kernel),
                kernel_tcp: entry(&m.kernel_tcp),
                raw: m.stats.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            },
            pids: Pids {
                current: s.pids.current,
                limit: s.pids.limit,
            },
            blkio: Blkio {
                io_service_bytes_recursive: blk(&b.service_bytes),
                io_serviced_recursive: blk(&b.serviced),
                io_queued_recursive: blk(&b.queued),
                io_service_time_recursive: blk(&b.service_time),
                io_wait_time_recursive: blk(&b.wait_time),
                io_merged_recursive: blk(&b.merged),
                io_time_recursive: blk(&b.time),
                sectors_recursive: blk(&b.sectors),
            },
            hugetlb: s
                .hugetlb
                .iter()
                .map(|(size, h)| {
                    let h = Hugetlb {
                        usage: h.usage,
                        max: h.max_usage,
                        failcnt: h.fail_count,
                    };
                    (size.clone(), h)
                })
                .collect(),
            intel_rdt: Empty {},
            network_interfaces: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_shape_is_runcs() {
        let mut s = lc::Stats::default();
        s.cpu.usage.usage_total = 15;
        s.cpu.usage.per_core_usage_total = vec![10, 5];
        s.cpu.usage.usage_kernel = 10;
        s.memory.memory = lc::MemoryData {
            usage: 823296,
            max_usage: 2248704,
            fail_count: 0,
            limit: 99999744,
        };
        s.memory.kernel_tcp.limit = 7;
        s.memory.stats.insert("rss".into(), 57344);
        s.pids = lc::PidStats {
            current: 1,
            limit: 64,
        };
        s.blkio.queued.push(lc::BlkioDeviceStat {
            major: 8,
            minor: 0,
            op_type: Some("Read".into()),
            value: 0,
        });
        s.hugetlb.insert(
            "2MB".into(),
            lc::HugeTlbStats {
                usage: 0,
                max_usage: 0,
                fail_count: 0,
            },
        );
        let line = serde_json::to_value(Event::stats("c1", &s)).unwrap();
        let zero_entry = json!({ "limit": 0, "failcnt": 0 });
        assert_eq!(
            line,
            json!({
                "type": "stats",
                "id": "c1",
                "data": {
                    "cpu": {
                        "usage": { "total": 15, "percpu": [10, 5], "kernel": 10, "user": 0 },
                        "throttling": {}
                    },
                    "memory": {
                        "usage": { "limit": 99999744, "usage": 823296, "max": 2248704, "failcnt": 0 },
                        "swap": zero_entry,
                        "kernel": zero_entry,
                        "kernelTCP": { "limit": 7, "failcnt": 0 },
                        "raw": { "rss": 57344 }
                    },
                    "pids": { "current": 1, "limit": 64 },
                    "blkio": { "ioQueueRecursive": [{ "major": 8, "op": "Read" }] },
                    "hugetlb": { "2MB": { "failcnt": 0 } },
                    "intel_rdt": {},
                    "network_interfaces": null
                }
            })
        );
        assert_eq!(
            serde_json::to_string(&Event::oom("c1")).unwrap(),
            r#"{"type":"oom","id":"c1"}"#
        );
    }
}
