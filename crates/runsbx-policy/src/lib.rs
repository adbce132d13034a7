//! Pure policy code for runsbx: values in, values out, nothing applied to the
//! calling process. Unit-testable without root.
//!
//! - [`seccomp`]: OCI `linux.seccomp` -> BPF programs (via seccompiler).
//! - [`landlock`]: the Landlock policy model, its parsing and `auto` derivation.
//! - [`profile`]: the default sandbox profiles used by `runsbx gen`.
#![forbid(unsafe_code)]

pub mod egress;
pub mod landlock;
pub mod profile;
pub mod seccomp;
pub mod units;
