//! New processes and threads, exec, signals and ptrace. Every child created here calls `_exit(0)` at once, so a
//! check that succeeds leaves nothing running.

use std::ffi::CString;

use crate::report::{check_ret, io_step, last_errno, strerror, Outcome};

type Res = Result<Outcome, Outcome>;

/// Waits for `pid` and describes how it ended.
fn reap(pid: libc::pid_t) -> String {
    let mut status = 0;
    // SAFETY: status is a valid out pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
    if r < 0 {
        return format!("waitpid: {}", strerror(last_errno()));
    }
    if libc::WIFEXITED(status) {
        format!("child {pid} exited {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("child {pid} killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("child {pid} status {status:#x}")
    }
}

/// execve with the current environment. Returns only on failure; on success the new program writes the output.
pub fn exec(argv: &[String]) -> Res {
    let cargs: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_str()).expect("argv has no NUL"))
        .collect();
    let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    extern "C" {
        static environ: *const *const libc::c_char;
    }
    // SAFETY: path and argv are NUL-terminated and live across the call; environ is libc's.
    let ret = unsafe { libc::execve(ptrs[0], ptrs.as_ptr(), environ) };
    check_ret("execve", ret.into())?;
    unreachable!("execve returned without an error")
}

pub fn fork() -> Res {
    // SAFETY: the child only calls _exit, which is async-signal-safe.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: leaving the child at once.
        unsafe { libc::_exit(0) };
    }
    check_ret("fork", pid.into())?;
    Ok(Outcome::ok(pid.into(), reap(pid)))
}

/// clone3 with a fork-like argument (no flags, SIGCHLD on exit). See `clone3` in [`crate::kernel::RAW`] for the
/// harmless form.
pub fn clone3_fork() -> Res {
    #[repr(C)]
    struct CloneArgs {
        flags: u64,
        pidfd: u64,
        child_tid: u64,
        parent_tid: u64,
        exit_signal: u64,
        stack: u64,
        stack_size: u64,
        tls: u64,
    }
    let args = CloneArgs {
        flags: 0,
        pidfd: 0,
        child_tid: 0,
        parent_tid: 0,
        exit_signal: libc::SIGCHLD as u64,
        stack: 0,
        stack_size: 0,
        tls: 0,
    };
    // SAFETY: without CLONE_VM or a stack the child gets a copy of this address space, as with fork; it only
    // calls _exit.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if pid == 0 {
        // SAFETY: leaving the child at once.
        unsafe { libc::_exit(0) };
    }
    check_ret("clone3", pid)?;
    Ok(Outcome::ok(pid, reap(pid as libc::pid_t)))
}

pub fn thread() -> Res {
    let handle = io_step(
        "pthread_create",
        std::thread::Builder::new().spawn(|| {
            // SAFETY: gettid has no preconditions.
            unsafe { libc::gettid() }
        }),
    )?;
    match handle.join() {
        Ok(tid) => Ok(Outcome::ok(
            tid.into(),
            format!("thread {tid} ran and was joined"),
        )),
        Err(_) => Err(Outcome::refused("thread panicked")),
    }
}

/// PTRACE_ATTACH, wait for the stop, detach. The target is stopped for as long as that takes.
pub fn ptrace_attach(pid: i32) -> Res {
    let null = std::ptr::null_mut::<libc::c_void>();
    // SAFETY: PTRACE_ATTACH takes no pointers.
    let ret = unsafe { libc::ptrace(libc::PTRACE_ATTACH, pid, null, null) };
    check_ret("ptrace attach", ret)?;
    let mut status = 0;
    // SAFETY: status is a valid out pointer.
    unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
    // SAFETY: detaching the tracee we attached; signal 0.
    unsafe { libc::ptrace(libc::PTRACE_DETACH, pid, null, null) };
    Ok(Outcome::ok(ret, format!("attached to {pid} and detached")))
}

pub fn kill(pid: i32, sig: i32) -> Res {
    // SAFETY: plain integers.
    let ret = check_ret("kill", unsafe { libc::kill(pid, sig) }.into())?;
    Ok(Outcome::ok(ret, format!("sent signal {sig} to {pid}")))
}
