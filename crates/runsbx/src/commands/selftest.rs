//! `runsbx selftest`: the escape probe run and judged by
//! runsbx_runtime::supervise::selftest; one line per check on stdout.

use anyhow::Result;
use runsbx_runtime::supervise::selftest;

use super::Ctx;
use crate::cli::Selftest;

pub fn run(ctx: &Ctx, a: Selftest) -> Result<u8> {
    if a.no_userns {
        let verdict = selftest::check_direct(&ctx.rt, a.probe.as_deref())?;
        print!("{}", verdict.report);
        verdict.passed()?;
        println!("selftest passed: every escape was blocked (--no-userns: without namespaces)");
        return Ok(0);
    }
    let verdict = selftest::check(
        &ctx.rt,
        a.probe.as_deref(),
        a.bundle.as_deref(),
        crate::flags::profile(a.profile),
    )?;
    print!("{}", verdict.report);
    verdict.passed()?;
    println!("selftest passed: every escape was blocked");
    Ok(0)
}
