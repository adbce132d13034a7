//! File-system checks: one libc call per step, so the errno is the kernel's (or Landlock's, or the filter's) and
//! not something std chose. Nothing here truncates or overwrites data: `write` appends, `truncate` defaults to the
//! current size.

use std::ffi::CString;

use crate::report::{check_ret, io_step, Json, Outcome};

type Res = Result<Outcome, Outcome>;

fn c(s: &str) -> CString {
    CString::new(s).expect("argv has no NUL")
}

fn close(fd: i32) {
    // SAFETY: fd was returned by open and is closed once.
    unsafe { libc::close(fd) };
}

fn open(path: &str, flags: i32, mode: libc::mode_t) -> Result<i32, Outcome> {
    let p = c(path);
    // SAFETY: p is a valid C string.
    let fd = unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) };
    Ok(check_ret("open", fd.into())? as i32)
}

/// Reads up to 4 KiB from fd; ret = bytes read, detail = the start of the content.
fn read_fd(fd: i32) -> Res {
    let mut buf = vec![0u8; 4096];
    // SAFETY: buf is 4096 writable bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    let r = check_ret("read", n as i64);
    close(fd);
    let n = r? as usize;
    let text = String::from_utf8_lossy(&buf[..n.min(256)]).into_owned();
    Ok(Outcome::ok(n as i64, text))
}

pub fn read(path: &str) -> Res {
    read_fd(open(path, libc::O_RDONLY, 0)?)
}

pub fn write(path: &str, text: Option<&str>) -> Res {
    let fd = open(path, libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND, 0o644)?;
    let data = text.unwrap_or("runsbx-probe\n");
    // SAFETY: data is valid for data.len() bytes.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let r = check_ret("write", n as i64);
    close(fd);
    let n = r?;
    Ok(Outcome::ok(n, format!("appended {n} bytes")))
}

pub fn list(path: &str) -> Res {
    let entries = io_step("read_dir", std::fs::read_dir(path))?;
    let mut names = Vec::new();
    for e in entries {
        let e = io_step("read_dir entry", e)?;
        names.push(e.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    let n = names.len() as i64;
    Ok(Outcome::ok(n, format!("{n} entries"))
        .with_data(Json::Arr(names.into_iter().map(Json::Str).collect())))
}

/// Runs a one-path libc call and reports its result.
fn one(step: &str, path: &str, f: impl FnOnce(*const libc::c_char) -> libc::c_int) -> Res {
    let p = c(path);
    let ret = check_ret(step, f(p.as_ptr()).into())?;
    Ok(Outcome::ok(ret, format!("{step} {path}")))
}

/// Runs a two-path libc call and reports its result.
fn two(
    step: &str,
    a: &str,
    b: &str,
    f: impl FnOnce(*const libc::c_char, *const libc::c_char) -> libc::c_int,
) -> Res {
    let (pa, pb) = (c(a), c(b));
    let ret = check_ret(step, f(pa.as_ptr(), pb.as_ptr()).into())?;
    Ok(Outcome::ok(ret, format!("{step} {a} {b}")))
}

// SAFETY (all below): the pointers come from live CStrings in `one`/`two`.
pub fn mkdir(path: &str) -> Res {
    one("mkdir", path, |p| unsafe { libc::mkdir(p, 0o755) })
}

pub fn rmdir(path: &str) -> Res {
    one("rmdir", path, |p| unsafe { libc::rmdir(p) })
}

pub fn unlink(path: &str) -> Res {
    one("unlink", path, |p| unsafe { libc::unlink(p) })
}

pub fn mkfifo(path: &str) -> Res {
    one("mkfifo", path, |p| unsafe { libc::mkfifo(p, 0o644) })
}

pub fn mknod(path: &str, major: u32, minor: u32) -> Res {
    let dev = libc::makedev(major, minor);
    one("mknod", path, |p| unsafe {
        libc::mknod(p, libc::S_IFCHR | 0o666, dev)
    })
}

pub fn chdir(path: &str) -> Res {
    one("chdir", path, |p| unsafe { libc::chdir(p) })
}

pub fn rename(from: &str, to: &str) -> Res {
    two("rename", from, to, |a, b| unsafe { libc::rename(a, b) })
}

pub fn link(existing: &str, new: &str) -> Res {
    two("link", existing, new, |a, b| unsafe { libc::link(a, b) })
}

pub fn symlink(target: &str, link: &str) -> Res {
    two("symlink", target, link, |a, b| unsafe {
        libc::symlink(a, b)
    })
}

/// Creates LINK -> TARGET (where writing is allowed), then reads TARGET through it: a sandbox that checks the
/// link's path instead of the final inode lets this through. The link is removed afterwards.
pub fn symlink_open(link: &str, target: &str) -> Res {
    symlink(target, link).map_err(|mut o| {
        o.detail = format!("symlink: {}", o.detail);
        o
    })?;
    let r = open(link, libc::O_RDONLY, 0).and_then(read_fd);
    let l = c(link);
    // SAFETY: valid C string.
    unsafe { libc::unlink(l.as_ptr()) };
    r
}

pub fn truncate(path: &str, len: Option<u64>) -> Res {
    let p = c(path);
    let len = match len {
        Some(l) => l,
        None => io_step("stat", std::fs::metadata(path))?.len(),
    };
    // SAFETY: valid C string.
    let ret = check_ret(
        "truncate",
        unsafe { libc::truncate(p.as_ptr(), len as libc::off_t) }.into(),
    )?;
    Ok(Outcome::ok(ret, format!("truncated {path} to {len} bytes")))
}

/// A read-only ioctl request [`ioctl_dev`] may send; each fills an int and changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevIoctl {
    /// FIONREAD: bytes ready to read. Not one of the requests Landlock always allows.
    Fionread,
    /// RNDGETENTCNT on /dev/random or /dev/urandom: the entropy count; answered by the driver.
    Rndgetentcnt,
}

impl DevIoctl {
    pub fn from_name(s: &str) -> Option<DevIoctl> {
        match s {
            "fionread" => Some(DevIoctl::Fionread),
            "rndgetentcnt" => Some(DevIoctl::Rndgetentcnt),
            _ => None,
        }
    }

    fn request(self) -> libc::c_ulong {
        match self {
            // glibc's FIONREAD is a c_ulong, musl's a c_int.
            #[allow(clippy::unnecessary_cast)]
            DevIoctl::Fionread => libc::FIONREAD as libc::c_ulong,
            // _IOR('R', 0x00, int)
            DevIoctl::Rndgetentcnt => 0x8004_5200,
        }
    }
}

/// Opens PATH read-only and sends one read-only ioctl with a valid int buffer: Landlock's `ioctl_dev` (ABI 5) is
/// checked against the rights the file was opened with, before the driver; a driver without the request answers
/// ENOTTY, which still shows the call got through.
pub fn ioctl_dev(path: &str, req: DevIoctl) -> Res {
    let fd = open(path, libc::O_RDONLY | libc::O_NONBLOCK, 0)?;
    let mut value: libc::c_int = 0;
    // SAFETY: value is a writable int, which is what both requests fill.
    let ret = unsafe { libc::ioctl(fd, req.request() as _, &mut value as *mut libc::c_int) };
    let r = check_ret("ioctl", ret.into());
    close(fd);
    r?;
    Ok(Outcome::ok(
        value.into(),
        format!("ioctl {req:?} on {path}: {value}"),
    ))
}

pub fn readlink(path: &str) -> Res {
    let target = io_step("readlink", std::fs::read_link(path))?;
    Ok(Outcome::ok(0, target.to_string_lossy()))
}

/// The raw getcwd syscall: glibc turns the kernel's "(unreachable)/..." (a cwd outside the root, as in
/// CVE-2024-21626) into ENOENT; the syscall shows it.
pub fn cwd() -> Res {
    let mut buf = vec![0u8; 4096];
    // SAFETY: buf is 4096 writable bytes.
    let n = unsafe { libc::syscall(libc::SYS_getcwd, buf.as_mut_ptr(), buf.len()) };
    let n = check_ret("getcwd", n)?;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(Outcome::ok(n, String::from_utf8_lossy(&buf[..end])))
}
