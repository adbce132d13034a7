//! runsbx's runtime core: container lifecycle around libcontainer, the
//! Executor that seals the workload just before exec, and the channel that
//! brings init's errors back to the caller. docs/ARCHITECTURE.md maps the
//! modules.
//!
//! Every `unsafe` block lives in [`sys`], one file per kernel interface,
//! each with a `// SAFETY:` line; the compiler keeps it so.
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod cgroup;
pub mod console;
pub mod container;
pub mod delegation;
pub mod denials;
pub mod direct;
pub mod error;
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
pub mod layout;
pub mod monitor;
pub mod netns;
pub mod nnp;
pub mod pidns;
pub mod prebind;
pub mod premount;
pub mod remount;
pub mod report;
pub mod resources;
pub mod rootless;
pub mod spec;
pub mod supervise;
#[allow(unsafe_code)]
pub mod sys;

pub use container::{CreateOptions, ExecOptions, Executed, Owned, Runtime, StateView};
pub use error::{Result, RuntimeError};
