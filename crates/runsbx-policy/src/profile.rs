//! Default sandbox profiles used by `runsbx gen` / `runsbx sandbox`.
//!
//! [`sandbox_seccomp`] is the seccomp allowlist for one untrusted program (Python 3 is
//! the reference workload): file I/O on descriptors, memory, time, signals to itself,
//! threads. Everything else gets EPERM, or the errno a caller expects where that is
//! what the kernel would answer (`kill` and `prlimit64` on another process ESRCH) or
//! where a feature is absent and callers fall back (the xattr calls ENOTSUP, `clone3`
//! ENOSYS); foreign arches and x32 are killed (see
//! [`crate::seccomp`]). It is written as an ordinary OCI `linux.seccomp` value and
//! compiled by the same path as any profile.
//!
//! What it denies and why, beyond "not needed":
//! - `socket`: no new sockets (also covers MPTCP, UDP, raw, vsock, which Landlock's TCP
//!   rules do not). `socketpair(AF_UNIX, SOCK_STREAM)` stays: it creates an anonymous
//!   connected pair reachable by nothing else (a stream socket has no `sendmsg`
//!   destination address), and asyncio needs it for its self-pipe. A datagram pair is
//!   denied: its `sendmsg` can name any visible datagram socket (`/dev/log`, one under
//!   a `--ro` path) and pass it descriptors.
//! - `renameat2` only without RENAME_WHITEOUT (it leaves a 0:0 character device, a
//!   node mknod's filter and Landlock's make_char would refuse).
//! - setuid/setgid bits: `chmod`, `fchmod`, `fchmodat` and a creating `open`, `openat`
//!   or `creat` with S_ISUID or S_ISGID in the mode. The workdir is a host directory:
//!   a host user running such a file later gets the workload owner's privileges.
//! - fork: `clone` only with the thread flags (CLONE_VM|CLONE_FS|CLONE_FILES|
//!   CLONE_SIGHAND|CLONE_THREAD) and no namespace/vfork/ptrace/parent flags; `clone3`
//!   gets ENOSYS (its flags are behind a pointer), so glibc falls back to `clone`.
//! - no io_uring (it opens sockets and files without the syscalls filtered here), no
//!   ptrace, mount, unshare/setns, keyring, bpf, perf_event_open, userfaultfd,
//!   memfd_create, seccomp.
//! - `ioctl` only TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX, compared on
//!   the 32 bits the kernel reads: never TIOCSTI, even with high bits set.
//! - `fcntl` only descriptor, status-flag and record-lock commands (no leases, no
//!   F_NOTIFY); `prctl` only name and read-only
//!   queries; `prlimit64` and `kill` only on itself (pid 0 or 1; other pids answer
//!   ESRCH); `setpriority` only PRIO_PROCESS; `mknod` only FIFOs.
//! - `symlink`, `symlinkat`: refused (EPERM, what the kernel answers on a filesystem
//!   that cannot hold symlinks; CPython's `can_symlink()` then skips). Inside, Landlock
//!   would check a symlink's target, but the workdir is a host directory, and the host
//!   programs that read results from it (an agent loop, a grader) resolve a symlink
//!   with their own rights: `result.txt -> /root/.ssh/id_rsa` would be read and shown,
//!   `out.csv -> /root/.bashrc` overwritten. Landlock's `make_sym` is not granted
//!   either. Hard links stay inside the workdir (EXDEV across mounts) and are allowed.
//!
//! # exec
//!
//! The filter is loaded by the runtime immediately before its own `execve` of the
//! workload, so `execve` must be allowed, and seccomp cannot tell that exec from a
//! later one (it sees only registers; a pointer-value check is forgeable). Later execs
//! are therefore not stopped by this profile, and the design does not rely on it:
//! every layer survives exec (this filter, the Landlock domain, no_new_privs, the
//! namespaces, rlimits), and no_new_privs makes setuid bits and file capabilities
//! inert, so a second exec gains nothing the workload could not do by mapping a
//! readable ELF itself. What can be executed is Landlock's job (EXECUTE granted only on
//! the workload and its ELF interpreter). `execveat` (fd-based exec, e.g. of a memfd)
//! is denied: the runtime does not use it.
use oci_spec::runtime::{
    Arch, LinuxSeccomp, LinuxSeccompAction, LinuxSeccompArg, LinuxSeccompArgBuilder,
    LinuxSeccompOperator, LinuxSyscall,
};

/// Syscalls allowed whatever their arguments.
const ALLOW: &[&str] = &[
    // descriptors and files (paths are Landlock's business)
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "close",
    "close_range",
    "stat",
    "fstat",
    "lstat",
    "newfstatat",
    "statx",
    "lseek",
    "access",
    "faccessat",
    "faccessat2",
    "getdents",
    "getdents64",
    "readlink",
    "readlinkat",
    "getcwd",
    "chdir",
    "fchdir",
    // The kernel drops S_ISUID and S_ISGID from mkdir's mode (a directory
    // takes S_ISGID only from its parent), so no mode check is needed.
    "mkdir",
    "mkdirat",
    "rmdir",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "truncate",
    "ftruncate",
    "fsync",
    "fdatasync",
    "fallocate",
    "fadvise64",
    // sqlite, run by container root, hands each journal it creates to the
    // database's owner. With no capability, only to the one uid and gid the
    // namespace maps, i.e. to the owner it already has: no file changes hands.
    "fchown",
    // The same by path (CPython's os.chown, shutil.chown): without a
    // capability the kernel lets a caller give a file only to its own uid and
    // its own groups, here the one uid and gid the namespace maps. Landlock
    // does not mediate chown, but the files it can name outside the workdir
    // are on read-only mounts (EROFS) or owned by unmapped ids (EPERM), and
    // chown(-1, -1) touches no more than utimensat does.
    "chown",
    "lchown",
    "fchownat",
    "utimensat",
    "umask",
    "dup",
    "dup2",
    "dup3",
    "pipe",
    "pipe2",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "eventfd2",
    "statfs",
    "fstatfs",
    "flock",
    "sendfile",
    "copy_file_range",
    // os.splice (CPython's test_os): moves data between descriptors the
    // workload already holds, through the kernel code sendfile and
    // copy_file_range use (sendfile into a pipe is a splice). vmsplice, which
    // maps the caller's own pages into a pipe, stays refused: no Python API.
    "splice",
    "tee",
    // Hard links, within the workdir only: a link cannot cross mounts (EXDEV),
    // and the workdir is its own bind, so the new name points at a file the
    // workload could already write (tarfile, shutil and CPython's tests make
    // them). Unlike a symlink, a hard link names a file, not a path a host
    // program would resolve with its own rights: see symlink in the module doc.
    "link",
    "linkat",
    // on existing sockets only (socket() is denied)
    "sendmsg",
    "recvmsg",
    "sendto",
    "recvfrom",
    "shutdown",
    "getsockname",
    "getpeername",
    // memory
    "brk",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    "msync",
    "mincore",
    "membarrier",
    // time
    "clock_gettime",
    "clock_getres",
    "clock_nanosleep",
    "nanosleep",
    "gettimeofday",
    "time",
    "times",
    "getitimer",
    "setitimer",
    "alarm",
    // signals
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "rt_sigpending",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "pause",
    "tgkill",
    "tkill",
    // identity and process state (read-only)
    "getpid",
    "gettid",
    "getppid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getgroups",
    "getresuid",
    "getresgid",
    "getpgrp",
    "getpgid",
    "getsid",
    "uname",
    "sysinfo",
    "getrusage",
    "getcpu",
    "getpriority",
    "getrlimit",
    "setrlimit",
    "getrandom",
    // Node asks for its own capability sets at start; reading them grants none.
    "capget",
    "sched_getaffinity",
    "sched_yield",
    "sched_getparam",
    "sched_getscheduler",
    // Queries, no change: the priority range of a scheduling policy (the
    // same constants on every Linux) and a thread's round-robin timeslice,
    // as sched_getparam already tells. os.sched_get_priority_min/max and
    // os.sched_rr_get_interval (CPython's test_posix) answered EPERM.
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_rr_get_interval",
    // threads and process lifetime
    "futex",
    "set_tid_address",
    "set_robust_list",
    "get_robust_list",
    "rseq",
    // Waiting for children (subprocess, CPython's signal and posix tests):
    // fork is refused, so there are none and the kernel answers ECHILD, the
    // answer a caller expects, where the filter's EPERM was not.
    "wait4",
    "waitid",
    "exit",
    "exit_group",
    "restart_syscall",
    // the runtime's own exec of the workload: see the module doc
    "execve",
];

const TCGETS: u64 = 0x5401;
const TIOCGPGRP: u64 = 0x540f;
const TIOCSPGRP: u64 = 0x5410;
const TIOCGWINSZ: u64 = 0x5413;
const FIONREAD: u64 = 0x541b;
const FIONBIO: u64 = 0x5421;
const FIONCLEX: u64 = 0x5450;
const FIOCLEX: u64 = 0x5451;
const F_DUPFD: u64 = 0;
const F_GETFD: u64 = 1;
const F_SETFD: u64 = 2;
const F_GETFL: u64 = 3;
const F_SETFL: u64 = 4;
const F_GETLK: u64 = 5;
const F_SETLK: u64 = 6;
const F_SETLKW: u64 = 7;
const F_OFD_GETLK: u64 = 36;
const F_OFD_SETLK: u64 = 37;
const F_OFD_SETLKW: u64 = 38;
const F_DUPFD_CLOEXEC: u64 = 1030;
const PR_GET_DUMPABLE: u64 = 3;
const PR_SET_NAME: u64 = 15;
const PR_GET_NAME: u64 = 16;
const PR_GET_SECCOMP: u64 = 21;
const PR_GET_NO_NEW_PRIVS: u64 = 39;
const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;
const AF_UNIX: u64 = 1;
const AF_INET: u64 = 2;
const IPPROTO_TCP: u64 = 6;
const AF_NETLINK: u64 = 16;
const NETLINK_ROUTE: u64 = 0;
const SOCK_STREAM: u64 = 1;
const RENAME_WHITEOUT: u64 = 1 << 2;
const S_ISUID: u64 = 0o4000;
const S_IFMT: u64 = 0o170000;
const S_IFIFO: u64 = 0o010000;
const PRIO_PROCESS: u64 = 0;
const S_ISGID: u64 = 0o2000;
const O_CREAT: u64 = 0o100;
/// `__O_TMPFILE`: O_TMPFILE without its O_DIRECTORY bit.
const O_TMPFILE_BIT: u64 = 0o20000000;
const SOCK_RAW: u64 = 3;
/// `socket`'s (and `socketpair`'s) type argument without SOCK_NONBLOCK and
/// SOCK_CLOEXEC.
const SOCK_TYPE_MASK: u64 = !(0o4000 | 0o2000000) & 0xffff_ffff;
const CLONE_VM: u64 = 0x100;
const CLONE_FS: u64 = 0x200;
const CLONE_FILES: u64 = 0x400;
const CLONE_SIGHAND: u64 = 0x800;
const CLONE_PTRACE: u64 = 0x2000;
const CLONE_VFORK: u64 = 0x4000;
const CLONE_PARENT: u64 = 0x8000;
const CLONE_THREAD: u64 = 0x1_0000;
const CLONE_NEWNS: u64 = 0x2_0000;
const CLONE_UNTRACED: u64 = 0x80_0000;
const CLONE_NEWCGROUP: u64 = 0x200_0000;
const CLONE_NEWUTS: u64 = 0x400_0000;
const CLONE_NEWIPC: u64 = 0x800_0000;
const CLONE_NEWUSER: u64 = 0x1000_0000;
const CLONE_NEWPID: u64 = 0x2000_0000;
const CLONE_NEWNET: u64 = 0x4000_0000;

/// What `clone` must look like: a thread of this process, nothing more.
const CLONE_THREAD_FLAGS: u64 = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD;
const CLONE_CHECKED: u64 = CLONE_THREAD_FLAGS
    | CLONE_PTRACE
    | CLONE_VFORK
    | CLONE_PARENT
    | CLONE_NEWNS
    | CLONE_UNTRACED
    | CLONE_NEWCGROUP
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWUSER
    | CLONE_NEWPID
    | CLONE_NEWNET;

fn arg(
    index: usize,
    op: LinuxSeccompOperator,
    value: u64,
    value_two: Option<u64>,
) -> LinuxSeccompArg {
    let b = LinuxSeccompArgBuilder::default()
        .index(index)
        .op(op)
        .value(value);
    let b = match value_two {
        Some(v) => b.value_two(v),
        None => b,
    };
    b.build().expect("all fields set")
}

fn allow(names: &[&str], args: Vec<LinuxSeccompArg>) -> LinuxSyscall {
    let mut s = LinuxSyscall::default();
    s.set_names(names.iter().map(|n| n.to_string()).collect());
    s.set_action(LinuxSeccompAction::ScmpActAllow);
    if !args.is_empty() {
        s.set_args(Some(args));
    }
    s
}

/// Answers `errno` to `names` (instead of the default EPERM), when `args` match.
fn refuse(names: &[&str], errno: i32, args: Vec<LinuxSeccompArg>) -> LinuxSyscall {
    let mut s = LinuxSyscall::default();
    s.set_names(names.iter().map(|n| n.to_string()).collect());
    s.set_action(LinuxSeccompAction::ScmpActErrno);
    s.set_errno_ret(Some(errno as u32));
    if !args.is_empty() {
        s.set_args(Some(args));
    }
    s
}

/// The extended-attribute calls, by path, by fd and (Linux 6.13) at a dirfd.
const XATTR: &[&str] = &[
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "getxattrat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "setxattrat",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "listxattrat",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "removexattrat",
];

/// One ALLOW entry per accepted value of argument `index`.
fn allow_values<'a>(
    name: &'a str,
    index: usize,
    values: &'a [u64],
) -> impl Iterator<Item = LinuxSyscall> + 'a {
    values.iter().map(move |v| {
        allow(
            &[name],
            vec![arg(index, LinuxSeccompOperator::ScmpCmpEq, *v, None)],
        )
    })
}

/// Allows `socket` or `socketpair` for AF_UNIX SOCK_STREAM, with or without
/// SOCK_NONBLOCK and SOCK_CLOEXEC.
fn allow_unix_stream(name: &str) -> LinuxSyscall {
    allow(
        &[name],
        vec![
            arg(0, LinuxSeccompOperator::ScmpCmpEq, AF_UNIX, None),
            arg(
                1,
                LinuxSeccompOperator::ScmpCmpMaskedEq,
                SOCK_TYPE_MASK,
                Some(SOCK_STREAM),
            ),
        ],
    )
}

/// Allows `socket(family, ty, proto)`, `ty` with or without SOCK_NONBLOCK
/// and SOCK_CLOEXEC.
fn allow_socket(family: u64, ty: u64, proto: u64) -> LinuxSyscall {
    allow(
        &["socket"],
        vec![
            arg(0, LinuxSeccompOperator::ScmpCmpEq, family, None),
            arg(
                1,
                LinuxSeccompOperator::ScmpCmpMaskedEq,
                SOCK_TYPE_MASK,
                Some(ty),
            ),
            arg(2, LinuxSeccompOperator::ScmpCmpEq, proto, None),
        ],
    )
}

/// Allows `name` when argument `index` has none of the bits of `mask` set.
fn allow_without(name: &str, index: usize, mask: u64) -> LinuxSyscall {
    allow_masked(name, index, mask, 0)
}

/// Allows `name` when argument `index` masked with `mask` is `value`.
fn allow_masked(name: &str, index: usize, mask: u64, value: u64) -> LinuxSyscall {
    allow(
        &[name],
        vec![arg(
            index,
            LinuxSeccompOperator::ScmpCmpMaskedEq,
            mask,
            Some(value),
        )],
    )
}

/// `kill` and `prlimit64` on the workload itself: pid 0 and its own pid,
/// 1 (it is PID 1 of the sandbox's pid namespace; `os.kill(os.getpid(), 0)`
/// and signal handlers tested with `os.kill(os.getpid(), sig)`). Any other
/// pid answers ESRCH, as the kernel would: the namespace holds no other
/// process. The namespace already keeps every other process out of reach,
/// and Landlock's signal scope keeps signals inside the sandbox; this keeps
/// the calls on the workload should either fail.
fn own_process_only() -> Vec<LinuxSyscall> {
    // Any pid but 0 and 1, in one comparison (pid is 32 bits: -1 and the
    // other negative ones compare as above 1): an entry comparing the pid
    // twice would OR its conditions, as under runc.
    let other = |index| vec![arg(index, LinuxSeccompOperator::ScmpCmpGt, 1, None)];
    let mut rules: Vec<LinuxSyscall> = allow_values("kill", 0, &[0, 1])
        .chain(allow_values("prlimit64", 0, &[0, 1]))
        .collect();
    rules.push(refuse(&["kill", "prlimit64"], libc::ESRCH, other(0)));
    rules
}

/// Stops: setuid/setgid files left in the workdir. The workdir is a host
/// directory owned by the workload's host uid; a host user who runs such a
/// file gets that uid's (or gid's) privileges. Each call is allowed when
/// its mode has neither bit; a creating open also when it does not create
/// (without O_CREAT or O_TMPFILE the kernel ignores the mode). `creat`
/// and `fchmodat2` stay denied altogether.
fn no_setid_modes() -> Vec<LinuxSyscall> {
    const SETID: u64 = S_ISUID | S_ISGID;
    vec![
        allow_without("chmod", 1, SETID),
        allow_without("fchmod", 1, SETID),
        allow_without("fchmodat", 2, SETID),
        allow_without("open", 2, SETID),
        allow_without("open", 1, O_CREAT | O_TMPFILE_BIT),
        allow_without("openat", 3, SETID),
        allow_without("openat", 2, O_CREAT | O_TMPFILE_BIT),
    ]
}

/// The default seccomp allowlist of `runsbx sandbox`.
pub fn sandbox_seccomp() -> LinuxSeccomp {
    let mut syscalls = vec![allow(ALLOW, Vec::new())];
    syscalls.extend(allow_values(
        "ioctl",
        1,
        &[TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIONCLEX, FIOCLEX],
    ));
    // tcgetpgrp/tcsetpgrp: the foreground group of the caller's own
    // controlling terminal, and the workload has none (libcontainer's
    // setsid; TIOCSCTTY is refused, and Landlock grants no terminal to
    // open), so the kernel answers ENOTTY on a terminal and EBADF on a bad
    // descriptor, where the filter's EPERM misled callers.
    syscalls.extend(allow_values("ioctl", 1, &[TIOCGPGRP, TIOCSPGRP]));
    syscalls.extend(allow_values(
        "fcntl",
        1,
        &[F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC],
    ));
    // Record locks, POSIX and open-file-description: sqlite locks every
    // database file it opens (an in-memory database needs none), and so do
    // dbm and shelve. A lock needs a descriptor the workload already holds,
    // so it reaches only files Landlock let it open: the workdir, and the
    // read-only binds, where a read lock (F_SETLK needs a writable fd for a
    // write lock) could at most make a host process that write-locks the
    // same system file wait until the sandbox ends; POSIX locks are
    // advisory and nothing under /usr is a lock file a host service takes.
    // F_SETLEASE and F_NOTIFY stay denied: a lease signals its holder when
    // another process opens the file.
    syscalls.extend(allow_values(
        "fcntl",
        1,
        &[
            F_GETLK,
            F_SETLK,
            F_SETLKW,
            F_OFD_GETLK,
            F_OFD_SETLK,
            F_OFD_SETLKW,
        ],
    ));
    syscalls.extend(allow_values(
        "prctl",
        0,
        &[
            PR_GET_DUMPABLE,
            PR_SET_NAME,
            PR_GET_NAME,
            PR_GET_SECCOMP,
            PR_GET_NO_NEW_PRIVS,
        ],
    ));
    syscalls.extend(allow_values("arch_prctl", 0, &[ARCH_SET_FS, ARCH_GET_FS]));
    syscalls.extend(own_process_only());
    syscalls.extend(allow_values("setpriority", 0, &[PRIO_PROCESS]));
    // mkfifo (CPython's os, shutil, tarfile tests): a named pipe in the
    // workdir reaches only whoever can open the workdir. Other node types
    // stay refused (devices need CAP_MKNOD anyway; a socket node is not
    // needed), and so do setuid/setgid bits.
    syscalls.push(allow_masked(
        "mknod",
        1,
        S_IFMT | S_ISUID | S_ISGID,
        S_IFIFO,
    ));
    syscalls.push(allow_masked(
        "mknodat",
        2,
        S_IFMT | S_ISUID | S_ISGID,
        S_IFIFO,
    ));
    // Stops: datagrams to host sockets. Only a stream pair: a datagram
    // socket's sendmsg can name a destination, any datagram socket visible
    // in the sandbox (`/dev/log`, one under a `--ro` path), and pass it
    // descriptors by SCM_RIGHTS. A connected stream pair reaches only itself.
    syscalls.push(allow_unix_stream("socketpair"));
    // Stops: a device node in the workdir. RENAME_WHITEOUT leaves a 0:0
    // character device at the source; RENAME_NOREPLACE and RENAME_EXCHANGE
    // stay allowed.
    syscalls.push(allow_without("renameat2", 4, RENAME_WHITEOUT));
    syscalls.extend(no_setid_modes());
    syscalls.push(allow(
        &["clone"],
        vec![arg(
            0,
            LinuxSeccompOperator::ScmpCmpMaskedEq,
            CLONE_CHECKED,
            Some(CLONE_THREAD_FLAGS),
        )],
    ));
    syscalls.push(refuse(&["clone3"], libc::ENOSYS, Vec::new()));
    // Extended attributes stay refused: no workload here needs them, and
    // user.* attributes set on workdir files would be read by host tools as
    // the host's own marks (origin, checksum, quarantine tags). Refused as a
    // filesystem without xattrs refuses them, ENOTSUP: shutil.copy2 and
    // copytree copy xattrs and skip them on ENOTSUP, ENODATA or EINVAL, and
    // EPERM made every copy2 in the workdir fail.
    syscalls.push(refuse(XATTR, libc::EOPNOTSUPP, Vec::new()));

    let mut p = LinuxSeccomp::default();
    p.set_default_action(LinuxSeccompAction::ScmpActErrno);
    p.set_default_errno_ret(Some(libc::EPERM as u32));
    p.set_architectures(Some(vec![Arch::ScmpArchX86_64]));
    p.set_syscalls(Some(syscalls));
    p
}

/// Which policy a generated sandbox gets (`--profile`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Profile {
    /// One program, no sockets: [`sandbox_seccomp`].
    #[default]
    Default,
    /// A Jupyter kernel: [`kernel_seccomp`].
    Jupyter,
    /// The fork server of `runsbx serve --fork-server`: [`fork_server_seccomp`].
    ForkServer,
}

impl Profile {
    pub fn seccomp(self) -> LinuxSeccomp {
        match self {
            Profile::Default => sandbox_seccomp(),
            Profile::Jupyter => kernel_seccomp(),
            Profile::ForkServer => fork_server_seccomp(),
        }
    }
}

/// The seccomp allowlist of `runsbx serve --fork-server`'s fork server:
/// [`sandbox_seccomp`] plus what it needs to fork a session and have the
/// session confine itself before any client code runs.
///
/// The fork server runs only trusted code: runsbx's driver
/// (bundles/python-repl/forkserver.py) and the operator's preload. Client code
/// runs only in a forked session, after the session has stacked its own
/// Landlock layer (its workdir only, signals and abstract sockets scoped to
/// itself) and then [`sandbox_seccomp`] as a second filter: the kernel runs
/// every filter and takes the strictest answer, so what this profile adds is
/// refused again to the session. What it adds:
/// - `clone` as `fork` (no namespace, thread, vfork, ptrace or parent flag):
///   one process per session.
/// - `landlock_create_ruleset`, `landlock_add_rule`, `landlock_restrict_self`:
///   a Landlock layer can only take rights away.
/// - `seccomp(SECCOMP_SET_MODE_FILTER, 0, ...)`: a filter can only refuse
///   more. No flags: not TSYNC, and above all not NEW_LISTENER (a user
///   notification listener would let a process answer for another's calls).
pub fn fork_server_seccomp() -> LinuxSeccomp {
    let mut p = sandbox_seccomp();
    let mut syscalls = p.syscalls().clone().unwrap_or_default();
    syscalls.push(allow_masked("clone", 0, CLONE_CHECKED, 0));
    syscalls.push(allow(
        &[
            "landlock_create_ruleset",
            "landlock_add_rule",
            "landlock_restrict_self",
        ],
        Vec::new(),
    ));
    syscalls.push(allow(
        &["seccomp"],
        vec![
            arg(
                0,
                LinuxSeccompOperator::ScmpCmpEq,
                SECCOMP_SET_MODE_FILTER,
                None,
            ),
            arg(1, LinuxSeccompOperator::ScmpCmpEq, 0, None),
        ],
    ));
    p.set_syscalls(Some(syscalls));
    p
}

const SECCOMP_SET_MODE_FILTER: u64 = 1;

/// The seccomp allowlist of `runsbx sandbox --jupyter`: [`sandbox_seccomp`]
/// plus what a Jupyter kernel (ipykernel over pyzmq's libzmq) needs to serve
/// its channels on unix sockets in the workdir.
///
/// What it adds and why each opens no way out:
/// - `socket(AF_UNIX, SOCK_STREAM)`, `bind`, `listen`, `accept`, `accept4`,
///   `connect`: ZMQ's `ipc://` transport. A pathname socket can only be made
///   where Landlock grants `make_sock`, the workdir; an abstract one lives in
///   the sandbox's own network namespace, and Landlock's abstract-socket
///   scope keeps it from any other. `connect` reaches a pathname socket
///   visible in the sandbox's mount tree: runsbx refuses to start when the
///   workdir or a read-only bind outside the system directories holds one
///   (Landlock ABI 7 cannot restrict that connect). Only stream sockets: a
///   datagram socket's `sendmsg` can name a destination address, which would
///   turn any visible datagram socket into a way out.
/// - `socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)`: libzmq lists the network
///   interfaces (getifaddrs) before it binds, and aborts when that fails. It
///   lists the sandbox's own namespace, a loopback device; changing anything
///   there needs CAP_NET_ADMIN, which the workload does not hold.
/// - every other socket family answers EAFNOSUPPORT, not EPERM: ipykernel then
///   warns that its TCP pipe for forked subprocesses is unavailable and goes
///   on (EPERM makes libzmq abort).
/// - `getsockopt`, `setsockopt`: options of those sockets (libzmq sets
///   buffer sizes, SO_PASSCRED-style options need no privilege).
/// - `sched_setscheduler`, `sched_setparam`: libzmq's I/O thread re-applies
///   its scheduling policy (SCHED_OTHER). A real-time policy or a higher
///   priority needs CAP_SYS_NICE or RLIMIT_RTPRIO, neither of which the
///   workload has, and the pid namespace holds only the sandbox's threads.
pub fn kernel_seccomp() -> LinuxSeccomp {
    let mut p = sandbox_seccomp();
    let mut syscalls = p.syscalls().clone().unwrap_or_default();
    // Every family but AF_UNIX and AF_NETLINK, one condition per entry: an
    // entry comparing argument 0 twice would OR its conditions, as under runc.
    let others = (0..AF_NETLINK)
        .filter(|&f| f != AF_UNIX)
        .map(|f| (LinuxSeccompOperator::ScmpCmpEq, f))
        .chain([(LinuxSeccompOperator::ScmpCmpGt, AF_NETLINK)]);
    for (op, family) in others {
        syscalls.push(refuse(
            &["socket"],
            libc::EAFNOSUPPORT,
            vec![arg(0, op, family, None)],
        ));
    }
    syscalls.push(allow_unix_stream("socket"));
    syscalls.push(allow_socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
    syscalls.push(allow(
        &[
            "bind",
            "listen",
            "accept",
            "accept4",
            "connect",
            "getsockopt",
            "setsockopt",
            "sched_setscheduler",
            "sched_setparam",
        ],
        Vec::new(),
    ));
    p.set_syscalls(Some(syscalls));
    p
}

/// The (level, option) pairs `--allow-net`'s `setsockopt` accepts.
pub const TCP_CLIENT_OPTIONS: &[(u64, u64)] = &[
    (SOL_SOCKET, 2),  // SO_REUSEADDR
    (SOL_SOCKET, 7),  // SO_SNDBUF
    (SOL_SOCKET, 8),  // SO_RCVBUF
    (SOL_SOCKET, 9),  // SO_KEEPALIVE
    (SOL_SOCKET, 13), // SO_LINGER
    (SOL_SOCKET, 20), // SO_RCVTIMEO_OLD
    (SOL_SOCKET, 21), // SO_SNDTIMEO_OLD
    (SOL_SOCKET, 66), // SO_RCVTIMEO_NEW
    (SOL_SOCKET, 67), // SO_SNDTIMEO_NEW
    (IPPROTO_TCP, 1), // TCP_NODELAY
    (IPPROTO_TCP, 4), // TCP_KEEPIDLE
    (IPPROTO_TCP, 5), // TCP_KEEPINTVL
    (IPPROTO_TCP, 6), // TCP_KEEPCNT
];

const SOL_SOCKET: u64 = 1;

/// What `--allow-net` adds to a profile: a TCP client over IPv4, for the
/// proxy on 127.0.0.1 (runsbx_policy::egress).
///
/// - `socket(AF_INET, SOCK_STREAM, 0 or IPPROTO_TCP)`: not MPTCP (protocol
///   262), UDP, raw, IPv6 or any other family: Landlock's TCP rules do not
///   see those, so they stay refused here (EPERM).
/// - `connect`, `getsockopt`. Not `bind`, `listen`, `accept`: the workload
///   serves nothing (Landlock also refuses TCP bind).
/// - `setsockopt` only for [`TCP_CLIENT_OPTIONS`], the options Python's
///   socket, http.client, urllib3 (requests, pip) and curl set; any other
///   answers EPERM. Stops: the kernel surface behind other options, such as
///   TCP_ULP (attaching kTLS or another upper layer protocol:
///   CVE-2023-0461's use-after-free), SO_ATTACH_FILTER and SO_ATTACH_BPF
///   (a classic or eBPF program run by the kernel), and the IP options.
///
/// Which port `connect` reaches is Landlock's (connect_tcp on the proxy's
/// port only, [`crate::landlock::LandlockPolicy::connect_port`]), and which
/// hosts is the network namespace's: it holds only `lo`, where the proxy is
/// the only listener. Even a connect Landlock does not see (TCP Fast Open's
/// `sendto`) reaches nothing else.
pub fn with_tcp_client(mut p: LinuxSeccomp) -> LinuxSeccomp {
    let mut syscalls = p.syscalls().clone().unwrap_or_default();
    for proto in [0, IPPROTO_TCP] {
        syscalls.push(allow_socket(AF_INET, SOCK_STREAM, proto));
    }
    syscalls.push(allow(&["connect", "getsockopt"], Vec::new()));
    for &(level, name) in TCP_CLIENT_OPTIONS {
        syscalls.push(allow(
            &["setsockopt"],
            vec![
                arg(1, LinuxSeccompOperator::ScmpCmpEq, level, None),
                arg(2, LinuxSeccompOperator::ScmpCmpEq, name, None),
            ],
        ));
    }
    p.set_syscalls(Some(syscalls));
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seccomp;

    /// Stops: an option outside the short list (TCP_ULP, SO_ATTACH_FILTER)
    /// reaching the kernel with `--allow-net`.
    #[test]
    fn the_tcp_client_sets_only_listed_options() {
        let p = with_tcp_client(sandbox_seccomp());
        seccomp::compile(&p).expect("the profile compiles");
        let mut pairs = Vec::new();
        for sc in p.syscalls().iter().flatten() {
            if !sc.names().iter().any(|n| n == "setsockopt") {
                continue;
            }
            assert_eq!(sc.action(), LinuxSeccompAction::ScmpActAllow);
            let args = sc.args().clone().expect("setsockopt is never allowed bare");
            let v: Vec<_> = args
                .iter()
                .map(|a| (a.index(), a.op(), a.value()))
                .collect();
            let eq = LinuxSeccompOperator::ScmpCmpEq;
            let [(1, o1, level), (2, o2, name)] = v[..] else {
                panic!("{v:?}");
            };
            assert_eq!((o1, o2), (eq, eq));
            pairs.push((level, name));
        }
        assert_eq!(pairs, TCP_CLIENT_OPTIONS);
        assert!(!pairs.contains(&(IPPROTO_TCP, 31)), "TCP_ULP");
    }

    #[test]
    fn sandbox_profile_compiles_and_names_only_known_syscalls() {
        let prog = seccomp::compile(&sandbox_seccomp()).expect("sandbox profile compiles");
        assert!(
            prog.unknown_syscalls.is_empty(),
            "{:?}",
            prog.unknown_syscalls
        );
        assert_eq!(prog.filters.len(), 1);
    }

    /// An entry that compares one argument twice means OR (as under runc),
    /// which runsbx's own profiles never rely on: each compares an argument
    /// once per entry.
    #[test]
    fn own_profiles_compare_each_argument_once_per_entry() {
        for p in [sandbox_seccomp(), kernel_seccomp()] {
            for sc in p.syscalls().iter().flatten() {
                let mut seen: Vec<usize> = sc.args().iter().flatten().map(|a| a.index()).collect();
                let n = seen.len();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), n, "{:?}", sc.names());
            }
        }
    }

    #[test]
    fn sandbox_profile_denies_the_dangerous_ones() {
        let p = sandbox_seccomp();
        let named: Vec<&str> = p
            .syscalls()
            .iter()
            .flatten()
            .filter(|s| s.action() == LinuxSeccompAction::ScmpActAllow)
            .flat_map(|s| s.names().iter().map(String::as_str))
            .collect();
        for denied in [
            "socket",
            "ptrace",
            "mount",
            "umount2",
            "unshare",
            "setns",
            "io_uring_setup",
            "io_uring_enter",
            "add_key",
            "request_key",
            "keyctl",
            "bpf",
            "perf_event_open",
            "userfaultfd",
            "execveat",
            "fork",
            "vfork",
            "clone3",
            "memfd_create",
            "seccomp",
            "process_vm_writev",
            "pidfd_open",
        ] {
            assert!(!named.contains(&denied), "{denied} must not be allowed");
        }
    }

    fn answer(prog: &seccomp::SeccompProgram, name: &str, args: [u64; 6]) -> u32 {
        prog.answer(&seccomp::x86_64_call(name, args).expect("known syscall"))
            .expect("interpretable")
    }

    #[test]
    fn fork_server_adds_fork_and_self_confinement_which_the_session_filter_refuses() {
        let server = seccomp::compile(&fork_server_seccomp()).unwrap();
        let session = seccomp::compile(&sandbox_seccomp()).unwrap();
        let allow = libc::SECCOMP_RET_ALLOW;
        // glibc's fork: CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD.
        let fork = 0x0100_0000 | 0x0020_0000 | libc::SIGCHLD as u64;
        let table: &[(&str, [u64; 6], bool)] = &[
            ("clone", [fork, 0, 0, 0, 0, 0], true),
            ("clone", [fork | CLONE_NEWUSER, 0, 0, 0, 0, 0], false),
            ("clone", [fork | CLONE_NEWPID, 0, 0, 0, 0, 0], false),
            ("clone", [fork | CLONE_PARENT, 0, 0, 0, 0, 0], false),
            ("clone", [fork | CLONE_VM, 0, 0, 0, 0, 0], false),
            ("landlock_restrict_self", [3, 0, 0, 0, 0, 0], true),
            ("seccomp", [SECCOMP_SET_MODE_FILTER, 0, 0, 0, 0, 0], true),
            // SECCOMP_FILTER_FLAG_NEW_LISTENER, TSYNC; SECCOMP_SET_MODE_STRICT.
            ("seccomp", [SECCOMP_SET_MODE_FILTER, 8, 0, 0, 0, 0], false),
            ("seccomp", [SECCOMP_SET_MODE_FILTER, 1, 0, 0, 0, 0], false),
            ("seccomp", [0, 0, 0, 0, 0, 0], false),
        ];
        for (name, args, allowed) in table {
            assert_eq!(
                answer(&server, name, *args) == allow,
                *allowed,
                "{name} {args:x?}"
            );
            // The session's own filter refuses all of it again.
            assert_ne!(answer(&session, name, *args), allow, "{name} {args:x?}");
        }
    }

    #[test]
    fn kernel_profile_allows_stream_unix_sockets_and_nothing_else() {
        let prog = seccomp::compile(&kernel_seccomp()).expect("kernel profile compiles");
        assert!(
            prog.unknown_syscalls.is_empty(),
            "{:?}",
            prog.unknown_syscalls
        );
        let allow = libc::SECCOMP_RET_ALLOW;
        let errno = |e: i32| libc::SECCOMP_RET_ERRNO | e as u32;
        const CLOEXEC: u64 = 0o2000000;
        const NONBLOCK: u64 = 0o4000;
        let table: &[([u64; 6], u32)] = &[
            ([AF_UNIX, SOCK_STREAM, 0, 0, 0, 0], allow),
            (
                [AF_UNIX, SOCK_STREAM | CLOEXEC | NONBLOCK, 0, 0, 0, 0],
                allow,
            ),
            ([AF_UNIX, 2, 0, 0, 0, 0], errno(libc::EPERM)), // SOCK_DGRAM
            ([AF_UNIX, 5, 0, 0, 0, 0], errno(libc::EPERM)), // SOCK_SEQPACKET
            (
                [AF_NETLINK, SOCK_RAW | CLOEXEC, NETLINK_ROUTE, 0, 0, 0],
                allow,
            ),
            ([AF_NETLINK, SOCK_RAW, 9, 0, 0, 0], errno(libc::EPERM)), // NETLINK_AUDIT
            ([AF_NETLINK, 2, NETLINK_ROUTE, 0, 0, 0], errno(libc::EPERM)),
            ([2, SOCK_STREAM, 6, 0, 0, 0], errno(libc::EAFNOSUPPORT)), // AF_INET
            ([10, 2, 0, 0, 0, 0], errno(libc::EAFNOSUPPORT)),          // AF_INET6
            ([40, SOCK_STREAM, 0, 0, 0, 0], errno(libc::EAFNOSUPPORT)), // AF_VSOCK
            ([17, SOCK_RAW, 0, 0, 0, 0], errno(libc::EAFNOSUPPORT)),   // AF_PACKET
        ];
        for (args, want) in table {
            assert_eq!(answer(&prog, "socket", *args), *want, "socket{args:?}");
        }
        for name in ["bind", "listen", "accept4", "connect", "sched_setscheduler"] {
            assert_eq!(answer(&prog, name, [0; 6]), allow, "{name}");
        }
        // The default profile is unchanged by the kernel one.
        let plain = seccomp::compile(&sandbox_seccomp()).unwrap();
        for name in ["socket", "bind", "connect", "sched_setscheduler"] {
            assert_eq!(
                answer(&plain, name, [AF_UNIX, SOCK_STREAM, 0, 0, 0, 0]),
                errno(libc::EPERM),
                "{name}"
            );
        }
        for name in [
            "ptrace",
            "mount",
            "io_uring_setup",
            "execveat",
            "socketpair",
        ] {
            let want = answer(&plain, name, [AF_UNIX, SOCK_STREAM, 0, 0, 0, 0]);
            assert_eq!(
                answer(&prog, name, [AF_UNIX, SOCK_STREAM, 0, 0, 0, 0]),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn xattr_calls_answer_enotsup() {
        // Every name resolves: sandbox_profile_compiles_and_names_only_known_syscalls.
        let prog = seccomp::compile(&sandbox_seccomp()).expect("sandbox profile compiles");
        let enotsup = libc::SECCOMP_RET_ERRNO | libc::EOPNOTSUPP as u32;
        for name in XATTR {
            assert_eq!(answer(&prog, name, [0; 6]), enotsup, "{name}");
        }
        let kernel = seccomp::compile(&kernel_seccomp()).unwrap();
        assert_eq!(answer(&kernel, "fsetxattr", [3, 0, 0, 0, 0, 0]), enotsup);
    }

    /// Issue 37: what ordinary Python needs is allowed on the workload
    /// itself, and the rest answers the errno the kernel would.
    #[test]
    fn sandbox_profile_checks_the_arguments_of_issue_37_calls() {
        let prog = seccomp::compile(&sandbox_seccomp()).expect("sandbox profile compiles");
        let allow = libc::SECCOMP_RET_ALLOW;
        let errno = |e: i32| libc::SECCOMP_RET_ERRNO | e as u32;
        let neg1 = u64::MAX; // -1, sign-extended
        let table: &[(&str, [u64; 6], u32)] = &[
            ("kill", [0, 0, 0, 0, 0, 0], allow),
            ("kill", [1, 10, 0, 0, 0, 0], allow), // itself: PID 1
            ("kill", [2, 0, 0, 0, 0, 0], errno(libc::ESRCH)),
            ("kill", [neg1, 9, 0, 0, 0, 0], errno(libc::ESRCH)),
            ("kill", [1 << 32 | 1, 9, 0, 0, 0, 0], allow), // the kernel reads pid 1
            ("prlimit64", [0, 9, 0, 0, 0, 0], allow),
            ("prlimit64", [1, 9, 0, 0, 0, 0], allow),
            ("prlimit64", [neg1, 9, 0, 0, 0, 0], errno(libc::ESRCH)),
            ("setpriority", [PRIO_PROCESS, 1, 5, 0, 0, 0], allow),
            ("setpriority", [2, 0, 5, 0, 0, 0], errno(libc::EPERM)), // PRIO_USER
            ("mknod", [0, S_IFIFO | 0o644, 0, 0, 0, 0], allow),
            ("mknodat", [3, 0, S_IFIFO | 0o600, 0, 0, 0], allow),
            (
                "mknod",
                [0, 0o020000 | 0o644, 0x103, 0, 0, 0],
                errno(libc::EPERM),
            ), // char dev
            (
                "mknodat",
                [3, 0, 0o140000 | 0o644, 0, 0, 0],
                errno(libc::EPERM),
            ), // socket
            (
                "mknod",
                [0, S_IFIFO | S_ISUID | 0o755, 0, 0, 0, 0],
                errno(libc::EPERM),
            ),
            ("mknod", [0, 0o644, 0, 0, 0, 0], errno(libc::EPERM)), // regular: not needed
            ("ioctl", [0, TIOCGPGRP, 0, 0, 0, 0], allow),
            ("ioctl", [0, TIOCSPGRP, 0, 0, 0, 0], allow),
            ("ioctl", [0, 0x540e, 0, 0, 0, 0], errno(libc::EPERM)), // TIOCSCTTY
            ("ioctl", [0, 0x5412, 0, 0, 0, 0], errno(libc::EPERM)), // TIOCSTI
            ("symlink", [0; 6], errno(libc::EPERM)),
            ("symlinkat", [0; 6], errno(libc::EPERM)),
            ("vmsplice", [0; 6], errno(libc::EPERM)),
        ];
        for (name, args, want) in table {
            assert_eq!(answer(&prog, name, *args), *want, "{name}{args:?}");
        }
        for name in [
            "chown",
            "lchown",
            "fchownat",
            "link",
            "linkat",
            "splice",
            "tee",
            "wait4",
            "waitid",
            "sched_get_priority_max",
            "sched_get_priority_min",
            "sched_rr_get_interval",
        ] {
            assert_eq!(answer(&prog, name, [0; 6]), allow, "{name}");
        }
    }

    #[test]
    fn sandbox_profile_checks_the_arguments_of_item_19_calls() {
        let prog = seccomp::compile(&sandbox_seccomp()).expect("sandbox profile compiles");
        let allow = libc::SECCOMP_RET_ALLOW;
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        const CLOEXEC: u64 = 0o2000000;
        const NONBLOCK: u64 = 0o4000;
        const O_RDONLY: u64 = 0;
        const O_WRONLY: u64 = 1;
        const O_TMPFILE: u64 = O_TMPFILE_BIT | 0o200000;
        const RENAME_NOREPLACE: u64 = 1;
        const RENAME_EXCHANGE: u64 = 2;
        let table: &[(&str, [u64; 6], u32)] = &[
            ("socketpair", [AF_UNIX, SOCK_STREAM, 0, 0, 0, 0], allow),
            (
                "socketpair",
                [AF_UNIX, SOCK_STREAM | CLOEXEC | NONBLOCK, 0, 0, 0, 0],
                allow,
            ),
            ("socketpair", [AF_UNIX, 2, 0, 0, 0, 0], eperm), // SOCK_DGRAM
            ("socketpair", [AF_UNIX, 2 | CLOEXEC, 0, 0, 0, 0], eperm),
            ("socketpair", [AF_UNIX, 5, 0, 0, 0, 0], eperm), // SOCK_SEQPACKET
            ("socketpair", [2, SOCK_STREAM, 0, 0, 0, 0], eperm), // AF_INET
            ("renameat2", [0, 0, 0, 0, 0, 0], allow),
            ("renameat2", [0, 0, 0, 0, RENAME_NOREPLACE, 0], allow),
            ("renameat2", [0, 0, 0, 0, RENAME_EXCHANGE, 0], allow),
            ("renameat2", [0, 0, 0, 0, RENAME_WHITEOUT, 0], eperm),
            (
                "renameat2",
                [0, 0, 0, 0, RENAME_WHITEOUT | RENAME_NOREPLACE, 0],
                eperm,
            ),
            ("chmod", [0, 0o755, 0, 0, 0, 0], allow),
            ("chmod", [0, 0o1777, 0, 0, 0, 0], allow),
            ("chmod", [0, 0o4755, 0, 0, 0, 0], eperm),
            ("chmod", [0, 0o2755, 0, 0, 0, 0], eperm),
            ("fchmod", [3, 0o644, 0, 0, 0, 0], allow),
            ("fchmod", [3, 0o6755, 0, 0, 0, 0], eperm),
            ("fchmodat", [3, 0, 0o600, 0, 0, 0], allow),
            ("fchmodat", [3, 0, 0o4700, 0, 0, 0], eperm),
            ("open", [0, O_RDONLY, 0, 0, 0, 0], allow),
            ("open", [0, O_WRONLY | O_CREAT, 0o644, 0, 0, 0], allow),
            ("open", [0, O_WRONLY | O_CREAT, 0o4755, 0, 0, 0], eperm),
            // Without O_CREAT the mode is ignored, whatever it holds.
            ("open", [0, O_RDONLY, 0o6755, 0, 0, 0], allow),
            ("openat", [3, 0, O_RDONLY, 0, 0, 0], allow),
            ("openat", [3, 0, O_WRONLY | O_CREAT, 0o600, 0, 0], allow),
            ("openat", [3, 0, O_WRONLY | O_CREAT, 0o2755, 0, 0], eperm),
            ("openat", [3, 0, O_WRONLY | O_TMPFILE, 0o4700, 0, 0], eperm),
            ("openat", [3, 0, O_RDONLY, 0o4700, 0, 0], allow),
            ("creat", [0, 0o644, 0, 0, 0, 0], eperm),
            ("mkdir", [0, 0o2775, 0, 0, 0, 0], allow),
        ];
        for (name, args, want) in table {
            assert_eq!(answer(&prog, name, *args), *want, "{name}{args:?}");
        }
    }
}
