use std::io::Read;

use anyhow::{Context, Result};
use runsbx_runtime::resources::ResourceUpdate;

use super::Ctx;
use crate::cli::Update;

pub fn run(ctx: &Ctx, a: Update) -> Result<()> {
    let update = match &a.resources {
        Some(path) => {
            let name = path.display();
            let mut text = Vec::new();
            match path.as_os_str() == "-" {
                true => std::io::stdin().read_to_end(&mut text).map(|_| ()),
                false => std::fs::read(path).map(|t| text = t),
            }
            .with_context(|| format!("--resources {name}"))?;
            ResourceUpdate::from_json(&text)
                .map_err(|e| anyhow::anyhow!("--resources {name}: {e}"))?
        }
        None => crate::flags::resource_update(&a)?,
    };
    ctx.rt.update(&a.id, &update)?;
    Ok(())
}
