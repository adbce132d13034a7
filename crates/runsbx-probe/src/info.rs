//! What the process can see about itself and its surroundings. These checks read; `ok` is false only when even
//! the fallback could not be read. Each one has a fallback that works without /proc where there is one.

use crate::report::{check_ret, io_step, Json, Outcome};

type Res = Result<Outcome, Outcome>;

/// `Key:\tvalue` lines of /proc/self/status whose key is in `keys` (or starts with "Landlock").
fn status_fields(keys: &[&str]) -> Vec<(String, Json)> {
    let Ok(text) = std::fs::read_to_string("/proc/self/status") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| keys.contains(k) || k.starts_with("Landlock"))
        .map(|(k, v)| (k.to_string(), Json::str(v.trim())))
        .collect()
}

pub fn ids() -> Res {
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: valid out pointers.
    unsafe { libc::getresuid(&mut r, &mut e, &mut s) };
    let euid = e;
    let uid = Json::Arr(vec![
        Json::Int(r.into()),
        Json::Int(e.into()),
        Json::Int(s.into()),
    ]);
    // SAFETY: valid out pointers.
    unsafe { libc::getresgid(&mut r, &mut e, &mut s) };
    let gid = Json::Arr(vec![
        Json::Int(r.into()),
        Json::Int(e.into()),
        Json::Int(s.into()),
    ]);
    let mut groups = vec![0 as libc::gid_t; 256];
    // SAFETY: groups has room for 256 entries.
    let n = unsafe { libc::getgroups(groups.len() as i32, groups.as_mut_ptr()) }.max(0) as usize;
    let groups = Json::Arr(groups[..n].iter().map(|g| Json::Int((*g).into())).collect());

    // capget works without /proc. Version 3: two 32-bit halves per set.
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut hdr = Header {
        version: 0x2008_0522,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: hdr and data are the layout capget(2) expects for version 3.
    let cap_ret =
        unsafe { libc::syscall(libc::SYS_capget, &mut hdr as *mut Header, data.as_mut_ptr()) };
    let set = |f: fn(&Data) -> u32| {
        Json::str(format!(
            "{:016x}",
            (u64::from(f(&data[1])) << 32) | u64::from(f(&data[0]))
        ))
    };
    let caps = if cap_ret == 0 {
        Json::Obj(vec![
            ("effective".into(), set(|d| d.effective)),
            ("permitted".into(), set(|d| d.permitted)),
            ("inheritable".into(), set(|d| d.inheritable)),
        ])
    } else {
        Json::Null
    };
    // SAFETY: read-only prctl queries.
    let nnp = unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) };
    // SAFETY: in filter mode this returns 2; it would only kill the caller in strict mode, which no sandbox uses.
    let seccomp = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };

    let mut fields = vec![
        ("uid".to_string(), uid),
        ("gid".to_string(), gid),
        ("groups".to_string(), groups),
        ("capget".to_string(), caps),
        ("no_new_privs".to_string(), Json::Int(nnp.into())),
        ("seccomp_mode".to_string(), Json::Int(seccomp.into())),
    ];
    fields.extend(status_fields(&[
        "CapInh",
        "CapPrm",
        "CapEff",
        "CapBnd",
        "CapAmb",
        "NoNewPrivs",
        "Seccomp",
        "Seccomp_filters",
    ]));
    Ok(Outcome::ok(0, format!("euid {euid}")).with_data(Json::Obj(fields)))
}

pub fn pid() -> Res {
    // SAFETY: no preconditions.
    let (pid, ppid) = unsafe { (libc::getpid(), libc::getppid()) };
    let mut fields = vec![
        ("pid".to_string(), Json::Int(pid.into())),
        ("ppid".to_string(), Json::Int(ppid.into())),
    ];
    fields.extend(status_fields(&["NSpid"]));
    Ok(Outcome::ok(pid.into(), format!("pid {pid}")).with_data(Json::Obj(fields)))
}

pub fn proc_list() -> Res {
    let mut pids: Vec<(i64, String)> = Vec::new();
    for e in io_step("read_dir /proc", std::fs::read_dir("/proc"))?.flatten() {
        if let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i64>().ok()) {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            pids.push((pid, comm.trim_end().to_string()));
        }
    }
    pids.sort();
    let n = pids.len() as i64;
    let data = pids
        .into_iter()
        .map(|(p, c)| {
            Json::Obj(vec![
                ("pid".into(), Json::Int(p)),
                ("comm".into(), Json::Str(c)),
            ])
        })
        .collect();
    Ok(Outcome::ok(n, format!("{n} pids visible")).with_data(Json::Arr(data)))
}

/// Open fds with their targets, not counting the one used to list them.
pub fn fds() -> Res {
    let path = c"/proc/self/fd";
    // SAFETY: valid C string.
    let dir = unsafe { libc::opendir(path.as_ptr()) };
    let mut found: Vec<(i32, String)> = Vec::new();
    let how;
    if dir.is_null() {
        // No /proc: fcntl tells which fds exist, not what they are.
        how = "fcntl scan of 0..1023";
        for fd in 0..1024 {
            // SAFETY: F_GETFD on any integer is harmless.
            if unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0 {
                found.push((fd, String::new()));
            }
        }
    } else {
        how = "/proc/self/fd";
        // SAFETY: dir is an open DIR*.
        let own = unsafe { libc::dirfd(dir) };
        loop {
            // SAFETY: dir is an open DIR*; the entry is read before the next readdir.
            let ent = unsafe { libc::readdir(dir) };
            if ent.is_null() {
                break;
            }
            // SAFETY: d_name is NUL-terminated.
            let name = unsafe { std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()) }
                .to_string_lossy()
                .into_owned();
            let Ok(fd) = name.parse::<i32>() else {
                continue;
            };
            if fd == own {
                continue;
            }
            let target = std::fs::read_link(format!("/proc/self/fd/{fd}"))
                .map(|t| t.to_string_lossy().into_owned())
                .unwrap_or_default();
            found.push((fd, target));
        }
        // SAFETY: dir is closed once.
        unsafe { libc::closedir(dir) };
    }
    found.sort();
    let n = found.len() as i64;
    let data = found
        .into_iter()
        .map(|(fd, t)| (fd.to_string(), Json::Str(t)))
        .collect();
    Ok(Outcome::ok(n, format!("{n} open fds ({how})")).with_data(Json::Obj(data)))
}

pub fn env() -> Res {
    let vars: Vec<(String, Json)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                Json::Str(v.to_string_lossy().into_owned()),
            )
        })
        .collect();
    let n = vars.len() as i64;
    Ok(Outcome::ok(n, format!("{n} variables")).with_data(Json::Obj(vars)))
}

/// Interfaces of this process's network namespace (/proc/net follows the caller; /sys/class/net follows whoever
/// mounted sysfs, so it is only the fallback).
pub fn net_ifaces() -> Res {
    let (names, how) = match std::fs::read_to_string("/proc/net/dev") {
        Ok(text) => {
            let names: Vec<String> = text
                .lines()
                .skip(2)
                .filter_map(|l| l.split_once(':'))
                .map(|(n, _)| n.trim().to_string())
                .collect();
            (names, "/proc/net/dev")
        }
        Err(_) => {
            let mut names: Vec<String> = io_step(
                "read /proc/net/dev or /sys/class/net",
                std::fs::read_dir("/sys/class/net"),
            )?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
            names.sort();
            (names, "/sys/class/net")
        }
    };
    let n = names.len() as i64;
    Ok(Outcome::ok(n, format!("{} ({how})", names.join(" ")))
        .with_data(Json::Arr(names.into_iter().map(Json::Str).collect())))
}

pub fn hostname() -> Res {
    // SAFETY: all-zero is a valid utsname.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid out pointer.
    check_ret("uname", unsafe { libc::uname(&mut u) }.into())?;
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let (node, domain) = (field(&u.nodename), field(&u.domainname));
    let data = Json::Obj(vec![
        ("nodename".into(), Json::str(node.clone())),
        ("domainname".into(), Json::Str(domain)),
    ]);
    Ok(Outcome::ok(0, node).with_data(data))
}
