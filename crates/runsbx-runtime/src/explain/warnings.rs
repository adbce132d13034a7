//! The weak spots of an explained bundle, each with a stable code.
use std::collections::BTreeSet;
use std::path::Path;

use runsbx_policy::landlock::FsRight;

use super::{Explanation, NsMode, Warning};

/// Directories holding what the workload (or the host, through a bind)
/// executes or trusts: a writable bind over one lets the workload change
/// host binaries, libraries or configuration.
const RUNTIME_PATHS: &[&str] = &[
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/boot", "/opt",
];

/// Rights that let the workload change what is at a path.
const WRITE_RIGHTS: &[FsRight] = &[
    FsRight::WriteFile,
    FsRight::Truncate,
    FsRight::RemoveFile,
    FsRight::RemoveDir,
    FsRight::MakeReg,
    FsRight::MakeSym,
    FsRight::MakeDir,
    FsRight::Refer,
];

/// The weak spots of an explained bundle.
pub fn warnings(e: &Explanation) -> Vec<Warning> {
    let mut w = Vec::new();
    let mut warn = |code, message: String| w.push(Warning { code, message });

    for ns in &e.namespaces {
        let host = match &ns.mode {
            NsMode::Host => true,
            NsMode::Joined { host, .. } => *host,
            NsMode::New => false,
        };
        if !host {
            continue;
        }
        match ns.kind.as_str() {
            "network" => warn(
                "host-network",
                "shares the host's network namespace: the workload can reach host and \
                 outside networks and abstract unix sockets"
                    .into(),
            ),
            "pid" => warn(
                "host-pid",
                "shares the host's pid namespace: the workload sees host processes \
                 (and can signal those of its uid)"
                    .into(),
            ),
            "ipc" => warn(
                "host-ipc",
                "shares the host's ipc namespace (System V IPC, POSIX message queues)".into(),
            ),
            "mount" => warn("host-mount", "shares the host's mount namespace".into()),
            "user" => warn(
                "no-user-namespace",
                "no user namespace: container uids are host uids, and kept \
                 capabilities are host capabilities"
                    .into(),
            ),
            _ => {}
        }
    }
    if e.user.host_root {
        warn(
            "host-root",
            format!(
                "the workload runs as uid {} in the container, which is root (uid 0) on the host",
                e.user.uid
            ),
        );
    }
    let c = &e.capabilities;
    let sets: [(&str, &Vec<String>); 5] = [
        ("bounding", &c.bounding),
        ("effective", &c.effective),
        ("permitted", &c.permitted),
        ("inheritable", &c.inheritable),
        ("ambient", &c.ambient),
    ];
    let all: BTreeSet<&String> = sets.iter().flat_map(|(_, v)| v.iter()).collect();
    for cap in all {
        let in_sets: Vec<&str> = sets
            .iter()
            .filter(|(_, v)| v.contains(cap))
            .map(|(n, _)| *n)
            .collect();
        warn(
            "capability",
            format!("keeps {cap} ({})", in_sets.join(", ")),
        );
    }
    match &e.seccomp {
        None => warn(
            "no-seccomp",
            "no seccomp profile: every syscall reaches the kernel".into(),
        ),
        Some(s) if s.default_action == "SCMP_ACT_ALLOW" || s.default_action == "SCMP_ACT_LOG" => {
            warn(
                "seccomp-allow-default",
                format!(
                    "seccomp allows by default ({}): only the {} listed syscalls are denied",
                    s.default_action, s.denied_syscalls
                ),
            )
        }
        Some(_) => {}
    }
    if e.landlock.layers.is_empty() {
        warn(
            "no-landlock",
            "no Landlock policy: file access is limited by mounts and permissions only".into(),
        );
    }
    for l in &e.landlock.layers {
        if l.dropped.is_empty() {
            continue;
        }
        let what: Vec<String> = l
            .dropped
            .iter()
            .map(|(n, a)| format!("{n} (needs ABI {a})"))
            .collect();
        let kernel = match e.landlock.kernel_abi {
            Some(abi) => format!("kernel ABI {abi}"),
            None => "this kernel (no Landlock)".into(),
        };
        warn(
            "landlock-downgrade",
            format!(
                "{} Landlock layer is best effort: {kernel} cannot restrict {}, which are left unrestricted",
                l.source,
                what.join(", ")
            ),
        );
    }
    for m in &e.mounts {
        if m.readonly || !is_runtime_path(&m.destination) {
            continue;
        }
        if !m.bind {
            continue;
        }
        let writable = match &m.landlock {
            None => true,
            Some(names) => WRITE_RIGHTS
                .iter()
                .any(|r| names.iter().any(|n| n == r.name())),
        };
        if writable {
            warn(
                "writable-runtime-path",
                format!(
                    "{} is a writable bind of {} over a runtime path: the workload can change what \
                     the host (and it) executes or trusts",
                    m.destination.display(),
                    m.source.as_deref().unwrap_or(Path::new("?")).display()
                ),
            );
        }
    }
    w
}

fn is_runtime_path(dest: &Path) -> bool {
    dest == Path::new("/") || RUNTIME_PATHS.iter().any(|p| dest.starts_with(p))
}
