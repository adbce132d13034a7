//! `runsbx serve`: warm REPL sessions on a unix stream socket.
//!
//! Each session is a `runsbx sandbox` process of its own (this binary),
//! running the REPL driver (bundles/python-repl/repl.py, carried in the
//! binary) under the operator's interpreter, with the preload already run. A
//! pool of such sessions is kept started; a connecting client gets one, a
//! refill thread per CPU starts the next. Sessions share nothing but the binds every
//! sandbox gets read-only: no process, no memory, no workdir; a session's
//! supervision (signals, limits, reaping, cleanup) is `runsbx sandbox`'s
//! own, tested path, and a session's crash takes no other with it.
//!
//! Protocol (JSON lines, docs/sandbox.md "Warm sessions"): on connect
//! `{"event":"ready","session":N,"pid":PID}` (or one
//! `{"event":"refused","reason":...}` line), then one answer per
//! `{"code": ...}` request, as repl.py gives it, and a last
//! `{"event":"end","reason":...}` when the session ends other than by the
//! client closing.

mod fork;
mod session;

use std::collections::{HashMap, VecDeque};
use std::io::{BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use nix::sys::signal::{SigSet, Signal};
use serde_json::{json, Value};

use session::{read_line_capped, Line, MAX_LINE};
pub use session::{Killer, Session};

/// The REPL driver every session runs.
const REPL: &str = include_str!("../../../../bundles/python-repl/repl.py");

/// How each session is made (commands/serve.rs and commands/mcp.rs build
/// it from flags).
pub struct SessionConfig {
    /// runsbx's global flags for each session's `runsbx` (`--root`).
    pub global: Vec<String>,
    /// `sandbox` flags for each session, before `--`.
    pub sandbox: Vec<String>,
    /// The interpreter and its arguments.
    pub python: Vec<String>,
    pub preload: Option<String>,
    /// `--fork-server`: sessions forked from one preloaded interpreter.
    pub fork: Option<ForkConfig>,
}

/// What the fork server mode needs besides the sandbox flags.
pub struct ForkConfig {
    /// `--ro` paths (the fork server's Landlock policy is computed here too).
    pub ro: Vec<PathBuf>,
    /// `--rss-limit`: each session's own memory, in bytes.
    pub rss_limit: Option<u64>,
}

/// What the operator asked of the server.
pub struct Config {
    pub listen: PathBuf,
    pub warm: usize,
    pub max_sessions: usize,
    pub session_timeout: Option<Duration>,
}

/// Starts sessions: the REPL driver written once to a private directory
/// (removed with the factory), each session a `runsbx sandbox` of it.
pub struct Factory {
    config: SessionConfig,
    exe: PathBuf,
    repl: PathBuf,
    next_id: AtomicU64,
    /// With `--fork-server`: how to start it, and the one running.
    fork: Option<(fork::Setup, Mutex<Option<Arc<fork::ForkServer>>>)>,
    // Dropped last: the fork server (above) reads its files.
    _sessions: Option<runsbx_sandbox::stage::PrivateDir>,
    _dir: tempfile::TempDir,
}

impl Factory {
    pub fn new(config: SessionConfig) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("runsbx-serve-")
            .tempdir()
            .context("private directory")?;
        // The sandbox's nobody (root invoking) reads the driver through it.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        let repl = dir.path().join("repl.py");
        std::fs::write(&repl, REPL).with_context(|| format!("write {}", repl.display()))?;
        std::fs::set_permissions(&repl, std::fs::Permissions::from_mode(0o644))?;
        let exe = std::env::current_exe().context("runsbx's own path")?;
        let (fork, sessions) = match &config.fork {
            Some(f) => {
                let (setup, sessions) = fork_setup(&config, f, &exe, dir.path(), &repl)?;
                (Some((setup, Mutex::new(None))), Some(sessions))
            }
            None => (None, None),
        };
        Ok(Self {
            config,
            exe,
            repl,
            next_id: AtomicU64::new(1),
            fork,
            _sessions: sessions,
            _dir: dir,
        })
    }

    /// A new session, its preload run.
    pub fn start(&self) -> Result<Session> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        if let Some((setup, running)) = &self.fork {
            let server = {
                let mut running = running.lock().unwrap_or_else(|e| e.into_inner());
                match &*running {
                    Some(s) if !s.ended() => s.clone(),
                    _ => {
                        // Dropped first: a fork server that ended is reaped.
                        *running = None;
                        let s = Arc::new(fork::ForkServer::start(setup, id)?);
                        *running = Some(s.clone());
                        s
                    }
                }
            };
            return server.spawn(id);
        }
        let mut args = self.config.sandbox.clone();
        args.push("--ro".into());
        args.push(self.repl.display().to_string());
        args.push("--".into());
        args.extend(self.config.python.iter().cloned());
        args.push("-I".into());
        args.push(self.repl.display().to_string());
        let mut s = Session::start(id, &self.exe, &self.config.global, &args)?;
        if let Some(code) = &self.config.preload {
            let answer = s.request(code);
            let v: Value = answer
                .as_deref()
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or_default();
            if v["ok"] != true {
                s.kill();
                let outcome = s.finish();
                let why = match v["error"].as_str() {
                    Some(e) => e.trim_end().lines().last().unwrap_or(e).to_string(),
                    None => outcome["reason"]
                        .as_str()
                        .unwrap_or("no answer")
                        .to_string(),
                };
                bail!("--preload failed: {why}");
            }
        }
        Ok(s)
    }
}

/// The fork server's files (beside repl.py in `dir`), its sessions
/// directory, the layers each session stacks, and its `sandbox` command.
fn fork_setup(
    config: &SessionConfig,
    f: &ForkConfig,
    exe: &Path,
    dir: &Path,
    repl: &Path,
) -> Result<(fork::Setup, runsbx_sandbox::stage::PrivateDir)> {
    let forkserver = dir.join("forkserver.py");
    let layers = dir.join("layers.json");
    std::fs::write(&forkserver, fork::FORKSERVER)
        .with_context(|| format!("write {}", forkserver.display()))?;
    std::fs::set_permissions(&forkserver, std::fs::Permissions::from_mode(0o644))?;
    // Root's sessions run as host nobody: the directory is theirs.
    let owner = nix::unistd::geteuid()
        .is_root()
        .then_some((runsbx_bundle::NOBODY, runsbx_bundle::NOBODY));
    let sessions = runsbx_sandbox::stage::private_dir("runsbx-sessions-", owner)?;
    let mut command = config.python.clone();
    command.push("-I".into());
    for p in [&forkserver, repl, &layers] {
        command.push(p.display().to_string());
    }
    // The fork server's own policy, generated as its `runsbx sandbox` will
    // generate it; each session's layer is derived from it.
    let req = runsbx_sandbox::SandboxRequest {
        command: command.clone(),
        workdir: Some(sessions.0.clone()),
        ro: f.ro.iter().cloned().chain([dir.to_path_buf()]).collect(),
        profile: runsbx_policy::profile::Profile::ForkServer,
        ..Default::default()
    };
    let prepared = runsbx_sandbox::prepare(&req, None)?;
    let policy = prepared
        .config
        .landlock()
        .context("--fork-server: the generated config has no Landlock policy")?;
    let text = fork::layers(policy, &sessions.0)?.to_string();
    std::fs::write(&layers, text).with_context(|| format!("write {}", layers.display()))?;
    std::fs::set_permissions(&layers, std::fs::Permissions::from_mode(0o644))?;
    let mut args = config.sandbox.clone();
    args.extend(["--profile".into(), "fork-server".into(), "--workdir".into()]);
    args.push(sessions.0.display().to_string());
    args.extend(["--ro".into(), dir.display().to_string(), "--".into()]);
    args.extend(command);
    Ok((
        fork::Setup {
            exe: exe.to_path_buf(),
            global: config.global.clone(),
            args,
            preload: config.preload.clone(),
            sessions: sessions.0.clone(),
            owner,
            rss_limit: f.rss_limit,
        },
        sessions,
    ))
}

struct Pool {
    warm: VecDeque<Session>,
    /// Handed out and not yet ended, by session id.
    live: HashMap<u64, Killer>,
    /// Clients waiting for a warm session.
    waiting: usize,
    /// Sessions the refill threads are starting.
    starting: usize,
}

struct Server {
    config: Config,
    factory: Factory,
    pool: Mutex<Pool>,
    changed: Condvar,
    stopping: AtomicBool,
}

/// Runs the server until SIGTERM or SIGINT; then ends every session and
/// removes the socket. Returns the exit status.
pub fn run(config: Config, sessions: SessionConfig) -> Result<u8> {
    if config.max_sessions == 0 || config.warm > config.max_sessions {
        bail!(
            "--warm {} --max-sessions {}: need 0 < --max-sessions and --warm <= --max-sessions",
            config.warm,
            config.max_sessions
        );
    }
    // Blocked before any thread starts, so every thread inherits the mask
    // and only the signal thread takes them (children get a clear mask).
    // SIGPIPE too, never taken: a write to a session or a client that is
    // gone fails with EPIPE instead of ending the server.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    let mut blocked = signals;
    blocked.add(Signal::SIGPIPE);
    blocked
        .thread_block()
        .context("block SIGTERM, SIGINT and SIGPIPE")?;

    // Made 0600 from the start (no thread runs yet to share the umask):
    // another local user connecting would get a session on the operator's
    // account and limits.
    let umask = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    let bound = Socket::bind(&config.listen);
    nix::sys::stat::umask(umask);
    let mut socket = bound.with_context(|| format!("--listen {}", config.listen.display()))?;

    let server = Arc::new(Server {
        factory: Factory::new(sessions)?,
        pool: Mutex::new(Pool {
            warm: VecDeque::new(),
            live: HashMap::new(),
            waiting: 0,
            starting: 0,
        }),
        changed: Condvar::new(),
        stopping: AtomicBool::new(false),
        config,
    });

    // Fail closed at start: a session that cannot start or preload now
    // would fail every client.
    if server.config.warm > 0 {
        let first = server.start_session().context("the first session")?;
        server.pool.lock().unwrap().warm.push_back(first);
    }
    socket
        .place()
        .with_context(|| format!("--listen {}", server.config.listen.display()))?;
    // One refill thread per CPU (up to 4): a session's start is mostly its
    // preload's imports, which run in parallel.
    let refillers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let refill: Vec<_> = (0..refillers)
        .map(|_| {
            let s = server.clone();
            std::thread::spawn(move || s.refill())
        })
        .collect();
    {
        let s = server.clone();
        let fd = socket.listener.as_raw_fd();
        std::thread::spawn(move || {
            let _ = signals.wait();
            s.stopping.store(true, Ordering::SeqCst);
            // Wakes accept(2) with EINVAL.
            let _ = nix::sys::socket::shutdown(fd, nix::sys::socket::Shutdown::Both);
            s.changed.notify_all();
        });
    }
    eprintln!(
        "runsbx: serve: listening on {} ({} warm, at most {} sessions)",
        server.config.listen.display(),
        server.config.warm,
        server.config.max_sessions
    );

    let mut clients = Vec::new();
    for stream in socket.listener.incoming() {
        if server.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let s = server.clone();
        clients.push(std::thread::spawn(move || s.serve(stream)));
        clients.retain(|c| !c.is_finished());
    }

    // Drain: end every session, handed out or warm, and wait for them.
    server.stopping.store(true, Ordering::SeqCst);
    server.changed.notify_all();
    let warm: Vec<Session> = {
        let mut pool = server.pool.lock().unwrap();
        for killer in pool.live.values() {
            killer.kill();
        }
        pool.warm.drain(..).collect()
    };
    for s in warm {
        s.kill();
        s.finish();
    }
    for c in clients {
        let _ = c.join();
    }
    for r in refill {
        let _ = r.join();
    }
    Ok(0)
}

impl Server {
    fn start_session(&self) -> Result<Session> {
        self.factory.start()
    }

    /// Keeps `warm` sessions ready (more while clients wait), never more
    /// than `max_sessions` + `warm` alive. A failed start is retried with a growing
    /// pause, said once per failure on stderr.
    fn refill(&self) {
        let mut pause = Duration::from_millis(100);
        loop {
            {
                let mut pool = self.pool.lock().unwrap();
                loop {
                    if self.stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    // Warm or on the way: enough for --warm, or for every
                    // client waiting; never more than --max-sessions beyond
                    // --warm alive.
                    let ready = pool.warm.len() + pool.starting;
                    let alive = ready + pool.live.len();
                    let want = self.config.warm.max(pool.waiting);
                    if ready < want && alive < self.config.max_sessions + self.config.warm {
                        break;
                    }
                    pool = self.changed.wait(pool).unwrap();
                }
                pool.starting += 1;
            }
            let started = self.start_session();
            let mut pool = self.pool.lock().unwrap();
            pool.starting -= 1;
            match started {
                Ok(s) if self.stopping.load(Ordering::SeqCst) => {
                    drop(pool);
                    s.kill();
                    s.finish();
                    return;
                }
                Ok(s) => {
                    pool.warm.push_back(s);
                    pause = Duration::from_millis(100);
                    self.changed.notify_all();
                }
                Err(e) => {
                    drop(pool);
                    eprintln!("runsbx: serve: a session failed to start: {e:#}");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(30));
                }
            }
        }
    }

    /// A warm session for a client, waiting for one while fewer than
    /// `max_sessions` are handed out; `Err` with the reason to refuse.
    fn take(&self) -> std::result::Result<Session, String> {
        let mut pool = self.pool.lock().unwrap();
        // Waiting clients count too: a flood of connections holds at most
        // --max-sessions threads, the rest are refused at once.
        if pool.live.len() + pool.waiting >= self.config.max_sessions {
            return Err(format!(
                "busy: {} sessions in use, {} clients waiting (--max-sessions {})",
                pool.live.len(),
                pool.waiting,
                self.config.max_sessions
            ));
        }
        pool.waiting += 1;
        self.changed.notify_all();
        let s = loop {
            if self.stopping.load(Ordering::SeqCst) {
                pool.waiting -= 1;
                return Err("the server is stopping".into());
            }
            if let Some(mut s) = pool.warm.pop_front() {
                if s.alive() {
                    break s;
                }
                // Died while warm: reaped, and the refill starts another.
                std::thread::spawn(move || s.finish());
                self.changed.notify_all();
                continue;
            }
            pool = self.changed.wait(pool).unwrap();
        };
        pool.waiting -= 1;
        pool.live.insert(s.id, s.killer.clone());
        s.handed_out();
        self.changed.notify_all();
        Ok(s)
    }

    fn serve(&self, stream: UnixStream) {
        let mut out = match stream.try_clone() {
            Ok(s) => s,
            Err(_) => return,
        };
        let mut s = match self.take() {
            Ok(s) => s,
            Err(reason) => {
                let _ = writeln!(out, "{}", json!({"event": "refused", "reason": reason}));
                return;
            }
        };
        let id = s.id;
        let ended = self.converse(&mut s, stream, &mut out);
        s.kill();
        let outcome = s.finish();
        if let Some(reason) = ended {
            let reason = match reason {
                End::Workload => outcome["reason"].as_str().unwrap_or("exited").to_string(),
                End::Timeout => "timeout".into(),
                End::Stopping => "server-stopping".into(),
                End::OutputLimit => "output-limit".into(),
            };
            let mut line = json!({"event": "end", "reason": reason});
            for k in [
                "exit_code",
                "signal",
                "peak_rss_bytes",
                "wall_ms",
                "message",
            ] {
                if let Some(v) = outcome.get(k) {
                    line[k] = v.clone();
                }
            }
            let _ = writeln!(out, "{line}");
        }
        let _ = out.shutdown(std::net::Shutdown::Both);
        let mut pool = self.pool.lock().unwrap();
        pool.live.remove(&id);
        self.changed.notify_all();
    }

    /// Relays the client's lines to the session and its answers back until
    /// one side ends; `None` when the client closed (no last line for it).
    fn converse(&self, s: &mut Session, stream: UnixStream, out: &mut UnixStream) -> Option<End> {
        let ready = json!({"event": "ready", "session": s.id, "pid": s.pid});
        if writeln!(out, "{ready}").is_err() {
            return None;
        }
        let client_gone = Arc::new(AtomicBool::new(false));
        let timed_out = Arc::new(AtomicBool::new(false));
        let over_limit = Arc::new(AtomicBool::new(false));
        let ending = Arc::new(AtomicBool::new(false));
        // A client that stops reading its answers would hold this thread in
        // a write for ever, and its session slot with it.
        let _ = out.set_write_timeout(Some(CLIENT_WRITE_TIMEOUT));
        // The client's hang-up, seen even while the reader below is blocked
        // writing a request to a session that does not read it.
        {
            let (client_gone, ending, killer) =
                (client_gone.clone(), ending.clone(), s.killer.clone());
            // Woken at the end by converse's shutdown of the read side.
            let watched = stream.try_clone();
            std::thread::spawn(move || {
                use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
                use std::os::fd::AsFd;
                let Ok(watched) = watched else { return };
                // The peer's close or shutdown of its writing side.
                let rdhup = PollFlags::from_bits_retain(nix::libc::POLLRDHUP);
                loop {
                    let mut fds = [PollFd::new(watched.as_fd(), rdhup)];
                    match poll(&mut fds, PollTimeout::NONE) {
                        Err(nix::errno::Errno::EINTR) => continue,
                        _ => break,
                    }
                }
                if !ending.load(Ordering::SeqCst) {
                    client_gone.store(true, Ordering::SeqCst);
                    killer.kill();
                }
            });
        }
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        // The deadline, from hand-off.
        if let Some(limit) = self.config.session_timeout {
            let (timed_out, killer) = (timed_out.clone(), s.killer.clone());
            std::thread::spawn(move || {
                use std::sync::mpsc::RecvTimeoutError;
                if let Err(RecvTimeoutError::Timeout) = done_rx.recv_timeout(limit) {
                    timed_out.store(true, Ordering::SeqCst);
                    killer.kill();
                }
            });
        }
        // Client -> session. A client that closes, even mid-request, ends
        // the session at once: nothing of it outlives the connection.
        let mut stdin = s.stdin.take();
        let reader = {
            let (client_gone, killer) = (client_gone.clone(), s.killer.clone());
            std::thread::spawn(move || {
                let mut lines = BufReader::new(stream);
                let mut line = Vec::new();
                while read_line_capped(&mut lines, &mut line, MAX_LINE) == Line::Complete {
                    // A session that ended takes no more; the client's
                    // close is still waited for.
                    if let Some(w) = stdin.as_mut() {
                        if w.write_all(&line).is_err() {
                            stdin = None;
                        }
                    }
                }
                client_gone.store(true, Ordering::SeqCst);
                drop(stdin);
                killer.kill();
            })
        };
        // Session -> client, line by line.
        let mut line = Vec::new();
        loop {
            match read_line_capped(&mut s.stdout, &mut line, MAX_LINE) {
                Line::Complete => {
                    if out.write_all(&line).is_err() {
                        s.kill();
                        break;
                    }
                }
                Line::Eof => break,
                Line::TooLong => {
                    over_limit.store(true, Ordering::SeqCst);
                    s.kill();
                    break;
                }
            }
        }
        drop(done_tx);
        ending.store(true, Ordering::SeqCst);
        let gone = client_gone.load(Ordering::SeqCst);
        // Ends the reader (its read returns 0) if the session ended first.
        let _ = out.shutdown(std::net::Shutdown::Read);
        let _ = reader.join();
        if gone {
            return None;
        }
        Some(if over_limit.load(Ordering::SeqCst) {
            End::OutputLimit
        } else if timed_out.load(Ordering::SeqCst) {
            End::Timeout
        } else if self.stopping.load(Ordering::SeqCst) {
            End::Stopping
        } else {
            End::Workload
        })
    }
}

enum End {
    Workload,
    Timeout,
    Stopping,
    /// An answer line past [`MAX_LINE`].
    OutputLimit,
}

/// How long a client may leave an answer unread before its session ends.
const CLIENT_WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// The listening socket: bound and listening under a private name beside
/// `--listen` from the start, renamed onto `--listen` (`place`) once the
/// server can hand out sessions, so a client that waits for the path to
/// exist never connects between bind(2) and listen(2) (ECONNREFUSED), nor to
/// a server whose first session then fails. An existing `--listen` path is
/// refused, never replaced. Removed when dropped.
struct Socket {
    listener: UnixListener,
    path: PathBuf,
    target: PathBuf,
}

impl Socket {
    fn bind(target: &Path) -> std::io::Result<Self> {
        let name = target
            .file_name()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"))?;
        if target.symlink_metadata().is_ok() {
            return Err(nix::errno::Errno::EEXIST.into());
        }
        let mut private = name.to_os_string();
        private.push(format!(".{}.binding", std::process::id()));
        let path = target.with_file_name(private);
        Ok(Self {
            listener: UnixListener::bind(&path)?,
            path,
            target: target.to_path_buf(),
        })
    }

    fn place(&mut self) -> std::io::Result<()> {
        nix::fcntl::renameat2(
            None,
            &self.path,
            None,
            &self.target,
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        )?;
        self.path = self.target.clone();
        Ok(())
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
