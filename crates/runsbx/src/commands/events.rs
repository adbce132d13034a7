use std::io::Write;

use anyhow::{bail, Result};

use super::Ctx;
use crate::cli::Events;

pub fn run(ctx: &Ctx, a: Events) -> Result<()> {
    let out = std::io::stdout();
    let mut print = |e: &runsbx_runtime::events::Event| {
        let mut out = out.lock();
        serde_json::to_writer(&mut out, e)?;
        writeln!(out)?;
        out.flush()
    };
    if a.stats {
        print(&ctx.rt.stats_event(&a.id)?)?;
        return Ok(());
    }
    let interval = match runsbx_runtime::guard::parse_duration(&a.interval) {
        Some(d) if !d.is_zero() => d,
        _ => bail!(
            "--interval {:?}: not a positive duration (5s, 500ms, 1m)",
            a.interval
        ),
    };
    ctx.rt.events(&a.id, interval, &mut print)?;
    Ok(())
}
