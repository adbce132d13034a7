//! The explanation in words.
use std::fmt::Write as _;

use runsbx_policy::landlock::access::describe_rights;

use super::{Executable, Explanation, NsMode};

impl Explanation {
    /// The explanation in words, one fact per line, warnings last.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = self.write_text(&mut s);
        s
    }

    fn write_text(&self, s: &mut String) -> std::fmt::Result {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        let landlock_words = |l: &Option<Vec<String>>| match l {
            None => "no Landlock".to_string(),
            Some(names) => format!(
                "Landlock allows {}",
                describe_rights(names, self.landlock.kernel_abi)
            ),
        };
        writeln!(s, "bundle: {}", self.bundle.display())?;
        writeln!(
            s,
            "rootfs: {} ({}; {})",
            self.rootfs.display(),
            if self.root.readonly {
                "read-only"
            } else {
                "read-write"
            },
            landlock_words(&self.root.landlock)
        )?;
        writeln!(s, "process: {}", shell_words(&self.process.args))?;
        writeln!(s, "  cwd: {}", self.process.cwd.display())?;
        match &self.process.executable {
            Executable::Found { path } => writeln!(s, "  executable: {} (found)", path.display())?,
            Executable::NotChecked { reason } => {
                writeln!(s, "  executable: not checked: {reason}")?
            }
        }
        let u = &self.user;
        let host = match u.host_uid {
            Some(0) => "host root".to_string(),
            Some(h) => format!("host uid {h}"),
            None => "host uid unknown".to_string(),
        };
        writeln!(
            s,
            "user: uid {} gid {} in the container, {host}",
            u.uid, u.gid
        )?;
        if !u.additional_gids.is_empty() {
            let g: Vec<String> = u.additional_gids.iter().map(u32::to_string).collect();
            writeln!(s, "  additional gids: {}", g.join(", "))?;
        }
        for (what, maps) in [("uid", &u.uid_mappings), ("gid", &u.gid_mappings)] {
            for m in maps {
                writeln!(
                    s,
                    "  {what} map: container {}..{} -> host {}..{}",
                    m.container_id,
                    m.container_id as u64 + m.size as u64,
                    m.host_id,
                    m.host_id as u64 + m.size as u64
                )?;
            }
        }
        writeln!(s, "namespaces:")?;
        for ns in &self.namespaces {
            let mode = match &ns.mode {
                NsMode::New => "new".to_string(),
                NsMode::Joined { path, host: false } => format!("joins {}", path.display()),
                NsMode::Joined { path, host: true } => {
                    format!("joins {} (the host's)", path.display())
                }
                NsMode::Host => "shared with the host".to_string(),
            };
            writeln!(s, "  {:<8} {mode}", ns.kind)?;
        }
        let c = &self.capabilities;
        writeln!(s, "capabilities:")?;
        for (n, v) in [
            ("bounding", &c.bounding),
            ("effective", &c.effective),
            ("permitted", &c.permitted),
            ("inheritable", &c.inheritable),
            ("ambient", &c.ambient),
        ] {
            writeln!(s, "  {n:<11} {}", list(v))?;
        }
        let nnp = &self.no_new_privs;
        writeln!(
            s,
            "no_new_privs: {}{}",
            if nnp.effective { "set" } else { "not set" },
            if nnp.effective && !nnp.spec {
                " (by runsbx, because Landlock applies)"
            } else {
                ""
            }
        )?;
        writeln!(s, "mounts:")?;
        for m in &self.mounts {
            writeln!(
                s,
                "  {} ({} from {}, {}; {})",
                m.destination.display(),
                m.kind.as_deref().unwrap_or("?"),
                m.source
                    .as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "-".into()),
                if m.readonly { "ro" } else { "rw" },
                landlock_words(&m.landlock)
            )?;
        }
        let l = &self.landlock;
        match l.kernel_abi {
            Some(abi) => writeln!(s, "landlock: kernel ABI {abi}")?,
            None => writeln!(s, "landlock: not available in this kernel")?,
        }
        if l.layers.is_empty() {
            writeln!(s, "  no layers")?;
        }
        for layer in &l.layers {
            writeln!(
                s,
                "  layer ({}): needs ABI {}{}; handles fs: {}; net: {}; scoped: {}{}",
                layer.source,
                layer.required_abi,
                if layer.best_effort {
                    ", best effort"
                } else {
                    ""
                },
                describe_rights(&layer.handled_fs, self.landlock.kernel_abi),
                list(&layer.handled_net),
                list(&layer.scoped),
                if layer.tcp_ports.is_empty() {
                    String::new()
                } else {
                    let p: Vec<String> = layer.tcp_ports.iter().map(u16::to_string).collect();
                    format!("; TCP ports granted: {}", p.join(", "))
                }
            )?;
        }
        match &self.seccomp {
            None => writeln!(s, "seccomp: none")?,
            Some(sc) => {
                writeln!(
                    s,
                    "seccomp: default {}{}; {} syscalls allowed, {} denied, {} conditional rules; archs: {}",
                    sc.default_action,
                    sc.default_errno
                        .map(|e| format!(" (errno {e})"))
                        .unwrap_or_default(),
                    sc.allowed_syscalls,
                    sc.denied_syscalls,
                    sc.conditional_rules,
                    if sc.architectures.is_empty() {
                        "native only".to_string()
                    } else {
                        sc.architectures.join(", ")
                    }
                )?;
                if !sc.unknown_syscalls.is_empty() {
                    writeln!(
                        s,
                        "  unknown names, skipped: {}",
                        sc.unknown_syscalls.join(", ")
                    )?;
                }
            }
        }
        writeln!(s, "rlimits:")?;
        if self.rlimits.is_empty() {
            writeln!(s, "  none set (inherited from runsbx)")?;
        }
        for r in &self.rlimits {
            writeln!(s, "  {} soft {} hard {}", r.kind, r.soft, r.hard)?;
        }
        let cg = &self.cgroup;
        let limits: Vec<String> = [
            ("memory", cg.memory_limit.map(|v| format!("{v} bytes"))),
            ("memory+swap", cg.memory_swap.map(|v| format!("{v} bytes"))),
            ("pids", cg.pids_limit.map(|v| v.to_string())),
            ("cpu quota", cg.cpu_quota.map(|v| format!("{v} us"))),
            ("cpu period", cg.cpu_period.map(|v| format!("{v} us"))),
            ("cpu shares", cg.cpu_shares.map(|v| v.to_string())),
            ("cpus", cg.cpus.clone()),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| format!("{n} {v}")))
        .collect();
        writeln!(
            s,
            "cgroup limits: {}",
            if limits.is_empty() {
                "none".to_string()
            } else {
                limits.join(", ")
            }
        )?;
        writeln!(s, "env: {}", list(&self.env))?;
        if let Some(p) = &self.proxy {
            writeln!(
                s,
                "network: HTTP_PROXY is {p}, runsbx's --allow-net proxy: `runsbx sandbox` serves it \
                 in the sandbox's namespace (the only TCP port Landlock lets it connect to); \
                 under `run` nothing listens there"
            )?;
        }
        if self.warnings.is_empty() {
            writeln!(s, "warnings: none")?;
        }
        for w in &self.warnings {
            writeln!(s, "warning: {}: {}", w.code, w.message)?;
        }
        Ok(())
    }
}

fn shell_words(args: &[String]) -> String {
    let quoted: Vec<String> = args
        .iter()
        .map(|a| {
            if !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"/._-=:,+@%".contains(&b))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect();
    quoted.join(" ")
}
