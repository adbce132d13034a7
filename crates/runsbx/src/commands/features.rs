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
            // `checkpoint` and `restore` are refused (commands/checkpoint.rs).
            "run.sbx.checkpoint.supported": "false",
        },
    });
    println!("{}", serde_json::to_string_pretty(&features)?);
    Ok(())
}

fn capabilities() -> Vec<String> {
    use libcontainer::oci_spec::runtime::Capability;
    // Every capability the caps crate knows that a config.json can name (as
    // oci-spec reads it: "CAP_CHOWN"; its FromStr wants "CHOWN"), in the
    // order of their numbers.
    let mut known: Vec<caps::Capability> = caps::all().into_iter().collect();
    known.sort_by_key(|c| c.index());
    known
        .into_iter()
        .map(|c| c.to_string())
        .filter(|name| serde_json::from_value::<Capability>(name.as_str().into()).is_ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn capabilities_are_listed_by_number() {
        let caps = super::capabilities();
        assert_eq!(caps.first().map(String::as_str), Some("CAP_CHOWN"));
        assert!(caps.iter().any(|c| c == "CAP_SYS_ADMIN"), "{caps:?}");
        assert!(caps.len() >= 41, "{caps:?}");
    }
}
