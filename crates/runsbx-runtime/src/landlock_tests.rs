//! Real Landlock in a throwaway process: each test that restricts re-runs
//! this test binary with only itself selected and an environment variable
//! saying so; the child enforces a policy, tries one thing per probe and
//! prints `probe <name> <ok|ERRNO>`; the parent asserts the exact errno, so a
//! missing file or a crash cannot pass for a denial. No root needed.
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use runsbx_policy::landlock::LandlockPolicy;
use serde_json::json;

use super::*;

const CHILD_ENV: &str = "RUNSBX_LANDLOCK_TEST_CHILD";

/// In the re-run child, the argument the parent passed to `test`.
fn child_arg(test: &str) -> Option<String> {
    let value = std::env::var(CHILD_ENV).ok()?;
    let (name, arg) = value.split_once('=')?;
    (name == test).then(|| arg.to_string())
}

/// Runs `landlock::tests::<test>` in a new process with `arg`; returns its probes.
fn run_child(test: &str, arg: &str) -> BTreeMap<String, String> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            &format!("landlock::tests::{test}"),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, format!("{test}={arg}"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let probes: BTreeMap<String, String> = stdout
        .lines()
        // The harness prints `test <name> ... ` without a newline first.
        .filter_map(|l| l.split_once("probe ").map(|(_, rest)| rest))
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(!probes.is_empty(), "child reported nothing\n{stdout}");
    probes
}

fn probe<T>(name: &str, result: io::Result<T>) {
    let shown = match result {
        Ok(_) => "ok".to_string(),
        Err(e) => match e.raw_os_error() {
            Some(n) => format!("{:?}", nix::errno::Errno::from_raw(n)),
            None => format!("error:{e}"),
        },
    };
    println!("probe {name} {shown}");
}

fn check(probes: &BTreeMap<String, String>, want: &[(&str, &str)]) {
    let mut wrong = Vec::new();
    for (name, expected) in want {
        let got = probes.get(*name).map(String::as_str).unwrap_or("<missing>");
        if got != *expected {
            wrong.push(format!("{name}: expected {expected}, got {got}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{}\nall probes: {probes:?}",
        wrong.join("\n")
    );
}

/// Skips (with the reason on stderr) when this kernel has no Landlock.
fn landlock_abi_or_skip(needs: u8) -> bool {
    match kernel_abi() {
        Some(abi) if abi >= needs => true,
        other => {
            eprintln!("skipped: needs Landlock ABI {needs}, kernel has {other:?}");
            false
        }
    }
}

/// A fresh directory under the system temp dir, removed by the parent.
struct Scratch(PathBuf);
impl Scratch {
    fn new(test: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("runsbx-landlock-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const FS_ABI5: &[&str] = &[
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

fn fs_policy(base: &Path) -> LandlockPolicy {
    let p = |s: &str| base.join(s).to_string_lossy().into_owned();
    let policy = json!({
        "handledAccess": {"handledAccessFS": FS_ABI5},
        "rules": {"pathBeneath": [
            {"allowedAccess": ["execute", "read_file", "read_dir"], "paths": [p("ro"), "/usr", "/etc/ld.so.cache"]},
            {"allowedAccess": ["read_file", "read_dir", "write_file", "truncate", "remove_file", "remove_dir",
                               "make_reg", "make_dir", "make_sym", "make_fifo", "refer"], "paths": [p("rw")]},
            {"allowedAccess": ["read_file", "write_file"], "paths": ["/dev/null"]},
            {"allowedAccess": ["read_file", "write_file", "ioctl_dev"], "paths": ["/dev/zero"]},
            // Directory-only rights on a file: kept out of the kernel rule, not an error.
            {"allowedAccess": ["read_file", "read_dir", "make_reg"], "paths": [p("file_rule")]}
        ]}
    });
    LandlockPolicy::from_json(&policy, "test").unwrap()
}

#[test]
fn filesystem_rules_are_enforced() {
    const TEST: &str = "filesystem_rules_are_enforced";
    if let Some(base) = child_arg(TEST) {
        let base = PathBuf::from(base);
        let b = |s: &str| base.join(s);
        let outcome = enforce(&fs_policy(&base)).unwrap();
        println!("probe status {:?}", outcome.status);
        probe("read_ro", fs::read(b("ro/file")));
        probe("read_file_rule", fs::read(b("file_rule")));
        probe("read_outside", fs::read(b("outside/secret")));
        probe("list_outside", fs::read_dir(b("outside")));
        probe(
            "write_ro",
            fs::OpenOptions::new().write(true).open(b("ro/file")),
        );
        probe("create_ro", fs::File::create(b("ro/new")));
        probe("remove_ro", fs::remove_file(b("ro/file")));
        probe("mkdir_ro", fs::create_dir(b("ro/d")));
        probe(
            "truncate_ro",
            nix::unistd::truncate(&b("ro/file"), 0).map_err(io::Error::from),
        );
        probe(
            "mkfifo_ro",
            nix::unistd::mkfifo(&b("ro/fifo"), nix::sys::stat::Mode::S_IRWXU)
                .map_err(io::Error::from),
        );
        probe("create_rw", fs::write(b("rw/new"), "x"));
        probe(
            "truncate_rw",
            nix::unistd::truncate(&b("rw/new"), 0).map_err(io::Error::from),
        );
        probe(
            "mkfifo_rw",
            nix::unistd::mkfifo(&b("rw/fifo"), nix::sys::stat::Mode::S_IRWXU)
                .map_err(io::Error::from),
        );
        let char_dev = nix::sys::stat::SFlag::S_IFCHR;
        let mode = nix::sys::stat::Mode::S_IRWXU;
        let mknod =
            nix::sys::stat::mknod(&b("rw/null"), char_dev, mode, nix::sys::stat::makedev(1, 3));
        probe("mknod_rw", mknod.map_err(io::Error::from));
        probe(
            "rename_within_rw",
            fs::create_dir(b("rw/sub")).and_then(|_| fs::rename(b("rw/new"), b("rw/sub/new"))),
        );
        probe("rename_rw_to_ro", fs::rename(b("rw/sub/new"), b("ro/new")));
        probe(
            "link_outside_into_rw",
            fs::hard_link(b("outside/secret"), b("rw/hardlink")),
        );
        probe(
            "symlink_rw_to_outside",
            std::os::unix::fs::symlink(b("outside/secret"), b("rw/symlink")),
        );
        probe("read_via_symlink", fs::read(b("rw/symlink")));
        probe(
            "exec_ro",
            Command::new(b("ro/true")).status().and_then(|s| {
                if s.success() {
                    Ok(())
                } else {
                    Err(io::Error::other(format!("exit {s}")))
                }
            }),
        );
        probe("exec_rw", Command::new(b("rw/true")).status());
        let tcgetattr = |path: &str| {
            let file = fs::OpenOptions::new().read(true).write(true).open(path)?;
            nix::sys::termios::tcgetattr(&file).map_err(io::Error::from)
        };
        probe("ioctl_dev_null", tcgetattr("/dev/null"));
        probe("ioctl_dev_zero", tcgetattr("/dev/zero"));
        return;
    }
    if !landlock_abi_or_skip(5) {
        return;
    }
    let scratch = Scratch::new(TEST);
    let b = |s: &str| scratch.0.join(s);
    for dir in ["ro", "rw", "outside"] {
        fs::create_dir(b(dir)).unwrap();
    }
    fs::write(b("ro/file"), "hello").unwrap();
    fs::write(b("outside/secret"), "secret").unwrap();
    fs::write(b("file_rule"), "file").unwrap();
    for copy in ["ro/true", "rw/true"] {
        fs::copy("/bin/true", b(copy)).unwrap();
        fs::set_permissions(b(copy), fs::Permissions::from_mode(0o755)).unwrap();
    }
    let probes = run_child(TEST, scratch.0.to_str().unwrap());
    check(
        &probes,
        &[
            ("status", "Full"),
            ("read_ro", "ok"),
            ("read_file_rule", "ok"),
            ("read_outside", "EACCES"),
            ("list_outside", "EACCES"),
            ("write_ro", "EACCES"),
            ("create_ro", "EACCES"),
            ("remove_ro", "EACCES"),
            ("mkdir_ro", "EACCES"),
            ("truncate_ro", "EACCES"),
            ("mkfifo_ro", "EACCES"),
            ("create_rw", "ok"),
            ("truncate_rw", "ok"),
            ("mkfifo_rw", "ok"),
            ("mknod_rw", "EACCES"),
            ("rename_within_rw", "ok"),
            ("rename_rw_to_ro", "EACCES"),
            ("link_outside_into_rw", "EXDEV"),
            ("symlink_rw_to_outside", "ok"),
            ("read_via_symlink", "EACCES"),
            ("exec_ro", "ok"),
            ("exec_rw", "EACCES"),
            ("ioctl_dev_null", "EACCES"),
            ("ioctl_dev_zero", "ENOTTY"),
        ],
    );
}

#[test]
fn tcp_ports_are_enforced() {
    const TEST: &str = "tcp_ports_are_enforced";
    if let Some(arg) = child_arg(TEST) {
        let (allowed, denied) = arg.split_once(',').unwrap();
        let allowed: u16 = allowed.parse().unwrap();
        let policy = json!({
            "handledAccess": {"handledAccessNetwork": ["bind_tcp", "connect_tcp"]},
            "rules": {"networkPort": [{"allowedAccess": ["connect_tcp"], "ports": [allowed]}]}
        });
        let outcome = enforce(&LandlockPolicy::from_json(&policy, "test").unwrap()).unwrap();
        println!("probe status {:?}", outcome.status);
        probe(
            "connect_allowed",
            TcpStream::connect(("127.0.0.1", allowed)),
        );
        probe(
            "connect_denied",
            TcpStream::connect(format!("127.0.0.1:{denied}")),
        );
        probe("bind_any", TcpListener::bind("127.0.0.1:0"));
        // Not handled: filesystem access is untouched by a network-only policy.
        probe("read_fs", fs::read("/etc/hostname"));
        return;
    }
    if !landlock_abi_or_skip(4) {
        return;
    }
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    let arg = format!(
        "{},{}",
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port()
    );
    let probes = run_child(TEST, &arg);
    check(
        &probes,
        &[
            ("status", "Full"),
            ("connect_allowed", "ok"),
            ("connect_denied", "EACCES"),
            ("bind_any", "EACCES"),
            ("read_fs", "ok"),
        ],
    );
}

#[test]
fn scopes_are_enforced() {
    const TEST: &str = "scopes_are_enforced";
    if let Some(arg) = child_arg(TEST) {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixStream};
        let (name, parent) = arg.split_once(',').unwrap();
        let parent = nix::unistd::Pid::from_raw(parent.parse().unwrap());
        let addr = SocketAddr::from_abstract_name(name).unwrap();
        // Test of the test: reachable before the restriction.
        probe("abstract_before", UnixStream::connect_addr(&addr));
        probe(
            "signal_before",
            nix::sys::signal::kill(parent, None).map_err(io::Error::from),
        );
        let policy = json!({"scoped": ["abstract_unix_socket", "signal"]});
        let outcome = enforce(&LandlockPolicy::from_json(&policy, "test").unwrap()).unwrap();
        println!("probe status {:?}", outcome.status);
        probe("abstract_outside", UnixStream::connect_addr(&addr));
        probe(
            "signal_outside",
            nix::sys::signal::kill(parent, None).map_err(io::Error::from),
        );
        probe(
            "signal_self",
            nix::sys::signal::kill(nix::unistd::getpid(), None).map_err(io::Error::from),
        );
        return;
    }
    if !landlock_abi_or_skip(6) {
        return;
    }
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let name = format!("runsbx-landlock-test-{}", std::process::id());
    let listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
    listener.set_nonblocking(true).unwrap();
    let probes = run_child(TEST, &format!("{name},{}", std::process::id()));
    check(
        &probes,
        &[
            ("abstract_before", "ok"),
            ("signal_before", "ok"),
            ("status", "Full"),
            ("abstract_outside", "EPERM"),
            ("signal_outside", "EPERM"),
            ("signal_self", "ok"),
        ],
    );
}

#[test]
fn best_effort_drops_what_the_kernel_lacks() {
    const TEST: &str = "best_effort_drops_what_the_kernel_lacks";
    if child_arg(TEST).is_some() {
        let policy = json!({
            "handledAccess": {"handledAccessNetwork": ["bind_tcp", "bind_udp"]},
            "enableBestEffort": true
        });
        let outcome = enforce(&LandlockPolicy::from_json(&policy, "test").unwrap()).unwrap();
        println!("probe status {:?}", outcome.status);
        println!(
            "probe dropped {}",
            list_missing(&outcome.dropped).replace(' ', "_")
        );
        probe("bind_tcp", TcpListener::bind("127.0.0.1:0"));
        return;
    }
    match kernel_abi() {
        Some(abi) if (4..10).contains(&abi) => {}
        other => return eprintln!("skipped: needs a kernel ABI in 4..10, has {other:?}"),
    }
    let probes = run_child(TEST, "-");
    check(
        &probes,
        &[
            ("status", "Partial"),
            ("dropped", "bind_udp_(needs_ABI_10)"),
            ("bind_tcp", "EACCES"),
        ],
    );
}

#[test]
fn missing_rights_refuse_without_best_effort() {
    let Some(abi) = kernel_abi() else {
        return eprintln!("skipped: no Landlock");
    };
    if abi >= 10 {
        return eprintln!("skipped: kernel ABI {abi} has every right this test names");
    }
    let policy = json!({"handledAccess": {
        "handledAccessFS": ["read_file", "resolve_unix"],
        "handledAccessNetwork": ["bind_tcp", "bind_udp"]
    }});
    let policy = LandlockPolicy::from_json(&policy, "test").unwrap();
    let err = enforce(&policy).unwrap_err();
    let mut missing = Vec::new();
    if abi < 9 {
        missing.push("resolve_unix (needs ABI 9)");
    }
    missing.push("bind_udp (needs ABI 10)");
    assert_eq!(
        err.to_string(),
        format!(
            "landlock: kernel ABI {abi} cannot restrict {}; not starting",
            missing.join(", ")
        )
    );
    assert_eq!(preflight(&policy).unwrap_err().to_string(), err.to_string());
    assert!(
        !nix::sys::prctl::get_no_new_privs().unwrap(),
        "refused before touching the process"
    );
}

#[test]
fn missing_path_refuses_and_changes_nothing() {
    if !landlock_abi_or_skip(1) {
        return;
    }
    let policy = json!({
        "handledAccess": {"handledAccessFS": ["read_file"]},
        "rules": {"pathBeneath": [
            {"allowedAccess": ["read_file"], "paths": ["/usr"]},
            {"allowedAccess": ["read_file"], "paths": ["/etc", "/nonexistent/runsbx-landlock"]}
        ]},
        "enableBestEffort": true
    });
    let err = enforce(&LandlockPolicy::from_json(&policy, "test").unwrap()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "landlock: rules.pathBeneath[1].paths[1]: cannot open \"/nonexistent/runsbx-landlock\" in the \
         container: No such file or directory (os error 2); not starting"
    );
    assert!(
        !nix::sys::prctl::get_no_new_privs().unwrap(),
        "refused before touching the process"
    );
    // The thread is unrestricted: a file outside every rule is still readable.
    assert!(fs::File::open("/proc/self/status")
        .and_then(|mut f| f.read_to_string(&mut String::new()))
        .is_ok());
}

#[test]
fn a_policy_built_in_code_is_validated() {
    let mut policy = LandlockPolicy::sandbox(&[PathBuf::from("usr")], &[]);
    let err = enforce(&policy).unwrap_err().to_string();
    assert_eq!(
        err,
        "landlock: rules.pathBeneath[0].paths[0]: \"usr\" is not absolute"
    );
    policy.path_beneath.clear();
    policy.handled_fs.clear();
    policy.handled_net.clear();
    policy.scoped.clear();
    assert!(enforce(&policy)
        .unwrap_err()
        .to_string()
        .contains("the policy restricts nothing"));
}

#[test]
fn kernel_abi_is_reported() {
    // /sys/kernel/security/lsm is not always mounted; the syscall is the truth.
    match kernel_abi() {
        Some(abi) => assert!(abi >= 1),
        None => eprintln!("skipped: no Landlock in this kernel"),
    }
}
