use std::io::Write;

use anyhow::Result;

use super::Ctx;
use crate::cli::{List, ListFormat};

pub fn run(ctx: &Ctx, a: List) -> Result<()> {
    let all = ctx.rt.list()?;
    let mut out = std::io::stdout().lock();
    if a.quiet {
        for c in &all {
            writeln!(out, "{}", c.id)?;
        }
        return Ok(());
    }
    match a.format {
        ListFormat::Json => {
            writeln!(out, "{}", serde_json::to_string(&all)?)?;
        }
        ListFormat::Table => {
            let rows: Vec<[String; 6]> = all
                .iter()
                .map(|c| {
                    [
                        c.id.clone(),
                        c.pid.to_string(),
                        c.status.to_string(),
                        c.bundle.display().to_string(),
                        c.created.clone(),
                        c.owner.clone(),
                    ]
                })
                .collect();
            let header = ["ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"].map(String::from);
            write!(out, "{}", table(&header, &rows))?;
        }
    }
    Ok(())
}

/// Left-aligned columns separated by at least three spaces, like runc's
/// tabwriter output.
pub fn table<const N: usize>(header: &[String; N], rows: &[[String; N]]) -> String {
    let mut width = header.each_ref().map(|h| h.len());
    for row in rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut s = String::new();
    for row in std::iter::once(header).chain(rows) {
        let line: Vec<String> = row
            .iter()
            .zip(width)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        s.push_str(line.join("   ").trim_end());
        s.push('\n');
    }
    s
}
