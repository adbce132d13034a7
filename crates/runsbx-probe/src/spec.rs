//! Command-line words to checks. Pure: nothing here touches the system, so all of it is unit-tested.
//!
//! A word is `NAME` or `NAME:ARGS`; ARGS is split on `,` into as many arguments as the check takes (the last one
//! keeps any further commas). `exec:PATH` takes every following word as the program's argv[1..].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::fs::DevIoctl;
use crate::kernel::{self, Raw};

/// One parsed check. Paths are kept as given; nothing is resolved here.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    // Files.
    Read(String),
    Write(String, Option<String>),
    List(String),
    Mkdir(String),
    Rmdir(String),
    Unlink(String),
    Rename(String, String),
    Link(String, String),
    Symlink(String, String),
    SymlinkOpen(String, String),
    Truncate(String, Option<u64>),
    Mkfifo(String),
    Mknod(String, u32, u32),
    Readlink(String),
    Chdir(String),
    IoctlDev(String, DevIoctl),
    // Processes.
    Exec(Vec<String>),
    Fork,
    Clone3Fork,
    Thread,
    PtraceAttach(i32),
    Kill(i32, i32),
    // Kernel surface.
    Raw(&'static Raw),
    Mount(String),
    Unshare(Vec<String>),
    Setns(String),
    Tiocsti { fd: i32, high: bool },
    X32,
    Int80,
    LandlockAbi,
    // Network.
    TcpConnect(SocketAddr),
    TcpBind(SocketAddr),
    UdpConnect(SocketAddr),
    UdpSendto(SocketAddr),
    UnixConnect(String),
    UnixAbstractConnect(String),
    Mptcp(Option<SocketAddr>),
    Socket(i32, i32, i32),
    // What the process sees.
    Ids,
    Pid,
    ProcList,
    Fds,
    Env,
    NetIfaces,
    Hostname,
    Cwd,
    // Control.
    Sleep(f64),
    Alloc(u64),
    Exit(i32),
}

/// A check with the word it came from, which is echoed as `"check"` in its output line.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub word: String,
    pub check: Check,
}

/// `(synopsis, what it does)` for `--help`, in the order of the module doc. The raw syscall checks are listed from
/// [`kernel::RAW`].
pub const HELP: &[(&str, &str)] = &[
    ("read:FILE", "open O_RDONLY and read up to 4 KiB; detail = the start of the content"),
    ("write:FILE[,TEXT]", "open O_WRONLY|O_CREAT|O_APPEND (never truncates) and write TEXT (default 'runsbx-probe\\n')"),
    ("list:DIR", "list a directory; data = sorted names"),
    ("mkdir:DIR", "mkdir 0755"),
    ("rmdir:DIR", "rmdir"),
    ("unlink:FILE", "unlink"),
    ("rename:FROM,TO", "rename"),
    ("link:EXISTING,NEW", "hard link"),
    ("symlink:TARGET,LINK", "create a symlink LINK -> TARGET"),
    ("symlink-open:LINK,TARGET", "create LINK -> TARGET, open and read it through the link, remove the link"),
    ("truncate:FILE[,LEN]", "truncate(2) to LEN (default: the current size, so no data changes)"),
    ("mkfifo:PATH", "mkfifo 0644"),
    ("mknod:PATH[,MAJOR,MINOR]", "mknod a character device (default 1,3 = /dev/null's numbers); left in place"),
    ("readlink:PATH", "readlink; detail = target"),
    ("chdir:PATH", "chdir (affects the checks after it)"),
    ("ioctl-dev:PATH[,REQ]", "open O_RDONLY, then a read-only ioctl REQ (fionread (default), rndgetentcnt); ret = the int it filled"),
    ("exec:PATH [ARG...]", "execve PATH with the remaining words as argv[1..] and the current env; prints only on failure"),
    ("fork", "fork; the child _exits 0; ret = child pid"),
    ("clone3-fork", "raw clone3 with a fork-like struct (flags 0, SIGCHLD); the child _exits 0"),
    ("thread", "spawn and join a thread (glibc tries clone3, then clone)"),
    ("ptrace-attach:PID", "PTRACE_ATTACH to PID, wait for the stop, PTRACE_DETACH"),
    ("kill[:PID[,SIG]]", "kill(PID, SIG); default 1,0 (existence/permission check only); SIG by number or name"),
    ("mount[:PATH]", "no PATH: mount with a bad target pointer (EFAULT); PATH: mount tmpfs there, then detach it"),
    ("unshare[:NS,...]", "unshare the namespaces (user net mnt pid ipc uts cgroup time; default user); stays in effect"),
    ("setns[:PATH]", "no PATH: setns(-1) (EBADF); PATH: open a /proc/PID/ns/* file and setns to it"),
    ("ioctl-tiocsti[:FD]", "ioctl(FD, TIOCSTI, bad pointer), FD default -1: never injects (EBADF/EFAULT/EIO/EPERM)"),
    ("ioctl-tiocsti-high[:FD]", "as ioctl-tiocsti with bit 32 set in the request (CVE-2019-10063), via raw syscall"),
    ("x32", "getpid with __X32_SYSCALL_BIT; ENOSYS when the kernel has no x32"),
    ("int80", "32-bit getpid via int 0x80 (x86_64); ok when the i386 entry ran it"),
    ("landlock-abi", "landlock_create_ruleset(NULL, 0, VERSION); ret = ABI"),
    ("tcp-connect:HOST:PORT", "TCP connect with a 3 s timeout (numeric IPv4 or [IPv6])"),
    ("tcp-bind:[ADDR:]PORT", "bind and listen (ADDR default 0.0.0.0); ret = bound port"),
    ("udp-connect:HOST:PORT", "connect a UDP socket and send one byte"),
    ("udp-sendto:HOST:PORT", "sendto one byte from an unconnected UDP socket"),
    ("unix-connect:PATH", "connect an AF_UNIX stream socket to PATH"),
    ("unix-abstract-connect:NAME", "connect an AF_UNIX stream socket to the abstract name NAME"),
    ("mptcp[:HOST:PORT]", "socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP), then connect if HOST:PORT given"),
    ("socket:DOMAIN,TYPE[,PROTO]", "create a socket; DOMAIN unix|inet|inet6|netlink|packet|vsock|N, TYPE stream|dgram|raw|seqpacket|N"),
    ("ids", "uids, gids, groups, capabilities (capget and /proc/self/status), no_new_privs, seccomp mode"),
    ("pid", "ret = getpid(); data = pid, ppid, NSpid"),
    ("proc-list", "pids visible in /proc with their comm; ret = count"),
    ("fds", "open fds with their targets (/proc/self/fd, else an fcntl scan of 0..1023); ret = count"),
    ("env", "the environment as a JSON object"),
    ("net-ifaces", "network interfaces (/proc/net/dev, else /sys/class/net); ret = count"),
    ("hostname", "uname nodename and domainname"),
    ("cwd", "getcwd (shows '(unreachable)' when the cwd is outside the root)"),
    ("sleep:SECONDS", "sleep (fractions allowed)"),
    ("alloc:MB", "mmap and touch MB MiB, kept until exit"),
    ("exit:CODE", "print this check's line, then _exit(CODE)"),
];

fn args<'a>(
    name: &str,
    rest: Option<&'a str>,
    min: usize,
    max: usize,
) -> Result<Vec<&'a str>, String> {
    let parts: Vec<&str> = match rest {
        None => Vec::new(),
        Some(r) => r.splitn(max.max(1), ',').collect(),
    };
    if parts.len() < min || parts.len() > max || parts.iter().any(|p| p.is_empty()) {
        let synopsis = HELP
            .iter()
            .find(|(s, _)| s.split([':', '[', ' ']).next() == Some(name))
            .map_or(name, |h| h.0);
        return Err(format!("{name}: expected {synopsis}"));
    }
    Ok(parts)
}

fn num<T: std::str::FromStr>(name: &str, what: &str, s: &str) -> Result<T, String> {
    s.parse()
        .map_err(|_| format!("{name}: {what} must be a number, got {s:?}"))
}

fn addr(name: &str, s: &str) -> Result<SocketAddr, String> {
    s.parse().map_err(|_| {
        format!("{name}: expected a numeric HOST:PORT (IPv6 as [ADDR]:PORT), got {s:?}")
    })
}

pub fn signal_number(s: &str) -> Option<i32> {
    if let Ok(n) = s.parse() {
        return Some(n);
    }
    let name = s.strip_prefix("SIG").unwrap_or(s);
    let n = match name {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "ABRT" => libc::SIGABRT,
        "KILL" => libc::SIGKILL,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "SEGV" => libc::SIGSEGV,
        "PIPE" => libc::SIGPIPE,
        "ALRM" => libc::SIGALRM,
        "TERM" => libc::SIGTERM,
        "CHLD" => libc::SIGCHLD,
        "CONT" => libc::SIGCONT,
        "STOP" => libc::SIGSTOP,
        "TSTP" => libc::SIGTSTP,
        "SYS" => libc::SIGSYS,
        _ => return None,
    };
    Some(n)
}

pub fn namespace_flag(s: &str) -> Option<i32> {
    Some(match s {
        "user" => libc::CLONE_NEWUSER,
        "net" => libc::CLONE_NEWNET,
        "mnt" => libc::CLONE_NEWNS,
        "pid" => libc::CLONE_NEWPID,
        "ipc" => libc::CLONE_NEWIPC,
        "uts" => libc::CLONE_NEWUTS,
        "cgroup" => libc::CLONE_NEWCGROUP,
        "time" => 0x80, // CLONE_NEWTIME
        _ => return None,
    })
}

fn socket_domain(s: &str) -> Option<i32> {
    Some(match s {
        "unix" => libc::AF_UNIX,
        "inet" => libc::AF_INET,
        "inet6" => libc::AF_INET6,
        "netlink" => libc::AF_NETLINK,
        "packet" => libc::AF_PACKET,
        "vsock" => libc::AF_VSOCK,
        n => return n.parse().ok(),
    })
}

fn socket_type(s: &str) -> Option<i32> {
    Some(match s {
        "stream" => libc::SOCK_STREAM,
        "dgram" => libc::SOCK_DGRAM,
        "raw" => libc::SOCK_RAW,
        "seqpacket" => libc::SOCK_SEQPACKET,
        n => return n.parse().ok(),
    })
}

/// Parses one word (not `exec`, which [`parse_all`] handles because it takes the following words).
pub fn parse(word: &str) -> Result<Check, String> {
    let (name, rest) = match word.split_once(':') {
        Some((n, r)) => (n, Some(r)),
        None => (word, None),
    };
    let one = |min| args(name, rest, min, 1);
    let two = || args(name, rest, 2, 2);
    let s = |v: &str| v.to_string();
    let check = match name {
        "read" => Check::Read(s(one(1)?[0])),
        "write" => {
            let a = args(name, rest, 1, 2)?;
            Check::Write(s(a[0]), a.get(1).map(|t| s(t)))
        }
        "list" => Check::List(s(one(1)?[0])),
        "mkdir" => Check::Mkdir(s(one(1)?[0])),
        "rmdir" => Check::Rmdir(s(one(1)?[0])),
        "unlink" => Check::Unlink(s(one(1)?[0])),
        "rename" => two().map(|a| Check::Rename(s(a[0]), s(a[1])))?,
        "link" => two().map(|a| Check::Link(s(a[0]), s(a[1])))?,
        "symlink" => two().map(|a| Check::Symlink(s(a[0]), s(a[1])))?,
        "symlink-open" => two().map(|a| Check::SymlinkOpen(s(a[0]), s(a[1])))?,
        "truncate" => {
            let a = args(name, rest, 1, 2)?;
            let len = a.get(1).map(|l| num(name, "LEN", l)).transpose()?;
            Check::Truncate(s(a[0]), len)
        }
        "mkfifo" => Check::Mkfifo(s(one(1)?[0])),
        "mknod" => {
            let a = args(name, rest, 1, 3)?;
            match a.len() {
                1 => Check::Mknod(s(a[0]), 1, 3),
                3 => Check::Mknod(
                    s(a[0]),
                    num(name, "MAJOR", a[1])?,
                    num(name, "MINOR", a[2])?,
                ),
                _ => return Err(format!("{name}: expected mknod:PATH[,MAJOR,MINOR]")),
            }
        }
        "readlink" => Check::Readlink(s(one(1)?[0])),
        "chdir" => Check::Chdir(s(one(1)?[0])),
        "ioctl-dev" => {
            let a = args(name, rest, 1, 2)?;
            let req = match a.get(1) {
                None => DevIoctl::Fionread,
                Some(r) => DevIoctl::from_name(r).ok_or_else(|| {
                    format!("{name}: unknown request {r:?} (fionread, rndgetentcnt)")
                })?,
            };
            Check::IoctlDev(s(a[0]), req)
        }
        "exec" => return Err("exec: must be parsed with the words after it".to_string()),
        "fork" => args(name, rest, 0, 0).map(|_| Check::Fork)?,
        "clone3-fork" => args(name, rest, 0, 0).map(|_| Check::Clone3Fork)?,
        "thread" => args(name, rest, 0, 0).map(|_| Check::Thread)?,
        "ptrace-attach" => Check::PtraceAttach(num(name, "PID", one(1)?[0])?),
        "kill" => {
            let a = args(name, rest, 0, 2)?;
            let pid = a.first().map_or(Ok(1), |p| num(name, "PID", p))?;
            let sig = match a.get(1) {
                None => 0,
                Some(v) => {
                    signal_number(v).ok_or_else(|| format!("{name}: unknown signal {v:?}"))?
                }
            };
            Check::Kill(pid, sig)
        }
        "mount" => Check::Mount(one(0)?.first().map_or_else(String::new, |p| s(p))),
        "unshare" => {
            let list: Vec<String> = match rest {
                None => vec!["user".to_string()],
                Some(r) => r.split(',').map(s).collect(),
            };
            if let Some(bad) = list.iter().find(|n| namespace_flag(n).is_none()) {
                return Err(format!(
                    "{name}: unknown namespace {bad:?} (user net mnt pid ipc uts cgroup time)"
                ));
            }
            Check::Unshare(list)
        }
        "setns" => Check::Setns(one(0)?.first().map_or_else(String::new, |p| s(p))),
        "ioctl-tiocsti" | "ioctl-tiocsti-high" => {
            let fd = one(0)?.first().map_or(Ok(-1), |f| num(name, "FD", f))?;
            Check::Tiocsti {
                fd,
                high: name == "ioctl-tiocsti-high",
            }
        }
        "x32" => args(name, rest, 0, 0).map(|_| Check::X32)?,
        "int80" => args(name, rest, 0, 0).map(|_| Check::Int80)?,
        "landlock-abi" => args(name, rest, 0, 0).map(|_| Check::LandlockAbi)?,
        "tcp-connect" => Check::TcpConnect(addr(name, rest.unwrap_or(""))?),
        "tcp-bind" => {
            let r = rest.unwrap_or("");
            match r.parse::<u16>() {
                Ok(port) => {
                    Check::TcpBind(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port))
                }
                Err(_) => Check::TcpBind(addr(name, r)?),
            }
        }
        "udp-connect" => Check::UdpConnect(addr(name, rest.unwrap_or(""))?),
        "udp-sendto" => Check::UdpSendto(addr(name, rest.unwrap_or(""))?),
        "unix-connect" => Check::UnixConnect(s(rest
            .filter(|r| !r.is_empty())
            .ok_or("unix-connect: expected PATH")?)),
        "unix-abstract-connect" => Check::UnixAbstractConnect(s(rest
            .filter(|r| !r.is_empty())
            .ok_or("unix-abstract-connect: expected NAME")?)),
        "mptcp" => Check::Mptcp(rest.map(|r| addr(name, r)).transpose()?),
        "socket" => {
            let a = args(name, rest, 2, 3)?;
            let domain =
                socket_domain(a[0]).ok_or_else(|| format!("{name}: unknown domain {:?}", a[0]))?;
            let ty = socket_type(a[1]).ok_or_else(|| format!("{name}: unknown type {:?}", a[1]))?;
            let proto = a.get(2).map_or(Ok(0), |p| num(name, "PROTO", p))?;
            Check::Socket(domain, ty, proto)
        }
        "ids" => args(name, rest, 0, 0).map(|_| Check::Ids)?,
        "pid" => args(name, rest, 0, 0).map(|_| Check::Pid)?,
        "proc-list" => args(name, rest, 0, 0).map(|_| Check::ProcList)?,
        "fds" => args(name, rest, 0, 0).map(|_| Check::Fds)?,
        "env" => args(name, rest, 0, 0).map(|_| Check::Env)?,
        "net-ifaces" => args(name, rest, 0, 0).map(|_| Check::NetIfaces)?,
        "hostname" => args(name, rest, 0, 0).map(|_| Check::Hostname)?,
        "cwd" => args(name, rest, 0, 0).map(|_| Check::Cwd)?,
        "sleep" => {
            let secs: f64 = num(name, "SECONDS", one(1)?[0])?;
            if !(0.0..=86400.0).contains(&secs) {
                return Err(format!("{name}: SECONDS must be between 0 and 86400"));
            }
            Check::Sleep(secs)
        }
        "alloc" => Check::Alloc(num(name, "MB", one(1)?[0])?),
        "exit" => Check::Exit(num(name, "CODE", one(1)?[0])?),
        other => match kernel::RAW.iter().find(|r| r.name == other) {
            Some(raw) => args(name, rest, 0, 0).map(|_| Check::Raw(raw))?,
            None => return Err(format!("unknown check {other:?} (see --help)")),
        },
    };
    Ok(check)
}

/// Parses the whole command line before anything runs, so a typo runs no check at all.
pub fn parse_all(words: &[String]) -> Result<Vec<Planned>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        if let Some(path) = word.strip_prefix("exec:") {
            if path.is_empty() {
                return Err("exec: expected exec:PATH [ARG...]".to_string());
            }
            let mut argv = vec![path.to_string()];
            argv.extend(words[i + 1..].iter().cloned());
            out.push(Planned {
                word: word.clone(),
                check: Check::Exec(argv),
            });
            break;
        }
        out.push(Planned {
            word: word.clone(),
            check: parse(word)?,
        });
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(w: &str) -> Check {
        parse(w).unwrap_or_else(|e| panic!("{w}: {e}"))
    }

    #[test]
    fn files() {
        assert_eq!(p("read:/etc/passwd"), Check::Read("/etc/passwd".into()));
        assert_eq!(p("write:/w/f"), Check::Write("/w/f".into(), None));
        assert_eq!(
            p("write:/w/f,a,b"),
            Check::Write("/w/f".into(), Some("a,b".into()))
        );
        assert_eq!(p("rename:/a,/b"), Check::Rename("/a".into(), "/b".into()));
        assert_eq!(p("truncate:/f"), Check::Truncate("/f".into(), None));
        assert_eq!(p("truncate:/f,0"), Check::Truncate("/f".into(), Some(0)));
        assert_eq!(p("mknod:/w/n"), Check::Mknod("/w/n".into(), 1, 3));
        assert_eq!(p("mknod:/w/n,5,1"), Check::Mknod("/w/n".into(), 5, 1));
        assert_eq!(p("read:/a:b"), Check::Read("/a:b".into()));
        assert_eq!(
            p("ioctl-dev:/dev/null"),
            Check::IoctlDev("/dev/null".into(), DevIoctl::Fionread)
        );
        assert_eq!(
            p("ioctl-dev:/dev/urandom,rndgetentcnt"),
            Check::IoctlDev("/dev/urandom".into(), DevIoctl::Rndgetentcnt)
        );
        assert!(parse("ioctl-dev:/dev/null,tiocsti").is_err());
    }

    #[test]
    fn arity_errors() {
        for bad in [
            "read",
            "read:",
            "rename:/a",
            "rename:/a,",
            "fork:1",
            "mknod:/a,1",
            "truncate:/f,x",
            "exit",
        ] {
            assert!(parse(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn unknown_check() {
        let err = parse("escape").unwrap_err();
        assert!(err.contains("unknown check"), "{err}");
    }

    #[test]
    fn processes() {
        assert_eq!(p("kill"), Check::Kill(1, 0));
        assert_eq!(p("kill:42"), Check::Kill(42, 0));
        assert_eq!(p("kill:42,TERM"), Check::Kill(42, libc::SIGTERM));
        assert_eq!(p("kill:42,SIGKILL"), Check::Kill(42, libc::SIGKILL));
        assert_eq!(p("kill:-1,9"), Check::Kill(-1, 9));
        assert!(parse("kill:1,NOPE").is_err());
        assert_eq!(p("ptrace-attach:1"), Check::PtraceAttach(1));
    }

    #[test]
    fn kernel_surface() {
        assert_eq!(p("mount"), Check::Mount(String::new()));
        assert_eq!(p("mount:/mnt"), Check::Mount("/mnt".into()));
        assert_eq!(p("unshare"), Check::Unshare(vec!["user".into()]));
        assert_eq!(
            p("unshare:net,mnt"),
            Check::Unshare(vec!["net".into(), "mnt".into()])
        );
        assert!(parse("unshare:bogus").is_err());
        assert_eq!(
            p("ioctl-tiocsti"),
            Check::Tiocsti {
                fd: -1,
                high: false
            }
        );
        assert_eq!(
            p("ioctl-tiocsti-high:0"),
            Check::Tiocsti { fd: 0, high: true }
        );
        assert!(matches!(p("clone3"), Check::Raw(r) if r.name == "clone3"));
        assert!(parse("clone3:1").is_err());
    }

    #[test]
    fn network() {
        assert_eq!(
            p("tcp-connect:127.0.0.1:80"),
            Check::TcpConnect("127.0.0.1:80".parse().unwrap())
        );
        assert_eq!(
            p("tcp-connect:[::1]:80"),
            Check::TcpConnect("[::1]:80".parse().unwrap())
        );
        assert_eq!(
            p("tcp-bind:8080"),
            Check::TcpBind("0.0.0.0:8080".parse().unwrap())
        );
        assert_eq!(
            p("tcp-bind:127.0.0.1:0"),
            Check::TcpBind("127.0.0.1:0".parse().unwrap())
        );
        assert!(parse("tcp-connect:example.com:80").is_err());
        assert_eq!(p("mptcp"), Check::Mptcp(None));
        assert_eq!(
            p("socket:inet,raw,1"),
            Check::Socket(libc::AF_INET, libc::SOCK_RAW, 1)
        );
        assert_eq!(
            p("socket:40,stream"),
            Check::Socket(40, libc::SOCK_STREAM, 0)
        );
        assert_eq!(
            p("unix-abstract-connect:a:b,c"),
            Check::UnixAbstractConnect("a:b,c".into())
        );
    }

    #[test]
    fn control() {
        assert_eq!(p("sleep:0.5"), Check::Sleep(0.5));
        assert!(parse("sleep:-1").is_err());
        assert_eq!(p("alloc:64"), Check::Alloc(64));
        assert_eq!(p("exit:3"), Check::Exit(3));
    }

    #[test]
    fn exec_takes_the_rest() {
        let words: Vec<String> = ["pid", "exec:/probe", "exit:3", "--weird"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let plan = parse_all(&words).unwrap();
        assert_eq!(plan.len(), 2);
        assert_eq!(plan[0].check, Check::Pid);
        assert_eq!(plan[1].word, "exec:/probe");
        assert_eq!(
            plan[1].check,
            Check::Exec(vec!["/probe".into(), "exit:3".into(), "--weird".into()])
        );
    }

    #[test]
    fn a_bad_word_anywhere_rejects_the_line() {
        let words: Vec<String> = ["pid", "nope"].iter().map(|s| s.to_string()).collect();
        assert!(parse_all(&words).is_err());
    }

    /// Every check named in HELP or RAW has an example here that parses, and the other way round.
    #[test]
    fn help_lists_every_check() {
        let examples = [
            "read:/f",
            "write:/f",
            "list:/d",
            "mkdir:/d",
            "rmdir:/d",
            "unlink:/f",
            "rename:/a,/b",
            "link:/a,/b",
            "symlink:/a,/b",
            "symlink-open:/a,/b",
            "truncate:/f",
            "mkfifo:/f",
            "mknod:/f",
            "readlink:/f",
            "chdir:/d",
            "ioctl-dev:/d",
            "fork",
            "clone3-fork",
            "thread",
            "ptrace-attach:1",
            "kill",
            "mount",
            "unshare",
            "setns",
            "ioctl-tiocsti",
            "ioctl-tiocsti-high",
            "x32",
            "int80",
            "landlock-abi",
            "tcp-connect:127.0.0.1:1",
            "tcp-bind:0",
            "udp-connect:127.0.0.1:1",
            "udp-sendto:127.0.0.1:1",
            "unix-connect:/s",
            "unix-abstract-connect:n",
            "mptcp",
            "socket:inet,stream",
            "ids",
            "pid",
            "proc-list",
            "fds",
            "env",
            "net-ifaces",
            "hostname",
            "cwd",
            "sleep:0",
            "alloc:1",
            "exit:0",
        ];
        let name = |w: &str| w.split([':', '[', ' ']).next().unwrap().to_string();
        for w in examples {
            assert!(parse(w).is_ok(), "{w}: {:?}", parse(w));
        }
        let mut from_help: Vec<String> = HELP
            .iter()
            .map(|(s, _)| name(s))
            .filter(|n| n != "exec")
            .collect();
        let mut from_examples: Vec<String> = examples.iter().map(|w| name(w)).collect();
        from_help.sort();
        from_examples.sort();
        assert_eq!(from_help, from_examples);
        for raw in kernel::RAW {
            assert_eq!(parse(raw.name), Ok(Check::Raw(raw)));
        }
    }
}
