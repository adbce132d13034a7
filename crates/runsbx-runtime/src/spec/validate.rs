//! The gate `create` runs before it forks, shared with `check` so both
//! refuse a bad bundle with one message.
use std::path::Path;

use runsbx_policy::landlock::LandlockDefault;
use runsbx_policy::seccomp::SeccompProgram;

use super::{Bundle, SandboxPolicy};
use crate::error::Result;

/// What `create` checks before any fork, in the same order and with the
/// same functions, so `check` and `create` refuse a bundle with one message.
pub fn validate(dir: &Path, operator: &LandlockDefault) -> Result<Validated> {
    let bundle = Bundle::load(dir)?;
    let policy = SandboxPolicy::from_bundle(&bundle, operator)?;
    let seccomp = policy.compile_seccomp()?;
    Ok(Validated {
        bundle,
        policy,
        seccomp,
        operator_layer: *operator != LandlockDefault::Off,
    })
}

pub struct Validated {
    pub bundle: Bundle,
    pub policy: SandboxPolicy,
    pub seccomp: Option<SeccompProgram>,
    /// Whether `policy.landlock[0]` is the operator's layer.
    pub operator_layer: bool,
}
