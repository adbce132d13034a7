//! `sandbox` and `gen`: the minimal bundle for one command, prepared and
//! staged by runsbx_runtime::supervise::sandbox (discovery and generation
//! in runsbx-bundle), written to disk, and for `sandbox` run in the
//! foreground and removed.

use anyhow::{bail, Context, Result};
use nix::sys::signal::Signal;
use runsbx_bundle::write_bundle;
use runsbx_bundle::SandboxRequest;
use runsbx_policy::profile::Profile;
use runsbx_runtime::isolation::Mode;
use runsbx_runtime::jupyter::{self, connection::Connection};
use runsbx_runtime::supervise::sandbox::{
    add_resources, make_traversable, materialize, prepare, Prepared,
};
use runsbx_runtime::supervise::{self, selftest, Direct, Supervision};
use runsbx_runtime::CreateOptions;

use super::Ctx;
use crate::cli::{Gen, Sandbox};

pub fn gen(ctx: &Ctx, a: Gen) -> Result<()> {
    if a.flags.workdir.is_none() {
        bail!("gen needs --workdir: a generated bundle outlives this command");
    }
    let mut req: SandboxRequest = (&a.flags).into();
    req.state_root = Some(ctx.rt.root.clone());
    let prepared = prepare(&req, None)?;
    write_bundle(&a.output, &prepared.config)?;
    make_traversable(&a.output)?;
    if let Some(format) = a.explain {
        super::check::print(ctx, &a.output, format, Some(&prepared.discovery))?;
    }
    Ok(())
}

/// Runs `a` with the isolation commands/isolation.rs chose.
pub fn sandbox(ctx: &Ctx, a: Sandbox, mode: Mode) -> Result<u8> {
    if mode == Mode::Landlock {
        return direct(ctx, a);
    }
    if a.self_test {
        // Quiet: stdout belongs to the workload.
        let profile = match a.jupyter {
            Some(_) => Profile::Jupyter,
            None => crate::flags::profile(a.flags.profile),
        };
        selftest::check(&ctx.rt, None, None, profile)
            .and_then(selftest::Verdict::passed)
            .context("--self-test")?;
    }
    let mut req: SandboxRequest = (&a.flags).into();
    req.state_root = Some(ctx.rt.root.clone());
    let connection = match &a.jupyter {
        Some(file) => {
            req.profile = Profile::Jupyter;
            req.command
                .extend(["-f".into(), jupyter::KERNEL_FILE.into()]);
            Some(Connection::read(file).context("--jupyter")?)
        }
        None => None,
    };
    let Prepared {
        mut config,
        workdir,
        discovery,
    } = prepare(&req, Some(&ctx.rt.root.join(".discovery")))?;
    // Before anything is staged: materialize makes the bundle under TMPDIR.
    if let Some(w) = &req.workdir {
        supervise::check_workdir_holds_no_bundle(w)?;
    }
    add_resources(&mut config, a.memory.as_deref(), a.pids_limit)?;
    let relay = match &connection {
        Some(c) => {
            let ro: Vec<_> = discovery.ro_paths.iter().chain(&req.ro).cloned().collect();
            let dir = config["process"]["cwd"].as_str().context("generated cwd")?;
            Some(jupyter::stage(c, std::path::Path::new(dir), &ro).context("--jupyter")?)
        }
        None => None,
    };
    let bundle = materialize(config)?;
    let id =
        a.id.clone()
            .unwrap_or_else(|| format!("sandbox-{}", std::process::id()));
    let opts = CreateOptions {
        id,
        bundle: bundle.dir.0.clone(),
        pid_file: a.pid_file.clone(),
        loopback_down: true,
        keep_affinity: true,
        ..Default::default()
    };
    let mut sup = supervision(&a, mode)?;
    sup.relay = relay;
    let outcome = supervise::foreground(&ctx.rt, opts, None, false, sup)?;
    drop(workdir);
    drop(bundle);
    Ok(supervise::exit_status(&outcome))
}

/// A sandbox's supervision: 125 when the workload never ran, SIGTERM and
/// SIGHUP kill it, the sandbox posture unless `--no-posture-check`.
fn supervision(a: &Sandbox, mode: Mode) -> Result<Supervision> {
    let mut sup = crate::flags::supervision(&a.guard)?;
    sup.isolation = Some(mode);
    sup.setup_status = 125;
    sup.ro_hint = true;
    sup.kill_on = vec![Signal::SIGTERM, Signal::SIGHUP];
    if !a.no_posture_check {
        sup.posture = Some(supervise::sandbox_posture());
    }
    Ok(sup)
}

/// `sandbox --isolation landlock`: the same generated config, its process
/// run on the host under Landlock, seccomp and no_new_privs alone (see
/// runsbx_runtime::direct for what that does and does not hold). Flags
/// only the container honours were refused by commands/isolation.rs.
fn direct(ctx: &Ctx, a: Sandbox) -> Result<u8> {
    let mut req: SandboxRequest = (&a.flags).into();
    req.state_root = Some(ctx.rt.root.clone());
    let Prepared {
        config, workdir, ..
    } = prepare(&req, Some(&ctx.rt.root.join(".discovery")))?;
    let sup = supervision(&a, Mode::Landlock)?;
    let run = Direct {
        config,
        pid_file: a.pid_file.clone(),
    };
    let outcome = supervise::direct(&ctx.rt, run, sup)?;
    drop(workdir);
    Ok(supervise::exit_status(&outcome))
}
