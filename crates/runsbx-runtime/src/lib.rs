//! runsbx's runtime core: container lifecycle around libcontainer, the
//! Executor that seals the workload just before exec, and the channel that
//! brings init's errors back to the caller. docs/ARCHITECTURE.md maps the
//! modules.
//!
//! Every `unsafe` block lives in `sys`, one file per kernel interface,
//! each with a `// SAFETY:` line; the compiler keeps it so. `sys` is private:
//! the binary gets the few functions it needs, re-exported at the root.
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

mod capsets;
mod cgroup;
pub mod console;
mod container;
mod copyup;
pub mod delegation;
mod denials;
pub mod direct;
pub mod egress;
mod error;
pub mod events;
pub mod executor;
pub mod explain;
mod fdinfo;
pub mod guard;
pub mod hooks;
pub mod initlog;
pub mod isolation;
pub mod jupyter;
pub mod landlock;
mod layout;
pub mod monitor;
mod netns;
mod nnp;
mod pidns;
mod prebind;
pub mod premount;
mod remount;
mod report;
pub mod resources;
pub mod rootless;
pub mod spec;
pub mod supervise;
#[allow(unsafe_code)]
mod sys;

pub use container::{CreateOptions, ExecOptions, Executed, Owned, Runtime, StateView, SubCgroups};
pub use error::{Result, RuntimeError};
// What the binary needs of the unsafe layer, and no more of it: the sealed
// re-exec (CVE-2019-5736), SIGPIPE's default action, a pidfd sent over a
// socket (`--pidfd-socket`).
pub use container::PidfdSocket;
pub use sys::fds::default_sigpipe;
pub use sys::pidfd::Pidfd;
pub use sys::sealed_exe::{is_sealed, reexec_sealed};
