//! The Landlock policy model. (Being written; API agreed below.)
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockPolicy {}

#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    #[error("landlock: {0}")]
    Invalid(String),
}

/// Reads the policy of a bundle from its raw config.json: `process.landlock`,
/// or the annotation `run.sbx.landlock`. `Ok(None)` when neither is present.
pub fn from_config(_raw: &serde_json::Value) -> Result<Option<LandlockPolicy>, LandlockError> {
    Ok(None)
}
