//! Loading compiled seccomp programs into the calling thread.
//!
//! [`load`] only installs what `runsbx_policy::seccomp::compile` produced, with raw
//! `seccomp(2)`. It does not set no_new_privs: the caller decides (the Executor sets it
//! first; without it or CAP_SYS_ADMIN the kernel answers EACCES). Call it last before
//! exec: from then on every syscall of this process goes through the filter.
use runsbx_policy::seccomp::SeccompProgram;

/// Installs every filter of `program`, in order, with `program.flags`.
pub fn load(program: &SeccompProgram) -> std::io::Result<()> {
    for filter in &program.filters {
        if filter.is_empty() || filter.len() > usize::from(u16::MAX) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("seccomp filter of {} instructions", filter.len()),
            ));
        }
        let prog = libc::sock_fprog {
            len: filter.len() as u16,
            // seccompiler's sock_filter is #[repr(C)] with libc's layout
            // (u16 code, u8 jt, u8 jf, u32 k); the kernel only reads through it.
            filter: filter.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: `prog` points at `filter`, which outlives the call; the kernel copies
        // the program and does not keep the pointer.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                program.flags as libc::c_ulong,
                &prog as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            // With TSYNC, a positive return is the id of a thread that could not sync.
            if rc > 0 {
                return Err(std::io::Error::other(format!(
                    "seccomp: thread {rc} could not be synchronized (TSYNC)"
                )));
            }
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Real filters in a forked child (seccomp needs no privilege once no_new_privs is
    //! set). The child reports errnos over a pipe; the parent asserts.
    use super::*;
    use runsbx_policy::{profile, seccomp};
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// Runs `f` in a forked child after loading `program`; returns what it wrote to
    /// the pipe and its raw wait status.
    /// What runs in the child: a reporter writing to the pipe, and the pipe's fd.
    type ChildFn = fn(&mut dyn FnMut(&str), i32);

    fn in_child(program: &SeccompProgram, f: ChildFn) -> (String, i32) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both fds were just created by pipe2 and are owned here only.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the child only calls async-signal-safe functions (prctl, seccomp,
        // raw syscalls, write) plus the test closure, which does the same, then _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let wfd = w.as_raw_fd();
            let mut report = |s: &str| {
                // SAFETY: writing a valid buffer to our pipe end.
                unsafe { libc::write(wfd, s.as_ptr().cast(), s.len()) };
            };
            // SAFETY: plain prctl with integer arguments.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                report("nnp failed");
                // SAFETY: terminating the forked child without running destructors.
                unsafe { libc::_exit(1) };
            }
            if let Err(e) = load(program) {
                report(&format!("load failed: {e}"));
                // SAFETY: as above.
                unsafe { libc::_exit(1) };
            }
            f(&mut report, wfd);
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        drop(w);
        let mut out = String::new();
        std::fs::File::from(r).read_to_string(&mut out).unwrap();
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        (out, status)
    }

    fn errno_of(rc: libc::c_long) -> i32 {
        if rc < 0 {
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
        } else {
            0
        }
    }

    fn compile(json: &str) -> SeccompProgram {
        seccomp::compile(&serde_json::from_str(json).unwrap()).unwrap()
    }

    #[test]
    fn tiocsti_high_bits_and_errno() {
        let p = compile(
            r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
            {"names":["ioctl"],"action":"SCMP_ACT_ERRNO","errnoRet":1,"args":[{"index":1,"value":21522,"op":"SCMP_CMP_EQ"}]},
            {"names":["getppid"],"action":"SCMP_ACT_ERRNO","errnoRet":13},
            {"names":["clone"],"action":"SCMP_ACT_KILL_PROCESS","args":[{"index":0,"value":268435456,"valueTwo":268435456,"op":"SCMP_CMP_MASKED_EQ"}]}]}"#,
        );
        let (out, status) = in_child(&p, |report, _| {
            // Bad fd: a call that reaches the kernel fails with EBADF, a filtered one EPERM.
            // SAFETY: ioctl on an invalid fd with an integer argument has no effect.
            let a = errno_of(unsafe { libc::syscall(libc::SYS_ioctl, -1, libc::TIOCSTI, 0) });
            // SAFETY: as above.
            let b =
                errno_of(unsafe { libc::syscall(libc::SYS_ioctl, -1, libc::TIOCSTI | 1 << 32, 0) });
            // SAFETY: as above.
            let c = errno_of(unsafe { libc::syscall(libc::SYS_ioctl, -1, libc::TCGETS, 0) });
            // SAFETY: getppid has no arguments.
            let d = errno_of(unsafe { libc::syscall(libc::SYS_getppid) });
            report(&format!("{a} {b} {c} {d}"));
        });
        assert!(WIFEXITED_OK(status), "status {status}");
        assert_eq!(out, format!("1 1 {} 13", libc::EBADF));
    }

    #[allow(non_snake_case)]
    fn WIFEXITED_OK(status: i32) -> bool {
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }

    #[test]
    fn int80_is_killed_without_the_x86_arch() {
        let p = compile(r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#);
        let (_, status) = in_child(&p, |_, _| {
            // getpid through the i386 entry point.
            // SAFETY: int 0x80 with eax=20 (i386 getpid) reads no memory.
            unsafe { std::arch::asm!("int 0x80", inlateout("eax") 20 => _, options(nostack)) };
        });
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSYS,
            "status {status}"
        );
    }

    #[test]
    fn x32_is_killed_without_the_x32_arch() {
        let p = compile(r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#);
        let (_, status) = in_child(&p, |_, _| {
            // SAFETY: x32 getpid (39 | x32 bit) takes no arguments.
            unsafe { libc::syscall(0x4000_0000 | libc::SYS_getpid) };
        });
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSYS,
            "status {status}"
        );
    }

    /// The sandbox profile, then exec of the real Python: imports, threads, files.
    #[test]
    fn python_runs_under_the_sandbox_profile() {
        if !std::path::Path::new("/usr/bin/python3").exists() {
            eprintln!("skipped: /usr/bin/python3 not present");
            return;
        }
        let p = seccomp::compile(&profile::sandbox_seccomp()).unwrap();
        let (out, status) = in_child(&p, |report, wfd| {
            // SAFETY: python's stdout becomes the report pipe (dup2 clears CLOEXEC).
            unsafe { libc::dup2(wfd, 1) };
            let dir = c"/tmp";
            // SAFETY: chdir to a static NUL-terminated path.
            unsafe { libc::chdir(dir.as_ptr()) };
            let code =
                c"import json, re, math, decimal, collections, threading, os, socket, subprocess
d = decimal.Decimal(1) / 7
t = threading.Thread(target=lambda: None); t.start(); t.join()
fn = 'runsbx-seccomp-test-%d' % os.getpid()
open(fn, 'w').write(json.dumps({'x': math.pi}))
assert json.load(open(fn))['x'] == math.pi
os.unlink(fn)
errs = []
for f in (lambda: socket.socket(), lambda: os.fork(), lambda: subprocess.run(['/bin/true'])):
    try:
        f(); errs.append('ok')
    except OSError as e:
        errs.append(e.errno)
a, b = socket.socketpair(); a.send(b'x'); assert b.recv(1) == b'x'
print('py-ok', re.sub('a', 'b', 'a'), collections.Counter('aa')['a'], errs, end='')";
            let argv = [
                c"python3".as_ptr(),
                c"-I".as_ptr(),
                c"-S".as_ptr(),
                c"-c".as_ptr(),
                code.as_ptr(),
                std::ptr::null(),
            ];
            let envp = [std::ptr::null()];
            // SAFETY: exec with NUL-terminated argv/envp arrays that live until exec.
            unsafe { libc::execve(c"/usr/bin/python3".as_ptr(), argv.as_ptr(), envp.as_ptr()) };
            report("execve failed");
        });
        assert!(
            WIFEXITED_OK(status),
            "python under the sandbox profile: status {status}, output {out:?}"
        );
        assert_eq!(out, "py-ok b 2 [1, 1, 1]");
    }
}
