use anyhow::{bail, Result};

/// Why runsbx has no `checkpoint` or `restore`: `features` says so in its
/// annotations, docs/runsbx.1.md at length.
pub const REFUSAL: &str = "checkpoint and restore are not supported: a process CRIU \
    restores never passes through the init where runsbx applies Landlock and seccomp, and \
    CRIU cannot save or rebuild a Landlock domain";

/// `checkpoint` and `restore`: one line, exit status 1, nothing touched.
pub fn refuse(command: &str, id: &str) -> Result<u8> {
    bail!("container {id:?}: {command} refused: {REFUSAL}")
}
