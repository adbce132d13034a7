//! Ordinary Python runs unchanged in `runsbx sandbox` (issue 37): what
//! CPython's and numpy's own test suites found missing, each replayed from a
//! plain `python3 -c`.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use crate::common::*;

/// Reclaims unused dentries and inodes, as the kernel's shrinkers do under
/// memory pressure (`drop_caches` 2 runs the same prune of the dcache and the
/// inode cache, host-wide, at once).
fn reclaim_dentries() {
    std::fs::write("/proc/sys/vm/drop_caches", "2").expect("write /proc/sys/vm/drop_caches");
}

/// Landlock's read grants on procfs files survive the kernel reclaiming
/// their dentries. procfs gives a fresh inode to every fresh lookup, and a
/// Landlock rule is tied to the inode it was made on: without the dentries
/// pinned, the second read below failed with EACCES for the rest of the run.
#[test]
fn procfs_reads_survive_dentry_reclaim() {
    let env = Env::new();
    const READ: &str = r#"
import sys
def read_all():
    out = []
    for p in ["/proc/stat", "/proc/meminfo", "/proc/cpuinfo", "/proc/self/status",
              "/proc/self/maps", "/proc/self/statm", "/proc/thread-self/stat"]:
        try:
            open(p).read()
            out.append(p + " ok")
        except OSError as e:
            out.append(p + " " + e.strerror)
    return " ".join(out)
print(read_all(), flush=True)
sys.stdin.readline()
print(read_all(), flush=True)
"#;
    let mut child = env
        .cmd()
        .args(["sandbox", "--", "python3", "-c", READ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn runsbx sandbox");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut before = String::new();
    stdout.read_line(&mut before).unwrap();
    // Both runs read every file: the first before any reclaim.
    let all_ok = |line: &str| line.split(' ').skip(1).step_by(2).all(|w| w == "ok");
    assert!(all_ok(before.trim()), "before reclaim: {before:?}");
    // The workload waits on stdin, its files closed: their dentries are unused.
    reclaim_dentries();
    reclaim_dentries();
    child.stdin.take().unwrap().write_all(b"\n").unwrap();
    let mut after = String::new();
    stdout.read_line(&mut after).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(all_ok(after.trim()), "after reclaim: {after:?}");
}

/// shutil.copy2 and copytree copy extended attributes and skip them when
/// the filesystem has none (ENOTSUP); the sandbox refuses xattrs that way,
/// where EPERM made both fail.
#[test]
fn shutil_copy2_and_copytree_work_in_the_workdir() {
    let env = Env::new();
    const COPY: &str = r#"
import errno, os, shutil
open("a", "w").write("data")
os.chmod("a", 0o640)
shutil.copy2("a", "b")
os.makedirs("d/sub")
open("d/sub/f", "w").write("f")
shutil.copytree("d", "e")
print(open("b").read(), oct(os.stat("b").st_mode & 0o777), open("e/sub/f").read())
try:
    os.listxattr("a")
except OSError as e:
    print(errno.errorcode[e.errno])
"#;
    let out = sandbox(&env, &[], &["python3", "-c", COPY]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "data 0o640 f\nENOTSUP\n"
    );
}

/// The workload's own user is in the user database (one entry, home the
/// workdir), so getpwuid, getgrgid, getpass.getuser() and Path.home()
/// without HOME work; nothing of the host's database is there.
#[test]
fn the_user_database_has_the_workloads_own_user() {
    let env = Env::new();
    let wd = env.nobody_workdir();
    let wd = wd.to_str().unwrap();
    const LOOKUP: &str = r#"
import getpass, grp, os, pwd
from pathlib import Path
pw = pwd.getpwuid(os.getuid())
print(pw.pw_name, pw.pw_uid, pw.pw_gid, pw.pw_dir == os.getcwd())
print(grp.getgrgid(os.getgid()).gr_name, getpass.getuser())
del os.environ["HOME"]
print(Path.home() == Path.cwd(), os.path.expanduser("~") == os.getcwd())
print(len(pwd.getpwall()), len(grp.getgrall()))
try:
    pwd.getpwnam("nobody")
except KeyError:
    print("no nobody")
print(open("/etc/passwd").read(), end="")
print(open("/etc/group").read(), end="")
"#;
    let out = sandbox(&env, &["--workdir", wd], &["python3", "-c", LOOKUP]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "root 0 0 True\nroot root\nTrue True\n1 1\nno nobody\n\
             root:x:0:0:root:{wd}:/usr/sbin/nologin\nroot:x:0:\n"
        )
    );
}

/// Items 4 and 5: what ordinary Python does with files and with itself is
/// allowed where it opens no way out, and refused with the errno the kernel
/// would give where it does not.
#[test]
fn files_and_signals_work_on_the_workload_itself() {
    let env = Env::new();
    require_file("/etc/services", "netbase");
    let out = sandbox(
        &env,
        &[],
        &[
            "python3",
            "-c",
            &py_attempts(
                r#"
import resource, signal, stat
open("a", "w").write("a")
attempt("mkfifo", lambda: os.mkfifo("fifo"))
print("fifo-is-fifo", stat.S_ISFIFO(os.stat("fifo").st_mode))
attempt("link", lambda: os.link("a", "b"))
attempt("link-out-of-workdir", lambda: os.link(sys.executable, "py"))
attempt("symlink", lambda: os.symlink("/etc/shadow", "s"))
attempt("chown-self", lambda: os.chown("a", 0, 0))
attempt("chown-keep", lambda: os.chown("a", -1, -1))
attempt("chown-other", lambda: os.chown("a", 1000, 1000))
attempt("kill-self-0", lambda: os.kill(os.getpid(), 0))
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
attempt("kill-self-usr1", lambda: os.kill(os.getpid(), signal.SIGUSR1))
print("handler-ran", got == [1])
attempt("kill-other", lambda: os.kill(4242, 0))
attempt("prlimit-other", lambda: resource.prlimit(-1, resource.RLIMIT_AS))
attempt("nice", lambda: os.nice(1))
attempt("nice-down", lambda: os.nice(-5))
r, w = os.pipe()
fd = os.open("a", os.O_RDONLY)
attempt("splice", lambda: os.splice(fd, w, 1))
print("spliced", os.read(r, 1))
attempt("tcgetpgrp-bad-fd", lambda: os.tcgetpgrp(9999))
attempt("tcsetpgrp-bad-fd", lambda: os.tcsetpgrp(9999, 1))
attempt("tcgetpgrp-no-tty", lambda: os.tcgetpgrp(r))
attempt("waitpid", lambda: os.waitpid(-1, 0))
attempt("sched-priority-range", lambda: (os.sched_get_priority_min(os.SCHED_RR), os.sched_get_priority_max(os.SCHED_RR)))
attempt("sched-rr-interval", lambda: os.sched_rr_get_interval(0))
attempt("sched-setaffinity", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
import fcntl, termios
null, zero = os.open("/dev/null", os.O_RDONLY), os.open("/dev/zero", os.O_RDONLY)
attempt("tcgets-dev-null", lambda: fcntl.ioctl(null, termios.TCGETS, bytes(64)))
attempt("tcgets-dev-zero", lambda: fcntl.ioctl(zero, termios.TCGETS, bytes(64)))
print("http", socket.getservbyname("http"), socket.getprotobyname("tcp"))
"#,
            ),
        ],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let got: std::collections::BTreeMap<&str, &str> =
        text.lines().filter_map(|l| l.split_once(' ')).collect();
    let want = [
        ("mkfifo", "ALLOWED"),
        ("fifo-is-fifo", "True"),
        ("link", "ALLOWED"),
        ("link-out-of-workdir", "EXDEV"), // the workdir is its own mount
        ("symlink", "EPERM"),             // a host program would follow it
        ("chown-self", "ALLOWED"),
        ("chown-keep", "ALLOWED"),
        ("chown-other", "EINVAL"), // the kernel's: uid 1000 is not mapped in the namespace
        ("kill-self-0", "ALLOWED"),
        ("kill-self-usr1", "ALLOWED"),
        ("handler-ran", "True"),
        ("kill-other", "ESRCH"),
        ("prlimit-other", "ESRCH"),
        ("nice", "ALLOWED"),
        ("nice-down", "EPERM"), // the kernel's: no CAP_SYS_NICE, RLIMIT_NICE 0
        ("splice", "ALLOWED"),
        ("spliced", "b'a'"),
        ("tcgetpgrp-bad-fd", "EBADF"),
        ("tcsetpgrp-bad-fd", "EBADF"),
        ("tcgetpgrp-no-tty", "ENOTTY"),
        ("waitpid", "ECHILD"),               // no children: fork is refused
        ("sched-priority-range", "ALLOWED"), // CPython's test_posix
        ("sched-rr-interval", "ALLOWED"),
        ("sched-setaffinity", "EPERM"), // a supervisor's CPU pin holds
        // isatty() of /dev/null, as open() asks in text mode: the kernel's
        // answer, where Landlock's missing ioctl_dev said EACCES; the other
        // devices keep no ioctl right.
        ("tcgets-dev-null", "ENOTTY"),
        ("tcgets-dev-zero", "EACCES"),
        ("http", "80 6"),
    ];
    for (name, result) in want {
        assert_eq!(got.get(name), Some(&result), "{name}: full output:\n{text}");
    }
}
