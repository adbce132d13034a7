//! The integration suite, one test binary: each module is a file of tests
//! beside this one, all sharing `common`. They run the real `runsbx` binary as
//! root against the real kernel and engines. Run one file's tests with
//! `cargo test -p runsbx --test all MODULE::`, e.g. `--test all cve::`.

mod common;

mod bad_input;
mod check;
mod cpython;
mod cri;
mod cve;
mod denials;
mod differential;
mod docs;
mod egress;
mod engines;
mod faults;
mod guard;
mod hooks;
mod jupyter;
mod landlock;
mod lifecycle;
mod mcp;
mod modes;
mod node_package;
mod python;
mod python_package;
mod rootless;
mod sandbox;
mod seccomp;
mod security;
mod serve;
mod terminal;
mod update;
mod where_it_runs;
mod workloads;
