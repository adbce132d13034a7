//! `serve --fork-server`: sessions forked from one sandboxed interpreter
//! that ran the preload once (bundles/python-repl/forkserver.py).
//!
//! The fork server is a `runsbx sandbox` of its own (profile `fork-server`,
//! its workdir the sessions directory). It runs only trusted code: the
//! driver and the operator's preload. For each session the server makes a
//! workdir in the sessions directory, a socket pair and a stderr pipe, and
//! hands the fork server the session's ends; the forked process confines
//! itself (its own Landlock layer: the fork server's grants less the
//! sessions directory, plus its workdir, signals and abstract sockets
//! scoped; then the plain sandbox seccomp filter, compiled here) and says so
//! on its stream before any client code runs. The server then checks from
//! the host that it holds one more seccomp filter than the fork server and
//! no_new_privs, finds its host PID, and holds it by a pidfd.
//!
//! What sessions share, and what keeps each to itself, is docs/sandbox.md's
//! "Warm sessions" threat model.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, IoSlice, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use runsbx_policy::landlock::{FsRight, LandlockPolicy, NetRight, ScopeRight};
use runsbx_runtime::Pidfd;
use runsbx_sandbox::stage::PrivateDir;
use serde_json::{json, Value};

use super::session::{read_line_capped, relay_stderr, spawn_sandbox, Line, Session, MAX_LINE};

/// The driver the fork server runs.
pub const FORKSERVER: &str = include_str!("../../../../bundles/python-repl/forkserver.py");

/// The Landlock ABI that scopes signals and abstract unix sockets to a
/// domain (Linux 6.12): without it, a session could signal another.
const SCOPE_ABI: u8 = 6;

/// How long a fork and the session's confinement may take.
const SPAWN_TIMEOUT: Duration = Duration::from_secs(10);

/// What starting (and restarting) the fork server takes.
pub struct Setup {
    pub exe: PathBuf,
    pub global: Vec<String>,
    /// `runsbx sandbox` flags and command.
    pub args: Vec<String>,
    pub preload: Option<String>,
    /// Host path of the sessions directory, the fork server's workdir.
    pub sessions: PathBuf,
    /// The owner of each session's workdir (host nobody when root runs).
    pub owner: Option<(u32, u32)>,
    /// `--rss-limit`, in bytes: each session's own memory (USS).
    pub rss_limit: Option<u64>,
}

/// The layers file each session reads: `policy` (the fork server's
/// Landlock policy) less its workdir, `sessions`, whose rights go to the
/// session's own workdir; and the session's seccomp filters.
pub fn layers(policy: &LandlockPolicy, sessions: &Path) -> Result<Value> {
    let abi = runsbx_runtime::landlock::kernel_abi().unwrap_or(0);
    if abi < SCOPE_ABI {
        bail!(
            "--fork-server: needs Landlock ABI {SCOPE_ABI} (Linux 6.12), which scopes signals and \
             abstract unix sockets to each session; this kernel has {}",
            if abi == 0 {
                "no Landlock".to_string()
            } else {
                format!("ABI {abi}")
            }
        );
    }
    fn bits<T: Copy + PartialEq>(
        all: &[T],
        set: impl Iterator<Item = T>,
        abi_of: fn(T) -> u8,
        abi: u8,
    ) -> u64 {
        set.filter(|r| abi_of(*r) <= abi)
            .map(|r| 1u64 << all.iter().position(|x| *x == r).expect("a listed right"))
            .fold(0, |a, b| a | b)
    }
    let fs = |set: &std::collections::BTreeSet<FsRight>| {
        bits(FsRight::ALL, set.iter().copied(), FsRight::abi, abi)
    };
    // The session's layer handles every right the kernel knows. A right the
    // fork server's policy leaves unhandled is granted wherever that policy
    // grants anything, so the session loses nothing there, and nowhere
    // else: another session's workdir stays out of reach whatever the
    // fork server's policy leaves open.
    let handled = bits(
        FsRight::ALL,
        FsRight::ALL.iter().copied(),
        FsRight::abi,
        abi,
    );
    let extra = handled & !fs(&policy.handled_fs);
    let mut rules = Vec::new();
    let mut workdir = 0;
    for rule in &policy.path_beneath {
        for p in &rule.paths {
            if p == sessions {
                workdir |= fs(&rule.allowed) | extra;
            } else if p.starts_with(sessions) || sessions.starts_with(p) {
                // Stops: a grant on (or above) the sessions directory carried
                // into a session's layer, which would open the others'.
                bail!(
                    "--fork-server: the fork server's policy grants on {}, which holds the sessions",
                    p.display()
                );
            } else {
                rules.push(json!([p, fs(&rule.allowed) | extra]));
            }
        }
    }
    if workdir == 0 {
        bail!("--fork-server: the fork server's policy grants nothing on its workdir");
    }
    let program = runsbx_policy::seccomp::compile(&runsbx_policy::profile::sandbox_seccomp())?;
    if program.flags != 0 {
        bail!(
            "--fork-server: the session filter needs flags {:#x}",
            program.flags
        );
    }
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(json!({
        "handled_fs": handled,
        "handled_net": bits(NetRight::ALL, policy.handled_net.iter().copied(), NetRight::abi, abi),
        "scoped": bits(ScopeRight::ALL, ScopeRight::ALL.iter().copied(), ScopeRight::abi, abi),
        "rules": rules,
        "workdir": workdir,
        "bpf": program.filter_bytes().iter().map(|f| b64.encode(f)).collect::<Vec<_>>(),
    }))
}

/// Exit statuses the fork server reported, by the session's PID in its
/// namespace; `ended` once the fork server is gone.
#[derive(Default)]
struct Exits {
    state: Mutex<(HashMap<i32, Value>, bool)>,
    changed: Condvar,
}

/// The fork server: a running `runsbx sandbox` of forkserver.py.
pub struct ForkServer {
    child: Mutex<Child>,
    /// Its runsbx's status fd, held open to the end: runsbx writes its last
    /// events there.
    _status: BufReader<File>,
    /// Its interpreter's host PID and seccomp filter count.
    host_pid: i32,
    filters: u64,
    ctl: UnixStream,
    spawning: Mutex<Receiver<Value>>,
    exits: Arc<Exits>,
    sessions: PathBuf,
    owner: Option<(u32, u32)>,
    rss_limit: Option<u64>,
}

impl ForkServer {
    pub fn start(setup: &Setup, id: u64) -> Result<Self> {
        let (ctl, theirs) = UnixStream::pair().context("control socket")?;
        let (mut child, status, host_pid) = spawn_sandbox(
            id,
            &setup.exe,
            &setup.global,
            &setup.args,
            Stdio::from(OwnedFd::from(theirs)),
        )?;
        // Its stdout is /dev/null from its first line on.
        drop(child.stdout.take());
        let (tx, rx) = mpsc::channel();
        let exits = Arc::new(Exits::default());
        {
            let (exits, mut r) = (exits.clone(), BufReader::new(ctl.try_clone()?));
            std::thread::spawn(move || {
                let mut line = Vec::new();
                while read_line_capped(&mut r, &mut line, MAX_LINE) == Line::Complete {
                    let v: Value = serde_json::from_slice(&line).unwrap_or_default();
                    match v["exit"].as_i64() {
                        Some(pid) => {
                            exits.state.lock().unwrap().0.insert(pid as i32, v);
                            exits.changed.notify_all();
                        }
                        None => {
                            let _ = tx.send(v);
                        }
                    }
                }
                exits.state.lock().unwrap().1 = true;
                exits.changed.notify_all();
            });
        }
        let server = Self {
            child: Mutex::new(child),
            _status: status,
            host_pid,
            filters: seccomp_filters(host_pid).context("the fork server's status")?,
            ctl,
            spawning: Mutex::new(rx),
            exits,
            sessions: setup.sessions.clone(),
            owner: setup.owner,
            rss_limit: setup.rss_limit,
        };
        if let Some(code) = &setup.preload {
            let answer = server.ask(
                &json!({ "preload": code }),
                &[],
                Duration::from_secs(600),
                |_| true,
            )?;
            if answer["ok"] != true {
                let e = answer["error"].as_str().unwrap_or("no answer");
                bail!(
                    "--preload failed: {}",
                    e.trim_end().lines().last().unwrap_or(e)
                );
            }
        }
        Ok(server)
    }

    /// Whether it is gone (its sessions went with it: it is PID 1 of their
    /// namespace).
    pub fn ended(&self) -> bool {
        self.exits.state.lock().unwrap().1
    }

    /// Sends `request` (with `fds`) and waits for the answer `mine` accepts.
    fn ask(
        &self,
        request: &Value,
        fds: &[std::os::fd::RawFd],
        timeout: Duration,
        mine: impl Fn(&Value) -> bool,
    ) -> Result<Value> {
        use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
        let replies = self.spawning.lock().unwrap();
        let line = format!("{request}\n");
        let cmsg = [ControlMessage::ScmRights(fds)];
        let cmsgs: &[ControlMessage] = if fds.is_empty() { &[] } else { &cmsg };
        let sent = sendmsg::<()>(
            self.ctl.as_raw_fd(),
            &[IoSlice::new(line.as_bytes())],
            cmsgs,
            MsgFlags::MSG_NOSIGNAL,
            None,
        )
        .context("the fork server's control socket")?;
        if sent != line.len() {
            bail!("the fork server's control socket: a short write");
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match replies.recv_timeout(left) {
                Ok(v) if mine(&v) => return Ok(v),
                Ok(_) => continue,
                Err(mpsc::RecvTimeoutError::Timeout) => bail!("the fork server did not answer"),
                Err(mpsc::RecvTimeoutError::Disconnected) => bail!("the fork server ended"),
            }
        }
    }

    /// A new session, confined.
    pub fn spawn(&self, id: u64) -> Result<Session> {
        let dir = self.sessions.join(format!("s{id}"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("create {}", dir.display()))?;
        let workdir = PrivateDir(dir.clone());
        if let Some((uid, gid)) = self.owner {
            nix::unistd::chown(&dir, Some(uid.into()), Some(gid.into()))
                .with_context(|| format!("chown {}", dir.display()))?;
        }
        let (stream, theirs) = UnixStream::pair().context("session socket")?;
        let (err_r, err_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("pipe")?;
        let request = json!({ "spawn": id, "workdir": dir });
        let reply = self.ask(
            &request,
            &[theirs.as_raw_fd(), err_w.as_raw_fd()],
            SPAWN_TIMEOUT,
            |v| v["spawned"].as_u64() == Some(id),
        )?;
        drop((theirs, err_w));
        let nspid = reply["pid"]
            .as_i64()
            .context("the fork server's answer: no pid")? as i32;
        std::thread::spawn(move || relay_stderr(id, File::from(err_r)));

        // Its first line, written once it is confined, before it reads
        // anything of the client's.
        stream.set_read_timeout(Some(SPAWN_TIMEOUT))?;
        let first = read_short_line(&stream).context("the session's set-up")?;
        if first != r#"{"event": "confined"}"# {
            bail!("the session's set-up failed (see its stderr above)");
        }
        stream.set_read_timeout(None)?;
        let host = self.host_pid_of(nspid)?;
        let pidfd = Arc::new(Pidfd::open(host).context("pidfd_open of the session")?);
        // Fail closed: checked from the host, after the pidfd pins the
        // process, that it is the session and that it confined itself.
        if self.host_pid_of(nspid)? != host {
            bail!("the session's PID changed under the server");
        }
        // As `sandbox` checks its workload (no_new_privs, a seccomp filter,
        // no capability, not host root, namespaces of its own; its
        // descriptors are its own by now), and one seccomp filter more
        // than the fork server: its own, stacked.
        let expect = runsbx_runtime::guard::Expect {
            max_fd: None,
            ..runsbx_runtime::supervise::sandbox_posture()
        };
        let confined = runsbx_runtime::supervise::check_posture(host, &expect)
            .map_err(anyhow::Error::from)
            .and_then(|()| match seccomp_filters(host)? > self.filters {
                true => Ok(()),
                false => bail!("no seccomp filter of its own"),
            });
        if let Err(e) = confined {
            let _ = pidfd.signal(nix::sys::signal::Signal::SIGKILL);
            bail!("the session is not confined: {e:#}");
        }
        // The kernel's OOM killer, when the fork server's cgroup is full
        // (`--memory` caps every session together), takes a session before
        // the fork server, whose death would end every session.
        if let Err(e) = std::fs::write(format!("/proc/{host}/oom_score_adj"), "500") {
            tracing::debug!("session {id}: oom_score_adj: {e}");
        }
        let forked = Forked {
            host,
            rss_limit: self.rss_limit,
            pidfd: pidfd.clone(),
            nspid,
            exits: self.exits.clone(),
            _workdir: workdir,
            started: Instant::now(),
            peak: Arc::new(AtomicU64::new(0)),
            over: Arc::new(AtomicBool::new(false)),
        };
        Session::forked(id, host, stream, forked)
    }

    /// The host PID of the fork server's child `nspid`.
    fn host_pid_of(&self, nspid: i32) -> Result<i32> {
        let list = format!("/proc/{0}/task/{0}/children", self.host_pid);
        let children = std::fs::read_to_string(&list).with_context(|| list.clone())?;
        for p in children
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let Ok(status) = std::fs::read_to_string(format!("/proc/{p}/status")) else {
                continue;
            };
            let ns = status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .and_then(|l| l.split_whitespace().last())
                .and_then(|n| n.parse::<i32>().ok());
            if ns == Some(nspid) {
                return Ok(p);
            }
        }
        bail!("the session (PID {nspid} in the fork server's namespace) is gone")
    }
}

impl Drop for ForkServer {
    /// Ends the fork server, and with it every session it forked.
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = child.wait();
    }
}

/// A forked session as the server holds it.
pub struct Forked {
    host: i32,
    rss_limit: Option<u64>,
    pub pidfd: Arc<Pidfd>,
    nspid: i32,
    exits: Arc<Exits>,
    /// Removed when the session is finished.
    _workdir: PrivateDir,
    started: Instant,
    /// Its own memory at most, in bytes, and whether it went past the limit.
    peak: Arc<AtomicU64>,
    over: Arc<AtomicBool>,
}

impl Forked {
    /// From hand-out (a warm session runs nothing), watches the session's
    /// own memory (what it does not share with the fork server) until it
    /// ends; past `--rss-limit`, kills it. Every [`guard::RSS_POLL`] (as
    /// `sandbox --rss-limit` polls), the growth of its RSS since hand-out,
    /// which is all its own; every tenth poll, its exact private memory
    /// (smaps_rollup, which walks its page tables: too slow for each poll),
    /// which also counts the shared pages it has written to. Read through a
    /// live thread (`guard::live_task`): a session that ends its main thread
    /// does not hide from the limit.
    pub fn handed_out(&self) {
        use runsbx_runtime::guard;
        let (host, limit) = (self.host, self.rss_limit);
        let (pidfd, peak, over) = (self.pidfd.clone(), self.peak.clone(), self.over.clone());
        std::thread::spawn(move || {
            let base = guard::rss(host).unwrap_or(0);
            let mut polls: u64 = 0;
            let poll_ms = guard::RSS_POLL.as_millis() as i32;
            while let Ok(false) = pidfd.exited_within(poll_ms) {
                let Some(rss) = guard::rss(host) else { break };
                let mut own = rss.saturating_sub(base);
                polls += 1;
                if polls.is_multiple_of(10) {
                    own = own.max(own_memory(host).unwrap_or(0));
                }
                peak.fetch_max(own, Ordering::SeqCst);
                if limit.is_some_and(|l| own > l) {
                    over.store(true, Ordering::SeqCst);
                    let _ = pidfd.signal(nix::sys::signal::Signal::SIGKILL);
                }
            }
        });
    }

    /// Waits for the fork server's word on how it ended; removes its workdir.
    pub fn finish(self) -> Value {
        let deadline = Instant::now() + SPAWN_TIMEOUT;
        let mut state = self.exits.state.lock().unwrap();
        let status = loop {
            if let Some(v) = state.0.remove(&self.nspid) {
                break Some(v);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if state.1 || left.is_zero() {
                break None;
            }
            state = self.exits.changed.wait_timeout(state, left).unwrap().0;
        };
        drop(state);
        let mut outcome = match status {
            _ if self.over.load(Ordering::SeqCst) => json!({"reason": "rss-limit"}),
            Some(v) if v.get("signal").is_some() => {
                json!({"reason": "signaled", "signal": v["signal"]})
            }
            Some(v) => json!({"reason": "exited", "exit_code": v["code"]}),
            None => json!({"reason": "killed"}),
        };
        outcome["event"] = "exit".into();
        outcome["peak_rss_bytes"] = self.peak.load(Ordering::SeqCst).into();
        outcome["wall_ms"] = (self.started.elapsed().as_millis() as u64).into();
        outcome
    }
}

/// `Private_Clean` + `Private_Dirty` of `pid`, in bytes.
fn own_memory(pid: i32) -> Option<u64> {
    let task = runsbx_runtime::guard::live_task(pid)?;
    let text = std::fs::read_to_string(task.join("smaps_rollup")).ok()?;
    let kb = |name: &str| field(&text, name).unwrap_or(0);
    Some((kb("Private_Clean:") + kb("Private_Dirty:")) * 1024)
}

/// The number after `name` on its line of a /proc file.
fn field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn seccomp_filters(pid: i32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    field(&status, "Seccomp_filters:").context("no Seccomp_filters line")
}

/// One line of at most 256 bytes, read a byte at a time: nothing past it is
/// taken from the stream.
fn read_short_line(mut s: &UnixStream) -> Result<String> {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while line.len() < 256 {
        if s.read(&mut b)? == 0 {
            bail!("ended before it was confined");
        }
        if b[0] == b'\n' {
            return Ok(String::from_utf8_lossy(&line).into_owned());
        }
        line.push(b[0]);
    }
    bail!("a first line too long")
}
