use std::time::Instant;

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use runsbx_policy::egress::PROXY_PORT;

use super::denials::Denials;
use super::posture::check_posture;
use super::stdio::StdioFlags;
use super::{render, watch, Result, SuperviseError, Supervision};
use crate::console::Attached;
use crate::egress::{Decision, Serving};
use crate::error::RuntimeError;
use crate::guard::{self, Expect, Outcome, Reason};
use crate::monitor::Monitor;
use crate::{CreateOptions, Owned, Runtime};

/// create + start, wait (forwarding signals, enforcing limits), delete
/// unless `keep`, and return how the workload ended. A run that never
/// started is recorded with `sup.setup_status` and returned as the error.
pub fn foreground(
    rt: &Runtime,
    mut opts: CreateOptions,
    pidfd: Option<&crate::PidfdSocket>,
    keep: bool,
    mut sup: Supervision,
) -> Result<Outcome> {
    let started_at = Instant::now();
    let _stdio = StdioFlags::save();
    let id = opts.id.clone();
    let mut denials = Denials::prepare(rt, &mut opts, sup.report_denials);
    let result = start_supervised(rt, opts, pidfd, &mut sup, &mut denials);
    let Started {
        owned,
        pid,
        mut monitor,
        mut tty,
        proxy,
    } = match result {
        Ok(v) => v,
        Err(e) => {
            let status = sup.setup_status;
            let mut outcome = Outcome::setup_failed(render(&e), status, started_at.elapsed());
            outcome.denials = denials.finish(sup.ro_hint);
            let _ = sup.finish(&outcome);
            return Err(e);
        }
    };
    if sup.hold_signals {
        monitor.keep_blocked();
    }
    sup.started(pid.as_raw(), Some(&id));
    // Threads only now that init is forked (see Relay::serve); until then a
    // client's connections wait in the listen queue.
    let _serving = sup.relay.take().map(|r| r.serve());

    let (done, mut killed_for, peak) = watch(&monitor, pid, sup.limits, started_at, || {
        let _ = rt.kill_owned(&owned);
    })?;
    if let Some(t) = tty.as_mut() {
        t.workload_ended();
    }
    if killed_for.is_none() && rt.oom_killed_owned(&owned) {
        killed_for = Some(Reason::Oom);
    }
    let mut outcome = Outcome::finished(pid.as_raw(), done, killed_for, peak, started_at.elapsed());
    outcome.denials = denials.finish(sup.ro_hint);
    outcome.net = proxy.map(|p| {
        let report = p.finish();
        for e in report
            .events
            .iter()
            .filter(|e| e.decision != Decision::Allowed)
        {
            eprintln!("runsbx: {}", e.line());
        }
        report
    });
    if !keep {
        rt.delete_owned(&owned)?;
    }
    // The output is all out before runsbx reports and exits.
    if let Some(t) = tty {
        t.finish();
    }
    sup.finish(&outcome)?;
    Ok(outcome)
}

/// Sends init's pidfd to `--pidfd-socket`, when asked.
pub(super) fn send_pidfd(
    c: &libcontainer::container::Container,
    sock: Option<&crate::PidfdSocket>,
) -> Result<()> {
    if let (Some(sock), Some(pid)) = (sock, c.pid()) {
        sock.send(pid)?;
    }
    Ok(())
}

/// A started container, watched.
struct Started {
    owned: Owned,
    pid: Pid,
    monitor: Monitor,
    tty: Option<Attached>,
    /// `--allow-net`'s proxy, serving.
    proxy: Option<Serving>,
}

fn start_supervised(
    rt: &Runtime,
    opts: CreateOptions,
    pidfd: Option<&crate::PidfdSocket>,
    sup: &mut Supervision,
    denials: &mut Denials,
) -> Result<Started> {
    let opts = CreateOptions {
        // If runsbx is killed, its foreground workload dies with it.
        die_with_parent: true,
        foreground: true,
        ..opts
    };
    let mut owned = rt.create(opts)?;
    let pid = owned.container.pid().ok_or(SuperviseError::NoPid)?;
    let started = (|| -> Result<(Monitor, Option<Attached>, Option<Serving>)> {
        // Blocked only now that libcontainer has forked: init must not
        // inherit a blocked signal mask.
        let monitor = Monitor::new()?.kill_on(&sup.kill_on);
        // The container's pty relayed (console/), before the workload runs
        // and once the signals are blocked (the terminal goes raw).
        let (monitor, tty) =
            crate::console::relay(owned.console.take(), monitor).map_err(RuntimeError::from)?;
        // Likewise a thread: none may run while libcontainer clones.
        denials.start(pid.as_raw());
        send_pidfd(&owned.container, pidfd)?;
        // Listening before start, so the port answers from the workload's
        // first instruction; served from now on (init is forked: threads
        // are safe).
        let proxy = match sup.egress.take() {
            Some(p) => {
                let l = crate::netns::listen_in(pid, PROXY_PORT)?;
                let status = sup.status_fd.as_ref().and_then(|f| f.try_clone().ok());
                Some(
                    p.serve(l, status)
                        .map_err(|e| RuntimeError::io("--allow-net: starting the proxy", e))?,
                )
            }
            None => None,
        };
        if let Some(expect) = &sup.posture {
            // Before start, init has everything but seccomp (loaded right
            // before exec): check the rest while no workload code has run.
            let before = Expect {
                seccomp: false,
                ..expect.clone()
            };
            check_posture(pid.as_raw(), &before)?;
        }
        rt.start_owned(&mut owned)?;
        if let Some(expect) = &sup.posture {
            // After start the workload has exec'd; if it already exited
            // there is nothing left to check or to stop. It may also exit
            // during the check (a zombie has no namespace links): a failure
            // then stands only if it is still alive afterwards.
            if guard::rss(pid.as_raw()).is_some() {
                let after = Expect {
                    max_fd: None,
                    ..expect.clone()
                };
                if let Err(e) = check_posture(pid.as_raw(), &after) {
                    if guard::rss(pid.as_raw()).is_some() {
                        return Err(e);
                    }
                }
            }
        }
        Ok((monitor, tty, proxy))
    })();
    match started {
        Ok((monitor, tty, proxy)) => Ok(Started {
            owned,
            pid,
            monitor,
            tty,
            proxy,
        }),
        Err(e) => {
            // Init is this process's child, not reaped yet: its PID is its.
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(pid, None);
            let _ = rt.delete_owned(&owned);
            Err(e)
        }
    }
}
