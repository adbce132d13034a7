//! runsbx-probe: a static test binary run *inside* a container or sandbox. Each check tries one thing a sandboxed
//! program should (or should not) be able to do and prints one JSON line saying what happened. It judges nothing:
//! the test that runs it decides whether a success is an escape. It depends on `libc` only and shares no code with
//! runsbx, so it cannot share a bug with what it checks (the pattern of crun's `tests/init.c` and bubblewrap's
//! `tests/try-syscall.c`).
//!
//! # Usage
//!
//! ```text
//! runsbx-probe CHECK [CHECK...]
//! runsbx-probe --help            # the check list
//! ```
//!
//! A CHECK is `NAME` or `NAME:ARGS`; ARGS is split on `,` (the last argument keeps any further commas, so
//! `write:/w/f,a,b` writes "a,b"). `exec:PATH` takes every word after it as the new program's argv[1..], e.g.
//! `runsbx-probe pid exec:/probe exit:3`. All words are parsed before any check runs; a malformed or unknown word
//! runs nothing and exits 2. Checks run in order and later ones see the effects of earlier ones (`chdir`,
//! `unshare`, `alloc`).
//!
//! # Output
//!
//! One line per check, flushed before the next check starts:
//!
//! ```text
//! {"check":"read:/etc/shadow","ok":false,"errno":"EACCES","ret":-1,"detail":"open: Permission denied"}
//! ```
//!
//! - `check`: the word as given.
//! - `ok`: the operation succeeded (the file was read, the socket connected, the child was forked).
//! - `errno`: the errno name of the failing step, or null. The step is named at the start of `detail`.
//! - `ret`: the syscall's return value, a count, or -1.
//! - `detail`: human-readable; for `read` the start of the content.
//! - `signal` (only if set): "SIGSYS" when a seccomp RET_TRAP filter stopped a syscall during this check.
//! - `data` (informational checks only): structured output, e.g. the environment as an object.
//!
//! Exit status: 0 after running every check, whatever their results; 2 on misuse; `exit:CODE` exits CODE. A
//! seccomp filter with a kill action kills the probe (SIGSYS), which the caller sees as the exit status.
//!
//! # Harmless by construction
//!
//! Kernel-surface checks pass a bad pointer or fd (see [`kernel`]): a call that reaches the kernel fails with
//! EFAULT/EBADF and does nothing, while a filtered one gets the filter's errno. `write` appends and `truncate`
//! keeps the size by default. Children exit at once. `mount:PATH` detaches what it mounted. `ioctl-tiocsti` uses a
//! bad pointer, so it cannot inject input even on a real terminal.
//!
//! # Checks
//!
//! Files: `read:FILE`, `write:FILE[,TEXT]`, `list:DIR`, `mkdir:DIR`, `rmdir:DIR`, `unlink:FILE`, `rename:FROM,TO`,
//! `link:EXISTING,NEW`, `symlink:TARGET,LINK`, `symlink-open:LINK,TARGET`, `truncate:FILE[,LEN]`, `mkfifo:PATH`,
//! `mknod:PATH[,MAJOR,MINOR]`, `readlink:PATH`, `chdir:PATH`, `ioctl-dev:PATH[,REQ]` (a read-only device ioctl).
//! Processes: `exec:PATH [ARG...]`, `fork`, `clone3-fork`, `thread`, `ptrace-attach:PID`, `kill[:PID[,SIG]]`.
//! Kernel: `mount[:PATH]`, `unshare[:NS,...]`, `setns[:PATH]`, `ioctl-tiocsti[:FD]`, `ioctl-tiocsti-high[:FD]`,
//! `x32`, `int80`, `landlock-abi`, and the harmless raw calls of [`kernel::RAW`] (`clone3`, `ptrace`,
//! `io-uring-setup`, `bpf`, `perf-event-open`, `keyctl`, `add-key`, `userfaultfd`, `fsopen`, `open-tree`,
//! `chroot`, `memfd-create`, `execveat`, `mseal`, `cachestat`, ...).
//! Network: `tcp-connect:HOST:PORT`, `tcp-bind:[ADDR:]PORT`, `udp-connect:HOST:PORT`, `udp-sendto:HOST:PORT`,
//! `unix-connect:PATH`, `unix-abstract-connect:NAME`, `mptcp[:HOST:PORT]`, `socket:DOMAIN,TYPE[,PROTO]`.
//! Inspection: `ids`, `pid`, `proc-list`, `fds`, `env`, `net-ifaces`, `hostname`, `cwd`.
//! Control: `sleep:SECONDS`, `alloc:MB`, `exit:CODE`.
//!
//! `--help` prints each with one line of description.
//!
//! # Building
//!
//! `hack/build-probe` builds it static (glibc, `+crt-static`) and prints the path, `target/probe/runsbx-probe`.
//! Before `main`, static glibc and Rust's std make these syscalls, which a filter must allow for the probe to start
//! (any glibc program needs most of them): brk, arch_prctl, set_tid_address, set_robust_list, rseq, prlimit64,
//! readlink(/proc/self/exe), getrandom, mprotect, poll, rt_sigaction, openat+read(/proc/self/maps),
//! sched_getaffinity, sigaltstack, mmap, gettid.

mod fs;
mod info;
mod kernel;
mod net;
mod process;
mod report;
mod spec;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use report::{check_ret, Outcome};
use spec::{Check, Planned};

/// Set by the SIGSYS handler: a seccomp RET_TRAP filter stopped a syscall.
static TRAPPED: AtomicBool = AtomicBool::new(false);

/// A seccomp RET_TRAP filter skips the syscall and leaves the syscall number in rax, which the caller would take
/// for a result (a trapped `open` would "return" fd 2). Make it read as ENOSYS instead, and note the trap.
extern "C" fn on_sigsys(_: libc::c_int, _: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    TRAPPED.store(true, Ordering::SeqCst);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: for an SA_SIGINFO handler, ctx is the interrupted thread's ucontext_t, which the kernel restores.
    unsafe {
        let uc = ctx.cast::<libc::ucontext_t>();
        (*uc).uc_mcontext.gregs[libc::REG_RAX as usize] = -i64::from(libc::ENOSYS);
    }
}

/// Catches SIGSYS so that a RET_TRAP filter is reported (the trapped syscall fails with ENOSYS and the line gets
/// `"signal":"SIGSYS"`) instead of killing the probe. A RET_KILL filter cannot be caught, by design.
fn catch_sigsys() {
    type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);
    // SAFETY: zeroed sigaction plus a handler that only stores to an atomic and edits its own ucontext.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigsys as Handler as libc::sighandler_t;
        sa.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGSYS, &sa, std::ptr::null_mut());
    }
}

fn sleep(secs: f64) -> Result<Outcome, Outcome> {
    std::thread::sleep(std::time::Duration::from_secs_f64(secs));
    Ok(Outcome::ok(0, format!("slept {secs} s")))
}

/// Maps and touches `mb` MiB, and keeps it until exit so the caller can watch RSS or the memory limit.
fn alloc(mb: u64) -> Result<Outcome, Outcome> {
    let len = (mb as usize) << 20;
    // SAFETY: an anonymous private mapping; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        check_ret("mmap", -1)?;
    }
    let base = p.cast::<u8>();
    for off in (0..len).step_by(4096) {
        // SAFETY: off < len, inside the mapping.
        unsafe { base.add(off).write_volatile(1) };
    }
    Ok(Outcome::ok(
        mb as i64,
        format!("{mb} MiB mapped and touched, held until exit"),
    ))
}

fn run(check: &Check) -> Result<Outcome, Outcome> {
    match check {
        Check::Read(p) => fs::read(p),
        Check::Write(p, t) => fs::write(p, t.as_deref()),
        Check::List(p) => fs::list(p),
        Check::Mkdir(p) => fs::mkdir(p),
        Check::Rmdir(p) => fs::rmdir(p),
        Check::Unlink(p) => fs::unlink(p),
        Check::Rename(a, b) => fs::rename(a, b),
        Check::Link(a, b) => fs::link(a, b),
        Check::Symlink(t, l) => fs::symlink(t, l),
        Check::SymlinkOpen(l, t) => fs::symlink_open(l, t),
        Check::Truncate(p, len) => fs::truncate(p, *len),
        Check::Mkfifo(p) => fs::mkfifo(p),
        Check::Mknod(p, maj, min) => fs::mknod(p, *maj, *min),
        Check::Readlink(p) => fs::readlink(p),
        Check::Chdir(p) => fs::chdir(p),
        Check::IoctlDev(p, req) => fs::ioctl_dev(p, *req),
        Check::Exec(argv) => process::exec(argv),
        Check::Fork => process::fork(),
        Check::Clone3Fork => process::clone3_fork(),
        Check::Thread => process::thread(),
        Check::PtraceAttach(pid) => process::ptrace_attach(*pid),
        Check::Kill(pid, sig) => process::kill(*pid, *sig),
        Check::Raw(r) => kernel::raw(r),
        Check::Mount(p) => kernel::mount(p),
        Check::Unshare(ns) => kernel::unshare(ns),
        Check::Setns(p) => kernel::setns(p),
        Check::Tiocsti { fd, high } => kernel::tiocsti(*fd, *high),
        Check::X32 => kernel::x32(),
        Check::Int80 => kernel::int80(),
        Check::LandlockAbi => kernel::landlock_abi(),
        Check::TcpConnect(a) => net::tcp_connect(a),
        Check::TcpBind(a) => net::tcp_bind(a),
        Check::UdpConnect(a) => net::udp_connect(a),
        Check::UdpSendto(a) => net::udp_sendto(a),
        Check::UnixConnect(p) => net::unix_connect(p),
        Check::UnixAbstractConnect(n) => net::unix_abstract_connect(n),
        Check::Mptcp(a) => net::mptcp(a.as_ref()),
        Check::Socket(d, t, p) => net::socket_kind(*d, *t, *p),
        Check::Ids => info::ids(),
        Check::Pid => info::pid(),
        Check::ProcList => info::proc_list(),
        Check::Fds => info::fds(),
        Check::Env => info::env(),
        Check::NetIfaces => info::net_ifaces(),
        Check::Hostname => info::hostname(),
        Check::Cwd => fs::cwd(),
        Check::Sleep(s) => sleep(*s),
        Check::Alloc(mb) => alloc(*mb),
        Check::Exit(code) => Ok(Outcome::ok((*code).into(), format!("exiting {code}"))),
    }
}

fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout must not stop the checks: their side effects may be what the caller watches.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn help() {
    println!("usage: runsbx-probe CHECK [CHECK...]   (CHECK = NAME or NAME:ARG[,ARG...]; one JSON line per check)\n");
    for (synopsis, what) in spec::HELP {
        println!("  {synopsis:<28} {what}");
    }
    println!(
        "\nharmless raw syscalls (bad pointer/fd; the errno when the call reaches the kernel):"
    );
    for r in kernel::RAW {
        println!("  {:<28} {}", r.name, r.reached);
    }
}

fn main() {
    let words: Vec<String> = match std::env::args_os()
        .skip(1)
        .map(|a| a.into_string())
        .collect()
    {
        Ok(w) => w,
        Err(bad) => {
            eprintln!("runsbx-probe: argument is not UTF-8: {bad:?}");
            std::process::exit(2);
        }
    };
    if words.iter().any(|w| w == "--help" || w == "-h") {
        help();
        return;
    }
    if words.is_empty() {
        eprintln!("usage: runsbx-probe CHECK [CHECK...]; see --help");
        std::process::exit(2);
    }
    let plan: Vec<Planned> = match spec::parse_all(&words) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("runsbx-probe: {e}");
            std::process::exit(2);
        }
    };
    catch_sigsys();
    for Planned { word, check } in &plan {
        TRAPPED.store(false, Ordering::SeqCst);
        let mut outcome = run(check).unwrap_or_else(|o| o);
        if TRAPPED.load(Ordering::SeqCst) {
            outcome.signal = Some("SIGSYS");
        }
        emit(&outcome.to_json(word));
        if let Check::Exit(code) = check {
            // SAFETY: leaving now, without running destructors, is the point.
            unsafe { libc::_exit(*code) };
        }
    }
}
