//! `runsbx kernelspec`: a Jupyter kernelspec directory (runsbx_runtime::jupyter::kernelspec)
//! whose argv is `runsbx sandbox --jupyter {connection_file} FLAGS -- PY -m ipykernel_launcher`.

use anyhow::{bail, Context, Result};
use clap::Parser;
use runsbx_runtime::jupyter::kernelspec::{resolve_python, KernelSpec};

use crate::cli::{Cli, Command, Kernelspec};

pub fn run(a: Kernelspec) -> Result<()> {
    check_flags(&a.sandbox_flags)?;
    let runsbx = std::env::current_exe().context("locating runsbx")?;
    let spec = KernelSpec {
        runsbx,
        display_name: a.name,
        python: resolve_python(&a.python)?,
        sandbox_flags: a.sandbox_flags,
    };
    spec.write(&a.dir)?;
    println!("{}", a.dir.join("kernel.json").display());
    Ok(())
}

/// Refuses now the flags a kernel start would refuse later, and those that
/// cannot be shared by every kernel the spec starts.
fn check_flags(flags: &[String]) -> Result<()> {
    for f in flags {
        let name = f.split('=').next().unwrap_or(f);
        match name {
            "--jupyter" => bail!("{name} is the kernelspec's own: leave it out"),
            "--id" | "--no-userns" => {
                bail!("{name} cannot be shared by every kernel the kernelspec starts")
            }
            "--" => bail!("the sandbox flags end before the command: leave `--` out"),
            _ => {}
        }
    }
    let argv = ["runsbx", "sandbox", "--jupyter", "FILE"]
        .into_iter()
        .map(String::from)
        .chain(flags.iter().cloned())
        .chain(["--".into(), "python".into()]);
    match Cli::try_parse_from(argv) {
        // A kernel needs the namespace mode (its own network namespace for
        // the relay's sockets): refused at every start otherwise.
        Ok(Cli {
            command: Some(Command::Sandbox(s)),
            ..
        }) if s.isolation == crate::cli::Isolation::Landlock => {
            bail!("--isolation landlock: a Jupyter kernel needs the namespaces mode")
        }
        Ok(Cli {
            command: Some(Command::Sandbox(_)),
            ..
        }) => Ok(()),
        Ok(_) => bail!("not sandbox flags: {}", flags.join(" ")),
        Err(e) => {
            let text = e.to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            bail!("sandbox flags: {first}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_checked_as_sandbox_would() {
        let ok = |f: &[&str]| check_flags(&f.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        ok(&[]).unwrap();
        ok(&["--rss-limit", "1G", "--ro", "/data", "--root", "/tmp/r"]).unwrap();
        let e = |f: &[&str]| ok(f).unwrap_err().to_string();
        assert!(e(&["--isolation", "landlock"]).contains("needs the namespaces mode"));
        ok(&["--isolation=namespaces"]).unwrap();
        assert!(
            e(&["--bogus"]).starts_with("sandbox flags: unexpected argument '--bogus'"),
            "{}",
            e(&["--bogus"])
        );
        assert!(e(&["--id", "k"]).contains("cannot be shared"));
        assert!(e(&["--jupyter=x"]).contains("kernelspec's own"));
        assert!(e(&["--", "x"]).contains("leave `--` out"));
    }
}
