use std::fs::OpenOptions;
use std::io::Write;

use anyhow::{bail, Context, Result};

use crate::cli::SpecCmd;

/// Writes what `runc spec` writes (`sh` on a terminal, a rootfs named
/// `rootfs`, hostname `runc`), or with `--rootless` what `runc spec
/// --rootless` writes for the invoking user. Refuses to overwrite an
/// existing file.
pub fn run(a: SpecCmd) -> Result<()> {
    let ids = a.rootless.then(|| {
        (
            nix::unistd::geteuid().as_raw(),
            nix::unistd::getegid().as_raw(),
        )
    });
    let path = a.bundle.join("config.json");
    let mut file = match OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            bail!("{} exists; remove it first", path.display())
        }
        Err(e) => return Err(e).with_context(|| path.display().to_string()),
    };
    file.write_all(runsbx_bundle::runc_spec(ids).as_bytes())
        .with_context(|| path.display().to_string())?;
    Ok(())
}
