//! `process.terminal: true`: a foreground `run` gives the workload a pty of
//! the container's own devpts and relays it to the caller's stdio (the
//! caller's terminal never goes in), with the caller's terminal in raw mode
//! for the run and restored after, and the window size copied at the start
//! and on SIGWINCH; `create` and `run --detach` without `--console-socket`
//! are refused, leaving nothing behind, as runc refuses them.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use nix::sys::termios::{tcgetattr, LocalFlags, Termios};
use serde_json::json;

/// A busybox bundle running `script` on a terminal, with the devpts mount
/// runc's spec has (the pty comes from it).
fn terminal_bundle(env: &Env, name: &str, script: &str) -> Bundle {
    let mut b = env.bundle(name, &["sh", "-c", script]);
    b.config["process"]["terminal"] = json!(true);
    b.config["mounts"].as_array_mut().unwrap().push(json!({
        "destination": "/dev/pts", "type": "devpts", "source": "devpts",
        "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]
    }));
    b.save();
    b
}

/// What the workload (the shell, `$$`) prints about its stdio: `fds DEV DEV
/// DEV PTS` (the filesystem of each, then of the container's /dev/pts) and
/// `tty` (what its stdin is).
const SHOW_STDIO: &str = "echo fds $(stat -L -c %d /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2 \
                          /dev/pts/ptmx); echo tty $(readlink /proc/$$/fd/0)";

/// Asserts that stdin, stdout and stderr were all a pty of the container's
/// own devpts (not a terminal or pipe of the caller's).
fn assert_own_pty(out: &str) {
    let fds = out
        .lines()
        .find_map(|l| l.trim_end_matches('\r').strip_prefix("fds "))
        .unwrap_or_else(|| panic!("no fds line in {out:?}"));
    let devs: Vec<&str> = fds.split(' ').collect();
    assert_eq!(devs.len(), 4, "{out:?}");
    assert!(
        devs.iter().all(|d| *d == devs[3]),
        "stdio not on the container's devpts ({fds}): {out:?}"
    );
    assert!(out.contains("tty /dev/pts/0"), "{out:?}");
}

/// The caller's side of a pty the test opened: runsbx gets the slave as
/// its stdio, the test reads and types on the master.
struct CallerPty {
    master: std::fs::File,
    slave: OwnedFd,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl CallerPty {
    fn open(rows: u16, cols: u16) -> Self {
        let ws = nix::pty::Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&ws), None).unwrap();
        let master = std::fs::File::from(pty.master);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, sink) = (master.try_clone().unwrap(), seen.clone());
        // Reads until the test closes its slave (EIO).
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Self {
            master,
            slave: pty.slave,
            seen,
        }
    }

    fn stdio(&self) -> Stdio {
        Stdio::from(self.slave.try_clone().unwrap())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned()
    }

    /// Waits up to 10 s for `needle` in what came out.
    fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.text().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "never saw {needle:?}; saw {:?}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn settings(&self) -> Termios {
        tcgetattr(self.slave.as_fd()).unwrap()
    }

    /// `runsbx ARGS` with stdin, stdout and stderr on this pty.
    fn spawn(&self, env: &Env, args: &[&str]) -> std::process::Child {
        env.cmd()
            .args(args)
            .stdin(self.stdio())
            .stdout(self.stdio())
            .stderr(self.stdio())
            .spawn()
            .unwrap()
    }

    /// runsbx has the caller's terminal in raw mode.
    fn assert_raw(&self) {
        let flags = self.settings().local_flags;
        assert!(
            !flags.intersects(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG),
            "the caller's terminal is not raw during the run: {flags:?}"
        );
    }

    /// The caller's terminal is as it was `before`.
    fn assert_restored(&self, before: &Termios) {
        let now = self.settings();
        assert!(
            before.input_flags == now.input_flags
                && before.output_flags == now.output_flags
                && before.control_flags == now.control_flags
                && before.local_flags == now.local_flags
                && before.control_chars == now.control_chars,
            "the caller's terminal settings were not restored"
        );
    }

    fn resize(&self, rows: u16, cols: u16) {
        let ws = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads one winsize that lives across the call.
        let rc = unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    }
}

fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("runsbx run did not end");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// From a terminal: the workload is on its own pty, what the caller types
/// reaches it and its output comes back, the window size follows the
/// caller's (at the start and on SIGWINCH), the exit status passes through,
/// and the caller's terminal is raw during the run and as it was after.
#[test]
fn run_from_a_terminal_relays_a_pty_of_the_containers_own() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let script = format!(
        "{SHOW_STDIO}; echo size $(stty size); echo ready; read line; echo got:$line; \
         echo size $(stty size); exit 7"
    );
    let b = terminal_bundle(&env, "tty", &script);
    let pty = CallerPty::open(33, 101);
    let before = pty.settings();
    assert!(before.local_flags.contains(LocalFlags::ICANON));
    let mut child = pty.spawn(&env, &["run", "--bundle", b.path(), &unique_id("tty")]);
    pty.wait_for("ready");
    pty.assert_raw();
    pty.resize(40, 120);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGWINCH,
    )
    .unwrap();
    // runsbx resizes the container's pty when it takes the signal.
    std::thread::sleep(Duration::from_millis(300));
    (&pty.master).write_all(b"hello there\r").unwrap();
    let status = wait_exit(&mut child);
    pty.wait_for("size 40 120");
    let out = pty.text();
    assert_eq!(status.code(), Some(7), "{out:?}");
    assert_own_pty(&out);
    assert!(out.contains("size 33 101"), "window size at start: {out:?}");
    assert!(out.contains("got:hello there"), "{out:?}");
    pty.assert_restored(&before);
}

/// Without any terminal (stdio pipes), the workload still gets a pty of
/// its own and the relay runs. (runc 1.1 refuses when it has no
/// controlling terminal; runsbx relays whatever stdio it has.)
#[test]
fn run_from_pipes_relays_a_pty() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let script = format!("{SHOW_STDIO}; read line; echo got:$line; exit 3");
    let b = terminal_bundle(&env, "pipes", &script);
    let mut child = env
        .cmd()
        .args(["run", "--bundle", b.path(), &unique_id("pipes")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"via a pipe\n").unwrap();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text:?} {}", stderr_of(&out));
    assert_own_pty(&text);
    assert!(text.contains("got:via a pipe"), "{text:?}");
    // ONLCR cleared on the container's side, as runc does: "\n" as written.
    assert!(!text.contains('\r'), "{text:?}");
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

/// `create` and `run --detach` with a terminal and no console socket: one
/// line naming the problem, and no state dir, cgroup or process left.
/// A console socket in the foreground is refused too (runc's rule).
#[test]
fn a_terminal_without_a_console_socket_is_refused_when_detached() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let b = terminal_bundle(&env, "refused", "sleep 100");
    for verb in [&["create"][..], &["run", "--detach"][..]] {
        let id = unique_id("refused");
        let mut args = verb.to_vec();
        args.extend(["--bundle", b.path(), &id]);
        let out = env.run(&args);
        assert_one_line_error(&out, "process.terminal is true");
        assert!(
            stderr_of(&out).contains("--console-socket"),
            "{}",
            stderr_of(&out)
        );
        assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
        assert!(cgroups_named(&id).is_empty(), "{:?}", cgroups_named(&id));
        let ps = std::process::Command::new("pgrep")
            .args(["-f", &id])
            .output()
            .unwrap();
        assert!(ps.stdout.is_empty(), "left running: {:?}", ps);
    }
    let sock = env.tmp.path().join("console.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let out = env.run(&[
        "run",
        "--console-socket",
        sock.to_str().unwrap(),
        "--bundle",
        b.path(),
        &unique_id("refused"),
    ]);
    assert_one_line_error(&out, "--console-socket: used only for a terminal");
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

/// `exec -t` without `--process`: the process gets a pty of the
/// container's devpts, relayed from the caller's terminal as for `run`,
/// with the flags applied to the container's process; its status passes
/// through and the caller's terminal comes back as it was.
#[test]
fn exec_tty_relays_a_pty_of_the_containers_own() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = terminal_bundle(&env, "exec", "sleep 1000");
    b.config["process"]["terminal"] = json!(false);
    b.config["process"]["args"] = json!(["sleep", "1000"]);
    b.save();
    let id = unique_id("exec");
    env.ok(&["run", "--detach", "--bundle", b.path(), &id]);
    let pty = CallerPty::open(25, 90);
    let before = pty.settings();
    // The size is asked after the input: an exec'd process runs before
    // runsbx has its pty (runsbx.1.md, `exec --tty`).
    let script = format!(
        "{SHOW_STDIO}; echo env:$X; echo ready; read line; echo got:$line; \
         echo size $(stty size); exit 5"
    );
    let args = [
        "exec",
        "-t",
        "--env",
        "X=from-flag",
        &id,
        "sh",
        "-c",
        &script,
    ];
    let mut child = pty.spawn(&env, &args);
    pty.wait_for("ready");
    pty.assert_raw();
    (&pty.master).write_all(b"typed\r").unwrap();
    let status = wait_exit(&mut child);
    pty.wait_for("got:typed");
    let out = pty.text();
    assert_eq!(status.code(), Some(5), "{out:?}");
    assert_own_pty(&out);
    assert!(out.contains("size 25 90"), "{out:?}");
    assert!(out.contains("env:from-flag"), "{out:?}");
    pty.assert_restored(&before);
    // Detached, a terminal needs a console socket; a console socket needs
    // a terminal and --detach (runc's rules).
    let out = env.run(&["exec", "-t", "-d", &id, "sleep", "1"]);
    assert_one_line_error(&out, "process.terminal is true");
    let sock = env.tmp.path().join("exec.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let out = env.run(&[
        "exec",
        "--console-socket",
        sock.to_str().unwrap(),
        &id,
        "true",
    ]);
    assert_one_line_error(&out, "--console-socket: used only for a terminal");
    env.ok(&["delete", "--force", &id]);
}

/// The caller's terminal is restored when the run ends by a signal runsbx
/// forwards (SIGTERM, which the workload traps) and when runsbx kills the
/// workload itself (`--timeout`).
#[test]
fn the_terminal_is_restored_after_a_signal_or_a_kill() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let b = terminal_bundle(
        &env,
        "signal",
        "trap 'echo got-term; exit 9' TERM; echo ready; while :; do sleep 0.1; done",
    );
    let pty = CallerPty::open(24, 80);
    let before = pty.settings();
    let mut child = pty.spawn(&env, &["run", "--bundle", b.path(), &unique_id("sig")]);
    pty.wait_for("ready");
    pty.assert_raw();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = wait_exit(&mut child);
    pty.wait_for("got-term");
    assert_eq!(status.code(), Some(9), "{:?}", pty.text());
    pty.assert_restored(&before);

    let b = terminal_bundle(&env, "timeout", "echo ready; sleep 100");
    let args = [
        "run",
        "--timeout",
        "1s",
        "--bundle",
        b.path(),
        &unique_id("kill"),
    ];
    let mut child = pty.spawn(&env, &args);
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(137), "{:?}", pty.text());
    pty.assert_restored(&before);
}

/// runc's "[tty owner] ({u,g}id != 0)": the pty made for a process of a
/// non-root uid is that uid's (group: devpts's `gid=5`), in `run` and in
/// `exec -t`, and CAP_CHOWN, kept for it, is gone before the workload. The
/// caller's own stdio (a file here) is not handed over, where runc would.
#[test]
fn the_pty_of_a_non_root_process_is_its_own() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let show = "echo owner $(stat -c %u:%g $(tty)); grep CapEff /proc/self/status";
    let mut b = terminal_bundle(&env, "owner", show);
    b.config["process"]["user"] = json!({ "uid": 1000, "gid": 100 });
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .last_mut()
        .unwrap()["options"]
        .as_array_mut()
        .unwrap()
        .push(json!("gid=5"));
    b.save();
    let want = "owner 1000:5\nCapEff:\t0000000000000000\n";
    let out = env.run(&["run", "--bundle", b.path(), &unique_id("owner")]);
    assert_eq!(stdout_of(&out), want, "run: {}", stderr_of(&out));

    b.config["process"]["terminal"] = json!(false);
    b.config["process"]["args"] = json!(["sleep", "100"]);
    b.save();
    let id = unique_id("owner");
    env.ok(&["run", "--detach", "--bundle", b.path(), &id]);
    let out = env.run(&["exec", "-t", &id, "sh", "-c", show]);
    assert_eq!(stdout_of(&out), want, "exec -t: {}", stderr_of(&out));
    let file = env.tmp.path().join("caller-stdout");
    let status = env
        .cmd()
        .args(["exec", &id, "true"])
        .stdout(std::fs::File::create(&file).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().uid(),
        0,
        "the caller's file was given away"
    );
    env.ok(&["delete", "--force", &id]);
}
