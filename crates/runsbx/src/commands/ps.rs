use anyhow::{bail, Context, Result};

use super::Ctx;
use crate::cli::{ListFormat, Ps};

pub fn run(ctx: &Ctx, a: Ps) -> Result<()> {
    let pids = ctx.rt.pids(&a.id)?;
    if a.format == ListFormat::Json {
        println!("{}", serde_json::to_string(&pids)?);
        return Ok(());
    }
    // Like runc: run ps(1) and keep the header and the container's lines.
    let args = if a.ps_args.is_empty() {
        vec!["-ef".to_string()]
    } else {
        a.ps_args.clone()
    };
    let out = std::process::Command::new("ps")
        .args(&args)
        .output()
        .context("running ps")?;
    if !out.status.success() {
        bail!(
            "ps {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let Some(col) = header.split_whitespace().position(|h| h == "PID") else {
        bail!("ps {}: output has no PID column", args.join(" "));
    };
    println!("{header}");
    for line in lines {
        let pid = line
            .split_whitespace()
            .nth(col)
            .and_then(|p| p.parse::<i32>().ok());
        if pid.is_some_and(|p| pids.contains(&p)) {
            println!("{line}");
        }
    }
    Ok(())
}
