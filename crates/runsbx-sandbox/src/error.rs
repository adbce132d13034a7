use runsbx_runtime::jupyter::JupyterError;
use runsbx_runtime::supervise::SuperviseError;
use runsbx_runtime::RuntimeError;

/// Why a sandbox could not be prepared, run or judged. Each message is one
/// line; a front end prints the chain (`a: b: c`).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(transparent)]
    Supervise(#[from] SuperviseError),
    #[error(transparent)]
    Bundle(#[from] runsbx_bundle::BundleError),
    #[error(transparent)]
    Jupyter(#[from] JupyterError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A failed step, with what it was doing (`chown DIR`, `pipe`, ...).
    #[error("{context}")]
    Step {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A refusal that is its own one-line message (a relative `--workdir`,
    /// a `--bundle` without root.path, ...).
    #[error("{0}")]
    Message(String),
    /// The option (its flag) whose use failed, and why.
    #[error("{flag}")]
    Flag {
        flag: &'static str,
        #[source]
        source: Box<SandboxError>,
    },
    /// `selftest`: escapes that were not blocked.
    #[error("{} check(s) failed: {}", .0.len(), .0.join(", "))]
    Escapes(Vec<&'static str>),
}

pub type Result<T> = std::result::Result<T, SandboxError>;

impl From<RuntimeError> for SandboxError {
    fn from(e: RuntimeError) -> Self {
        Self::Supervise(e.into())
    }
}

impl SandboxError {
    pub(crate) fn step(
        context: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Step {
            context: context.into(),
            source: Box::new(source),
        }
    }

    /// This error, as the failure of `flag`.
    pub(crate) fn flag(self, flag: &'static str) -> Self {
        Self::Flag {
            flag,
            source: Box::new(self),
        }
    }
}
