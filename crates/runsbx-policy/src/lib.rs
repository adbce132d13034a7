//! Pure policy code for runsbx: values in, values out, nothing applied to the
//! calling process. Unit-testable without root.
//!
//! - [`seccomp`]: OCI `linux.seccomp` -> BPF programs (via seccompiler).
//! - [`landlock`]: the Landlock policy model, its parsing and `auto` derivation.
//! - [`profile`]: the default sandbox profiles used by `runsbx gen`.
//! - [`spec_facts`]: what a spec asks for (namespaces, binds, read-only,
//!   mappings), answered as libcontainer will act on it, for every caller.
#![forbid(unsafe_code)]

pub mod egress;
pub mod landlock;
pub mod profile;
pub mod seccomp;
pub mod spec_facts;
pub mod units;
