//! Running runsbx from a sealed, anonymous copy of its own binary.
//!
//! Stops: CVE-2019-5736. A process inside a container opens
//! /proc/<pid>/exe of a runsbx process that has joined the container (the
//! init of `exec`, or `create`'s init before it execs the workload) and
//! writes through it after runsbx exits, replacing the host's runsbx binary
//! for the next root caller. With this, /proc/<pid>/exe of every runsbx
//! process that can meet a container is a sealed memfd: the kernel refuses
//! writes to it (F_SEAL_WRITE) and nothing on the host's disk is reachable.
//! Layer: the runtime binary itself; libcontainer does not protect it.
//! Which commands need it: see `Command::needs_sealed_binary` in the CLI.
//! Checked by: tests/lifecycle.rs
//! (`init_runs_from_a_sealed_copy_when_its_pid_namespace_is_shared`).

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SEALS: libc::c_int =
    libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;

/// True when the running binary is already a sealed memfd.
pub fn is_sealed() -> bool {
    let Ok(exe) = File::open("/proc/self/exe") else {
        return false;
    };
    // SAFETY: F_GET_SEALS takes no pointer; the fd is valid for the call.
    let seals = unsafe { libc::fcntl(exe.as_raw_fd(), libc::F_GET_SEALS) };
    seals >= 0 && seals & SEALS == SEALS
}

/// Copies /proc/self/exe into a sealed memfd and re-executes it with the
/// same arguments and environment. Returns only on failure.
pub fn reexec_sealed() -> io::Error {
    match try_reexec() {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

fn memfd() -> io::Result<OwnedFd> {
    let name = c"runsbx";
    let base = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // MFD_EXEC (Linux 6.3) keeps the copy executable where
    // vm.memfd_noexec would otherwise default it to non-executable.
    for flags in [base | libc::MFD_EXEC, base] {
        // SAFETY: name is a valid C string; the call returns a new fd or -1.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
        if fd >= 0 {
            // SAFETY: the kernel just returned this descriptor to us alone.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINVAL) {
            return Err(err);
        }
    }
    Err(io::Error::from_raw_os_error(libc::EINVAL))
}

fn try_reexec() -> io::Result<std::convert::Infallible> {
    let mut exe = File::open("/proc/self/exe")?;
    let fd = memfd()?;
    let mut copy = File::from(fd);
    io::copy(&mut exe, &mut copy)?;
    // SAFETY: F_ADD_SEALS takes an integer; the fd is valid.
    if unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_ADD_SEALS, SEALS) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let args: Vec<CString> = std::env::args_os()
        .map(|a| CString::new(a.into_encoded_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let env: Vec<CString> = std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k.into_encoded_bytes();
            kv.push(b'=');
            kv.extend(v.into_encoded_bytes());
            CString::new(kv)
        })
        .collect::<Result<_, _>>()
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let argv: Vec<*const libc::c_char> = args
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const libc::c_char> = env
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let empty: &CStr = c"";
    // SAFETY: argv and envp are NULL-terminated arrays of valid C strings
    // that outlive the call; execveat only returns on failure.
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            copy.as_raw_fd(),
            empty.as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        );
    }
    Err(io::Error::last_os_error())
}
