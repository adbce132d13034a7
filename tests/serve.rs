//! `runsbx serve`: warm REPL sessions over a unix socket, driven by a client
//! written here against the protocol in docs/sandbox.md ("Warm sessions").

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{json, Value};

struct Server {
    env: Env,
    child: Child,
    socket: PathBuf,
    tmpdir: PathBuf,
    /// The server's stderr, shown when a test fails on it.
    log: PathBuf,
}

impl Server {
    fn start(flags: &[&str]) -> Self {
        let env = Env::new();
        let tmpdir = env.traversable_tmpdir();
        let socket = env.tmp.path().join("serve.sock");
        let log = env.tmp.path().join("serve.log");
        let child = env
            .cmd()
            .env("TMPDIR", &tmpdir)
            .arg("serve")
            .arg("--listen")
            .arg(&socket)
            .args(flags)
            .args(["--", "/usr/bin/python3"])
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let s = Self {
            env,
            child,
            socket,
            tmpdir,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !s.socket.exists() {
            assert!(Instant::now() < deadline, "no socket after 60 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    fn connect(&self) -> (Client, Value) {
        let stream = UnixStream::connect(&self.socket).unwrap_or_else(|e| {
            let log = fs::read_to_string(&self.log).unwrap_or_default();
            panic!("connect: {e}; the server said:\n{log}")
        });
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut c = Client {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        };
        let first = c.line().expect("a first line");
        (c, first)
    }

    /// A session, asserting it is ready.
    fn session(&self) -> (Client, i32) {
        let (c, ready) = self.connect();
        assert_eq!(ready["event"], "ready", "{ready}");
        (c, ready["pid"].as_i64().unwrap() as i32)
    }

    /// SIGTERM; the server must exit 0 having removed its socket, every
    /// session and its workdir.
    fn stop(mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            assert!(Instant::now() < deadline, "serve did not end on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "{status:?}");
        assert!(!self.socket.exists(), "socket left");
        assert_no_leftovers(&self.env, &self.tmpdir);
    }
}

impl Drop for Server {
    /// A failed test's server: its sessions end with it (their stdin
    /// closes).
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Client {
    fn line(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(n) if n > 0 => Some(serde_json::from_str(&line).unwrap()),
            _ => None,
        }
    }

    fn send(&mut self, code: &str) {
        writeln!(self.writer, "{}", json!({ "code": code })).unwrap();
    }

    /// The answer to `code`; fails unless it ran without error.
    fn ok(&mut self, code: &str) -> String {
        self.send(code);
        let a = self.line().expect("an answer");
        assert_eq!(a["ok"], true, "{code}: {a}");
        a["stdout"].as_str().unwrap().to_string()
    }
}

/// Two tests of `$body`: sessions each a sandbox of their own, and forked
/// from a fork server (`--fork-server`).
macro_rules! in_both_modes {
    ($pool:ident, $forked:ident, $body:ident) => {
        #[test]
        fn $pool() {
            $body(&[]);
        }

        #[test]
        fn $forked() {
            $body(&["--fork-server"]);
        }
    };
}

fn gone(pid: i32, within: Duration) -> bool {
    wait_dead(pid, within)
}

in_both_modes!(
    a_session_keeps_its_state_and_the_next_starts_fresh,
    a_session_keeps_its_state_and_the_next_starts_fresh_forked,
    state_and_fresh
);

fn state_and_fresh(mode: &[&str]) {
    let server = Server::start(
        &[
            &["--warm", "2", "--preload", "import json\npreloaded = 41"],
            mode,
        ]
        .concat(),
    );
    let (mut a, pid) = server.session();
    // The PID is the interpreter's own, on the host.
    let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    assert_eq!(exe, fs::canonicalize("/usr/bin/python3").unwrap());
    assert_eq!(a.ok("print(preloaded + 1)"), "42\n");
    a.ok("y = 7\nopen('made-by-a', 'w').write('a')");
    assert_eq!(a.ok("print(y, json.dumps([y]))"), "7 [7]\n");
    // An error answers and the session goes on.
    a.send("1/0");
    let e = a.line().unwrap();
    assert_eq!(e["ok"], false);
    assert!(e["error"].as_str().unwrap().contains("ZeroDivisionError"));

    let (mut b, pid_b) = server.session();
    assert_ne!(pid, pid_b);
    assert_eq!(
        b.ok("import os\nprint('y' in globals(), preloaded, os.listdir('.'))"),
        "False 41 []\n"
    );
    drop(a);
    assert!(
        gone(pid, Duration::from_secs(10)),
        "session a outlived its client"
    );
    drop(b);
    assert!(gone(pid_b, Duration::from_secs(10)));
    server.stop();
}

in_both_modes!(
    sessions_cannot_reach_each_other,
    sessions_cannot_reach_each_other_forked,
    cross_session
);

fn cross_session(mode: &[&str]) {
    let server = Server::start(&[&["--warm", "2"], mode].concat());
    let (mut a, pid_a) = server.session();
    let (mut b, _) = server.session();
    let where_a = a.ok("import os, socket\n\
         open('secret', 'w').write('of a')\n\
         def listen(addr):\n\
         \x20   try:\n\
         \x20       s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n\
         \x20       s.bind(addr); s.listen(); return s\n\
         \x20   except OSError:\n\
         \x20       return None\n\
         abstract = listen('\\0runsbx-serve-a')\n\
         path = listen('sock')\n\
         print(os.getcwd(), os.getpid())");
    let (cwd_a, ns_a) = where_a.trim().split_once(' ').unwrap();
    let tries = b.ok(&format!(
        r#"
import os, socket, signal
def attempt(name, f):
    try:
        f()
        print(name, "ALLOWED")
    except OSError as e:
        print(name, "refused")
def connect(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(addr)
attempt("read-file", lambda: open("{cwd_a}/secret").read())
attempt("write-file", lambda: open("{cwd_a}/planted", "w"))
attempt("list-workdir", lambda: os.listdir("{cwd_a}"))
attempt("signal", lambda: os.kill({pid_a}, signal.SIGKILL))
attempt("proc", lambda: os.stat("/proc/{pid_a}"))
attempt("ptrace-proc-mem", lambda: open("/proc/{pid_a}/mem", "rb"))
attempt("abstract-socket", lambda: connect("\0runsbx-serve-a"))
attempt("path-socket", lambda: connect("{cwd_a}/sock"))
attempt("shm", lambda: open("/dev/shm/x", "w"))
def shm():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.shmget(7, 4096, 0o1666) < 0:
        raise OSError(ctypes.get_errno(), "shmget")
attempt("sysv-shm", shm)
if {forked}:
    # The fork server's pid namespace, which the sessions share: a by
    # its PID there, and the fork server itself.
    for pid in ({ns_a}, 1):
        attempt("ns-signal-%d" % pid, lambda: os.kill(pid, signal.SIGKILL))
        attempt("ns-proc-%d" % pid, lambda: open("/proc/%d/status" % pid).read())
        attempt("ns-proc-stat-%d" % pid, lambda: os.stat("/proc/%d" % pid))
        attempt("ns-mem-%d" % pid, lambda: open("/proc/%d/mem" % pid, "rb"))
    attempt("sessions-dir", lambda: os.listdir(os.path.dirname("{cwd_a}")))
"#,
        forked = if mode.is_empty() { "False" } else { "True" },
    ));
    for line in tries.lines() {
        assert!(line.ends_with(" refused"), "{line}\n{tries}");
    }
    let expected = if mode.is_empty() { 10 } else { 19 };
    assert_eq!(tries.lines().count(), expected, "{tries}");
    // a is untouched and alive.
    assert_eq!(
        a.ok("print(open('secret').read(), 'planted' in os.listdir('.'))"),
        "of a False\n"
    );
    drop((a, b));
    server.stop();
}

in_both_modes!(
    escapes_fail_inside_a_session,
    escapes_fail_inside_a_session_forked,
    escapes
);

fn escapes(mode: &[&str]) {
    let server = Server::start(&[&["--warm", "1"], mode].concat());
    let (mut c, _) = server.session();
    assert_session_escapes_refused(&c.ok(SESSION_ESCAPES));
    drop(c);
    server.stop();
}

in_both_modes!(
    crash_hang_memory_and_disconnect_leave_the_server_serving,
    crash_hang_memory_and_disconnect_leave_the_server_serving_forked,
    faults
);

fn faults(mode: &[&str]) {
    let server = Server::start(
        &[
            &[
                "--warm",
                "1",
                "--session-timeout",
                "4s",
                "--rss-limit",
                "200M",
            ],
            mode,
        ]
        .concat(),
    );
    let end = |c: &mut Client| {
        let e = c.line().expect("a last line");
        assert_eq!(e["event"], "end", "{e}");
        assert!(c.line().is_none(), "nothing after the last line");
        e
    };

    let (mut c, pid) = server.session();
    c.send("import os; os.abort()");
    let e = end(&mut c);
    // SIGSEGV, not SIGABRT: the interpreter is pid 1 of its namespace,
    // which the kernel spares the SIGABRT abort(3) raises; glibc then faults.
    assert_eq!(e["reason"], "signaled", "{e}");
    assert!(e["signal"].as_i64().is_some(), "{e}");
    assert!(gone(pid, Duration::from_secs(5)));

    let (mut c, pid) = server.session();
    c.send("while True: pass");
    assert_eq!(end(&mut c)["reason"], "timeout");
    assert!(gone(pid, Duration::from_secs(5)));

    let (mut c, pid) = server.session();
    c.send("x = b'x' * (400 << 20)");
    assert_eq!(end(&mut c)["reason"], "rss-limit");
    assert!(gone(pid, Duration::from_secs(5)));

    let (mut c, pid) = server.session();
    c.send("import time; time.sleep(60)");
    drop(c);
    assert!(
        gone(pid, Duration::from_secs(5)),
        "a client gone mid-request left its session"
    );

    let (mut c, _) = server.session();
    assert_eq!(c.ok("print(1)"), "1\n");
    drop(c);
    server.stop();
}

#[test]
fn a_client_beyond_max_sessions_is_refused_with_one_line() {
    let server = Server::start(&["--warm", "1", "--max-sessions", "1"]);
    let (mut a, _) = server.session();
    let (mut b, first) = server.connect();
    assert_eq!(first["event"], "refused", "{first}");
    assert!(first["reason"].as_str().unwrap().contains("--max-sessions"));
    assert!(b.line().is_none());
    assert_eq!(a.ok("print(2)"), "2\n");
    drop(a);
    server.stop();
}

in_both_modes!(
    a_failing_preload_fails_the_server_with_one_line,
    a_failing_preload_fails_the_server_with_one_line_forked,
    failing_preload
);

fn failing_preload(mode: &[&str]) {
    let env = Env::new();
    let tmpdir = env.traversable_tmpdir();
    let socket = env.tmp.path().join("serve.sock");
    let out = env.run_cmd(
        env.cmd()
            .env("TMPDIR", &tmpdir)
            .arg("serve")
            .arg("--listen")
            .arg(&socket)
            .args(mode)
            .args([
                "--preload",
                "import no_such_module",
                "--",
                "/usr/bin/python3",
            ]),
    );
    assert!(!out.status.success());
    let err = stderr_of(&out);
    let errors: Vec<_> = err
        .lines()
        .filter(|l| l.starts_with("runsbx: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains("--preload failed: ModuleNotFoundError"),
        "{err}"
    );
    assert!(!socket.exists());
    assert_no_leftovers(&env, &tmpdir);
}

/// The fork server is PID 1 of its sessions' namespace: killed, it takes
/// them with it; the server goes on and starts another.
#[test]
fn a_killed_fork_server_ends_its_sessions_and_is_replaced() {
    let server = Server::start(&["--warm", "1", "--fork-server"]);
    let (mut a, pid) = server.session();
    assert_eq!(a.ok("print(1)"), "1\n");
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let ppid: i32 = status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let exe = fs::read_link(format!("/proc/{ppid}/exe")).unwrap();
    assert_eq!(exe, fs::canonicalize("/usr/bin/python3").unwrap());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(ppid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let end = a.line().expect("a last line");
    assert_eq!(end["event"], "end", "{end}");
    assert!(gone(pid, Duration::from_secs(5)));
    let (mut b, _) = server.session();
    assert_eq!(b.ok("print(3)"), "3\n");
    drop((a, b));
    server.stop();
}

#[test]
fn an_existing_listen_path_is_refused_and_kept() {
    let env = Env::new();
    let socket = env.tmp.path().join("serve.sock");
    fs::write(&socket, "not a socket").unwrap();
    let out = env.run_cmd(
        env.cmd()
            .arg("serve")
            .arg("--listen")
            .arg(&socket)
            .args(["--", "/usr/bin/python3"]),
    );
    assert!(!out.status.success());
    let err = stderr_of(&out);
    assert!(
        err.contains("--listen") && err.contains("File exists"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&socket).unwrap(), "not a socket");
    let left: Vec<_> = fs::read_dir(env.tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains(".binding"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// What a session writes reaches the server's memory a line at a time: an
/// answer line without end ends the session (`output-limit`), not the
/// server. A client that leaves while its request is stuck in a session's
/// full stdin (the session busy, not reading) still ends its session at
/// once. The server serves on and leaves nothing behind.
#[test]
fn endless_output_and_a_client_leaving_a_stuck_request_end_only_their_sessions() {
    let server = Server::start(&["--warm", "1"]);
    let (mut c, pid) = server.session();
    // The protocol's own descriptor, found and flooded without a newline.
    c.send(
        "import os\n\
         fd = max(int(f) for f in os.listdir('/proc/self/fd'))\n\
         chunk = b'x' * (1 << 20)\n\
         while True:\n\
         \x20   for f in range(3, fd + 1):\n\
         \x20       try:\n\
         \x20           os.write(f, chunk)\n\
         \x20       except OSError:\n\
         \x20           pass",
    );
    let e = c.line().expect("a last line");
    assert_eq!(e["event"], "end", "{e}");
    assert_eq!(e["reason"], "output-limit", "{e}");
    assert!(gone(pid, Duration::from_secs(10)));

    let (mut c, pid) = server.session();
    c.send("import time; time.sleep(1000)");
    // More than a pipe holds, while the session does not read.
    let big = format!("x = '{}'", "y".repeat(1 << 20));
    c.send(&big);
    drop(c);
    assert!(
        gone(pid, Duration::from_secs(10)),
        "the session outlived its client"
    );

    let (mut c, _) = server.session();
    assert_eq!(c.ok("print(1)"), "1\n");
    drop(c);
    server.stop();
}
