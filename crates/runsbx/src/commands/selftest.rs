//! `runsbx selftest`: the escape probe run and judged by
//! runsbx_sandbox::selftest; one line per check on stdout.

use anyhow::{bail, Result};
use runsbx_runtime::isolation::Mode;
use runsbx_sandbox::selftest;

use super::Ctx;
use crate::cli::Selftest;

pub fn run(ctx: &Ctx, a: Selftest, mode: Mode) -> Result<u8> {
    if mode == Mode::Landlock && a.profile != crate::cli::Profile::Default {
        bail!("--profile: the landlock mode tests the default profile only");
    }
    if mode == Mode::Landlock && a.allow_net {
        bail!("--allow-net needs the namespaces mode, and this run uses --isolation landlock");
    }
    let verdict = match mode {
        Mode::Landlock => selftest::check_direct(&ctx.rt, a.probe.as_deref())?,
        Mode::Namespaces => selftest::check(
            &ctx.rt,
            a.probe.as_deref(),
            a.bundle.as_deref(),
            crate::flags::profile(a.profile),
            a.allow_net,
        )?,
    };
    println!("isolation: {}", mode.name());
    print!("{}", verdict.report);
    verdict.passed()?;
    match mode {
        Mode::Landlock => {
            println!("selftest passed: every escape was blocked (--no-userns: without namespaces)")
        }
        Mode::Namespaces => println!("selftest passed: every escape was blocked"),
    }
    Ok(0)
}
