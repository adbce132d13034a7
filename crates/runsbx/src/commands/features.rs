use anyhow::Result;
use serde_json::json;

/// runtime-spec features JSON. Only what runsbx really enforces is listed:
/// seccomp support comes from the compiler itself, Landlock from the kernel.
pub fn run() -> Result<()> {
    let seccomp = runsbx_policy::seccomp::features();
    let landlock_abi = runsbx_runtime::landlock::kernel_abi();
    let features = json!({
        "ociVersionMin": "1.0.0",
        "ociVersionMax": "1.2.0",
        "hooks": ["prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"],
        "mountOptions": [
            "async", "atime", "bind", "defaults", "dev", "diratime", "dirsync", "exec",
            "iversion", "lazytime", "loud", "mand", "noatime", "nodev", "nodiratime",
            "noexec", "noiversion", "nolazytime", "nomand", "norelatime", "nostrictatime",
            "nosuid", "nosymfollow", "private", "ratime", "rbind", "rdev", "rdiratime",
            "relatime", "remount", "rexec", "rnoatime", "rnodev", "rnodiratime", "rnoexec",
            "rnorelatime", "rnostrictatime", "rnosuid", "rnosymfollow", "ro", "rprivate",
            "rrelatime", "rro", "rrw", "rshared", "rslave", "rstrictatime", "rsuid",
            "rsymfollow", "runbindable", "rw", "shared", "silent", "slave", "strictatime",
            "suid", "symfollow", "sync", "tmpcopyup", "unbindable"
        ],
        "linux": {
            "namespaces": ["cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts"],
            "capabilities": capabilities(),
            "cgroup": { "v1": true, "v2": true, "systemd": false, "systemdUser": false },
            "seccomp": {
                "enabled": !seccomp.actions.is_empty(),
                "actions": seccomp.actions,
                "operators": seccomp.operators,
                "archs": seccomp.archs,
                "knownFlags": seccomp.flags,
                "supportedFlags": seccomp.flags,
            },
            "apparmor": { "enabled": false },
            "selinux": { "enabled": false },
            "intelRdt": { "enabled": false },
        },
        "annotations": {
            "run.sbx.landlock.supported": landlock_abi.is_some().to_string(),
            "run.sbx.landlock.abi": landlock_abi.map(|a| a.to_string()).unwrap_or_default(),
        },
    });
    println!("{}", serde_json::to_string_pretty(&features)?);
    Ok(())
}

fn capabilities() -> Vec<String> {
    use libcontainer::oci_spec::runtime::Capability;
    use std::str::FromStr;
    // Every name oci-spec knows, in the order of their numbers.
    (0..64)
        .filter_map(|n| {
            let name = caps_name(n)?;
            Capability::from_str(name).ok().map(|_| name.to_string())
        })
        .collect()
}

fn caps_name(n: u32) -> Option<&'static str> {
    const NAMES: &[&str] = &[
        "CAP_CHOWN",
        "CAP_DAC_OVERRIDE",
        "CAP_DAC_READ_SEARCH",
        "CAP_FOWNER",
        "CAP_FSETID",
        "CAP_KILL",
        "CAP_SETGID",
        "CAP_SETUID",
        "CAP_SETPCAP",
        "CAP_LINUX_IMMUTABLE",
        "CAP_NET_BIND_SERVICE",
        "CAP_NET_BROADCAST",
        "CAP_NET_ADMIN",
        "CAP_NET_RAW",
        "CAP_IPC_LOCK",
        "CAP_IPC_OWNER",
        "CAP_SYS_MODULE",
        "CAP_SYS_RAWIO",
        "CAP_SYS_CHROOT",
        "CAP_SYS_PTRACE",
        "CAP_SYS_PACCT",
        "CAP_SYS_ADMIN",
        "CAP_SYS_BOOT",
        "CAP_SYS_NICE",
        "CAP_SYS_RESOURCE",
        "CAP_SYS_TIME",
        "CAP_SYS_TTY_CONFIG",
        "CAP_MKNOD",
        "CAP_LEASE",
        "CAP_AUDIT_WRITE",
        "CAP_AUDIT_CONTROL",
        "CAP_SETFCAP",
        "CAP_MAC_OVERRIDE",
        "CAP_MAC_ADMIN",
        "CAP_SYSLOG",
        "CAP_WAKE_ALARM",
        "CAP_BLOCK_SUSPEND",
        "CAP_AUDIT_READ",
        "CAP_PERFMON",
        "CAP_BPF",
        "CAP_CHECKPOINT_RESTORE",
    ];
    NAMES.get(n as usize).copied()
}
