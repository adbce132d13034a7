//! The runtime-namespace hooks (`prestart`, `createRuntime`, `poststart`,
//! `poststop`), run by runsbx itself. libcontainer 0.7 runs prestart and
//! createRuntime with the status `creating` where the runtime-spec's suite
//! expects `created`, runs poststart before init has exec'd the workload,
//! and fails `start` when a poststart hook fails. So libcontainer is shown a
//! config (`for_libcontainer`) without poststart and poststop, which runsbx
//! runs itself: poststart once init has exec'd (state `running`), poststop
//! on delete (state `stopped`), their failures warnings. Each prestart and
//! createRuntime hook is replaced there by runsbx's hidden `hook-shim`
//! command carrying it: libcontainer runs the shim at the runtime-spec's
//! moment (in the runtime's namespaces, before the createContainer hooks
//! and init's pivot_root), and the shim runs the hook as below, told
//! `created` and the real bundle; a failure fails the create, with the
//! shim's one line (`shim_report`). createContainer hooks run through the
//! shim too, from init (in the rootfs, told init's pid). startContainer
//! hooks are run by runsbx's Executor in init ([`StartHooks`]), after the
//! seccomp filter is loaded and right before the workload's exec, as runc
//! runs them (libcontainer ran them before the filter, told `creating` and
//! the bundle copy, and a failure was lost: init exited 255 in silence).
//!
//! A failure reads as runc's: `error running KIND hook #INDEX: PATH: WHY`.
//!
//! A hook gets the runtime-spec state on stdin (a memfd holding it), its own
//! `env` (nothing else), stdout discarded and runsbx's stderr. With a `timeout` it is
//! SIGKILLed when the time is up and counts as failed; without one it is
//! waited for, as runc and crun do.

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use libcontainer::oci_spec::runtime::{Hook, Spec};
use serde::{Deserialize, Serialize};

/// The runtime-spec version `state` and the hooks report.
pub(crate) const OCI_VERSION: &str = "1.0.2";

/// The hooks of a spec runsbx runs itself, after create; kept in the
/// container's runsbx.json for `start` and `delete`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Later {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub poststart: Vec<Hook>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub poststop: Vec<Hook>,
}

impl Later {
    pub fn of(spec: &Spec) -> Option<Self> {
        let h = spec.hooks().as_ref()?;
        let later = Self {
            poststart: h.poststart().clone().unwrap_or_default(),
            poststop: h.poststop().clone().unwrap_or_default(),
        };
        (!later.poststart.is_empty() || !later.poststop.is_empty()).then_some(later)
    }
}

/// Refuses what the runtime-spec forbids in `hooks`, before anything is
/// made: a `path` that is not absolute (it would be looked up in runsbx's
/// PATH, or libcontainer's cwd), a `timeout` not above zero.
pub fn check(spec: &Spec) -> std::result::Result<(), String> {
    let Some(h) = spec.hooks() else {
        return Ok(());
    };
    #[allow(deprecated)]
    let lists = [
        ("prestart", h.prestart()),
        ("createRuntime", h.create_runtime()),
        ("createContainer", h.create_container()),
        ("startContainer", h.start_container()),
        ("poststart", h.poststart()),
        ("poststop", h.poststop()),
    ];
    for (kind, list) in lists {
        for (i, hook) in list.iter().flatten().enumerate() {
            if !hook.path().is_absolute() {
                return Err(format!(
                    "hooks.{kind}[{i}].path {:?}: not an absolute path",
                    hook.path()
                ));
            }
            if let Some(t) = hook.timeout().filter(|t| *t <= 0) {
                return Err(format!(
                    "hooks.{kind}[{i}].timeout {t}: must be greater than zero"
                ));
            }
        }
    }
    Ok(())
}

/// The keys of `hooks` that runsbx runs itself, through the shim, in the
/// Executor or after.
const SHIMMED_HOOKS: [&str; 6] = [
    "prestart",
    "createRuntime",
    "createContainer",
    "startContainer",
    "poststart",
    "poststop",
];

/// Whether `raw` (a config.json) has a hook that runsbx runs itself or
/// through its shim, which libcontainer must then not be shown as it is.
pub fn has_runtime_hooks(raw: &serde_json::Value) -> bool {
    SHIMMED_HOOKS.iter().any(|k| {
        raw["hooks"][k]
            .as_array()
            .is_some_and(|hooks| !hooks.is_empty())
    })
}

/// `raw` as libcontainer runs its hooks: without startContainer (the
/// Executor's, [`StartHooks`]), poststart and poststop, each prestart,
/// createRuntime and createContainer hook replaced by runsbx's `hook-shim`
/// carrying it (`run_shim`), which tells it the real `bundle`, runs a
/// createContainer hook in the rootfs (runc's working directory for it;
/// libcontainer's is the caller's), and writes why it failed to `report`.
pub fn for_libcontainer(raw: &mut serde_json::Value, bundle: &Path, report: &Path) {
    let rootfs = raw
        .pointer("/root/path")
        .and_then(|p| p.as_str())
        .map(|p| bundle.join(p));
    let Some(hooks) = raw.get_mut("hooks").and_then(|h| h.as_object_mut()) else {
        return;
    };
    hooks.remove("startContainer");
    hooks.remove("poststart");
    hooks.remove("poststop");
    for kind in ["prestart", "createRuntime", "createContainer"] {
        let Some(list) = hooks.get_mut(kind).and_then(|l| l.as_array_mut()) else {
            continue;
        };
        for (index, hook) in list.iter_mut().enumerate() {
            let mut args = serde_json::json!([
                "runsbx",
                "hook-shim",
                "--kind",
                kind,
                "--index",
                index.to_string(),
                "--bundle",
                bundle,
                "--report",
                report,
                "--hook",
                hook.to_string(),
            ]);
            if let (Some(dir), "createContainer") = (&rootfs, kind) {
                let list = args.as_array_mut().expect("an array");
                list.extend(["--cwd".into(), dir.display().to_string().into()]);
            }
            // This runsbx (a sealed copy, see sys/sealed_exe.rs): prestart
            // and createRuntime hooks are run by libcontainer's main process,
            // this one; createContainer hooks by init, a fork of it that has
            // not exec'd, before pivot_root.
            *hook = serde_json::json!({ "path": "/proc/self/exe", "args": args });
        }
    }
}

/// `runsbx hook-shim`: reads the state libcontainer gives a hook on stdin,
/// tells a prestart or createRuntime hook `created` (the runtime-spec's
/// status for them; libcontainer 0.7 says `creating`), a createContainer
/// hook init's pid, runs it in `cwd` when given, and tells it the real `bundle`
/// (libcontainer read a copy of config.json elsewhere), runs it as runsbx
/// runs every hook (`run_one`), and on failure writes the one line that
/// names it to `report` and exits 1, which fails the create.
pub fn run_shim(
    kind: &str,
    index: usize,
    hook: &str,
    bundle: &Path,
    report: &Path,
    cwd: Option<&Path>,
) -> i32 {
    let hook: Hook = match serde_json::from_str(hook) {
        Ok(h) => h,
        Err(e) => return shim_failed(report, format!("error running {kind} hook #{index}: {e}")),
    };
    let fail = |what: String| shim_failed(report, failure(kind, index, &hook, &what));
    if let Some(dir) = cwd {
        if let Err(e) = std::env::set_current_dir(dir) {
            return fail(format!("chdir {}: {e}", dir.display()));
        }
    }
    let mut text = String::new();
    if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text) {
        return fail(format!("reading its state: {e}"));
    }
    let mut state: serde_json::Value = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => return fail(format!("its state: {e}")),
    };
    if kind == "createContainer" {
        // As runc: `creating`, with init's pid as the hook sees it (the
        // shim's parent: init, before pivot_root, in the container's pid
        // namespace). libcontainer gives no pid yet.
        if state.get("pid").is_none_or(|p| p.is_null()) {
            state["pid"] = std::os::unix::process::parent_id().into();
        }
    } else {
        state["status"] = "created".into();
    }
    state["bundle"] = bundle.display().to_string().into();
    if state["annotations"]
        .as_object()
        .is_some_and(|a| a.is_empty())
    {
        // Left out when empty, as `state` and runc give it.
        state.as_object_mut().map(|s| s.remove("annotations"));
    }
    match run_one(&hook, state.to_string().as_bytes(), false) {
        Ok(()) => 0,
        Err(what) => fail(what),
    }
}

fn shim_failed(report: &Path, line: String) -> i32 {
    if std::fs::write(report, &line).is_err() {
        eprintln!("runsbx: error: {line}");
    }
    1
}

/// Why a prestart or createRuntime hook failed, as its shim wrote it
/// (`run_shim`); `None` when no hook failed.
pub fn shim_report(report: &Path) -> Option<HookError> {
    std::fs::read_to_string(report)
        .ok()
        .map(HookError::Reported)
}

/// The state a hook reads on stdin (runtime-spec, "State").
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State<'a> {
    pub oci_version: &'a str,
    pub id: &'a str,
    pub status: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    pub bundle: &'a Path,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<&'a HashMap<String, String>>,
}

/// A failed hook, in runc's words (its `error running %s hook #%d: %w`),
/// with the hook's path.
fn failure(kind: &str, index: usize, hook: &Hook, what: &str) -> String {
    format!(
        "error running {kind} hook #{index}: {}: {what}",
        hook.path().display()
    )
}

/// The startContainer hooks of a container and the state they are told, for
/// the Executor to run in init after the seccomp filter is loaded and
/// right before the workload's exec (runc's moment and order).
#[derive(Debug, Clone)]
pub struct StartHooks {
    hooks: Vec<Hook>,
    /// runc's: `created`, the real bundle, the annotations; the pid is
    /// init's own, filled in when they run.
    state: serde_json::Value,
}

impl StartHooks {
    pub fn of(spec: &Spec, id: &str, bundle: &Path) -> Option<Self> {
        let hooks = spec.hooks().as_ref()?.start_container().clone()?;
        if hooks.is_empty() {
            return None;
        }
        let state = State {
            oci_version: OCI_VERSION,
            id,
            status: "created",
            pid: None,
            bundle,
            annotations: spec.annotations().as_ref().filter(|a| !a.is_empty()),
        };
        Some(Self {
            hooks,
            state: serde_json::to_value(&state).unwrap_or_default(),
        })
    }

    /// In init: each hook in turn, told init's pid (as the container sees
    /// it), with the workload's environment unless the hook has its own;
    /// the first failure stops them and the container, in one line.
    pub fn run(&self) -> std::result::Result<(), String> {
        let mut state = self.state.clone();
        state["pid"] = nix::unistd::getpid().as_raw().into();
        let input = state.to_string();
        for (index, hook) in self.hooks.iter().enumerate() {
            run_one(hook, input.as_bytes(), true)
                .map_err(|what| failure("startContainer", index, hook, &what))?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// What a `hook-shim` wrote: `error running KIND hook #INDEX: PATH: WHY`.
    #[error("{0}")]
    Reported(String),
}

/// Runs every one of `hooks`; one that fails is a warning and the others go
/// on (poststart, poststop: the runtime-spec's rule).
pub fn run_warn(kind: &'static str, hooks: &[Hook], state: &State<'_>) {
    let input = state_json(state);
    for (index, hook) in hooks.iter().enumerate() {
        if let Err(what) = run_one(hook, &input, false) {
            tracing::warn!(
                "container {:?}: {}",
                state.id,
                failure(kind, index, hook, &what)
            );
        }
    }
}

fn state_json(state: &State<'_>) -> Vec<u8> {
    // A struct of strings and numbers: serialization cannot fail.
    serde_json::to_vec(state).unwrap_or_default()
}

/// One hook: spawned, given `input`, waited for (up to its timeout).
/// Returns why it failed. Its environment is its `env`; without one, the
/// caller's when `inherit_env` (startContainer: the workload's, as runc and
/// libcontainer give it), else empty.
fn run_one(hook: &Hook, input: &[u8], inherit_env: bool) -> std::result::Result<(), String> {
    let mut cmd = Command::new(hook.path());
    match hook.args().as_deref() {
        Some([arg0, rest @ ..]) => cmd.arg0(arg0).args(rest),
        _ => &mut cmd,
    };
    if let Some(env) = hook.env() {
        cmd.env_clear()
            .envs(env.iter().map(|kv| kv.split_once('=').unwrap_or((kv, ""))));
    } else if !inherit_env {
        cmd.env_clear();
    }
    cmd.stdin(state_file(input)?)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run: {e}"))?;
    let timeout = hook.timeout().map(|s| Duration::from_secs(s.max(0) as u64));
    let status = wait(&mut child, timeout)?;
    match (status.code(), status.signal()) {
        (Some(0), _) => Ok(()),
        (Some(code), _) => Err(format!("exited with status {code}")),
        (None, Some(n)) => Err(format!("killed by {}", signal_words(n))),
        (None, None) => Err(format!("ended: {status}")),
    }
}

/// A signal's name and what it means, e.g. `SIGSYS (bad system call)`: a
/// hook stopped by a seccomp filter's kill reads as under runc.
fn signal_words(n: i32) -> String {
    let Ok(sig) = nix::sys::signal::Signal::try_from(n) else {
        return format!("signal {n}");
    };
    use nix::sys::signal::Signal::*;
    let words = match sig {
        SIGSYS => "bad system call",
        SIGKILL => "killed",
        SIGSEGV => "segmentation fault",
        SIGABRT => "aborted",
        SIGTERM => "terminated",
        SIGBUS => "bus error",
        SIGILL => "illegal instruction",
        SIGFPE => "floating point exception",
        _ => return sig.as_str().to_string(),
    };
    format!("{} ({words})", sig.as_str())
}

/// The state as a file read from its start: a hook that never reads its
/// stdin (nor exits), or a process it leaves behind holding it, cannot block
/// runsbx on a full pipe, timeout or not.
fn state_file(input: &[u8]) -> std::result::Result<std::fs::File, String> {
    use std::io::{Seek, SeekFrom};
    let fd = nix::sys::memfd::memfd_create(
        c"runsbx-hook-state",
        nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC,
    )
    .map_err(|e| format!("memfd for its state: {e}"))?;
    let mut file = std::fs::File::from(fd);
    file.write_all(input)
        .and_then(|()| file.seek(SeekFrom::Start(0)).map(drop))
        .map_err(|e| format!("write its state: {e}"))?;
    Ok(file)
}

/// Waits for `child`, for at most `timeout`; past it (or when it cannot be
/// watched), SIGKILLs and reaps it. Returns how it ended.
fn wait(
    child: &mut Child,
    timeout: Option<Duration>,
) -> std::result::Result<std::process::ExitStatus, String> {
    let reap = |child: &mut Child| child.wait().map_err(|e| format!("wait: {e}"));
    let Some(timeout) = timeout else {
        return reap(child);
    };
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    // The child is ours and not reaped yet, so its pid is still its own.
    // Without a pidfd (refused by an outer seccomp profile, a kernel before
    // 5.3) the child is polled every 10 ms instead.
    let pidfd = crate::sys::pidfd::pidfd_open(pid).ok();
    let deadline = Instant::now() + timeout;
    let failed = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let exited = match &pidfd {
            Some(fd) => {
                let ms = left.as_millis().min(i32::MAX as u128) as i32;
                match crate::sys::pidfd::exited_within(fd.as_raw_fd(), ms) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(false),
                    r => r,
                }
            }
            None => {
                std::thread::sleep(left.min(Duration::from_millis(10)));
                child.try_wait().map(|s| s.is_some())
            }
        };
        match exited {
            Ok(true) => return reap(child),
            Err(e) => break format!("cannot watch it ({e}); killed"),
            Ok(false) if left.is_zero() => {
                break format!("timed out after {} s; killed", timeout.as_secs())
            }
            Ok(false) => {}
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    Err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use libcontainer::oci_spec::runtime::HookBuilder;

    fn sh(script: &str, timeout: Option<i64>) -> Hook {
        let mut b = HookBuilder::default()
            .path("/bin/sh")
            .args(vec!["sh".into(), "-c".into(), script.into()])
            .env(vec!["A=b=c".into()]);
        if let Some(t) = timeout {
            b = b.timeout(t);
        }
        b.build().unwrap()
    }

    fn state(dir: &Path) -> State<'_> {
        State {
            oci_version: "1.0.2",
            id: "x",
            status: "created",
            pid: Some(42),
            bundle: dir,
            annotations: None,
        }
    }

    #[test]
    fn state_env_and_args_reach_the_hook() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let hook = sh(
            &format!("cat > {0}; echo \"$0 $A\" >> {0}", out.display()),
            None,
        );
        run_one(&hook, &state_json(&state(dir.path())), false).unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        let (json, tail) = text.split_at(text.find('}').unwrap() + 1);
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["status"], "created");
        assert_eq!(v["pid"], 42);
        assert_eq!(v["ociVersion"], "1.0.2");
        assert!(v.get("annotations").is_none());
        assert_eq!(tail.trim(), "sh b=c");
    }

    #[test]
    fn a_failure_says_why_and_run_warn_goes_on_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let after = dir.path().join("after");
        let hooks = [
            sh("exit 0", None),
            sh("exit 3", None),
            sh(&format!("touch {}", after.display()), None),
        ];
        let input = state_json(&state(dir.path()));
        assert_eq!(
            run_one(&hooks[1], &input, false).unwrap_err(),
            "exited with status 3"
        );
        run_warn("poststart", &hooks, &state(dir.path()));
        assert!(after.exists());
    }

    #[test]
    fn a_hook_past_its_timeout_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let t = Instant::now();
        let input = state_json(&state(dir.path()));
        let err = run_one(&sh("sleep 30", Some(1)), &input, false).unwrap_err();
        assert!(err.ends_with("timed out after 1 s; killed"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_hook_killed_by_a_signal_says_which_as_runc() {
        let dir = tempfile::tempdir().unwrap();
        let input = state_json(&state(dir.path()));
        let err = run_one(&sh("kill -SYS $$", None), &input, false).unwrap_err();
        assert_eq!(err, "killed by SIGSYS (bad system call)");
        assert_eq!(
            failure("startContainer", 1, &sh("", None), &err),
            "error running startContainer hook #1: /bin/sh: killed by SIGSYS (bad system call)"
        );
    }

    #[test]
    fn start_container_hooks_are_told_created_and_stop_at_the_first_failure() {
        let dir = tempfile::tempdir().unwrap();
        let (seen, after) = (dir.path().join("seen"), dir.path().join("after"));
        let spec: Spec = serde_json::from_value(serde_json::json!({
            "ociVersion": "1.0.2",
            "annotations": { "a": "b" },
            "hooks": { "startContainer": [
                { "path": "/bin/sh", "args": ["sh", "-c", format!("cat > {}", seen.display())] },
                { "path": "/bin/false" },
                { "path": "/bin/touch", "args": ["touch", after.display().to_string()] }
            ] }
        }))
        .unwrap();
        let hooks = StartHooks::of(&spec, "x", Path::new("/b")).unwrap();
        assert_eq!(
            hooks.run().unwrap_err(),
            "error running startContainer hook #1: /bin/false: exited with status 1"
        );
        assert!(!after.exists());
        let state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
        assert_eq!(state["status"], "created");
        assert_eq!(state["bundle"], "/b");
        assert_eq!(state["pid"], std::process::id());
        assert_eq!(state["annotations"], serde_json::json!({ "a": "b" }));
    }

    #[test]
    fn a_missing_hook_fails() {
        let dir = tempfile::tempdir().unwrap();
        let hook = HookBuilder::default()
            .path("/nonexistent/hook")
            .build()
            .unwrap();
        let err = run_one(&hook, &state_json(&state(dir.path())), false).unwrap_err();
        assert!(err.starts_with("cannot run:"), "{err}");
    }

    #[test]
    fn relative_paths_and_zero_timeouts_are_refused() {
        let spec = |hooks: serde_json::Value| -> Spec {
            serde_json::from_value(serde_json::json!({"ociVersion": "1.0.2", "hooks": hooks}))
                .unwrap()
        };
        let ok = spec(serde_json::json!({"poststop": [{"path": "/bin/true", "timeout": 1}]}));
        assert_eq!(check(&ok), Ok(()));
        let rel = spec(serde_json::json!({"createContainer": [{"path": "/a"}, {"path": "true"}]}));
        assert_eq!(
            check(&rel).unwrap_err(),
            "hooks.createContainer[1].path \"true\": not an absolute path"
        );
        let zero = spec(serde_json::json!({"prestart": [{"path": "/a", "timeout": 0}]}));
        assert_eq!(
            check(&zero).unwrap_err(),
            "hooks.prestart[0].timeout 0: must be greater than zero"
        );
    }

    #[test]
    fn libcontainer_runs_only_the_shim() {
        let mut raw = serde_json::json!({"root": {"path": "rootfs"}, "hooks": {
            "prestart": [{"path": "/a", "timeout": 5}], "createRuntime": [{"path": "/b"}],
            "createContainer": [{"path": "/c"}], "startContainer": [{"path": "/d"}],
            "poststart": [{"path": "/e"}], "poststop": [{"path": "/f"}]}});
        assert!(has_runtime_hooks(&raw));
        for_libcontainer(&mut raw, Path::new("/b/dir"), Path::new("/r/hook-error"));
        let keys: Vec<_> = raw["hooks"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["createContainer", "createRuntime", "prestart"]);
        // createContainer: in the rootfs, as runc runs it.
        let cc = raw["hooks"]["createContainer"][0]["args"]
            .as_array()
            .unwrap();
        assert_eq!(cc[cc.len() - 2..], ["--cwd", "/b/dir/rootfs"]);
        let shim = &raw["hooks"]["prestart"][0];
        assert_eq!(shim["path"], "/proc/self/exe");
        // The shim enforces the hook's timeout itself, with the hook's env.
        assert!(shim.get("timeout").is_none() && shim.get("env").is_none());
        let args: Vec<&str> = shim["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "runsbx",
                "hook-shim",
                "--kind",
                "prestart",
                "--index",
                "0",
                "--bundle",
                "/b/dir",
                "--report",
                "/r/hook-error",
                "--hook",
                r#"{"path":"/a","timeout":5}"#
            ]
        );
        assert!(!has_runtime_hooks(
            &serde_json::json!({"hooks": {"prestart": []}})
        ));
    }
}
