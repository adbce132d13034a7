use anyhow::Result;

use super::Ctx;

pub fn run(ctx: &Ctx, id: &str) -> Result<()> {
    ctx.rt.start(id)?;
    Ok(())
}
