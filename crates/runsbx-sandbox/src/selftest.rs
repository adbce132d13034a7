//! `runsbx selftest`: run the static escape probe under the same policy as
//! `sandbox` (or a given bundle's) and refuse unless every escape it tries
//! is blocked and the posture check passes.
//!
//! It cannot pass by accident: each check must print its own line saying
//! the attempt failed; a missing line (probe killed, not started, check
//! skipped) is a failure, as is a probe exit status other than 0.

use runsbx_policy::egress;
use runsbx_policy::profile::Profile;
use std::fs;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use libcontainer::oci_spec::runtime::MountBuilder;
use runsbx_bundle::SandboxRequest;
use serde_json::Value;

use crate::stage::{make_traversable, materialize, prepare, private_dir, Materialized, PrivateDir};
use crate::{Result, SandboxError};
use runsbx_runtime::supervise::{self, foreground, sandbox_posture, Supervision};
use runsbx_runtime::{CreateOptions, Runtime};

/// The check that must succeed under `--allow-net`: the proxy's port.
fn reach_proxy() -> String {
    format!("tcp-connect:127.0.0.1:{}", egress::PROXY_PORT)
}

/// Under `--allow-net`: the proxy's port is reached (a connection without a
/// request, which the proxy drops), and nothing else is: the socket kinds
/// Landlock's TCP rules do not see, binding, DNS inside.
fn egress_checks() -> Vec<(String, &'static str)> {
    let port = egress::PROXY_PORT;
    vec![
        (reach_proxy(), "reach the proxy's port"),
        (
            format!("tcp-connect:127.0.0.1:{}", port + 1),
            "TCP connect to another loopback port",
        ),
        (
            format!("tcp-bind:127.0.0.1:{}", port + 1),
            "bind a TCP port",
        ),
        (format!("mptcp:127.0.0.1:{port}"), "MPTCP connect"),
        ("socket:inet6,stream".into(), "open a TCP/IPv6 socket"),
        ("socket:inet,raw,1".into(), "open a raw socket"),
        ("udp-sendto:127.0.0.1:53".into(), "send a DNS query"),
    ]
}

/// (probe check, what it shows when it succeeds)
fn checks(workdir: &Path, profile: Profile, net: bool) -> Vec<(String, &'static str)> {
    let dropped = workdir.join("dropped");
    let dropped = dropped.display();
    // The Jupyter profile allows a NETLINK_ROUTE socket by design (libzmq
    // lists the interfaces of the sandbox's own namespace): check that every
    // other netlink protocol and the socket kinds it does not allow stay shut.
    let netlink = match profile {
        Profile::Default | Profile::ForkServer => {
            vec![("socket:netlink,raw".into(), "open a netlink socket")]
        }
        Profile::Jupyter => vec![
            (
                "socket:netlink,raw,9".into(),
                "open an audit netlink socket",
            ),
            (
                "socket:netlink,dgram,15".into(),
                "open a uevent netlink socket",
            ),
            ("socket:unix,dgram".into(), "open a unix datagram socket"),
            ("socket:inet,stream".into(), "open a TCP socket"),
            ("socket:vsock,stream".into(), "open a vsock socket"),
        ],
    };
    let mut checks: Vec<(String, &'static str)> = vec![
        ("tcp-connect:127.0.0.1:22".into(), "TCP connect to loopback"),
        (
            "tcp-connect:1.1.1.1:80".into(),
            "TCP connect to a public address",
        ),
        (
            "udp-sendto:1.1.1.1:53".into(),
            "UDP send to a public address",
        ),
        ("read:/etc/shadow".into(), "read outside the workdir"),
        ("list:/".into(), "list the root directory"),
        ("write:/runsbx-selftest".into(), "write outside the workdir"),
        ("fork".into(), "fork"),
        ("clone3-fork".into(), "fork through clone3"),
        ("ptrace-attach:1".into(), "ptrace"),
        ("mount:/dev".into(), "mount"),
        ("unshare:user".into(), "unshare a user namespace"),
        ("unshare:net".into(), "unshare a network namespace"),
        ("io-uring-setup".into(), "io_uring"),
        ("proc-list".into(), "see processes in /proc"),
    ];
    if net {
        checks.extend(egress_checks());
    }
    // The probe's last two: exec is its final check.
    checks.extend(netlink);
    checks.extend([
        (format!("write:{dropped},#!/bin/sh"), ""),
        (
            format!("exec:{dropped}"),
            "exec a file written in the workdir",
        ),
    ]);
    checks
}

fn find_probe(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        return fs::canonicalize(p)
            .map_err(|e| SandboxError::step(format!("--probe {}", p.display()), e));
    }
    // Named explicitly, it is used or the test fails: no silent fallback.
    if let Some(p) = std::env::var_os("RUNSBX_PROBE") {
        let p = PathBuf::from(p);
        return fs::canonicalize(&p)
            .map_err(|e| SandboxError::step(format!("RUNSBX_PROBE={}", p.display()), e));
    }
    // argv[0] survives the sealed re-exec; /proc/self/exe does not.
    let argv0 = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = argv0.parent().filter(|d| !d.as_os_str().is_empty()) {
        candidates.push(dir.join("runsbx-probe"));
        // A checkout: the binary in target/<triple>/<profile>/, the probe
        // in target/probe/ (hack/build-probe).
        candidates.push(dir.join("../../probe/runsbx-probe"));
        candidates.push(dir.join("../probe/runsbx-probe"));
    }

    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("runsbx-probe")));
    }
    candidates
        .into_iter()
        .find(|c| c.is_file())
        .map(|c| fs::canonicalize(&c).unwrap_or(c))
        .ok_or_else(|| {
            SandboxError::Message(
                "runsbx-probe not found (pass --probe FILE; hack/build-probe builds it)".into(),
            )
        })
}

/// The probe's findings: one line per check, and the escapes not blocked.
pub struct Verdict {
    pub report: String,
    pub failed: Vec<&'static str>,
}

impl Verdict {
    /// Fails, naming the checks, unless every escape was blocked.
    pub fn passed(self) -> Result<()> {
        if !self.failed.is_empty() {
            return Err(SandboxError::Escapes(self.failed));
        }
        Ok(())
    }
}

/// The probe and the list of checks it runs in `work`.
fn probe_command(
    probe: &Path,
    work: &Path,
    profile: Profile,
    net: bool,
) -> (Vec<(String, &'static str)>, Vec<String>) {
    let checks = checks(work, profile, net);
    let mut command = vec![probe.display().to_string()];
    command.extend(checks.iter().map(|(c, _)| c.clone()));
    (checks, command)
}

/// Runs the probe in a container (the `sandbox` bundle, or a copy of
/// `bundle_dir`'s with the probe as its process) under the sandbox posture,
/// with `profile`'s policy; `net`: as `--allow-net` makes it, with the
/// proxy serving (an empty allowlist: it refuses every request).
pub fn check(
    rt: &Runtime,
    probe: Option<&Path>,
    bundle_dir: Option<&Path>,
    profile: Profile,
    net: bool,
) -> Result<Verdict> {
    let probe = find_probe(probe)?;
    let work = workdir()?;
    let (checks, command) = probe_command(&probe, &work.0, profile, net);

    let bundle: Materialized = match bundle_dir {
        None => {
            let req = SandboxRequest {
                workdir: Some(work.0.clone()),
                command: command.clone(),
                profile,
                proxy: net,
                ..Default::default()
            };
            materialize(prepare(&req, None)?.config)?
        }
        Some(dir) => Materialized::plain(copy_with_probe(dir, &probe, &command, &work.0)?),
    };

    let (read_end, stdio) = captured_stdio()?;
    let opts = CreateOptions {
        id: format!("selftest-{}", std::process::id()),
        bundle: bundle.dir.0.clone(),
        stdio: Some(stdio),
        // As `sandbox` runs it.
        loopback_down: !net,
        keep_affinity: true,
        ..Default::default()
    };
    let sup = Supervision {
        posture: Some(sandbox_posture()),
        egress: net.then(runsbx_runtime::egress::Proxy::default),
        ..Default::default()
    };
    let outcome = foreground(rt, opts, None, false, sup);
    let mut output = String::new();
    fs::File::from(read_end).read_to_string(&mut output)?;
    let status = supervise::exit_status(&outcome?);
    Ok(judge(&checks, &output, i32::from(status)))
}

/// A private workdir, as `sandbox` makes one (nobody's when root runs).
fn workdir() -> Result<PrivateDir> {
    let owner = nix::unistd::geteuid()
        .is_root()
        .then_some((runsbx_bundle::NOBODY, runsbx_bundle::NOBODY));
    private_dir("runsbx-selftest-", owner)
}

/// `selftest --isolation landlock`: the probe under the default policy, run
/// the way `sandbox --isolation landlock` runs a command (runsbx_runtime::direct).
pub fn check_direct(rt: &Runtime, probe: Option<&Path>) -> Result<Verdict> {
    runsbx_runtime::direct::available()?;
    let probe = find_probe(probe)?;
    let work = workdir()?;
    let (checks, command) = probe_command(&probe, &work.0, Profile::Default, false);
    let req = SandboxRequest {
        workdir: Some(work.0.clone()),
        command,
        ..Default::default()
    };
    let (spec, landlock) = prepare(&req, None)?.config.into_parts();
    let (read_end, stdio) = captured_stdio()?;
    let pid = supervise::spawn(rt, &spec, landlock, Some(stdio))?;
    let mut output = String::new();
    let read = fs::File::from(read_end).read_to_string(&mut output);
    use nix::sys::wait::{waitpid, WaitStatus};
    let status =
        match waitpid(pid, None).map_err(|e| SandboxError::step("wait for the probe", e))? {
            WaitStatus::Exited(_, code) => code,
            WaitStatus::Signaled(_, sig, _) => 128 + sig as i32,
            _ => 1,
        };
    read?;
    Ok(judge(&checks, &output, status))
}

/// The probe's stdin (/dev/null), stdout (a pipe whose read end comes
/// first) and stderr (runsbx's).
fn captured_stdio() -> Result<(OwnedFd, [OwnedFd; 3])> {
    let (read_end, write_end) = nix::unistd::pipe().map_err(|e| SandboxError::step("pipe", e))?;
    let null: OwnedFd = fs::File::open("/dev/null")?.into();
    let stderr: OwnedFd = std::os::fd::AsFd::as_fd(&std::io::stderr()).try_clone_to_owned()?;
    Ok((read_end, [null, write_end, stderr]))
}

/// Which checks the probe reported as blocked; a probe that did not exit
/// 0 fails too.
fn judge(checks: &[(String, &'static str)], output: &str, status: i32) -> Verdict {
    let results: Vec<Value> = output
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut failed = Vec::new();
    let mut report = String::new();
    for (check, meaning) in checks {
        if meaning.is_empty() {
            continue; // set-up step for the next check
        }
        let line = results.iter().find(|r| r["check"] == check.as_str());
        let blocked = match line {
            None => Err("no result (the probe did not report it)".to_string()),
            // The one check that must succeed: `--allow-net`'s proxy port.
            Some(r) if *check == reach_proxy() => match r["ok"] == true {
                true => {
                    report.push_str(&format!("ok    {meaning}: reached\n"));
                    continue;
                }
                false => Err(format!(
                    "not reached ({})",
                    r["errno"].as_str().unwrap_or("?")
                )),
            },
            Some(r) if r["ok"] == false => Ok(r["errno"].as_str().unwrap_or("?").to_string()),
            // A pid namespace shows the probe only itself.
            Some(r) if check == "proc-list" && r["ret"].as_i64().is_some_and(|n| n <= 1) => {
                Ok("own pid only".into())
            }
            Some(_) => Err("ALLOWED".to_string()),
        };
        match blocked {
            Ok(how) => report.push_str(&format!("ok    {meaning}: blocked ({how})\n")),
            Err(why) => {
                report.push_str(&format!("FAIL  {meaning}: {why}\n"));
                failed.push(*meaning);
            }
        }
    }
    if status != 0 {
        failed.push("the probe did not exit cleanly");
    }
    Verdict { report, failed }
}

/// Fails when any existing component of `dest` under `rootfs` (the
/// destination's parents and itself) is a symlink.
fn refuse_symlinked_parents(rootfs: &Path, dest: &Path) -> Result<()> {
    let mut at = rootfs.to_path_buf();
    for part in dest.strip_prefix("/").unwrap_or(dest).components() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(SandboxError::Message(format!(
                    "--bundle: {} is a symlink; not creating the probe's mount point through it",
                    at.display()
                )))
            }
            Ok(_) => {}
            Err(_) => break, // from here on, make_mountpoints creates it
        }
    }
    Ok(())
}

/// A copy of `dir`'s config whose process is the probe, bound read-only
/// into the bundle's own rootfs, with the workdir bound read-write.
fn copy_with_probe(
    dir: &Path,
    probe: &Path,
    command: &[String],
    work: &Path,
) -> Result<PrivateDir> {
    let ctx = || format!("--bundle {}", dir.display());
    let message = |m: &str| SandboxError::Message(m.to_string());
    let src = fs::canonicalize(dir).map_err(|e| SandboxError::step(ctx(), e))?;
    let text = fs::read(src.join("config.json")).map_err(|e| SandboxError::step(ctx(), e))?;
    let mut config: Value = serde_json::from_slice(&text)
        .map_err(|e| SandboxError::step("--bundle: config.json", e))?;
    let root = config["root"]["path"]
        .as_str()
        .ok_or_else(|| message("--bundle: root.path missing"))?;
    let rootfs = src.join(root);
    config["root"]["path"] = rootfs.display().to_string().into();
    config["process"]["args"] = command.into();
    config["process"]["cwd"] = "/".into();
    let bind = |path: &Path, mode: &str| {
        MountBuilder::default()
            .destination(path)
            .typ("bind")
            .source(path)
            .options(vec!["bind".to_string(), mode.to_string()])
            .build()
            .map_err(|e| SandboxError::Message(e.to_string()))
    };
    let added = [bind(probe, "ro")?, bind(work, "rw")?];
    // The container's root may be unprivileged: create the mount points in
    // the bundle's rootfs now, as the invoking user. Stops: a symlink left
    // in that rootfs (by an earlier workload) steering root's mkdir and
    // file creation onto the host: every existing component must be a
    // real directory.
    for path in [probe, work] {
        refuse_symlinked_parents(&rootfs, path)?;
    }
    runsbx_bundle::make_mountpoints(&rootfs, &added).map_err(SandboxError::Message)?;
    let mounts = config["mounts"]
        .as_array_mut()
        .ok_or_else(|| message("--bundle: no mounts"))?;
    for m in &added {
        mounts.push(serde_json::to_value(m)?);
    }
    // The bundle's Landlock policy knows nothing of the probe: let it read
    // and execute the probe binary itself, and nothing more.
    if let Some(rules) = config
        .pointer_mut("/process/landlock/rules/pathBeneath")
        .and_then(Value::as_array_mut)
    {
        rules.push(serde_json::json!({
            "allowedAccess": ["execute", "read_file"], "paths": [probe]
        }));
    }
    let out = private_dir("runsbx-selftest-bundle-", None)?;
    fs::write(out.0.join("config.json"), serde_json::to_vec(&config)?)?;
    make_traversable(&out.0)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(check: &str, ok: bool, extra: &str) -> String {
        format!(r#"{{"check":"{check}","ok":{ok}{extra}}}"#)
    }

    #[test]
    fn under_allow_net_the_proxy_port_must_be_reached_and_nothing_else() {
        let checks = checks(Path::new("/w"), Profile::Default, true);
        let answers = |proxy_ok: bool, other_ok: bool| -> String {
            checks
                .iter()
                .map(|(c, _)| match *c == reach_proxy() {
                    true => line(c, proxy_ok, ""),
                    false => line(c, other_ok && c.contains("3129"), r#","errno":"EACCES""#),
                })
                .map(|l| l + "\n")
                .collect()
        };
        let v = judge(&checks, &answers(true, false), 0);
        assert!(v.failed.is_empty(), "{:?}", v.failed);
        assert!(v.report.contains("ok    reach the proxy's port: reached\n"));
        let v = judge(&checks, &answers(false, false), 0);
        assert_eq!(v.failed, vec!["reach the proxy's port"]);
        let v = judge(&checks, &answers(true, true), 0);
        assert_eq!(
            v.failed,
            vec!["TCP connect to another loopback port", "bind a TCP port"]
        );
    }

    #[test]
    fn judge_needs_every_check_blocked_and_a_clean_exit() {
        let checks = checks(Path::new("/w"), Profile::Default, false);
        let all_blocked: String = checks
            .iter()
            .map(|(c, _)| line(c, false, r#","errno":"EPERM""#) + "\n")
            .collect();
        let v = judge(&checks, &all_blocked, 0);
        assert!(v.failed.is_empty(), "{:?}", v.failed);
        assert!(
            v.report.contains("ok    fork: blocked (EPERM)\n"),
            "{}",
            v.report
        );
        // The write that sets up the exec check is not a check of its own.
        assert!(!v.report.contains("write:/w/dropped"), "{}", v.report);
        assert!(v.passed().is_ok());

        let v = judge(&checks, &all_blocked, 1);
        assert_eq!(v.failed, vec!["the probe did not exit cleanly"]);

        // A missing line and an allowed attempt both fail, by name.
        let some: String = all_blocked
            .lines()
            .filter(|l| !l.contains(r#""fork""#) && !l.contains("ptrace"))
            .map(|l| l.to_string() + "\n")
            .collect::<String>()
            + &line("ptrace-attach:1", true, "")
            + "\n";
        let v = judge(&checks, &some, 0);
        assert_eq!(v.failed, vec!["fork", "ptrace"]);
        assert!(v
            .report
            .contains("FAIL  fork: no result (the probe did not report it)\n"));
        assert!(v.report.contains("FAIL  ptrace: ALLOWED\n"));
        assert_eq!(
            v.passed().unwrap_err().to_string(),
            "2 check(s) failed: fork, ptrace"
        );
    }

    #[test]
    fn proc_list_passes_only_when_the_probe_sees_itself() {
        let checks = vec![("proc-list".to_string(), "see processes in /proc")];
        let own = line("proc-list", true, r#","ret":1"#);
        assert!(judge(&checks, &own, 0).failed.is_empty());
        let host = line("proc-list", true, r#","ret":40"#);
        assert_eq!(
            judge(&checks, &host, 0).failed,
            vec!["see processes in /proc"]
        );
    }

    #[test]
    fn a_symlinked_mount_point_parent_is_refused() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("usr")).unwrap();
        std::os::unix::fs::symlink("/etc", t.path().join("usr/lib")).unwrap();
        let e = refuse_symlinked_parents(t.path(), Path::new("/usr/lib/probe")).unwrap_err();
        assert!(e
            .to_string()
            .ends_with("usr/lib is a symlink; not creating the probe's mount point through it"));
        assert!(refuse_symlinked_parents(t.path(), Path::new("/usr/bin/probe")).is_ok());
        assert!(refuse_symlinked_parents(t.path(), Path::new("/opt/probe")).is_ok());
    }
}
