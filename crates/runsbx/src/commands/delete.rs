use anyhow::Result;

use super::Ctx;
use crate::cli::Delete;

pub fn run(ctx: &Ctx, a: Delete) -> Result<()> {
    ctx.rt.delete(&a.id, a.force)?;
    Ok(())
}
