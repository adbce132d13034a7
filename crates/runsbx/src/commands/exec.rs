use anyhow::{bail, Context, Result};
use runsbx_runtime::monitor::Monitor;
use runsbx_runtime::ExecOptions;

use super::Ctx;
use crate::cli::Exec;

pub fn run(ctx: &Ctx, a: Exec) -> Result<u8> {
    // Nothing that changes isolation is accepted and then ignored.
    if a.apparmor.is_some() {
        bail!("--apparmor: AppArmor profiles are not supported by runsbx");
    }
    if a.process_label.is_some() {
        bail!("--process-label: SELinux labels are not supported by runsbx");
    }
    // libcontainer takes a --process file as it is; flags that would also
    // shape the process are refused rather than silently dropped.
    if a.process.is_some() {
        let mut given = Vec::new();
        if !a.command.is_empty() {
            given.push("a command");
        }
        for (set, flag) in [
            (!a.env.is_empty(), "--env"),
            (a.cwd.is_some(), "--cwd"),
            (a.user.is_some(), "--user"),
            (!a.additional_gids.is_empty(), "--additional-gids"),
            (!a.cap.is_empty(), "--cap"),
            (a.no_new_privs, "--no-new-privs"),
        ] {
            if set {
                given.push(flag);
            }
        }
        if !given.is_empty() {
            bail!(
                "--process cannot be combined with {}: put them in the process file",
                given.join(", ")
            );
        }
    }
    if let Some(bad) = a.env.iter().find(|e| !e.contains('=')) {
        bail!("--env {bad:?}: expected KEY=VALUE");
    }
    if a.process.is_none() && a.command.is_empty() {
        bail!("no command given: pass a command or --process FILE");
    }
    if a.tty && a.process.is_none() {
        bail!("--tty needs --process FILE with \"terminal\": true (and --console-socket)");
    }
    if a.tty && a.console_socket.is_none() {
        bail!("--tty needs --console-socket: runsbx does not relay a pty itself yet");
    }
    let user = a.user.as_deref().map(parse_user).transpose()?;
    let sub_cgroup = parse_sub_cgroup(&a.cgroup)?;
    let detach = a.detach;
    let pidfd_socket = a.pidfd_socket.clone();
    let id = a.id.clone();
    let opts = ExecOptions {
        id: a.id,
        process: a.process,
        args: a.command,
        env: a.env,
        cwd: a.cwd,
        user,
        additional_gids: a.additional_gids,
        tty: a.tty,
        console_socket: a.console_socket,
        pid_file: a.pid_file,
        detach,
        preserve_fds: a.preserve_fds,
        no_new_privs: a.no_new_privs,
        cap: a.cap,
        ignore_paused: a.ignore_paused,
        sub_cgroup,
    };
    let pid = ctx.rt.exec(opts)?;
    if let Some(sock) = &pidfd_socket {
        runsbx_runtime::sys::pidfd::send(sock, pid)?;
    }
    if detach {
        return Ok(0);
    }
    let monitor = Monitor::new().with_context(|| format!("exec {id}"))?;
    let exit = monitor.wait(pid, None, || false)?;
    Ok(exit.exit.status().clamp(0, 255) as u8)
}

/// `UID` or `UID:GID`, numbers only: a name lookup would read the host's
/// passwd, not the container's, and could map to the wrong user.
pub fn parse_user(s: &str) -> Result<(u32, Option<u32>)> {
    let num = |p: &str, what: &str| -> Result<u32> {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            bail!("--user {s:?}: {what} must be a number");
        }
        p.parse::<u32>()
            .map_err(|_| anyhow::anyhow!("--user {s:?}: {what} is out of range"))
    };
    match s.split_once(':') {
        Some((u, g)) => Ok((num(u, "uid")?, Some(num(g, "gid")?))),
        None => Ok((num(s, "uid")?, None)),
    }
}

/// `--cgroup` as runc parses it (`PATH` alone, or `CONTROLLER[,...]:PATH`
/// once per controller), reduced to the one path libcontainer takes for
/// every controller; `None` is the container's own cgroup.
pub fn parse_sub_cgroup(args: &[String]) -> Result<Option<String>> {
    let mut path: Option<&str> = None;
    let mut controllers: Vec<&str> = Vec::new();
    for arg in args {
        let p = match arg.split_once(':') {
            None if args.len() > 1 => {
                bail!("--cgroup {arg:?}: needs a CONTROLLER: prefix when --cgroup is repeated")
            }
            None => arg.as_str(),
            Some((_, p)) if p.contains(':') => {
                bail!("--cgroup {arg:?}: expected [CONTROLLER:]PATH")
            }
            Some((ctrls, p)) => {
                for c in ctrls.split(',') {
                    if c.is_empty() {
                        bail!("--cgroup {arg:?}: empty controller name");
                    }
                    if controllers.contains(&c) {
                        bail!("--cgroup: controller {c} given more than once");
                    }
                    controllers.push(c);
                }
                p
            }
        };
        // Stops: an exec'd process placed in a cgroup outside the
        // container's (`..` climbing out of it), where the container's
        // limits, freeze and kill --all would not reach it.
        if p.split('/').any(|c| c == "..") {
            bail!("--cgroup {arg:?}: `..` would leave the container's cgroup");
        }
        let p = p.trim_matches('/');
        match path {
            Some(q) if q != p => bail!(
                "--cgroup: runsbx runs the process in one sub-cgroup for every controller; \
                 got {q:?} and {p:?}"
            ),
            _ => path = Some(p),
        }
    }
    Ok(path.filter(|p| !p.is_empty()).map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_cgroups() {
        let v = |a: &[&str]| parse_sub_cgroup(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(v(&[]).unwrap(), None);
        assert_eq!(v(&["/"]).unwrap(), None);
        assert_eq!(v(&["/sub/x"]).unwrap().as_deref(), Some("sub/x"));
        assert_eq!(v(&["sub"]).unwrap().as_deref(), Some("sub"));
        assert_eq!(
            v(&["cpu,memory:/sub", "pids:sub/"]).unwrap().as_deref(),
            Some("sub")
        );
        for bad in [
            &["../x"][..],
            &["a/../../x"],
            &["cpu:.."],
            &["a", "b"],
            &["cpu:/a", "pids:/b"],
            &["cpu:/a", "cpu:/a"],
            &[",cpu:/a"],
            &["cpu:/a:b"],
        ] {
            assert!(v(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn users() {
        assert_eq!(parse_user("1000").unwrap(), (1000, None));
        assert_eq!(parse_user("0:0").unwrap(), (0, Some(0)));
        assert_eq!(parse_user("65534:65534").unwrap(), (65534, Some(65534)));
        for bad in [
            "",
            ":",
            "root",
            "1000:",
            ":1000",
            "-1",
            "1:2:3",
            "4294967296",
            "1 ",
            "+1",
        ] {
            assert!(parse_user(bad).is_err(), "{bad:?}");
        }
    }
}
