//! `linux.seccomp` as runsbx enforces it, checked against Debian's runc
//! (libseccomp 2.5) on the same bundle: for each profile, the static probe
//! tries a list of syscalls inside a busybox bundle under both runtimes, and
//! the outcome of each (ok, errno name, trapped, or killed by a signal) must
//! be the same, except for the differences listed in [`DELIBERATE`].
//!
//! Also: the workload runs with `Seccomp: 2` and `NoNewPrivs: 1`; profiles
//! runsbx cannot apply are refused before anything runs; a profile that
//! denies execve makes `run` fail with the init's error.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use crate::common::*;
use serde_json::{json, Value};

/// Where a probe check ended: `ok`, an errno name (`EPERM`), `trap SIGSYS`
/// (the filter's TRAP reached the probe's handler), or `killed SIGSYS`.
type Outcome = String;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runtime {
    Runsbx,
    Runc,
}

/// A difference from runc that runsbx makes on purpose. The single list;
/// each entry says why, and the test checks both sides, so a change in
/// either runtime shows up here. Source: the module doc of
/// crates/runsbx-policy/src/seccomp/mod.rs.
struct Difference {
    profile: &'static str,
    check: &'static str,
    runsbx: &'static str,
    runc: &'static str,
    why: &'static str,
}

const DELIBERATE: &[Difference] = &[
    Difference {
        profile: "denylist",
        check: "ioctl-tiocsti-high",
        runsbx: "EPERM",
        runc: "EBADF",
        why:
            "ioctl's request is 32 bits wide and the kernel ignores the high bits; runsbx compares \
              the low 32 bits, libseccomp compares 64, so under runc TIOCSTI|1<<32 slips past the \
              TIOCSTI rule and reaches the kernel (CVE-2019-10063 shape)",
    },
    Difference {
        profile: "allowlist-names-faccessat2",
        check: "clone3",
        runsbx: "ENOSYS",
        runc: "EPERM",
        why: "runsbx answers clone3 with ENOSYS whenever the profile does not name it and its \
              default denies; runc only when clone3 is newer than every name in the profile, and \
              this one names faccessat2 (439 > 435)",
    },
    Difference {
        profile: "allowlist-names-faccessat2",
        check: "thread",
        runsbx: "ok",
        runc: "EPERM",
        why:
            "glibc's pthread_create falls back from clone3 to clone only on ENOSYS: same cause as \
              the clone3 entry",
    },
    Difference {
        profile: "allowlist-names-faccessat2",
        check: "clone3-fork",
        runsbx: "ENOSYS",
        runc: "EPERM",
        why: "as clone3",
    },
];
// Differences the probe cannot see, documented in the compiler: a syscall of
// an unlisted arch kills the process (runsbx) rather than the thread (runc),
// the same for this single-threaded probe; overlapping conditional rules are
// resolved by action precedence, where libseccomp follows its decision tree;
// `socket` rules are not rewritten into `socketcall` conditions on i386.

/// Run by the probe before the checks of each container: the probe started
/// and the filter let it print. Not part of the outcomes.
const SENTINEL: &str = "cwd";

/// Checks whose outcome both runtimes must agree on in every profile.
const COMMON_CHECKS: &[&str] = &[
    "ids",
    "thread",
    "fork",
    "clone3",
    "clone3-fork",
    "x32",
    "int80",
    "ioctl-tiocsti",
    "ioctl-tiocsti-high",
    "mount",
    "unshare",
    "setns",
    "ptrace",
    "io-uring-setup",
    "bpf",
    "perf-event-open",
    "keyctl",
    "add-key",
    "request-key",
    "userfaultfd",
    "fsopen",
    "open-tree",
    "chroot",
    "memfd-create",
    "execveat",
    "pidfd-getfd",
    "process-vm-readv",
    "sethostname",
    "reboot",
    "iopl",
    "acct",
    "swapon",
    "finit-module",
    "kexec-file-load",
    "open-by-handle-at",
    "pivot-root",
    "umount",
    "socket:unix,stream",
    "socket:inet,stream",
    "socket:netlink,raw,9",
    "socket:netlink,raw,0",
    "kill:1,0",
    "kill:1,18",
    "kill:1,23",
    "kill:1,28",
    "write:/tmp/f,x",
    "truncate:/tmp/f,1",
    "truncate:/tmp/f,50",
    "truncate:/tmp/f,1000",
    "mkdir:/tmp/d",
    "read:/proc/self/status",
];

// ---- Profiles ----

/// Debian's containers-common ships podman's default profile in its own
/// format (`archMap`, `includes`/`excludes`); podman hands the runtime the
/// OCI form that `setupSeccomp` (containers/common pkg/seccomp) makes from it.
/// This does the same, for amd64 and podman's default capabilities
/// (containers.conf `default_capabilities`), as the process's bounding set.
fn podman_profile() -> Value {
    const PATH: &str = "/usr/share/containers/seccomp.json";
    const DEFAULT_CAPS: &[&str] = &[
        "CAP_CHOWN",
        "CAP_DAC_OVERRIDE",
        "CAP_FOWNER",
        "CAP_FSETID",
        "CAP_KILL",
        "CAP_NET_BIND_SERVICE",
        "CAP_SETFCAP",
        "CAP_SETGID",
        "CAP_SETPCAP",
        "CAP_SETUID",
        "CAP_SYS_CHROOT",
    ];
    require_file(PATH, "golang-github-containers-common");
    let src: Value = serde_json::from_slice(&fs::read(PATH).unwrap()).expect(PATH);
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    let mut archs = Vec::new();
    for m in src["archMap"].as_array().unwrap() {
        if m["architecture"] == "SCMP_ARCH_X86_64" {
            archs.push("SCMP_ARCH_X86_64".to_string());
            archs.extend(strs(&m["subArchitectures"]));
        }
    }
    let mut syscalls = Vec::new();
    for call in src["syscalls"].as_array().unwrap() {
        let (inc, exc) = (&call["includes"], &call["excludes"]);
        assert!(
            inc.get("minKernel").is_none(),
            "{PATH} uses minKernel, which this conversion does not handle: {call}"
        );
        let has = |c: &String| DEFAULT_CAPS.contains(&c.as_str());
        if strs(&exc["arches"]).iter().any(|a| a == "amd64") || strs(&exc["caps"]).iter().any(has) {
            continue;
        }
        let inc_arches = strs(&inc["arches"]);
        if !inc_arches.is_empty() && !inc_arches.iter().any(|a| a == "amd64") {
            continue;
        }
        if !strs(&inc["caps"]).iter().all(has) {
            continue;
        }
        let mut names = strs(&call["names"]);
        if let Some(n) = call["name"].as_str() {
            names.push(n.to_string());
        }
        let mut e = json!({ "names": names, "action": call["action"] });
        if let Some(args) = call["args"].as_array().filter(|a| !a.is_empty()) {
            e["args"] = json!(args
                .iter()
                .map(|a| json!({
                    "index": a["index"], "value": a["value"],
                    "valueTwo": a["valueTwo"], "op": a["op"]
                }))
                .collect::<Vec<_>>());
        }
        if !call["errnoRet"].is_null() {
            e["errnoRet"] = call["errnoRet"].clone();
        }
        syscalls.push(e);
    }
    let mut p = json!({
        "defaultAction": src["defaultAction"],
        "architectures": archs,
        "syscalls": syscalls,
    });
    if !src["defaultErrnoRet"].is_null() {
        p["defaultErrnoRet"] = src["defaultErrnoRet"].clone();
    }
    p
}

/// What the probe (static glibc + Rust std) and its checks need, and what
/// runc's Go init calls between loading the filter and execve (fstatfs,
/// nanosleep, ...); the rest is denied with EPERM. Only the native arch.
const ALLOWLIST: &[&str] = &[
    "execve",
    "brk",
    "arch_prctl",
    "set_tid_address",
    "set_robust_list",
    "rseq",
    "prlimit64",
    "readlink",
    "readlinkat",
    "getrandom",
    "mprotect",
    "mmap",
    "munmap",
    "mremap",
    "madvise",
    "poll",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "sched_getaffinity",
    "sched_yield",
    "open",
    "openat",
    "read",
    "write",
    "writev",
    "close",
    "lseek",
    "fstat",
    "newfstatat",
    "statx",
    "fcntl",
    "ioctl",
    "getcwd",
    "getpid",
    "getppid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getgroups",
    "getresuid",
    "getresgid",
    "capget",
    "prctl",
    "futex",
    "clone",
    "wait4",
    "exit",
    "exit_group",
    "kill",
    "tgkill",
    "getdents64",
    "socket",
    "fstatfs",
    "statfs",
    "nanosleep",
    "clock_nanosleep",
    "epoll_pwait",
    "epoll_ctl",
    "getdents64",
    "pipe2",
    "dup3",
];

fn allowlist_profile(extra: &[&str]) -> Value {
    let names: Vec<&str> = ALLOWLIST.iter().chain(extra).copied().collect();
    json!({
        "defaultAction": "SCMP_ACT_ERRNO",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [ { "names": names, "action": "SCMP_ACT_ALLOW" } ]
    })
}

const TIOCSTI: u64 = 0x5412;
const AF_UNIX: u64 = 1;

/// Default ALLOW, denials with argument conditions; every operator.
fn denylist_profile() -> Value {
    json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            { "names": ["ioctl"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
              "args": [ { "index": 1, "value": TIOCSTI, "op": "SCMP_CMP_EQ" } ] },
            // PER_LINUX32 (8) denied, whatever the other flags: (persona & 0xff) == 8.
            { "names": ["personality"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
              "args": [ { "index": 0, "value": 0xff, "valueTwo": 8, "op": "SCMP_CMP_MASKED_EQ" } ] },
            { "names": ["kill"], "action": "SCMP_ACT_ERRNO", "errnoRet": 3,
              "args": [ { "index": 1, "value": 0, "op": "SCMP_CMP_EQ" } ] },
            { "names": ["kill"], "action": "SCMP_ACT_ERRNO", "errnoRet": 15,
              "args": [ { "index": 1, "value": 20, "op": "SCMP_CMP_GE" },
                        { "index": 1, "value": 25, "op": "SCMP_CMP_LE" } ] },
            { "names": ["truncate"], "action": "SCMP_ACT_ERRNO", "errnoRet": 27,
              "args": [ { "index": 1, "value": 100, "op": "SCMP_CMP_GT" } ] },
            { "names": ["truncate"], "action": "SCMP_ACT_ERRNO", "errnoRet": 33,
              "args": [ { "index": 1, "value": 2, "op": "SCMP_CMP_LT" } ] },
            { "names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": 97,
              "args": [ { "index": 0, "value": AF_UNIX, "op": "SCMP_CMP_NE" } ] },
            { "names": ["unshare", "mount"], "action": "SCMP_ACT_ERRNO" },
            { "names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13 },
            { "names": ["getpid"], "action": "SCMP_ACT_ALLOW" },
            // A name no table knows, in a rule that only grants: skipped, as runc does.
            // (A denying one is refused: `a_denial_of_an_unknown_syscall_is_refused`.)
            { "names": ["no_such_syscall_anywhere"], "action": "SCMP_ACT_LOG" }
        ]
    })
}

/// Every action but ERRNO and NOTIFY. The native arch only.
fn kill_profile() -> Value {
    json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [
            { "names": ["keyctl"], "action": "SCMP_ACT_KILL" },
            { "names": ["add_key"], "action": "SCMP_ACT_KILL_PROCESS" },
            { "names": ["request_key"], "action": "SCMP_ACT_KILL_THREAD" },
            { "names": ["bpf"], "action": "SCMP_ACT_TRAP" },
            { "names": ["memfd_create"], "action": "SCMP_ACT_LOG" },
            { "names": ["ptrace"], "action": "SCMP_ACT_TRACE" },
            { "names": ["userfaultfd"], "action": "SCMP_ACT_TRACE", "errnoRet": 5 }
        ]
    })
}

// ---- Running the probe ----

fn signal_name(n: i32) -> String {
    match n {
        9 => "SIGKILL".into(),
        31 => "SIGSYS".into(),
        6 => "SIGABRT".into(),
        11 => "SIGSEGV".into(),
        n => format!("signal {n}"),
    }
}

fn outcome_of(line: &Value) -> Outcome {
    if let Some(sig) = line["signal"].as_str() {
        return format!("trap {sig}");
    }
    if line["ok"] == true {
        return "ok".into();
    }
    line["errno"]
        .as_str()
        .unwrap_or("failed, no errno")
        .to_string()
}

fn run_container(env: &Env, rt: Runtime, b: &Bundle) -> Output {
    let id = unique_id(match rt {
        Runtime::Runsbx => "sc",
        Runtime::Runc => "sc-runc",
    });
    match rt {
        Runtime::Runsbx => env.run(&["run", "--bundle", b.path(), &id]),
        Runtime::Runc => {
            let out = env.runc(&["run", "--bundle", b.path(), &id]);
            let _ = env.runc(&["delete", "--force", &id]);
            out
        }
    }
}

/// Runs `checks` with the probe under `rt`, each in order. A check that kills
/// the probe is recorded with the signal, and the checks after it run in a
/// fresh container.
fn probe_outcomes(
    env: &Env,
    rt: Runtime,
    b: &mut Bundle,
    checks: &[&str],
) -> Vec<(String, Outcome)> {
    let mut results = Vec::new();
    let mut rest: Vec<&str> = checks.to_vec();
    while !rest.is_empty() {
        let mut args = vec!["/probe", SENTINEL];
        args.extend(&rest);
        b.config["process"]["args"] = json!(args);
        b.save();
        let out = run_container(env, rt, b);
        let lines = probe_lines(&out.stdout);
        assert!(
            lines
                .first()
                .is_some_and(|l| l["check"] == SENTINEL && l["ok"] == true),
            "{rt:?}: the probe did not start ({:?}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            stderr_of(&out)
        );
        let done = lines.len() - 1;
        for (check, line) in rest.iter().zip(&lines[1..]) {
            assert_eq!(line["check"], *check, "{rt:?}: probe output out of order");
            results.push((check.to_string(), outcome_of(line)));
        }
        if done == rest.len() {
            assert!(
                out.status.success(),
                "{rt:?}: probe exited {:?}: {}",
                out.status,
                stderr_of(&out)
            );
            break;
        }
        let code = out.status.code().unwrap_or(-1);
        assert!(
            code > 128,
            "{rt:?}: probe stopped at {} with {:?}, not a signal: {}",
            rest[done],
            out.status,
            stderr_of(&out)
        );
        results.push((
            rest[done].to_string(),
            format!("killed {}", signal_name(code - 128)),
        ));
        rest.drain(..=done);
    }
    results
}

/// The exit status and first stderr line of busybox's `linux32`/`linux64`,
/// which call personality(PER_LINUX32 = 8) / personality(PER_LINUX = 0)
/// and then exec `true`: the probe has no personality check.
fn personality_outcome(env: &Env, rt: Runtime, b: &mut Bundle, applet: &str) -> Outcome {
    b.config["process"]["args"] = json!([format!("/bin/{applet}"), "/bin/true"]);
    b.save();
    let out = run_container(env, rt, b);
    match out.status.code() {
        Some(0) => "ok".into(),
        code => format!(
            "exit {code:?}: {}",
            stderr_of(&out).lines().next().unwrap_or("").trim()
        ),
    }
}

fn bundle_with_profile(env: &Env, name: &str, profile: &Value) -> Bundle {
    let mut b = env.bundle(name, &["/probe"]);
    b.add_file(&probe_bin(), "/probe");
    for a in ["linux32", "linux64"] {
        std::os::unix::fs::symlink("busybox", b.dir.join("rootfs/bin").join(a)).unwrap();
    }
    b.config["linux"]["seccomp"] = profile.clone();
    b.save();
    b
}

/// Runs every check under both runtimes and compares, allowing only
/// [`DELIBERATE`]; then checks `expect` (runsbx's outcome for the checks that
/// show the profile was applied at all).
fn differential(profile_name: &str, profile: Value, expect: &[(&str, &str)]) {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = bundle_with_profile(&env, profile_name, &profile);

    let mut runsbx = probe_outcomes(&env, Runtime::Runsbx, &mut b, COMMON_CHECKS);
    let mut runc = probe_outcomes(&env, Runtime::Runc, &mut b, COMMON_CHECKS);
    for applet in ["linux32", "linux64"] {
        let check = format!("personality:{applet}");
        runsbx.push((
            check.clone(),
            personality_outcome(&env, Runtime::Runsbx, &mut b, applet),
        ));
        runc.push((
            check,
            personality_outcome(&env, Runtime::Runc, &mut b, applet),
        ));
    }
    let runc: BTreeMap<_, _> = runc.into_iter().collect();

    let mut table = String::new();
    let mut mismatches = Vec::new();
    for (check, ours) in &runsbx {
        let theirs = &runc[check];
        table += &format!("  {check:28} runsbx {ours:20} runc {theirs}\n");
        let deliberate = DELIBERATE
            .iter()
            .find(|d| d.profile == profile_name && d.check == check);
        match deliberate {
            Some(d) if (d.runsbx, d.runc) != (ours.as_str(), theirs.as_str()) => mismatches.push(format!(
                "{check}: listed as a deliberate difference (runsbx {}, runc {}: {}), but runsbx gave {ours} and runc {theirs}",
                d.runsbx, d.runc, d.why
            )),
            None if ours != theirs => {
                mismatches.push(format!("{check}: runsbx {ours}, runc {theirs}"))
            }
            _ => {}
        }
    }
    eprintln!("profile {profile_name}:\n{table}");
    assert!(
        mismatches.is_empty(),
        "profile {profile_name}: runsbx and runc disagree:\n  {}\nall outcomes:\n{table}",
        mismatches.join("\n  ")
    );
    let ours: BTreeMap<_, _> = runsbx.into_iter().collect();
    for (check, want) in expect {
        assert_eq!(
            ours[*check], *want,
            "profile {profile_name}, {check}:\n{table}"
        );
    }
}

// ---- The differential tests ----

#[test]
fn podman_default_profile_matches_runc() {
    differential(
        "podman",
        podman_profile(),
        &[
            // Not named: the default action, ERRNO(ENOSYS).
            ("io-uring-setup", "ENOSYS"),
            ("add-key", "ENOSYS"),
            // Allowed only with a capability podman does not grant: EPERM.
            ("bpf", "EPERM"),
            ("acct", "EPERM"),
            // Allowed: reaches the kernel, which refuses the bad pointer.
            ("mount", "EFAULT"),
            ("chroot", "EFAULT"),
            // Allowed unconditionally, and denied without CAP_SYS_ADMIN: the
            // first unconditional rule wins, in libseccomp and in runsbx.
            ("setns", "EBADF"),
            ("socket:netlink,raw,9", "EINVAL"),
            ("socket:netlink,raw,0", "ok"),
            ("thread", "ok"),
            ("int80", "ok"),
            ("personality:linux32", "ok"),
        ],
    );
}

#[test]
fn allowlist_matches_runc() {
    differential(
        "allowlist",
        allowlist_profile(&[]),
        &[
            ("mount", "EPERM"),
            ("memfd-create", "EPERM"),
            ("clone3", "ENOSYS"),
            ("thread", "ok"),
            ("x32", "killed SIGSYS"),
            ("int80", "killed SIGSYS"),
            ("ioctl-tiocsti", "EBADF"),
        ],
    );
}

#[test]
fn allowlist_naming_a_newer_syscall_matches_runc() {
    differential(
        "allowlist-names-faccessat2",
        allowlist_profile(&["faccessat2"]),
        &[("clone3", "ENOSYS"), ("thread", "ok"), ("mount", "EPERM")],
    );
}

#[test]
fn denylist_with_conditions_matches_runc() {
    differential(
        "denylist",
        denylist_profile(),
        &[
            ("ioctl-tiocsti", "EPERM"),
            ("ioctl-tiocsti-high", "EPERM"),
            ("kill:1,0", "ESRCH"),
            ("kill:1,23", "ENOTBLK"),
            // Two conditions on the signal (>= 20, <= 25): ORed, as runc.
            ("kill:1,18", "ENOTBLK"),
            ("truncate:/tmp/f,1", "EDOM"),
            ("truncate:/tmp/f,50", "ok"),
            ("truncate:/tmp/f,1000", "EFBIG"),
            ("socket:unix,stream", "ok"),
            ("socket:inet,stream", "EAFNOSUPPORT"),
            ("unshare", "EPERM"),
            ("mkdir:/tmp/d", "EACCES"),
            ("clone3", "EFAULT"),
            ("thread", "ok"),
            ("int80", "ok"),
        ],
    );
}

#[test]
fn kill_trap_log_trace_match_runc() {
    differential(
        "kill",
        kill_profile(),
        &[
            ("keyctl", "killed SIGSYS"),
            ("add-key", "killed SIGSYS"),
            ("request-key", "killed SIGSYS"),
            ("bpf", "trap SIGSYS"),
            ("memfd-create", "EFAULT"),
            ("ptrace", "ENOSYS"),
            ("userfaultfd", "ENOSYS"),
            ("int80", "killed SIGSYS"),
        ],
    );
}

// ---- Syscalls newer than Linux 6.1 ----

/// runsbx's tables once stopped at Linux 6.1, and a denial of a newer syscall
/// under an allowing default vanished without a word. runsbx only: Debian's
/// runc (libseccomp 2.5) does not know these names either.
#[test]
fn a_denial_of_post_6_1_syscalls_under_an_allowing_default_holds() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let checks = ["mseal", "cachestat"];
    let outcomes = |b: &mut Bundle| -> Vec<String> {
        probe_outcomes(&env, Runtime::Runsbx, b, &checks)
            .into_iter()
            .map(|(_, o)| o)
            .collect()
    };
    // Without a rule both calls reach the kernel, so the denial below is the filter's.
    let mut b = bundle_with_profile(&env, "plain", &json!({ "defaultAction": "SCMP_ACT_ALLOW" }));
    assert_eq!(outcomes(&mut b), ["EINVAL", "EBADF"]);
    let profile = json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            { "names": ["mseal"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1 },
            { "names": ["cachestat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13 }
        ]
    });
    let mut b = bundle_with_profile(&env, "deny", &profile);
    assert_eq!(outcomes(&mut b), ["EPERM", "EACCES"]);
}

/// Dropping a denying rule whose name runsbx cannot resolve would allow more
/// than the profile asks: refused, naming the field and the name.
#[test]
fn a_denial_of_an_unknown_syscall_is_refused() {
    assert_refused_and_nothing_left(
        json!({ "defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
            { "names": ["getpid"], "action": "SCMP_ACT_ALLOW" },
            { "names": ["mkdir", "no_such_syscall_anywhere"], "action": "SCMP_ACT_ERRNO" } ] }),
        "syscalls[1].names[1]: unknown syscall \"no_such_syscall_anywhere\"",
    );
}

// ---- The workload's seccomp state ----

fn status_field(pid: i32, field: &str) -> String {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
        .trim()
        .to_string()
}

/// Read from the host while the workload sleeps: filter mode, one filter,
/// no_new_privs.
#[test]
fn workload_runs_in_filter_mode_with_no_new_privs() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("b", &["sleep", "1000"]);
    b.config["linux"]["seccomp"] = denylist_profile();
    b.save();
    let id = unique_id("nnp");
    env.ok(&["create", "--bundle", b.path(), &id]);
    env.ok(&["start", &id]);
    let pid = env.state(&id)["pid"].as_i64().unwrap() as i32;
    assert_eq!(status_field(pid, "Seccomp"), "2");
    assert_eq!(status_field(pid, "Seccomp_filters"), "1");
    assert_eq!(status_field(pid, "NoNewPrivs"), "1");
    env.ok(&["delete", "--force", &id]);
}

/// `process.noNewPrivileges: false` with a profile is honoured as runc
/// honours it: the filter is loaded, no_new_privs stays off, and the
/// capability sets are the spec's (init's CAP_SYS_ADMIN, kept to load the
/// filter, is gone). The probe reads its own status, under both runtimes.
#[test]
fn no_new_privs_false_with_a_profile_is_honoured_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = bundle_with_profile(&env, "b", &kill_profile());
    b.config["process"]["noNewPrivileges"] = json!(false);
    b.config["process"]["args"] = json!(["/probe", "ids"]);
    b.config["process"]["capabilities"] = json!({
        "bounding": ["CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_AUDIT_WRITE"],
        "effective": ["CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_AUDIT_WRITE"],
        "permitted": ["CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_AUDIT_WRITE"],
    });
    b.save();
    let mut seen = Vec::new();
    for rt in [Runtime::Runsbx, Runtime::Runc] {
        let out = run_container(&env, rt, &b);
        assert!(out.status.success(), "{rt:?}: {}", stderr_of(&out));
        let ids = probe_lines(&out.stdout)[0]["data"].clone();
        assert_eq!(ids["Seccomp"], "2", "{rt:?}: {ids}");
        assert_eq!(ids["NoNewPrivs"], "0", "{rt:?}: {ids}");
        seen.push(ids);
    }
    for key in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(seen[0][key], seen[1][key], "{key}: runsbx vs runc");
    }
    // CAP_SYS_ADMIN is bit 21.
    assert_eq!(seen[0]["CapEff"], "0000000020000420", "{}", seen[0]);
}

/// What no_new_privs off is for: a setuid-root program run by uid 1000
/// becomes euid 0 under a profile (podman's containers: `sudo`, `ping`),
/// as under runc; with noNewPrivileges true it stays uid 1000.
#[test]
fn a_setuid_program_gains_its_owner_only_without_no_new_privs() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = bundle_with_profile(&env, "b", &kill_profile());
    let probe = b.dir.join("rootfs/probe");
    std::os::unix::fs::chown(&probe, Some(0), Some(0)).unwrap();
    fs::set_permissions(&probe, fs::Permissions::from_mode(0o4755)).unwrap();
    b.config["process"]["args"] = json!(["/probe", "ids"]);
    b.config["process"]["user"] = json!({ "uid": 1000, "gid": 1000 });
    for (nnp, euid) in [(false, 0), (true, 1000)] {
        b.config["process"]["noNewPrivileges"] = json!(nnp);
        b.save();
        for rt in [Runtime::Runsbx, Runtime::Runc] {
            let out = run_container(&env, rt, &b);
            assert!(out.status.success(), "{rt:?}: {}", stderr_of(&out));
            let line = &probe_lines(&out.stdout)[0];
            // getresuid: real, effective, saved.
            assert_eq!(
                line["data"]["uid"][1], euid,
                "{rt:?}, noNewPrivileges {nnp}: {line}"
            );
            assert_eq!(line["data"]["Seccomp"], "2", "{rt:?}: {line}");
        }
    }
}

/// A process added by `exec` follows the same rule as init: its process
/// file's (or the container's) `noNewPrivileges`, `--no-new-privs` on top.
#[test]
fn exec_honours_no_new_privs_false_with_a_profile() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = bundle_with_profile(&env, "b", &kill_profile());
    b.config["process"]["noNewPrivileges"] = json!(false);
    b.config["process"]["args"] = json!(["sleep", "1000"]);
    b.save();
    let id = unique_id("nnp-exec");
    env.ok(&["run", "--detach", "--bundle", b.path(), &id]);
    let nnp_of = |args: &[&str]| {
        let mut argv = vec!["exec"];
        argv.extend(args);
        let out = env.run(&argv);
        assert!(out.status.success(), "exec {args:?}: {}", stderr_of(&out));
        let ids = &probe_lines(&out.stdout)[0]["data"];
        assert_eq!(ids["Seccomp"], "2", "exec {args:?}: {ids}");
        assert_eq!(ids["CapEff"], "0000000000000000", "exec {args:?}: {ids}");
        ids["NoNewPrivs"].as_str().unwrap().to_string()
    };
    let file = |nnp: bool| {
        let path = env.tmp.path().join(format!("process-{nnp}.json"));
        let process = json!({
            "args": ["/probe", "ids"], "cwd": "/", "env": ["PATH=/bin"],
            "user": { "uid": 0, "gid": 0 }, "noNewPrivileges": nnp,
            "capabilities": { "bounding": [], "effective": [], "permitted": [] },
        });
        fs::write(&path, process.to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    assert_eq!(nnp_of(&[&id, "/probe", "ids"]), "0");
    assert_eq!(nnp_of(&["--no-new-privs", &id, "/probe", "ids"]), "1");
    assert_eq!(nnp_of(&["--process", &file(false), &id]), "0");
    assert_eq!(nnp_of(&["--process", &file(true), &id]), "1");
    let left: Vec<_> = fs::read_dir(env.root.join(&id))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("process.json"))
        .collect();
    assert!(left.is_empty(), "process file copies left: {left:?}");
    env.ok(&["delete", "--force", &id]);
}

/// Loaded without no_new_privs, the filter is followed by the capset that
/// gives back CAP_SYS_ADMIN: a profile that refuses capset fails the start
/// with one line naming the layer (runc's order needs capset as well).
#[test]
fn a_profile_refusing_capset_without_no_new_privs_fails_closed() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let profile = json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [ { "names": ["capset"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1 } ]
    });
    let mut b = bundle_with_profile(&env, "b", &profile);
    b.config["process"]["noNewPrivileges"] = json!(false);
    b.config["process"]["args"] = json!(["/probe", "ids"]);
    b.save();
    let out = env.run(&["run", "--bundle", b.path(), &unique_id("capset")]);
    assert_one_line_error(&out, "seccomp: dropping the CAP_SYS_ADMIN kept");
    assert!(out.stdout.is_empty(), "the workload ran: {:?}", out.stdout);
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

// ---- Profiles runsbx must refuse ----

fn assert_refused_and_nothing_left(profile: Value, needle: &str) {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("b", &["true"]);
    b.config["linux"]["seccomp"] = profile;
    b.save();
    let id = unique_id("bad-sc");
    let out = env.run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, needle);
    assert!(
        env.state_entries().is_empty(),
        "state left: {:?}",
        env.state_entries()
    );
    assert!(
        cgroups_named(&id).is_empty(),
        "cgroups left: {:?}",
        cgroups_named(&id)
    );
}

#[test]
fn argument_index_6_is_refused() {
    assert_refused_and_nothing_left(
        json!({ "defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
            { "names": ["ioctl"], "action": "SCMP_ACT_ERRNO",
              "args": [ { "index": 6, "value": 1, "op": "SCMP_CMP_EQ" } ] } ] }),
        "index",
    );
}

#[test]
fn notify_is_refused() {
    assert_refused_and_nothing_left(
        json!({ "defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
            { "names": ["mkdir"], "action": "SCMP_ACT_NOTIFY" } ] }),
        "SCMP_ACT_NOTIFY",
    );
}

/// contest's seccomp_notify shape: a listenerPath with an agent listening
/// on it. create refuses at once, before any fork, and never connects, so
/// no agent is left half-served (contest's own agent then waits for ever:
/// that is the test's behaviour, listed in docs/conformance.md).
#[test]
fn notify_with_a_listener_is_refused_at_create_without_connecting() {
    let env = Env::new();
    let sock = env.tmp.path().join("agent.sock");
    let agent = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    agent.set_nonblocking(true).unwrap();
    let started = std::time::Instant::now();
    assert_refused_and_nothing_left(
        json!({ "defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
                "listenerPath": sock, "listenerMetadata": "opaque",
                "syscalls": [ { "names": ["getcwd"], "action": "SCMP_ACT_NOTIFY" } ] }),
        "create: linux.seccomp: listenerPath: seccomp agents (SCMP_ACT_NOTIFY) are not supported",
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let err = agent.accept().expect_err("runsbx connected to the agent");
    assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock, "{err}");
}

#[test]
fn unknown_action_is_refused() {
    assert_refused_and_nothing_left(
        json!({ "defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
            { "names": ["mkdir"], "action": "SCMP_ACT_BOGUS" } ] }),
        "SCMP_ACT_BOGUS",
    );
}

#[test]
fn unknown_operator_is_refused() {
    assert_refused_and_nothing_left(
        json!({ "defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
            { "names": ["ioctl"], "action": "SCMP_ACT_ERRNO",
              "args": [ { "index": 1, "value": 1, "op": "SCMP_CMP_BOGUS" } ] } ] }),
        "SCMP_CMP_BOGUS",
    );
}

#[test]
fn missing_default_action_is_refused() {
    assert_refused_and_nothing_left(
        json!({ "syscalls": [ { "names": ["mkdir"], "action": "SCMP_ACT_ERRNO" } ] }),
        "defaultAction",
    );
}

/// The filter is loaded just before execve; denying execve makes the exec
/// itself fail, inside init, and `run` must say so rather than exit 255.
#[test]
fn a_profile_denying_execve_fails_run_with_the_exec_error() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("b", &["true"]);
    b.config["linux"]["seccomp"] = json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [ { "names": ["execve"], "action": "SCMP_ACT_ERRNO" } ]
    });
    b.save();
    let id = unique_id("noexec");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    let err = stderr_of(&out);
    assert!(!out.status.success(), "run succeeded: {err}");
    assert_ne!(
        out.status.code(),
        Some(255),
        "a bare 255, not the init's error: {err}"
    );
    assert!(err.starts_with("runsbx: "), "{err}");
    assert!(err.contains("exec"), "should say the exec failed: {err}");
    assert!(
        err.contains("Operation not permitted") || err.contains("EPERM"),
        "should give the errno: {err}"
    );
    assert!(
        env.state_entries().is_empty(),
        "state left: {:?}",
        env.state_entries()
    );
    assert!(
        cgroups_named(&id).is_empty(),
        "cgroups left: {:?}",
        cgroups_named(&id)
    );
}

/// A listenerPath in a profile without SCMP_ACT_NOTIFY is ignored, as by
/// runc: no agent is contacted (the path does not even exist) and the
/// profile applies.
#[test]
fn a_listener_path_without_notify_is_ignored_like_runc() {
    let env = Env::new();
    let mut b = env.bundle(
        "b",
        &["sh", "-c", "mkdir /tmp/d 2>/dev/null || echo refused"],
    );
    b.config["linux"]["seccomp"] = serde_json::json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "listenerPath": "/nonexistent/agent.sock",
        "listenerMetadata": "x",
        "syscalls": [{ "names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO" }]
    });
    b.save();
    for rt in ["runsbx", "runc"] {
        let args = ["run", "--bundle", b.path(), "listen"];
        let out = match rt {
            "runsbx" => env.ok(&args),
            _ => env.runc_ok(&args),
        };
        assert_eq!(out, "refused\n", "{rt}");
    }
}
