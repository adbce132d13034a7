use anyhow::Result;

use super::Ctx;

pub fn pause(ctx: &Ctx, id: &str) -> Result<()> {
    ctx.rt.pause(id)?;
    Ok(())
}

pub fn resume(ctx: &Ctx, id: &str) -> Result<()> {
    ctx.rt.resume(id)?;
    Ok(())
}
