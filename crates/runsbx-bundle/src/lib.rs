//! Sandbox bundle generation for `runsbx gen` and `runsbx sandbox`.
//!
//! Two steps, kept apart so that the second is pure and testable:
//! - [`discover`] reads the host: the command's real path, its loader and
//!   libraries, a script's interpreter, a Python's `sys.path`, `--ro` paths.
//! - [`generate`] turns those facts and the options (workdir, environment,
//!   ids, rlimits, the seccomp and Landlock policies) into a typed
//!   [`SandboxConfig`]; [`write_bundle`] puts it on disk as `config.json`
//!   next to an empty rootfs.
//!
//! The seccomp profile and Landlock policy are inputs: this crate inserts them
//! verbatim and enforces neither.
#![forbid(unsafe_code)]

mod bundle;
mod cache;
mod config;
pub mod discover;
mod elf;
mod env;
mod error;
pub mod generate;
mod ldcache;
mod paths;
mod request;
mod runc_spec;
mod userdb;

pub use bundle::{make_mountpoints, write_bundle};
pub use cache::discover_cached;
pub use config::SandboxConfig;
pub use discover::{discover, discover_in, Discovery, PythonInfo};
pub use env::{parse_env_flag, scrub_env, DEFAULT_PATH, ENV_ALLOWLIST};
pub use error::BundleError;
pub use generate::{
    generate, host_ids, merge_rlimits, rlimit_name, validate_workdir, GenerateOptions,
    DEFAULT_RLIMITS, NOBODY,
};
pub use request::{parse_rlimit_flag, SandboxRequest};
pub use runc_spec::runc_spec;
pub use userdb::{user_db, USER_DB};
