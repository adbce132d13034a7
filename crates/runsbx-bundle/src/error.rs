//! The one error type of this crate. Every message is one line that names the
//! path or the flag it is about, so `runsbx` can print it after its own
//! `runsbx: gen:` prefix without adding anything.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("command not found: {name} (searched PATH)")]
    CommandNotFound { name: String },

    #[error("{}: not an executable regular file", path.display())]
    NotExecutable { path: PathBuf },

    #[error("{}: neither an ELF binary nor a #! script", path.display())]
    UnknownFormat { path: PathBuf },

    #[error("{}: {reason}", path.display())]
    Shebang { path: PathBuf, reason: String },

    #[error("{}: bad ELF file: {reason}", path.display())]
    Elf { path: PathBuf, reason: String },

    #[error("{}: needs {lib}, which the loader would not find", needed_by.display())]
    LibraryNotFound { lib: String, needed_by: PathBuf },

    #[error("{}: asking the Python interpreter for its paths failed: {reason}", path.display())]
    PythonQuery { path: PathBuf, reason: String },

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("--ro {}: {reason}", path.display())]
    RoPath { path: PathBuf, reason: String },

    #[error("--workdir {}: {reason}", path.display())]
    Workdir { path: PathBuf, reason: String },

    #[error("--env {arg}: {reason}")]
    Env { arg: String, reason: String },

    #[error("--rlimit {name}: {reason}")]
    Rlimit { name: String, reason: String },

    /// A `--rlimit` value that is not `NAME=SOFT[:HARD]`.
    #[error("--rlimit {arg:?}: {reason}")]
    RlimitFlag { arg: String, reason: String },

    #[error("bundle {}: {reason}", path.display())]
    Bundle { path: PathBuf, reason: String },
}

impl BundleError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BundleError::Io {
            path: path.into(),
            source,
        }
    }
}
