use anyhow::Result;

use super::Ctx;

pub fn run(ctx: &Ctx, id: &str) -> Result<()> {
    let state = ctx.rt.state(id)?;
    println!("{}", serde_json::to_string_pretty(&state)?);
    Ok(())
}
