//! Landlock, end to end: the static probe runs as the workload under a
//! policy and tries each access once where the policy denies it and once
//! where it allows it. Errnos are exact: EACCES/EXDEV/EPERM are Landlock's
//! answers, EROFS or EADDRINUSE would be some other layer's.
//!
//! Layout of every probe bundle's rootfs (created on the host, so rules can
//! name them: a path must exist in the container when init enforces):
//! `/probe`, `/bin/busybox`, `/secret` (no rule grants it), `/ro/f`,
//! `/w/{a,b,c,d}/f` (writable dirs on the same mount, so a rename between
//! them reaches Landlock instead of the VFS's cross-mount EXDEV).

use std::fs;
use std::io::Read;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

/// Every filesystem right of ABI 5: a policy handling all of them denies
/// anything no rule grants.
const FS_ALL: &[&str] = &[
    "execute",
    "write_file",
    "read_file",
    "read_dir",
    "remove_dir",
    "remove_file",
    "make_char",
    "make_dir",
    "make_reg",
    "make_sock",
    "make_fifo",
    "make_block",
    "make_sym",
    "refer",
    "truncate",
    "ioctl_dev",
];

const RO: &[&str] = &["read_file", "read_dir"];

/// A working directory: everything but execute, refer, devices and ioctls.
const RW: &[&str] = &[
    "read_file",
    "read_dir",
    "write_file",
    "truncate",
    "remove_file",
    "remove_dir",
    "make_reg",
    "make_dir",
    "make_sym",
    "make_fifo",
    "make_sock",
];

fn with(base: &[&str], extra: &[&str]) -> Vec<String> {
    base.iter().chain(extra).map(|s| s.to_string()).collect()
}

/// A busybox bundle with the probe at /probe and the layout in the module doc.
fn probe_bundle(env: &Env, name: &str) -> Bundle {
    let b = env.bundle(name, &["/probe"]);
    b.add_file(&probe_bin(), "/probe");
    let root = b.dir.join("rootfs");
    fs::write(root.join("secret"), "secret\n").unwrap();
    fs::create_dir_all(root.join("ro")).unwrap();
    fs::write(root.join("ro/f"), "ro-data\n").unwrap();
    for d in ["a", "b", "c", "d"] {
        fs::create_dir_all(root.join("w").join(d)).unwrap();
        fs::write(root.join("w").join(d).join("f"), "w-data\n").unwrap();
    }
    b
}

/// A policy handling every ABI 5 filesystem right, with the probe executable
/// and `rules` (pairs of rights and paths) on top.
fn fs_policy(rules: &[(Vec<String>, &[&str])]) -> Value {
    let mut path_beneath =
        vec![json!({"allowedAccess": ["execute", "read_file"], "paths": ["/probe"]})];
    for (rights, paths) in rules {
        path_beneath.push(json!({"allowedAccess": rights, "paths": paths}));
    }
    json!({
        "handledAccess": { "handledAccessFS": FS_ALL },
        "rules": { "pathBeneath": path_beneath }
    })
}

fn set_probe(b: &mut Bundle, policy: Option<Value>, checks: &[&str]) {
    let mut args = vec!["/probe".to_string()];
    args.extend(checks.iter().map(|c| c.to_string()));
    b.config["process"]["args"] = json!(args);
    if let Some(p) = policy {
        b.config["process"]["landlock"] = p;
    }
    b.save();
}

/// `runsbx [global...] run` the bundle; asserts success and returns the
/// probe's lines by check word.
fn run_probe_with(env: &Env, global: &[&str], b: &Bundle) -> Vec<Value> {
    let id = unique_id("ll");
    let mut args: Vec<&str> = global.to_vec();
    args.extend(["run", "--bundle", b.path(), &id]);
    let out = env.run(&args);
    assert!(
        out.status.success(),
        "runsbx {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        stderr_of(&out)
    );
    lines(&out.stdout)
}

fn run_probe(env: &Env, b: &Bundle) -> Vec<Value> {
    run_probe_with(env, &[], b)
}

fn lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("check").is_some())
        .collect()
}

/// The line of `check`; panics with everything the probe printed if absent.
fn line<'a>(lines: &'a [Value], check: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["check"] == check)
        .unwrap_or_else(|| panic!("no line for {check:?} in {lines:#?}"))
}

fn assert_ok(lines: &[Value], check: &str) {
    let l = line(lines, check);
    assert_eq!(l["ok"], true, "{check} should be allowed: {l}");
}

fn assert_errno(lines: &[Value], check: &str, errno: &str) {
    let l = line(lines, check);
    assert_eq!(l["ok"], false, "{check} should be denied: {l}");
    assert_eq!(l["errno"], errno, "{check}: wrong errno: {l}");
}

fn remove_namespace(b: &mut Bundle, ns: &str) {
    b.config["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .retain(|n| n["type"] != ns);
}

fn rootfs(b: &Bundle) -> PathBuf {
    b.dir.join("rootfs")
}

// ---- filesystem -------------------------------------------------------------

#[test]
fn read_outside_allowed_paths() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = fs_policy(&[(with(RO, &[]), &["/ro"])]);
    set_probe(
        &mut b,
        Some(policy),
        &[
            "read:/ro/f",
            "list:/ro",
            "read:/secret",
            "list:/",
            "list:/w",
        ],
    );
    let l = run_probe(&env, &b);
    assert_ok(&l, "read:/ro/f");
    assert_eq!(line(&l, "read:/ro/f")["detail"], "ro-data\n");
    assert_ok(&l, "list:/ro");
    assert_errno(&l, "read:/secret", "EACCES");
    assert_errno(&l, "list:/", "EACCES");
    assert_errno(&l, "list:/w", "EACCES");
}

#[test]
fn write_create_remove_truncate_under_a_read_only_rule() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = fs_policy(&[(with(RO, &[]), &["/ro"]), (with(RW, &[]), &["/w/a"])]);
    let denied = [
        "write:/ro/f",
        "write:/ro/new",
        "mkdir:/ro/d",
        "unlink:/ro/f",
        "truncate:/ro/f,0",
    ];
    let allowed = [
        "write:/w/a/f",
        "write:/w/a/new",
        "mkdir:/w/a/d",
        "unlink:/w/a/new",
        "truncate:/w/a/f,0",
    ];
    let checks: Vec<&str> = denied.iter().chain(&allowed).copied().collect();
    set_probe(&mut b, Some(policy), &checks);
    let l = run_probe(&env, &b);
    for c in denied {
        assert_errno(&l, c, "EACCES");
    }
    for c in allowed {
        assert_ok(&l, c);
    }
    let root = rootfs(&b);
    assert_eq!(fs::read_to_string(root.join("ro/f")).unwrap(), "ro-data\n");
    assert!(!root.join("ro/new").exists() && !root.join("ro/d").exists());
    assert!(root.join("w/a/d").is_dir() && !root.join("w/a/new").exists());
    assert_eq!(fs::metadata(root.join("w/a/f")).unwrap().len(), 0);
}

/// Moving a file into a read-only dir needs make_reg there (EACCES, which
/// the kernel reports before any refer problem); moving it between two
/// writable dirs needs refer on both (EXDEV without it); a rename inside
/// one dir needs no refer.
#[test]
fn rename_from_a_writable_dir_into_another_dir() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = fs_policy(&[
        (with(RO, &[]), &["/ro"]),
        (with(RW, &[]), &["/w/a", "/w/b"]),
        (with(RW, &["refer"]), &["/w/c", "/w/d"]),
    ]);
    set_probe(
        &mut b,
        Some(policy),
        &[
            "rename:/w/a/f,/ro/f2",
            "rename:/w/a/f,/w/b/f2",
            "rename:/w/a/f,/w/a/f2",
            "rename:/w/c/f,/w/d/f2",
        ],
    );
    let l = run_probe(&env, &b);
    assert_errno(&l, "rename:/w/a/f,/ro/f2", "EACCES");
    assert_errno(&l, "rename:/w/a/f,/w/b/f2", "EXDEV");
    assert_ok(&l, "rename:/w/a/f,/w/a/f2");
    assert_ok(&l, "rename:/w/c/f,/w/d/f2");
    let root = rootfs(&b);
    assert!(!root.join("ro/f2").exists() && !root.join("w/b/f2").exists());
    assert!(root.join("w/a/f2").exists() && root.join("w/d/f2").exists());
}

/// A hard link in a writable dir to a file outside it would give the file
/// the writable dir's rights: refused with EXDEV, even where both dirs grant
/// refer. A link inside the writable dir is fine.
#[test]
fn hard_link_to_a_file_outside() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = fs_policy(&[
        (with(RO, &["refer"]), &["/ro"]),
        (with(RW, &[]), &["/w/a"]),
        (with(RW, &["refer"]), &["/w/c"]),
    ]);
    set_probe(
        &mut b,
        Some(policy),
        &[
            "link:/secret,/w/a/l1",
            "link:/ro/f,/w/a/l2",
            "link:/ro/f,/w/c/l3",
            "link:/w/a/f,/w/a/l4",
            "write:/w/c/l3",
        ],
    );
    let l = run_probe(&env, &b);
    assert_errno(&l, "link:/secret,/w/a/l1", "EXDEV");
    assert_errno(&l, "link:/ro/f,/w/a/l2", "EXDEV");
    assert_errno(&l, "link:/ro/f,/w/c/l3", "EXDEV");
    assert_ok(&l, "link:/w/a/f,/w/a/l4");
    let root = rootfs(&b);
    assert_eq!(fs::read_to_string(root.join("ro/f")).unwrap(), "ro-data\n");
    assert_eq!(fs::metadata(root.join("secret")).unwrap().nlink(), 1);
}

/// Landlock checks the file a symlink resolves to, not the link.
#[test]
fn symlink_in_the_writable_dir_pointing_outside() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = fs_policy(&[(with(RW, &[]), &["/w/a"])]);
    set_probe(
        &mut b,
        Some(policy),
        &[
            "symlink-open:/w/a/out,/secret",
            "symlink-open:/w/a/in,/w/a/f",
        ],
    );
    let l = run_probe(&env, &b);
    assert_errno(&l, "symlink-open:/w/a/out,/secret", "EACCES");
    assert_ok(&l, "symlink-open:/w/a/in,/w/a/f");
    assert_eq!(
        line(&l, "symlink-open:/w/a/in,/w/a/f")["detail"],
        "w-data\n"
    );
}

/// make_fifo and make_char are separate rights. The container keeps
/// CAP_MKNOD so that only Landlock can refuse the device node.
#[test]
fn mkfifo_and_mknod() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    for set in ["bounding", "effective", "permitted"] {
        b.config["process"]["capabilities"][set] = json!(["CAP_MKNOD"]);
    }
    let policy = fs_policy(&[
        (with(RO, &[]), &["/ro"]),
        (with(RW, &[]), &["/w/a"]),
        (with(RW, &["make_char"]), &["/w/c"]),
    ]);
    set_probe(
        &mut b,
        Some(policy),
        &[
            "mkfifo:/ro/p",
            "mkfifo:/w/a/p",
            "mknod:/w/a/n",
            "mknod:/w/c/n",
        ],
    );
    let l = run_probe(&env, &b);
    assert_errno(&l, "mkfifo:/ro/p", "EACCES");
    assert_ok(&l, "mkfifo:/w/a/p");
    assert_errno(&l, "mknod:/w/a/n", "EACCES");
    assert_ok(&l, "mknod:/w/c/n");
}

/// /probe may execute; /bin grants only reading. The probe execs itself
/// (allowed: the second probe prints the line), which then tries busybox.
#[test]
fn exec_without_execute_right() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = fs_policy(&[(with(RO, &[]), &["/bin"])]);
    set_probe(
        &mut b,
        Some(policy),
        &[
            "exec:/probe",
            "read:/bin/busybox",
            "exec:/bin/busybox",
            "true",
        ],
    );
    let l = run_probe(&env, &b);
    assert_ok(&l, "read:/bin/busybox");
    assert_errno(&l, "exec:/bin/busybox", "EACCES");
}

/// ioctl_dev (ABI 5) is checked against the rights the device was opened
/// with: /dev/urandom is readable but not ioctl-able, /dev/random both.
#[test]
fn ioctl_on_a_device() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = fs_policy(&[
        (with(&["read_file"], &[]), &["/dev/urandom"]),
        (with(&["read_file", "ioctl_dev"], &[]), &["/dev/random"]),
    ]);
    set_probe(
        &mut b,
        Some(policy),
        &[
            "read:/dev/urandom",
            "ioctl-dev:/dev/urandom,rndgetentcnt",
            "ioctl-dev:/dev/random,rndgetentcnt",
        ],
    );
    let l = run_probe(&env, &b);
    assert_ok(&l, "read:/dev/urandom");
    assert_errno(&l, "ioctl-dev:/dev/urandom,rndgetentcnt", "EACCES");
    assert_ok(&l, "ioctl-dev:/dev/random,rndgetentcnt");
}

// ---- network and scopes -------------------------------------------------------

/// The container shares the host's network namespace, so the listeners the
/// test opens on loopback are reachable; only Landlock stands between.
/// Binding the busy port is EACCES, not EADDRINUSE: Landlock answers first.
#[test]
fn tcp_connect_and_bind_on_host_loopback() {
    let env = Env::new();
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let denied = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (pa, pd) = (
        allowed.local_addr().unwrap().port(),
        denied.local_addr().unwrap().port(),
    );
    let mut b = probe_bundle(&env, "b");
    remove_namespace(&mut b, "network");
    let policy = json!({
        "handledAccess": { "handledAccessNetwork": ["bind_tcp", "connect_tcp"] },
        "rules": { "networkPort": [
            { "allowedAccess": ["connect_tcp"], "ports": [pa] },
            { "allowedAccess": ["bind_tcp"], "ports": [0] }
        ] }
    });
    let (ca, cd) = (
        format!("tcp-connect:127.0.0.1:{pa}"),
        format!("tcp-connect:127.0.0.1:{pd}"),
    );
    let bd = format!("tcp-bind:127.0.0.1:{pd}");
    set_probe(
        &mut b,
        Some(policy),
        &[&ca, &cd, "tcp-bind:127.0.0.1:0", &bd],
    );
    let l = run_probe(&env, &b);
    assert_ok(&l, &ca);
    assert_errno(&l, &cd, "EACCES");
    assert_ok(&l, "tcp-bind:127.0.0.1:0");
    assert_errno(&l, &bd, "EACCES");
    // The allowed connection really reached the host's listener.
    allowed.set_nonblocking(true).unwrap();
    assert!(allowed.accept().is_ok(), "no connection reached port {pa}");
    drop(denied);
}

/// A host process to signal, and a host abstract socket to connect to.
struct Outside {
    helper: std::process::Child,
    _listener: UnixListener,
    name: String,
}

impl Outside {
    fn new() -> Self {
        let helper = Command::new("/usr/bin/busybox")
            .args(["sleep", "600"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let name = unique_id("runsbx-ll-abstract");
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixListener::bind_addr(&addr).unwrap();
        Self {
            helper,
            _listener: listener,
            name,
        }
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = self.helper.kill();
        let _ = self.helper.wait();
    }
}

/// Scopes (ABI 6): each container scopes one kind of IPC and is refused
/// exactly that one, with EPERM, while the other still reaches the host
/// (the helper really dies of the allowed SIGTERM).
#[test]
fn signal_and_abstract_unix_socket_scopes() {
    let env = Env::new();
    let mut outside = Outside::new();
    let pid = outside.helper.id();
    let kill = format!("kill:{pid},TERM");
    let connect = format!("unix-abstract-connect:{}", outside.name);

    let mut b = probe_bundle(&env, "signal");
    remove_namespace(&mut b, "network");
    remove_namespace(&mut b, "pid");
    let scoped = |s: &str| json!({ "scoped": [s] });
    set_probe(&mut b, Some(scoped("signal")), &[&kill, &connect]);
    let l = run_probe(&env, &b);
    assert_errno(&l, &kill, "EPERM");
    assert_ok(&l, &connect);
    assert!(pid_alive(pid as i32), "the scoped signal reached {pid}");

    let mut b = probe_bundle(&env, "abstract");
    remove_namespace(&mut b, "network");
    remove_namespace(&mut b, "pid");
    set_probe(
        &mut b,
        Some(scoped("abstract_unix_socket")),
        &[&connect, &kill],
    );
    let l = run_probe(&env, &b);
    assert_errno(&l, &connect, "EPERM");
    assert_ok(&l, &kill);
    let status = outside.helper.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(nix::sys::signal::Signal::SIGTERM as i32),
        "{status:?}"
    );
}

// ---- the domain, kernel support, bad policies -----------------------------------

/// Waits until `path` holds at least `n` probe lines.
fn wait_lines(path: &Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut text = Vec::new();
        if let Ok(mut f) = fs::File::open(path) {
            f.read_to_end(&mut text).unwrap();
        }
        let l = lines(&text);
        if l.len() >= n {
            return l;
        }
        assert!(
            Instant::now() < deadline,
            "{} never got {n} lines: {}",
            path.display(),
            String::from_utf8_lossy(&text)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The running workload is in the domain: a denied access, and the kernel
/// shows no_new_privs set although the bundle asked for it to stay off.
#[test]
fn the_domain_is_in_force_on_the_workload() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    b.config["process"]["noNewPrivileges"] = json!(false);
    let policy = fs_policy(&[(with(RO, &[]), &["/ro"])]);
    set_probe(
        &mut b,
        Some(policy),
        &["read:/secret", "read:/ro/f", "sleep:60"],
    );
    let id = unique_id("dom");
    let out_path = env.tmp.path().join("container.out");
    let status = env
        .cmd()
        .args(["create", "--bundle", b.path(), &id])
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(env.tmp.path().join("container.err")).unwrap())
        .status()
        .unwrap();
    assert!(
        status.success(),
        "create failed: {}",
        fs::read_to_string(env.tmp.path().join("container.err")).unwrap()
    );
    let pid = env.state(&id)["pid"].as_i64().unwrap();
    env.ok(&["start", &id]);
    let l = wait_lines(&out_path, 2);
    assert_errno(&l, "read:/secret", "EACCES");
    assert_ok(&l, "read:/ro/f");
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let nnp = status
        .lines()
        .find(|l| l.starts_with("NoNewPrivs:"))
        .expect("NoNewPrivs in /proc/<pid>/status");
    assert_eq!(nnp.split_whitespace().nth(1), Some("1"), "{nnp}");
    env.ok(&["kill", &id, "KILL"]);
    env.wait_status(&id, "stopped");
    env.ok(&["delete", &id]);
    assert_clean(&env, &id);
}

fn kernel_abi(env: &Env) -> u64 {
    let features: Value = serde_json::from_str(&env.ok(&["features"])).unwrap();
    let abi = features["annotations"]["run.sbx.landlock.abi"]
        .as_str()
        .unwrap_or_else(|| panic!("features without run.sbx.landlock.abi: {features}"));
    abi.parse().unwrap()
}

/// bind_udp needs ABI 10. Without best effort the container does not start
/// and the one error line names the right, the ABI it needs and the
/// kernel's; with best effort it runs, and the rest of the policy holds.
#[test]
fn a_right_the_kernel_lacks() {
    let env = Env::new();
    let abi = kernel_abi(&env);
    assert!(
        abi < 10,
        "kernel Landlock ABI {abi} has bind_udp: this test needs a kernel below ABI 10"
    );
    let mut b = probe_bundle(&env, "b");
    let mut policy = fs_policy(&[(with(RO, &[]), &["/ro"])]);
    policy["handledAccess"]["handledAccessNetwork"] = json!(["bind_udp"]);
    set_probe(
        &mut b,
        Some(policy.clone()),
        &["read:/secret", "read:/ro/f"],
    );
    let id = unique_id("abi");
    let out = env.run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(
        &out,
        &format!("kernel ABI {abi} cannot restrict bind_udp (needs ABI 10)"),
    );
    assert_clean(&env, &id);

    policy["enableBestEffort"] = json!(true);
    set_probe(&mut b, Some(policy), &["read:/secret", "read:/ro/f"]);
    let l = run_probe(&env, &b);
    assert_errno(&l, "read:/secret", "EACCES");
    assert_ok(&l, "read:/ro/f");
}

/// A malformed policy: one error line that names the problem, and nothing
/// left behind (state, cgroup).
fn assert_refused(env: &Env, b: &Bundle, needle: &str) {
    let id = unique_id("bad");
    let out = env.run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, needle);
    assert_clean(env, &id);
}

#[test]
fn malformed_policy_unknown_right() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = fs_policy(&[(vec!["read_file".into(), "write_fil".into()], &["/ro"])]);
    set_probe(&mut b, Some(policy), &["read:/ro/f"]);
    assert_refused(
        &env,
        &b,
        "process.landlock.rules.pathBeneath[1].allowedAccess: unknown right \"write_fil\"",
    );
}

#[test]
fn malformed_policy_relative_path() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    set_probe(
        &mut b,
        Some(fs_policy(&[(with(RO, &[]), &["ro"])])),
        &["read:/ro/f"],
    );
    assert_refused(&env, &b, "process.landlock.rules.pathBeneath[1].paths[0]");
}

/// Only init can see that the path is missing: the error still reaches
/// `create` as one line, and the half-made container is cleaned up.
#[test]
fn malformed_policy_path_missing_in_the_container() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    set_probe(
        &mut b,
        Some(fs_policy(&[(with(RO, &[]), &["/data"])])),
        &["read:/ro/f"],
    );
    assert_refused(
        &env,
        &b,
        "landlock: rules.pathBeneath[1].paths[0]: cannot open \"/data\" in the container: No such file or directory",
    );
}

#[test]
fn malformed_policy_port_out_of_range() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = json!({
        "handledAccess": { "handledAccessNetwork": ["connect_tcp"] },
        "rules": { "networkPort": [ { "allowedAccess": ["connect_tcp"], "ports": [70000] } ] }
    });
    set_probe(&mut b, Some(policy), &["read:/ro/f"]);
    assert_refused(&env, &b, "process.landlock.rules.networkPort[0].ports[0]");
}

// ---- the annotation ---------------------------------------------------------------

#[test]
fn policy_from_the_annotation() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = fs_policy(&[(with(RO, &[]), &["/ro"])]);
    b.config["annotations"] = json!({ "run.sbx.landlock": policy.to_string() });
    set_probe(&mut b, None, &["read:/secret", "read:/ro/f"]);
    let l = run_probe(&env, &b);
    assert_errno(&l, "read:/secret", "EACCES");
    assert_ok(&l, "read:/ro/f");
}

#[test]
fn malformed_policy_in_the_annotation() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let policy = fs_policy(&[(with(RO, &[]), &["ro"])]);
    b.config["annotations"] = json!({ "run.sbx.landlock": policy.to_string() });
    set_probe(&mut b, None, &["read:/ro/f"]);
    assert_refused(&env, &b, "run.sbx.landlock");
}

// ---- the operator default -------------------------------------------------------

/// A bundle with a read-only root, a rw tmpfs /tmp, and a FIFO at /fifo in
/// the root. A read-only mount refuses writes to regular files (EROFS) but
/// not to a FIFO, so writing /fifo is decided by Landlock alone: `auto`
/// grants only execute, read_file and read_dir on a read-only root. A
/// reader (`cat`, allowed to read) pairs with the writer when it is allowed.
fn auto_bundle(env: &Env) -> Bundle {
    let mut b = probe_bundle(env, "auto");
    b.config["root"]["readonly"] = json!(true);
    nix::unistd::mkfifo(
        &rootfs(&b).join("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o666),
    )
    .unwrap();
    b.config["process"]["args"] = json!([
        "sh",
        "-c",
        "cat /fifo >/dev/null & exec /probe write:/tmp/f write:/bin/x write:/fifo,x"
    ]);
    b.save();
    b
}

fn assert_auto_in_force(l: &[Value]) {
    assert_ok(l, "write:/tmp/f");
    assert_errno(l, "write:/bin/x", "EROFS");
    assert_errno(l, "write:/fifo,x", "EACCES");
}

#[test]
fn operator_default_flag_auto() {
    let env = Env::new();
    let b = auto_bundle(&env);
    // Without the operator default, the mount table lets the FIFO through.
    let l = run_probe(&env, &b);
    assert_ok(&l, "write:/fifo,x");
    assert_errno(&l, "write:/bin/x", "EROFS");

    let l = run_probe_with(&env, &["--landlock-default", "auto"], &b);
    assert_auto_in_force(&l);
}

#[test]
fn operator_default_from_runsbx_config() {
    let env = Env::new();
    let b = auto_bundle(&env);
    let conf = env.tmp.path().join("runsbx-config.json");
    fs::write(&conf, r#"{"landlock":"auto"}"#).unwrap();
    let id = unique_id("conf");
    let out_path = env.tmp.path().join("conf.out");
    let err_path = env.tmp.path().join("conf.err");
    let status = env
        .cmd()
        .env("RUNSBX_CONFIG", &conf)
        .args(["run", "--bundle", b.path(), &id])
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&err_path).unwrap())
        .status()
        .unwrap();
    assert!(
        status.success(),
        "run failed: {}",
        fs::read_to_string(&err_path).unwrap()
    );
    assert_auto_in_force(&lines(&fs::read(&out_path).unwrap()));
}

/// The operator's layer comes first and the bundle's cannot widen it: each
/// layer denies what it does not grant. The operator grants /ro and /w, the
/// bundle /ro, /w/a and /secret.
#[test]
fn operator_policy_and_bundle_policy_intersect() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let operator = fs_policy(&[(with(RO, &[]), &["/ro", "/w"])]);
    let bundle = fs_policy(&[(with(RO, &[]), &["/ro", "/w/a", "/secret"])]);
    let checks = ["read:/ro/f", "read:/w/a/f", "read:/w/b/f", "read:/secret"];
    set_probe(&mut b, Some(bundle), &checks);
    let l = run_probe_with(&env, &["--landlock-default", &operator.to_string()], &b);
    assert_ok(&l, "read:/ro/f");
    assert_ok(&l, "read:/w/a/f");
    assert_errno(&l, "read:/w/b/f", "EACCES");
    assert_errno(&l, "read:/secret", "EACCES");
}

/// Both sources set and different: refused rather than one silently dropped.
#[test]
fn both_sources_differ() {
    let env = Env::new();
    let mut b = probe_bundle(&env, "b");
    let annotated = fs_policy(&[(with(RO, &[]), &["/w"])]);
    b.config["annotations"] = json!({ "run.sbx.landlock": annotated.to_string() });
    set_probe(
        &mut b,
        Some(fs_policy(&[(with(RO, &[]), &["/ro"])])),
        &["read:/ro/f"],
    );
    assert_refused(
        &env,
        &b,
        "process.landlock and annotation \"run.sbx.landlock\" are both set and differ",
    );
}
