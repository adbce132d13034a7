//! runsbx: an OCI runtime for code nobody vouched for.
//!
//! main parses the command line, sets up logging, dispatches to one module
//! per command and turns any error into one line on stderr, `runsbx: error:
//! COMMAND: MESSAGE` (and in the `--log` file, where containerd's shim and
//! conmon look for it).
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod config;
mod flags;
mod logging;
mod mcp;
mod serve;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    if cli.version {
        print!("{}", commands::version());
        return ExitCode::SUCCESS;
    }
    let Some(command) = cli.command else {
        print_error("no command given; see runsbx --help");
        return ExitCode::from(2);
    };
    if command.only_prints() {
        runsbx_runtime::default_sigpipe();
    }
    // Commands whose processes a container could see run from a sealed
    // copy of this binary (CVE-2019-5736; see needs_sealed_binary). It comes
    // before anything else they do, and fails closed.
    if command.needs_sealed_binary() && !runsbx_runtime::is_sealed() {
        let err = runsbx_runtime::reexec_sealed();
        print_error(&format!(
            "cannot run from a sealed copy of the binary: {err}"
        ));
        return ExitCode::FAILURE;
    }
    let logger = match logging::init(cli.log.as_deref(), cli.log_format, cli.debug) {
        Ok(l) => l,
        Err(e) => {
            let path = cli.log.as_deref().unwrap_or(std::path::Path::new("-"));
            print_error(&format!("--log {}: {e}", path.display()));
            return ExitCode::FAILURE;
        }
    };
    let name = command.name();
    let config = match config::load(cli.landlock_default.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("config: {e:#}");
            logger.error(&msg);
            print_error(&msg);
            return ExitCode::FAILURE;
        }
    };
    let ctx = commands::Ctx::new(&cli.root, cli.systemd_cgroup, config, logger);
    match commands::dispatch(&ctx, command) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            let msg = format!("{name}: {err:#}");
            logger.error(&msg);
            print_error(&msg);
            // `sandbox` forwards the workload's status; 125 says the
            // workload never ran, as docker and podman use it. `exec`
            // forwards its process's status too; runc says 255 when it
            // could not run it, and scripts tell the two apart by it.
            match name {
                "sandbox" => ExitCode::from(125),
                "exec" => ExitCode::from(255),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

/// The one line a failed command leaves on stderr: `runsbx: error: MESSAGE`.
/// The word `error` is what tools that read runc's stderr look for (runc
/// writes logrus's `level=error`; youki's contest takes a line without it for
/// success). The `--log` file gets MESSAGE alone, as the `msg` of a line
/// whose `level` is `error`.
fn print_error(msg: &str) {
    eprintln!("runsbx: error: {msg}");
}

/// clap's own report spans several lines; keep its first, which names the
/// problem, and point at --help.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let text = e.render().to_string();
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid arguments")
        .trim_start_matches("error: ");
    print_error(&format!("{first} (see runsbx --help)"));
    ExitCode::from(2)
}
