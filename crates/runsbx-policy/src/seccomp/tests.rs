//! Compiler tests: profiles in, programs run through a small classic-BPF interpreter
//! that applies the kernel's rules (every filter runs, strongest action wins, the most
//! recently installed wins ties). Loading into a real kernel is tested in
//! `runsbx_runtime::sys::seccomp`.
use super::eval::Call;
use super::*;

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const KILLP: u32 = libc::SECCOMP_RET_KILL_PROCESS;
const KILLT: u32 = libc::SECCOMP_RET_KILL_THREAD;
const TRAP: u32 = libc::SECCOMP_RET_TRAP;
const LOG: u32 = libc::SECCOMP_RET_LOG;
fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | e as u32
}

fn x64(name: &str, args: &[u64]) -> Call {
    call(AUDIT_ARCH_X86_64, X86Arch::X86_64, name, args)
}

fn call(arch: u32, table: X86Arch, name: &str, args: &[u64]) -> Call {
    let mut a = [0u64; 6];
    a[..args.len()].copy_from_slice(args);
    Call {
        arch,
        nr: table.resolve(name).unwrap_or_else(|| panic!("no {name}")),
        args: a,
    }
}

fn run(p: &SeccompProgram, c: &Call) -> u32 {
    p.answer(c)
        .expect("the interpreter knows every instruction")
}

fn profile(json: &str) -> LinuxSeccomp {
    serde_json::from_str(json).expect("test profile parses")
}

fn compile_json(json: &str) -> SeccompProgram {
    compile(&profile(json)).expect("compiles")
}

fn err_json(json: &str) -> String {
    compile(&profile(json)).unwrap_err().to_string()
}

#[test]
fn each_action() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
        {"names":["getpid"],"action":"SCMP_ACT_ERRNO","errnoRet":13},
        {"names":["getppid"],"action":"SCMP_ACT_ERRNO"},
        {"names":["getuid"],"action":"SCMP_ACT_KILL"},
        {"names":["getgid"],"action":"SCMP_ACT_KILL_THREAD"},
        {"names":["geteuid"],"action":"SCMP_ACT_KILL_PROCESS"},
        {"names":["getegid"],"action":"SCMP_ACT_TRAP"},
        {"names":["gettid"],"action":"SCMP_ACT_TRACE","errnoRet":7},
        {"names":["getpgrp"],"action":"SCMP_ACT_TRACE"},
        {"names":["getsid"],"action":"SCMP_ACT_LOG"}]}"#,
    );
    let cases = [
        ("getpid", errno(13)),
        ("getppid", errno(libc::EPERM)),
        ("getuid", KILLT),
        ("getgid", KILLT),
        ("geteuid", KILLP),
        ("getegid", TRAP),
        ("gettid", libc::SECCOMP_RET_TRACE | 7),
        ("getpgrp", libc::SECCOMP_RET_TRACE | 1),
        ("getsid", LOG),
        ("read", ALLOW),
    ];
    for (name, want) in cases {
        assert_eq!(run(&p, &x64(name, &[])), want, "{name}");
    }
}

#[test]
fn default_errno_and_default_kill() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,
        "syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}"#,
    );
    assert_eq!(run(&p, &x64("read", &[])), ALLOW);
    assert_eq!(run(&p, &x64("write", &[])), errno(libc::ENOSYS));
    let p = compile_json(r#"{"defaultAction":"SCMP_ACT_ERRNO"}"#);
    assert_eq!(run(&p, &x64("write", &[])), errno(libc::EPERM));
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_KILL_PROCESS",
        "syscalls":[{"names":["write"],"action":"SCMP_ACT_ERRNO","errnoRet":5}]}"#,
    );
    assert_eq!(run(&p, &x64("write", &[])), errno(5));
    assert_eq!(run(&p, &x64("read", &[])), KILLP);
}

/// One rule per operator on ioctl's 64-bit third argument, and on 32-bit `cmd`.
#[test]
fn each_operator() {
    let ops = [
        (
            "SCMP_CMP_EQ",
            10u64,
            [(10u64, true), (11, false), (10 | 1 << 32, false)],
        ),
        (
            "SCMP_CMP_NE",
            10,
            [(10, false), (11, true), (10 | 1 << 32, true)],
        ),
        (
            "SCMP_CMP_LT",
            10,
            [(9, true), (10, false), (1 << 32, false)],
        ),
        (
            "SCMP_CMP_LE",
            10,
            [(10, true), (11, false), (1 << 32, false)],
        ),
        (
            "SCMP_CMP_GT",
            10,
            [(11, true), (10, false), (1 << 32, true)],
        ),
        ("SCMP_CMP_GE", 10, [(10, true), (9, false), (1 << 32, true)]),
    ];
    for (op, v, cases) in ops {
        let p = compile_json(&format!(
            r#"{{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{{"names":["ioctl"],
            "action":"SCMP_ACT_ERRNO","args":[{{"index":2,"value":{v},"op":"{op}"}}]}}]}}"#
        ));
        for (arg, matches) in cases {
            let want = if matches { errno(libc::EPERM) } else { ALLOW };
            assert_eq!(
                run(&p, &x64("ioctl", &[0, 0, arg])),
                want,
                "{op} {v} vs {arg:#x}"
            );
        }
    }
}

#[test]
fn masked_eq_uses_value_as_mask_and_value_two_as_datum() {
    // podman's clone rule: allowed unless a namespace flag is set.
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["clone"],
        "action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":2114060288,"valueTwo":0,"op":"SCMP_CMP_MASKED_EQ"}]}]}"#,
    );
    let thread_flags = 0x3d0f00u64;
    assert_eq!(run(&p, &x64("clone", &[thread_flags])), ALLOW);
    assert_eq!(
        run(&p, &x64("clone", &[libc::CLONE_NEWUSER as u64])),
        errno(libc::EPERM)
    );
    // High bits are dropped by the kernel (lower_32_bits), and ignored here too.
    assert_eq!(run(&p, &x64("clone", &[thread_flags | 1 << 40])), ALLOW);
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mmap"],
        "action":"SCMP_ACT_ERRNO","args":[{"index":2,"value":4,"valueTwo":4,"op":"SCMP_CMP_MASKED_EQ"}]}]}"#,
    );
    assert_eq!(run(&p, &x64("mmap", &[0, 0, 7])), errno(libc::EPERM));
    assert_eq!(run(&p, &x64("mmap", &[0, 0, 3])), ALLOW);
}

#[test]
fn tiocsti_with_high_bits_matches_a_rule_on_tiocsti() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["ioctl"],
        "action":"SCMP_ACT_ERRNO","args":[{"index":1,"value":21522,"op":"SCMP_CMP_EQ"}]}]}"#,
    );
    let tiocsti = libc::TIOCSTI;
    assert_eq!(run(&p, &x64("ioctl", &[0, tiocsti])), errno(libc::EPERM));
    assert_eq!(
        run(&p, &x64("ioctl", &[0, tiocsti | 1 << 32])),
        errno(libc::EPERM)
    );
    assert_eq!(run(&p, &x64("ioctl", &[0, libc::TCGETS])), ALLOW);
}

/// Conditions on distinct arguments are ANDed; once two compare the same
/// argument, runc makes each condition a rule of its own (ORed).
#[test]
fn several_conditions_are_anded_unless_one_argument_repeats() {
    let anded = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["lseek"],"action":"SCMP_ACT_ALLOW",
        "args":[{"index":2,"value":1,"op":"SCMP_CMP_EQ"},{"index":0,"value":3,"op":"SCMP_CMP_EQ"}]}]}"#,
    );
    assert_eq!(run(&anded, &x64("lseek", &[3, 0, 1])), ALLOW);
    assert_eq!(run(&anded, &x64("lseek", &[4, 0, 1])), errno(libc::EPERM));
    assert_eq!(run(&anded, &x64("lseek", &[3, 0, 2])), errno(libc::EPERM));
    let ored = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["lseek"],"action":"SCMP_ACT_ALLOW",
        "args":[{"index":2,"value":1,"op":"SCMP_CMP_EQ"},{"index":2,"value":2,"op":"SCMP_CMP_EQ"},
                {"index":0,"value":3,"op":"SCMP_CMP_EQ"}]}]}"#,
    );
    assert_eq!(run(&ored, &x64("lseek", &[9, 0, 1])), ALLOW);
    assert_eq!(run(&ored, &x64("lseek", &[9, 0, 2])), ALLOW);
    assert_eq!(run(&ored, &x64("lseek", &[3, 0, 7])), ALLOW);
    assert_eq!(run(&ored, &x64("lseek", &[4, 0, 0])), errno(libc::EPERM));
}

#[test]
fn several_entries_for_one_syscall() {
    // podman's socket rules: AF_VSOCK gets EINVAL, everything else is allowed.
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,"syscalls":[
        {"names":["socket"],"action":"SCMP_ACT_ERRNO","errnoRet":22,"args":[{"index":0,"value":40,"op":"SCMP_CMP_EQ"}]},
        {"names":["socket"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":40,"op":"SCMP_CMP_NE"}]},
        {"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":0,"op":"SCMP_CMP_EQ"}]},
        {"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":8,"op":"SCMP_CMP_EQ"}]}]}"#,
    );
    assert_eq!(run(&p, &x64("socket", &[40])), errno(libc::EINVAL));
    assert_eq!(run(&p, &x64("socket", &[1])), ALLOW);
    assert_eq!(run(&p, &x64("personality", &[0])), ALLOW);
    assert_eq!(run(&p, &x64("personality", &[8])), ALLOW);
    assert_eq!(run(&p, &x64("personality", &[1])), errno(libc::ENOSYS));
}

#[test]
fn overlapping_rules_strongest_wins_then_first_errno() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
        {"names":["kill"],"action":"SCMP_ACT_ERRNO","errnoRet":1,"args":[{"index":1,"value":9,"op":"SCMP_CMP_EQ"}]},
        {"names":["kill"],"action":"SCMP_ACT_ERRNO","errnoRet":2,"args":[{"index":0,"value":1,"op":"SCMP_CMP_EQ"}]},
        {"names":["kill"],"action":"SCMP_ACT_KILL_PROCESS","args":[{"index":1,"value":11,"op":"SCMP_CMP_EQ"}]}]}"#,
    );
    assert_eq!(run(&p, &x64("kill", &[1, 9])), errno(1));
    assert_eq!(run(&p, &x64("kill", &[1, 15])), errno(2));
    assert_eq!(run(&p, &x64("kill", &[1, 11])), KILLP);
    assert_eq!(run(&p, &x64("kill", &[2, 15])), ALLOW);
}

#[test]
fn first_unconditional_rule_decides_and_default_equal_rules_are_dropped() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[
        {"names":["dup"],"action":"SCMP_ACT_ERRNO"},
        {"names":["dup"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":1,"op":"SCMP_CMP_EQ"}]},
        {"names":["dup2"],"action":"SCMP_ACT_TRAP"},
        {"names":["dup2"],"action":"SCMP_ACT_KILL_PROCESS","args":[{"index":0,"value":1,"op":"SCMP_CMP_EQ"}]},
        {"names":["dup2"],"action":"SCMP_ACT_ALLOW"}]}"#,
    );
    // The ERRNO(EPERM) rule equals the default and is dropped (runc), so the ALLOW rule counts.
    assert_eq!(run(&p, &x64("dup", &[1])), ALLOW);
    assert_eq!(run(&p, &x64("dup", &[2])), errno(libc::EPERM));
    assert_eq!(run(&p, &x64("dup2", &[1])), TRAP);
    assert_eq!(run(&p, &x64("dup2", &[2])), TRAP);
}

#[test]
fn arches() {
    let i386 = |name: &str| call(AUDIT_ARCH_I386, X86Arch::I386, name, &[]);
    let x32 = |name: &str| call(AUDIT_ARCH_X86_64, X86Arch::X32, name, &[]);
    let aarch64 = Call {
        arch: 0xc000_00b7,
        nr: 63,
        args: [0; 6],
    };
    let rules = r#""syscalls":[{"names":["getpid","read"],"action":"SCMP_ACT_ALLOW"}]"#;
    let native = compile_json(&format!(r#"{{"defaultAction":"SCMP_ACT_ERRNO",{rules}}}"#));
    assert_eq!(run(&native, &x64("getpid", &[])), ALLOW);
    assert_eq!(run(&native, &i386("getpid")), KILLP);
    assert_eq!(run(&native, &x32("getpid")), KILLP);
    assert_eq!(run(&native, &aarch64), KILLP);
    let all = compile_json(&format!(
        r#"{{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_X32","SCMP_ARCH_AARCH64"],{rules}}}"#
    ));
    {
        let prog = &all;
        assert_eq!(run(prog, &i386("getpid")), ALLOW);
        assert_eq!(run(prog, &x32("getpid")), ALLOW);
        assert_eq!(run(prog, &i386("write")), errno(libc::EPERM));
        // Newer than any named syscall of that arch: the ENOSYS stub.
        assert_eq!(run(prog, &i386("getppid")), errno(libc::ENOSYS));
        assert_eq!(run(prog, &x32("write")), errno(libc::EPERM));
        assert_eq!(run(prog, &aarch64), KILLP);
    }
    // i386 compares 32 bits: a 64-bit value is truncated, as libseccomp does.
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86"],"syscalls":[{"names":["ioctl"],
        "action":"SCMP_ACT_ERRNO","args":[{"index":1,"value":21522,"op":"SCMP_CMP_EQ"}]}]}"#,
    );
    assert_eq!(
        run(
            &p,
            &call(AUDIT_ARCH_I386, X86Arch::I386, "ioctl", &[0, 21522])
        ),
        errno(libc::EPERM)
    );
}

#[test]
fn clone3_gets_enosys_when_the_profile_does_not_name_it() {
    let json = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[
        {"names":["faccessat2","read"],"action":"SCMP_ACT_ALLOW"},
        {"names":["clone"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":65536,"valueTwo":65536,"op":"SCMP_CMP_MASKED_EQ"}]}]}"#;
    let p = compile_json(json);
    assert_eq!(run(&p, &x64("clone3", &[])), errno(libc::ENOSYS));
    // Older than faccessat2 (439) and not named: the default, as runc.
    assert_eq!(run(&p, &x64("pidfd_open", &[])), errno(libc::EPERM));
    // Newer than anything named: runc's ENOSYS stub.
    assert_eq!(run(&p, &x64("epoll_pwait2", &[])), errno(libc::ENOSYS));
    // Named: the profile decides.
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["clone3"],"action":"SCMP_ACT_ERRNO","errnoRet":1}]}"#,
    );
    assert_eq!(run(&p, &x64("clone3", &[])), errno(libc::EPERM));
    // Permissive default: nothing added.
    let p = compile_json(r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#);
    assert_eq!(run(&p, &x64("clone3", &[])), ALLOW);
}

#[test]
fn enosys_stub_covers_syscalls_newer_than_the_profile() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_KILL_PROCESS","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}"#,
    );
    assert_eq!(run(&p, &x64("write", &[])), errno(libc::ENOSYS));
    assert_eq!(run(&p, &x64("read", &[])), ALLOW);
}

#[test]
fn unknown_names_are_skipped_and_reported() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","arm_fadvise64_64","no_such_call"],"action":"SCMP_ACT_ALLOW"}]}"#,
    );
    assert_eq!(p.unknown_syscalls, ["arm_fadvise64_64", "no_such_call"]);
    assert_eq!(run(&p, &x64("read", &[])), ALLOW);
}

#[test]
fn flags() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","flags":["SECCOMP_FILTER_FLAG_LOG","SECCOMP_FILTER_FLAG_SPEC_ALLOW","SECCOMP_FILTER_FLAG_TSYNC"]}"#,
    );
    assert_eq!(
        p.flags,
        libc::SECCOMP_FILTER_FLAG_LOG as u32
            | libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW as u32
            | libc::SECCOMP_FILTER_FLAG_TSYNC as u32
    );
}

#[test]
fn bad_input_is_refused_with_the_field() {
    let cases = [
        (
            r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read"],"action":"SCMP_ACT_ERRNO"},{"names":["ioctl"],"action":"SCMP_ACT_ERRNO","args":[{"index":6,"value":1,"op":"SCMP_CMP_EQ"}]}]}"#,
            "linux.seccomp: syscalls[1].args[0].index: 6 is out of range (0-5)",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read"],"action":"SCMP_ACT_NOTIFY"}]}"#,
            "linux.seccomp: syscalls[0].action: SCMP_ACT_NOTIFY needs a seccomp agent, which runsbx does not support",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_NOTIFY"}"#,
            "linux.seccomp: defaultAction: SCMP_ACT_NOTIFY needs a seccomp agent, which runsbx does not support",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":[],"action":"SCMP_ACT_ERRNO"}]}"#,
            "linux.seccomp: syscalls[0]: names is empty",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read",""],"action":"SCMP_ACT_ERRNO"}]}"#,
            "linux.seccomp: syscalls[0].names[1]: is an empty string",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":70000}"#,
            "linux.seccomp: defaultAction: errno 70000 is out of range (0-4095)",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/run/agent.sock","syscalls":[{"names":["read"],"action":"SCMP_ACT_NOTIFY"}]}"#,
            "linux.seccomp: listenerPath: seccomp agents (SCMP_ACT_NOTIFY) are not supported by runsbx",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ALLOW","flags":["SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]}"#,
            "linux.seccomp: flags[0]: SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV only applies to SCMP_ACT_NOTIFY, which runsbx does not support",
        ),
    ];
    for (json, want) in cases {
        assert_eq!(err_json(json), want);
    }
    // Unknown actions and operators never reach compile(): serde refuses them.
    assert!(serde_json::from_str::<LinuxSeccomp>(r#"{"defaultAction":"SCMP_ACT_BOGUS"}"#).is_err());
}

/// As runc: a listenerPath without any SCMP_ACT_NOTIFY is ignored.
#[test]
fn a_listener_path_without_notify_is_ignored() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/run/agent.sock","listenerMetadata":"x",
        "syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO"}]}"#,
    );
    assert_eq!(run(&p, &x64("mkdir", &[0, 0])), errno(libc::EPERM));
}

#[test]
fn too_large_is_refused() {
    let names: Vec<String> = tables::X86_64
        .iter()
        .map(|(n, _)| format!("\"{n}\""))
        .collect();
    let args: Vec<String> = (0..40)
        .map(|v| format!(r#"{{"index":0,"value":{v},"op":"SCMP_CMP_EQ"}}"#))
        .collect();
    let entries: Vec<String> = args
        .iter()
        .map(|a| {
            format!(
                r#"{{"names":[{}],"action":"SCMP_ACT_ALLOW","args":[{a}]}}"#,
                names.join(",")
            )
        })
        .collect();
    let json = format!(
        r#"{{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{}]}}"#,
        entries.join(",")
    );
    assert!(matches!(
        compile(&profile(&json)),
        Err(SeccompError::TooLarge(_))
    ));
}

/// Podman's default profile allows about 380 names unconditionally on three arches;
/// at seccompiler's five instructions a rule it came to 5644 and was refused.
#[test]
fn hundreds_of_unconditional_rules_on_three_arches_fit() {
    let names: Vec<String> = tables::X86_64
        .iter()
        .filter(|(n, _)| !matches!(*n, "mount" | "ptrace" | "clone3" | "ioctl"))
        .map(|(n, _)| format!("\"{n}\""))
        .collect();
    assert!(names.len() > 300);
    let json = format!(
        r#"{{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,
            "architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_X32"],
            "syscalls":[{{"names":[{}],"action":"SCMP_ACT_ALLOW"}},
                        {{"names":["ioctl"],"action":"SCMP_ACT_ALLOW",
                          "args":[{{"index":1,"value":21522,"op":"SCMP_CMP_NE"}}]}},
                        {{"names":["ptrace"],"action":"SCMP_ACT_ERRNO","errnoRet":1}}]}}"#,
        names.join(",")
    );
    let p = compile_json(&json);
    assert!(
        p.filters[0].len() < 2048,
        "{} instructions",
        p.filters[0].len()
    );
    // Every name allowed, on each arch that has it; the first and last of each chunk too.
    for (n, _) in tables::X86_64 {
        let want = match *n {
            "mount" => errno(libc::ENOSYS),
            "clone3" => errno(libc::ENOSYS),
            "ptrace" => errno(libc::EPERM),
            "ioctl" => continue,
            _ => ALLOW,
        };
        assert_eq!(run(&p, &x64(n, &[])), want, "{n}");
    }
    assert_eq!(run(&p, &x64("ioctl", &[0, 0x5412])), errno(libc::ENOSYS));
    assert_eq!(run(&p, &x64("ioctl", &[0, 0x5413])), ALLOW);
    let i386 = |n: &str| call(AUDIT_ARCH_I386, X86Arch::I386, n, &[]);
    assert_eq!(run(&p, &i386("getpid")), ALLOW);
    assert_eq!(run(&p, &i386("mount")), errno(libc::ENOSYS));
    let x32 = |n: &str| call(AUDIT_ARCH_X86_64, X86Arch::X32, n, &[]);
    assert_eq!(run(&p, &x32("getpid")), ALLOW);
    assert_eq!(run(&p, &x32("ptrace")), errno(libc::EPERM));
}

#[test]
fn features_match_what_compile_accepts() {
    let f = features();
    for a in &f.actions {
        let j = format!(
            r#"{{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{{"names":["read"],"action":"{a}"}}]}}"#
        );
        assert!(compile(&profile(&j)).is_ok(), "{a}");
    }
    for o in &f.operators {
        let j = format!(
            r#"{{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{{"names":["read"],"action":"SCMP_ACT_LOG","args":[{{"index":0,"value":1,"op":"{o}"}}]}}]}}"#
        );
        assert!(compile(&profile(&j)).is_ok(), "{o}");
    }
    for a in &f.archs {
        let j = format!(r#"{{"defaultAction":"SCMP_ACT_ALLOW","architectures":["{a}"]}}"#);
        assert!(compile(&profile(&j)).is_ok(), "{a}");
    }
    for fl in &f.flags {
        let j = format!(r#"{{"defaultAction":"SCMP_ACT_ALLOW","flags":["{fl}"]}}"#);
        assert!(compile(&profile(&j)).is_ok(), "{fl}");
    }
}

#[test]
fn syscall_names_from_audit_records() {
    assert_eq!(syscall_name(AUDIT_ARCH_X86_64, 41), Some("socket"));
    assert_eq!(syscall_name(AUDIT_ARCH_X86_64, 257), Some("openat"));
    assert_eq!(syscall_name(AUDIT_ARCH_X86_64, 0x4000_0027), Some("getpid"));
    assert_eq!(syscall_name(AUDIT_ARCH_I386, 20), Some("getpid"));
    assert_eq!(syscall_name(AUDIT_ARCH_X86_64, 99_999), None);
    assert_eq!(syscall_name(0xc000_00b7, 0), None);
}

#[test]
fn tables_are_sorted_unique_and_consistent() {
    for arch in [X86Arch::X86_64, X86Arch::X32, X86Arch::I386] {
        let t = arch.table();
        // `resolve` binary-searches by name: strictly increasing, so also no duplicate.
        for w in t.windows(2) {
            assert!(w[0].0 < w[1].0, "{arch:?}: {} before {}", w[0].0, w[1].0);
        }
        let mut nrs: Vec<u32> = t.iter().map(|(_, nr)| *nr).collect();
        nrs.sort_unstable();
        nrs.dedup();
        assert_eq!(nrs.len(), t.len(), "{arch:?}: a number is listed twice");
        for (name, nr) in t {
            assert_eq!(arch.resolve(name), Some(*nr));
            // x32 numbers carry the x32 bit; the others never do.
            assert_eq!(nr & X32_SYSCALL_BIT != 0, arch == X86Arch::X32, "{name}");
        }
    }
    for (name, args) in arg32::ARG32_X86_64 {
        assert!(X86Arch::X86_64.resolve(name).is_some(), "arg32: {name}");
        assert!(args.iter().all(|a| *a < 6), "arg32: {name}");
    }
}

#[test]
fn syscalls_newer_than_6_1_resolve() {
    let both = [
        ("cachestat", 451),
        ("fchmodat2", 452),
        ("map_shadow_stack", 453),
        ("futex_wake", 454),
        ("futex_wait", 455),
        ("futex_requeue", 456),
        ("statmount", 457),
        ("listmount", 458),
        ("lsm_get_self_attr", 459),
        ("lsm_set_self_attr", 460),
        ("lsm_list_modules", 461),
        ("mseal", 462),
        ("setxattrat", 463),
        ("getxattrat", 464),
        ("listxattrat", 465),
        ("removexattrat", 466),
        ("open_tree_attr", 467),
        ("file_getattr", 468),
        ("file_setattr", 469),
    ];
    for (name, nr) in both {
        assert_eq!(X86Arch::X86_64.resolve(name), Some(nr), "{name}");
        assert_eq!(X86Arch::I386.resolve(name), Some(nr), "{name}");
        assert_eq!(X86Arch::X32.resolve(name), Some(nr | X32_SYSCALL_BIT));
    }
    // x86_64 (and x32) only.
    assert_eq!(X86Arch::X86_64.resolve("uretprobe"), Some(335));
    assert_eq!(X86Arch::X86_64.resolve("uprobe"), Some(336));
    assert_eq!(X86Arch::I386.resolve("uprobe"), None);
    assert_eq!(tables::KERNEL, "6.18.35");
}

#[test]
fn a_denial_of_a_post_6_1_syscall_under_an_allowing_default_holds() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_X32"],
        "syscalls":[{"names":["mseal","cachestat"],"action":"SCMP_ACT_ERRNO","errnoRet":38},
        {"names":["listmount"],"action":"SCMP_ACT_KILL_PROCESS"}]}"#,
    );
    assert!(p.unknown_syscalls.is_empty(), "{:?}", p.unknown_syscalls);
    assert_eq!(run(&p, &x64("mseal", &[])), errno(libc::ENOSYS));
    assert_eq!(run(&p, &x64("cachestat", &[])), errno(libc::ENOSYS));
    assert_eq!(run(&p, &x64("listmount", &[])), KILLP);
    assert_eq!(run(&p, &x64("statmount", &[])), ALLOW);
    let i386 = call(AUDIT_ARCH_I386, X86Arch::I386, "mseal", &[]);
    let x32 = call(AUDIT_ARCH_X86_64, X86Arch::X32, "mseal", &[]);
    assert_eq!(run(&p, &i386), errno(libc::ENOSYS));
    assert_eq!(run(&p, &x32), errno(libc::ENOSYS));
}

#[test]
fn an_unknown_name_in_a_rule_stricter_than_the_default_is_refused() {
    for (default, action) in [
        ("SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO"),
        ("SCMP_ACT_ALLOW", "SCMP_ACT_KILL"),
        ("SCMP_ACT_LOG", "SCMP_ACT_TRAP"),
        ("SCMP_ACT_ALLOW", "SCMP_ACT_TRACE"),
        ("SCMP_ACT_ERRNO", "SCMP_ACT_KILL_PROCESS"),
    ] {
        let e = err_json(&format!(
            r#"{{"defaultAction":"{default}","syscalls":[{{"names":["read"],"action":"SCMP_ACT_ALLOW"}},
            {{"names":["getpid","no_such_call"],"action":"{action}"}}]}}"#
        ));
        assert_eq!(
            e,
            "linux.seccomp: syscalls[1].names[1]: unknown syscall \"no_such_call\" \
             (runsbx's x86 tables are from Linux 6.18.35); skipping it would let it \
             through to the weaker defaultAction",
            "{default} {action}"
        );
    }
    // Rules that only grant, or deny no more than the default: skipped and reported.
    for (default, action) in [
        ("SCMP_ACT_ERRNO", "SCMP_ACT_ALLOW"),
        ("SCMP_ACT_ERRNO", "SCMP_ACT_LOG"),
        ("SCMP_ACT_ALLOW", "SCMP_ACT_LOG"),
        ("SCMP_ACT_KILL", "SCMP_ACT_ERRNO"),
        ("SCMP_ACT_ERRNO", "SCMP_ACT_ERRNO"),
    ] {
        let p = compile_json(&format!(
            r#"{{"defaultAction":"{default}","syscalls":[{{"names":["no_such_call"],"action":"{action}","errnoRet":1}}]}}"#
        ));
        assert_eq!(p.unknown_syscalls, ["no_such_call"], "{default} {action}");
    }
}

/// The shape of Docker's and podman's default profiles (ERRNO default; ALLOW rules
/// that name other arches' syscalls; ERRNO rules with their own errno, e.g. clone3 ->
/// ENOSYS): still compiles, the foreign names skipped, since none of their rules
/// denies more strongly than the default.
#[test]
fn engine_default_profiles_still_compile() {
    let p = compile_json(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":1,
        "architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_X32"],
        "syscalls":[
        {"names":["read","write","arm_fadvise64_64","s390_pci_mmio_read","cacheflush","mseal"],"action":"SCMP_ACT_ALLOW"},
        {"names":["clone3"],"action":"SCMP_ACT_ERRNO","errnoRet":38},
        {"names":["socket","timerfd"],"action":"SCMP_ACT_ERRNO","errnoRet":22,
         "args":[{"index":0,"value":40,"op":"SCMP_CMP_EQ"}]}]}"#,
    );
    assert_eq!(
        p.unknown_syscalls,
        [
            "arm_fadvise64_64",
            "s390_pci_mmio_read",
            "cacheflush",
            "timerfd"
        ]
    );
    assert_eq!(run(&p, &x64("mseal", &[])), ALLOW);
    assert_eq!(run(&p, &x64("clone3", &[])), errno(libc::ENOSYS));
    assert_eq!(run(&p, &x64("socket", &[40])), errno(libc::EINVAL));
}
