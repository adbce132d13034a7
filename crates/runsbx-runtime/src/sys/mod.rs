//! Every raw syscall and `unsafe` block of runsbx lives under this module,
//! one file per kernel interface.
pub mod audit;
pub mod fds;
pub mod ifaddrs;
pub mod landlock;
pub mod mountapi;
pub mod netdev;
pub mod nsprobe;
pub mod pidfd;
pub mod sealed_exe;
pub mod seccomp;
pub mod signal;
pub mod spawn;
pub mod tty;
pub mod userns;
pub mod wait;
