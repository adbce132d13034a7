//! Regression tests for known container-runtime escapes (issue 9), each
//! named after the attack it replays. They run the real `runsbx` as root on
//! busybox bundles or under `runsbx sandbox` with the static probe, and
//! assert the exact outcome (errno, error line, what the host still looks
//! like), so a layer that stops working fails here rather than passing as
//! "some error". The list, with results, is in docs/security.md.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

/// `check -> errno name` (or `ok`) from the probe's JSON lines.
fn outcomes(out: &Output) -> Vec<(String, String)> {
    probe_lines(&out.stdout)
        .iter()
        .map(|l| {
            let errno = l["errno"].as_str().unwrap_or("ok").to_string();
            (l["check"].as_str().unwrap().to_string(), errno)
        })
        .collect()
}

/// A busybox bundle with the probe at /probe.
fn probe_bundle(env: &Env, name: &str, args: &[&str]) -> Bundle {
    let b = env.bundle(name, args);
    b.add_file(&probe_bin(), "/probe");
    b
}

/// Runs `runsbx sandbox --ro PROBE -- PROBE checks...`.
fn sandboxed_probe(env: &Env, checks: &[&str]) -> Output {
    let probe = probe_bin();
    let p = probe.to_str().unwrap();
    let mut args = vec!["sandbox", "--ro", p, "--", p];
    args.extend_from_slice(checks);
    env.run(&args)
}

/// Runs `runsbx ARGS` from bash after opening `/` as descriptor `fd`, as a
/// careless supervisor might leave it open.
fn run_with_leaked_dir_fd(env: &Env, fd: u32, args: &[&str]) -> Output {
    let mut script = format!(
        "exec {fd}</ ; exec {} --root {}",
        runsbx_bin().display(),
        env.root.display()
    );
    for a in args {
        script.push_str(&format!(" '{a}'"));
    }
    Command::new("bash")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

// ---- CVE-2024-21626: a leaked directory fd as cwd ----

/// CVE-2024-21626 (runc "Leaky Vessels"): the runtime leaks a host directory
/// fd into init, and `process.cwd = /proc/self/fd/N` makes the workload
/// start with a cwd outside its root, from where `../..` reaches the host.
/// runsbx (libcontainer's verify_cwd) refuses to start it, for `run` and for
/// `exec --cwd`, and without the trick the leaked fd is not visible inside.
#[test]
fn cve_2024_21626_a_leaked_directory_fd_cannot_become_the_cwd() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    // The fd numbers the attack guessed in runc (7, 8) and a low one.
    for fd in [3, 7, 8] {
        let mut b = probe_bundle(&env, &format!("b{fd}"), &["/probe", "cwd", "fds"]);
        b.config["process"]["cwd"] = json!(format!("/proc/self/fd/{fd}"));
        b.save();
        let id = unique_id("cwd");
        let out = run_with_leaked_dir_fd(&env, fd, &["run", "--bundle", b.path(), &id]);
        assert_one_line_error(&out, "working directory");
        assert!(
            probe_lines(&out.stdout).is_empty(),
            "the workload ran: {}",
            stdout_of(&out)
        );
        assert!(
            env.state_entries().is_empty(),
            "state left: {:?}",
            env.state_entries()
        );
    }

    // The same with `exec --cwd` into a running container.
    let b = probe_bundle(&env, "running", &["sleep", "100"]);
    let id = unique_id("cwd");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    for fd in [3, 7] {
        let cwd = format!("/proc/self/fd/{fd}");
        let out = run_with_leaked_dir_fd(
            &env,
            fd,
            &[
                "exec",
                "--cwd",
                &cwd,
                &id,
                "/probe",
                "cwd",
                "read:../etc/hostname",
            ],
        );
        assert_one_line_error(&out, "working directory");
        assert!(probe_lines(&out.stdout).is_empty(), "{}", stdout_of(&out));
    }

    // Without the cwd trick the leaked fd is simply not there: fds 0-2 only,
    // and the cwd is inside the root.
    let out = run_with_leaked_dir_fd(&env, 7, &["exec", &id, "/probe", "fds", "cwd"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let lines = probe_lines(&out.stdout);
    let fds: Vec<&String> = lines[0]["data"].as_object().unwrap().keys().collect();
    assert_eq!(fds, ["0", "1", "2"], "fds inside: {}", lines[0]);
    assert_eq!(lines[1]["detail"], "/", "cwd inside: {}", lines[1]);
    env.ok(&["delete", "--force", &id]);
}

// ---- Masked and read-only paths ----

/// What the workload sees of the masked and read-only paths: each masked
/// file must be the container's own /dev/null (same device and inode, char
/// 1,3), a masked directory an empty read-only tmpfs, and /proc/sys refuses
/// writes (without the read-only bind, uid 0 could write its sysctls with no
/// capability at all).
const MASK_SCRIPT: &str = "\
n=$(stat -c '%d:%i' /dev/null)
for p in /proc/keys /proc/timer_list; do
  if [ \"$(stat -c '%d:%i %t,%T' $p)\" = \"$n 1,3\" ]; then echo \"$p devnull\"; else echo \"$p NOT $(stat -c '%F %t,%T' $p)\"; fi
done
/probe read:/proc/keys read:/proc/timer_list list:/proc/acpi write:/proc/acpi/x \
  write:/proc/sys/kernel/hostname,x write:/proc/sys/kernel/core_pattern,x";

/// Masked paths (runc's maskedPaths/readonlyPaths), compared with runc on the
/// same bundle.
#[test]
fn masked_paths_are_the_containers_dev_null_and_readonly_paths_refuse_writes() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = probe_bundle(&env, "b", &["sh", "-c", MASK_SCRIPT]);
    b.config["linux"]["maskedPaths"] = json!([
        "/proc/kcore",
        "/proc/keys",
        "/proc/timer_list",
        "/proc/acpi"
    ]);
    b.save();
    let id = unique_id("mask");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains("/proc/keys devnull\n"), "{text}");
    assert!(text.contains("/proc/timer_list devnull\n"), "{text}");
    let got = outcomes(&out);
    let want = [
        ("read:/proc/keys", "ok"),
        ("read:/proc/timer_list", "ok"),
        ("list:/proc/acpi", "ok"),
        ("write:/proc/acpi/x", "EROFS"),
        ("write:/proc/sys/kernel/hostname,x", "EROFS"),
        ("write:/proc/sys/kernel/core_pattern,x", "EROFS"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(c, e)| (c.to_string(), e.to_string()))
        .collect();
    assert_eq!(got, want, "{text}");
    let lines = probe_lines(&out.stdout);
    assert_eq!(lines[0]["detail"], "", "masked /proc/keys has content");
    assert_eq!(
        lines[2]["data"],
        json!([]),
        "masked /proc/acpi lists entries"
    );

    // runc, same bundle: the same lines.
    let runc = env.runc(&["run", "--bundle", b.path(), &unique_id("mask-runc")]);
    assert!(runc.status.success(), "runc: {}", stderr_of(&runc));
    assert_eq!(stdout_of(&runc), text, "runc and runsbx differ");
}

/// The masked-path race through /dev/null (runc CVE-2025-31133): masking
/// bind-mounts the container's /dev/null over each masked path, so a rootfs
/// whose /dev/null is a symlink to a procfs file would turn the mask into a
/// writable bind of that file (here the host-wide core_pattern, which the
/// kernel runs as root on a crash). runsbx must refuse the rootfs, with one
/// line, and leave core_pattern alone.
#[test]
fn a_dev_null_symlink_cannot_redirect_a_masked_path() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let before = fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap();
    let mut b = probe_bundle(
        &env,
        "b",
        &["/probe", "readlink:/dev/null", "write:/proc/keys,|/tmp/x"],
    );
    // No tmpfs on /dev: the rootfs's own /dev is used, and its null is a
    // symlink planted by the image.
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["destination"] != "/dev");
    b.save();
    symlink(
        "/proc/sys/kernel/core_pattern",
        b.dir.join("rootfs/dev/null"),
    )
    .unwrap();
    let id = unique_id("devnull");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "rootfs");
    assert!(probe_lines(&out.stdout).is_empty(), "{}", stdout_of(&out));
    assert_eq!(
        fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap(),
        before
    );
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

// ---- Symlinked mount destinations ----

/// A mount destination that goes through a symlink pointing out of the
/// rootfs (`/evil -> /../../../../tmp/<host dir>`, as in runc's
/// CVE-2021-30465 family): the mount must be resolved inside the rootfs or
/// refused; the host directory gets neither a mount nor a new entry.
#[test]
fn a_symlinked_mount_destination_stays_inside_the_rootfs() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let host = HostTarget::new();
    let host_name = host.name.clone();
    let mut b = env.bundle(
        "b",
        &["sh", "-c", "cat /proc/self/mountinfo; touch /evil/x/inside"],
    );
    b.config["mounts"].as_array_mut().unwrap().push(json!({
        "destination": "/evil/x", "type": "tmpfs", "source": "tmpfs", "options": ["size=1m"]
    }));
    b.save();
    host.aim(&b.dir.join("rootfs/evil"));
    let host_untouched = || host.untouched();

    // 1. The target does not exist inside the rootfs: refused, one line
    //    (libcontainer will not create a directory through a symlink).
    let id = unique_id("symlink");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "rootfs");
    host_untouched();
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());

    // 2. It exists inside the rootfs: the symlink is resolved there, as if
    //    the rootfs were /, and the mount lands in the rootfs.
    let inside = b.dir.join("rootfs/tmp").join(&host_name);
    fs::create_dir_all(&inside).unwrap();
    // The base config's /tmp tmpfs would hide it.
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["destination"] != "/tmp");
    b.save();
    let id = unique_id("symlink");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    let tmpfs_line = text
        .lines()
        .find(|l| l.contains(&format!(" /tmp/{host_name}/x ")))
        .unwrap_or_else(|| panic!("no tmpfs at /tmp/{host_name}/x inside:\n{text}"));
    assert!(tmpfs_line.contains(" - tmpfs "), "{tmpfs_line}");
    // The directory was made in the rootfs, and the file on the tmpfs.
    assert!(inside.join("x").is_dir());
    assert!(!inside.join("x/inside").exists(), "the tmpfs was not used");
    host_untouched();
}

/// The same attack on the binds runsbx makes itself, as host root, before
/// libcontainer forks (prebind.rs: a read-only bind whose source the
/// container's root cannot reach): the destination `/evil/x` goes through
/// `/evil -> /../../../../tmp/<host dir>`. runsbx resolves it inside the
/// rootfs (openat2 RESOLVE_IN_ROOT) or refuses; the host directory gets
/// neither a mount nor an entry.
#[test]
fn a_symlinked_destination_of_a_bind_runsbx_makes_stays_inside_the_rootfs() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let host = HostTarget::new();
    let host_name = host.name.clone();
    let private = env.tmp.path().join("private");
    fs::create_dir_all(private.join("src")).unwrap();
    fs::write(private.join("src/marker"), "from-the-bind\n").unwrap();
    fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    fs::set_permissions(
        env.tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut b = env.bundle("b", &["cat", "/evil/x/marker"]);
    let mounts = b.config["mounts"].as_array_mut().unwrap();
    // The base config's /tmp tmpfs would hide the in-rootfs target.
    mounts.retain(|m| m["destination"] != "/tmp");
    mounts.push(json!({
        "destination": "/evil/x", "type": "bind", "source": private.join("src"),
        "options": ["rbind", "ro", "nosuid", "nodev"]
    }));
    b.with_userns_as_nobody();
    b.save();
    host.aim(&b.dir.join("rootfs/evil"));
    let host_untouched = || host.untouched();

    // 1. The target is missing inside the rootfs: runsbx will not make a
    //    directory through the symlink; refused, one line.
    let id = unique_id("presym");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "mounts[2] (bind ");
    assert_one_line_error(
        &out,
        "on /evil/x): mount point in the rootfs: a symlink on the way leads nowhere inside it",
    );
    host_untouched();
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());

    // 2. It exists inside the rootfs: resolved there, the bind lands in it.
    let inside = b.dir.join("rootfs/tmp").join(&host_name);
    fs::create_dir_all(&inside).unwrap();
    let id = unique_id("presym");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "from-the-bind\n");
    assert!(
        inside.join("x").is_dir(),
        "the mount point was made in the rootfs"
    );
    host_untouched();
}

// ---- CVE-2019-5736: overwriting the runtime through /proc/<pid>/exe ----

/// CVE-2019-5736 through `exec`: its processes join a running container,
/// so a process inside could open /proc/<pid>/exe of the runtime and write
/// through it once runsbx exits. `runsbx exec` runs from a sealed view of
/// its binary, and writing through it fails, also after it exited.
#[test]
fn cve_2019_5736_exec_runs_from_a_sealed_copy() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let b = env.bundle("b", &["sleep", "100"]);
    let id = unique_id("seal");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    let mut child = env
        .cmd()
        .args(["exec", &id, "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    let exe = loop {
        let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        // Until the re-exec, it is the binary on disk.
        if exe != runsbx_bin() {
            break exe;
        }
        assert!(Instant::now() < deadline, "runsbx exec never re-executed");
        std::thread::sleep(Duration::from_millis(10));
    };
    let who = format!("runsbx exec ({exe:?})");
    let (_, held) = assert_sealed_exe(pid, &who);
    child.kill().unwrap();
    let _ = child.wait();
    assert_unwritable(&held, &who);
    env.ok(&["delete", "--force", &id]);
}

/// A process exec'd into a container with a user namespace is that
/// namespace's root, as init is: mapped to host uid 100000 here, never host
/// root (libcontainer alone leaves it in the host's user namespace).
#[test]
fn exec_into_a_user_namespace_is_not_host_root() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("userns", &["sleep", "100"]);
    let map = json!([{ "containerID": 0, "hostID": 100000, "size": 65536 }]);
    b.config["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "type": "user" }));
    b.config["linux"]["uidMappings"] = map.clone();
    b.config["linux"]["gidMappings"] = map;
    b.save();
    // The mapped root must be able to traverse to and read its rootfs.
    for entry in walk(&b.dir.join("rootfs")) {
        let _ = nix::unistd::fchownat(
            None,
            &entry,
            Some(100000.into()),
            Some(100000.into()),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        );
    }
    let id = unique_id("userns");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    let pid_file = env.tmp.path().join("exec.pid");
    env.ok(&[
        "exec",
        "-d",
        "--pid-file",
        pid_file.to_str().unwrap(),
        &id,
        "sleep",
        "30",
    ]);
    let pid = fs::read_to_string(&pid_file).unwrap().trim().to_string();
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid_line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert_eq!(
        uid_line.split_whitespace().nth(1),
        Some("100000"),
        "the exec'd process runs as {uid_line:?} on the host"
    );
    let ns = |p: &str| fs::read_link(format!("/proc/{p}/ns/user")).unwrap();
    let init = env.state(&id)["pid"].to_string();
    assert_eq!(
        ns(&pid),
        ns(&init),
        "exec'd process outside init's user namespace"
    );
    env.ok(&["delete", "--force", &id]);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// CVE-2019-5736 from `runsbx sandbox`: the workload shares nothing with the
/// host, so it cannot find a runtime process to write through: /proc is not
/// listable (Landlock), its own pid namespace has no pid but its own, and
/// /proc/<pid>/exe of any pid, its own or the host's, cannot be opened.
#[test]
fn cve_2019_5736_a_sandboxed_workload_cannot_reach_a_runtime_exe() {
    let env = Env::new();
    let host_pid = format!("/proc/{}/exe", std::process::id());
    let checks = [
        "pid",
        "proc-list",
        "readlink:/proc/1/exe",
        "write:/proc/1/exe",
        "write:/proc/self/exe",
        &format!("write:{host_pid}"),
        "readlink:/proc/2/exe",
    ];
    let out = sandboxed_probe(&env, &checks);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let lines = probe_lines(&out.stdout);
    // PID 1 of its own namespace, with no parent visible.
    assert_eq!(lines[0]["ret"], 1, "{}", lines[0]);
    let got = outcomes(&out);
    let want = [
        "ok", "EACCES", // Landlock: /proc is not granted
        "ok",     // PID 1 is the workload itself (checked below)
        "EACCES", // Landlock: no write to /proc
        "EACCES", "ENOENT", // the host's pids do not exist in its pid namespace
        "ENOENT", // nor does any pid but 1
    ];
    for ((check, errno), want) in got.iter().zip(want) {
        assert_eq!(errno, want, "{check}: {}", stdout_of(&out));
    }
    assert_eq!(got.len(), checks.len(), "{}", stdout_of(&out));
    assert_eq!(
        lines[2]["detail"].as_str(),
        probe_bin().to_str(),
        "PID 1 is not the workload: {}",
        lines[2]
    );
}

// ---- Kernel attack surface from inside `runsbx sandbox` ----

/// Escape routes through the kernel, each of which has broken a sandbox
/// before, tried by the probe under the default sandbox profile. Each must
/// get the seccomp filter's answer (EPERM; ENOSYS for clone3 so glibc falls
/// back to clone), never the kernel's: the probe passes a bad pointer or fd,
/// so a call that reached the kernel would fail with the errno in the third
/// column (checked on the host below, so the test cannot pass on a probe that
/// never makes the call).
const KERNEL_ESCAPES: &[(&str, &str, &str)] = &[
    // io_uring can open sockets and files without the syscalls the filter
    // sees.
    ("io-uring-setup", "EPERM", "EFAULT"),
    ("bpf", "EPERM", "EFAULT"),
    ("perf-event-open", "EPERM", "EFAULT"),
    // Keyrings are not namespaced.
    ("keyctl", "EPERM", "EFAULT"),
    ("add-key", "EPERM", "EFAULT"),
    // Stalls kernel page faults, a race amplifier for kernel exploits.
    ("userfaultfd", "EPERM", "EINVAL"),
    ("ptrace", "EPERM", "ESRCH"),
    // Landlock's TCP rules do not cover MPTCP, raw, packet or vsock sockets.
    ("mptcp", "EPERM", "ok"),
    ("socket:netlink,raw", "EPERM", "ok"),
    ("socket:packet,raw", "EPERM", "ok"),
    ("socket:vsock,stream", "EPERM", "ok"),
    ("socket:inet,dgram", "EPERM", "ok"),
    ("socket:inet6,raw,58", "EPERM", "ok"),
    ("setns", "EPERM", "EBADF"),
    ("mount", "EPERM", "EFAULT"),
    // Typing into the controlling terminal (CVE-2017-5226), also with bit 32
    // set in the request, which a 64-bit comparison would miss
    // (CVE-2019-10063).
    ("ioctl-tiocsti", "EPERM", "EBADF"),
    ("ioctl-tiocsti-high", "EPERM", "EBADF"),
    ("clone3-fork", "ENOSYS", "ok"),
    ("fork", "EPERM", "ok"),
    // An anonymous executable file: a way to run code that no read-only bind
    // vouched for.
    ("memfd-create", "EPERM", "EFAULT"),
    // Last: it stays in effect when it succeeds (user namespaces give
    // capabilities over fresh namespaces, a large kernel attack surface).
    ("unshare:user", "EPERM", "ok"),
];

#[test]
fn kernel_escape_routes_get_the_filters_errno() {
    let env = Env::new();
    let checks: Vec<&str> = KERNEL_ESCAPES.iter().map(|(c, _, _)| *c).collect();
    let out = sandboxed_probe(&env, &checks);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let got = outcomes(&out);
    let want: Vec<(String, String)> = KERNEL_ESCAPES
        .iter()
        .map(|(c, e, _)| (c.to_string(), e.to_string()))
        .collect();
    assert_eq!(got, want, "{}", stdout_of(&out));

    // On the host, as root with no filter, the same calls reach the kernel
    // and fail (or succeed) differently: the EPERMs above are the filter's.
    let host = Command::new(probe_bin())
        .args(&checks)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let got = outcomes(&host);
    let want: Vec<(String, String)> = KERNEL_ESCAPES
        .iter()
        .map(|(c, _, e)| (c.to_string(), e.to_string()))
        .collect();
    assert_eq!(got, want, "host: {}", stdout_of(&host));
}

/// x32 syscall numbers and the 32-bit `int 0x80` entry reach syscalls under
/// other numbers, which a filter checking only the x86-64 table would let
/// through. The filter kills the process (SIGSYS: 128 + 31 = 159) before the
/// probe can print anything; each runs in its own sandbox for that reason.
#[test]
fn foreign_syscall_abis_are_killed() {
    let env = Env::new();
    for check in ["x32", "int80"] {
        let out = sandboxed_probe(&env, &[check]);
        assert_eq!(
            out.status.code(),
            Some(159),
            "{check}: {}\n{}",
            stdout_of(&out),
            stderr_of(&out)
        );
        assert!(
            probe_lines(&out.stdout).is_empty(),
            "{check}: {}",
            stdout_of(&out)
        );
    }
    // Outside, int 0x80 runs, so the kill above is the filter's doing.
    let host = Command::new(probe_bin())
        .arg("int80")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(outcomes(&host), [("int80".to_string(), "ok".to_string())]);
}

// ---- issue 19: the second escape battery ----

/// Runs `python3 -c` on `attempts` in a sandbox on `wd` (plus `flags`) and
/// returns `name -> outcome` (`ALLOWED` or the errno name).
fn sandboxed_attempts(
    env: &Env,
    wd: &str,
    flags: &[&str],
    attempts: &str,
) -> std::collections::BTreeMap<String, String> {
    let mut all = vec!["--workdir", wd];
    all.extend_from_slice(flags);
    let out = sandbox(env, &all, &["python3", "-c", &py_attempts(attempts)]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    stdout_of(&out)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Issue 19 item 1, discovery cache poisoning: a workdir that is runsbx's
/// state root, lies inside it or contains it would let the workload rewrite
/// `.discovery/*.json` and add binds to every later sandbox. Refused before
/// anything runs, with one line naming both paths.
#[test]
fn a_workdir_overlapping_the_state_root_is_refused() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    fs::create_dir_all(env.root.join(".discovery")).unwrap();
    let root = env.root.to_str().unwrap().to_string();
    let inside = env.root.join(".discovery");
    let outer = env.root.parent().unwrap();
    for wd in [Path::new(&root), &inside, outer] {
        let w = wd.to_str().unwrap();
        let out = sandbox(&env, &["--workdir", w], &["python3", "-c", "1"]);
        assert_one_line_error(
            &out,
            &format!("--workdir {w}: overlaps runsbx's state root {root}"),
        );
        assert_eq!(out.status.code(), Some(125));
    }
    assert_eq!(fs::read_dir(&inside).unwrap().count(), 0);
}

/// Issue 19 item 3: a datagram socketpair's sendmsg can name a host
/// datagram socket visible under a `--ro` path and pass it descriptors.
/// Only a stream pair is allowed; the host socket receives nothing.
#[test]
fn a_datagram_socketpair_cannot_reach_a_host_socket() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let dir = env.tmp.path().join("sockdir");
    fs::create_dir(&dir).unwrap();
    let path = dir.join("log.sock");
    let host = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    host.set_nonblocking(true).unwrap();
    // World-writable, as /dev/log is.
    fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let wd = env.nobody_workdir();
    let p = path.to_str().unwrap();
    let attempts = format!(
        r#"
def dgram():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"escaped", "{p}")
attempt("dgram-pair", dgram)
def stream():
    a, b = socket.socketpair()
    a.send(b"x")
    assert b.recv(1) == b"x"
attempt("stream-pair", stream)
"#
    );
    let got = sandboxed_attempts(
        &env,
        wd.to_str().unwrap(),
        &["--ro", dir.to_str().unwrap()],
        &attempts,
    );
    assert_eq!(got["dgram-pair"], "EPERM", "{got:?}");
    assert_eq!(got["stream-pair"], "ALLOWED", "{got:?}");
    let mut buf = [0u8; 64];
    assert!(
        host.recv(&mut buf).is_err(),
        "the host socket got a datagram"
    );
}

/// Issue 19 items 4, 5 and the setuid bits: RENAME_WHITEOUT leaves a 0:0
/// character device in the workdir; `utimensat(NULL)` on the host's
/// /dev/null rewrites its times; mode 6755 on a workdir file gives a host
/// user who runs it the workload owner's privileges. Each is refused, while
/// the plain forms (rename flags, /dev/null I/O, ordinary modes) still work.
#[test]
fn whiteouts_device_times_and_setid_bits_are_refused() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let wd = env.nobody_workdir();
    let times = |p: &str| {
        let m = fs::metadata(p).unwrap();
        use std::os::unix::fs::MetadataExt;
        (m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec())
    };
    let before = (times("/dev/null"), times("/dev/zero"));
    let attempts = r#"
import ctypes
os.chdir(os.environ["HOME"])
libc = ctypes.CDLL(None, use_errno=True)
def rename2(flags, new):
    open("a", "w").close()
    if libc.syscall(316, -100, b"a", -100, new, flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
attempt("whiteout", lambda: rename2(4, b"w"))
attempt("noreplace", lambda: rename2(1, b"n"))
attempt("exchange", lambda: rename2(2, b"n"))
attempt("utime-null", lambda: os.utime("/dev/null"))
attempt("utime-zero", lambda: os.utime("/dev/zero"))
attempt("write-null", lambda: open("/dev/null", "w").write("x"))
attempt("read-zero", lambda: open("/dev/zero", "rb").read(4))
open("f", "w").close()
attempt("chmod-6755", lambda: os.chmod("f", 0o6755))
attempt("chmod-2755", lambda: os.chmod("f", 0o2755))
attempt("fchmod-4755", lambda: os.fchmod(os.open("f", os.O_RDONLY), 0o4755))
attempt("chmod-755", lambda: os.chmod("f", 0o755))
attempt("open-4755", lambda: os.close(os.open("g", os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt("open-644", lambda: os.close(os.open("h", os.O_CREAT | os.O_WRONLY, 0o644)))
"#;
    let got = sandboxed_attempts(&env, wd.to_str().unwrap(), &[], attempts);
    let want = [
        ("whiteout", "EPERM"),
        ("noreplace", "ALLOWED"),
        ("exchange", "ALLOWED"),
        ("utime-null", "EROFS"),
        ("utime-zero", "EROFS"),
        ("write-null", "ALLOWED"),
        ("read-zero", "ALLOWED"),
        ("chmod-6755", "EPERM"),
        ("chmod-2755", "EPERM"),
        ("fchmod-4755", "EPERM"),
        ("chmod-755", "ALLOWED"),
        ("open-4755", "EPERM"),
        ("open-644", "ALLOWED"),
    ];
    for (name, outcome) in want {
        assert_eq!(
            got.get(name).map(String::as_str),
            Some(outcome),
            "{name}: {got:?}"
        );
    }
    assert_eq!((times("/dev/null"), times("/dev/zero")), before);
    for e in fs::read_dir(&wd).unwrap() {
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        assert!(
            !m.file_type().is_char_device(),
            "{:?} is a device",
            e.path()
        );
        assert_eq!(m.permissions().mode() & 0o6000, 0, "{:?}", e.path());
    }
    assert!(!wd.join("w").exists());
}
