use std::fs::OpenOptions;
use std::io::Write;

use anyhow::{bail, Context, Result};
use libcontainer::oci_spec::runtime::Spec;

use crate::cli::SpecCmd;

/// Writes oci-spec's default config.json (runc's defaults: `sh` with a
/// terminal, a rootfs named `rootfs`), or the rootless variant for the
/// invoking user. Refuses to overwrite an existing file.
pub fn run(a: SpecCmd) -> Result<()> {
    let spec = if a.rootless {
        Spec::rootless(
            nix::unistd::geteuid().as_raw(),
            nix::unistd::getegid().as_raw(),
        )
    } else {
        Spec::default()
    };
    let path = a.bundle.join("config.json");
    let mut file = match OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            bail!("{} exists; remove it first", path.display())
        }
        Err(e) => return Err(e).with_context(|| path.display().to_string()),
    };
    let text = serde_json::to_string_pretty(&spec)?;
    file.write_all(text.as_bytes())
        .and_then(|_| file.write_all(b"\n"))
        .with_context(|| path.display().to_string())?;
    Ok(())
}
