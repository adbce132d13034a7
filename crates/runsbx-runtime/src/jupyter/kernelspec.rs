//! `runsbx kernelspec`: a Jupyter kernelspec directory whose kernel runs under
//! `runsbx sandbox --jupyter`.
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::JupyterError;

/// What the kernelspec starts.
#[derive(Debug, Clone)]
pub struct KernelSpec {
    /// runsbx itself, absolute.
    pub runsbx: PathBuf,
    pub display_name: String,
    /// The kernel's Python, absolute; it must import ipykernel.
    pub python: PathBuf,
    /// `runsbx sandbox` flags, between `--jupyter {connection_file}` and `--`.
    pub sandbox_flags: Vec<String>,
}

impl KernelSpec {
    /// kernel.json. Jupyter substitutes `{connection_file}`; runsbx adds the
    /// kernel's own `-f FILE` after the command.
    pub fn kernel_json(&self) -> Value {
        let mut argv = vec![
            self.runsbx.display().to_string(),
            "sandbox".to_string(),
            "--jupyter".to_string(),
            "{connection_file}".to_string(),
        ];
        argv.extend(self.sandbox_flags.iter().cloned());
        argv.extend([
            "--".to_string(),
            self.python.display().to_string(),
            "-m".to_string(),
            "ipykernel_launcher".to_string(),
        ]);
        json!({
            "argv": argv,
            "display_name": self.display_name,
            "language": "python",
            // KernelManager.interrupt_kernel sends SIGINT to runsbx, which
            // passes it on to the kernel.
            "interrupt_mode": "signal",
            "metadata": {"runsbx": {"sandbox_flags": self.sandbox_flags}},
        })
    }

    /// Writes `dir/kernel.json` (creating `dir`).
    pub fn write(&self, dir: &Path) -> Result<(), JupyterError> {
        fs::create_dir_all(dir)
            .map_err(|e| JupyterError::io(format!("creating {}", dir.display()), e))?;
        let path = dir.join("kernel.json");
        let text = serde_json::to_string_pretty(&self.kernel_json()).expect("plain JSON") + "\n";
        fs::write(&path, text)
            .map_err(|e| JupyterError::io(format!("writing {}", path.display()), e))
    }
}

/// `python` made absolute (looked up on PATH when it has no slash) and
/// checked to import ipykernel, so a kernelspec that cannot start is refused
/// now rather than when a client first launches it.
pub fn resolve_python(python: &Path) -> Result<PathBuf, JupyterError> {
    let found = if python.components().count() > 1 || python.is_absolute() {
        Some(python.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(python))
                .find(|p| p.is_file())
        })
    };
    let bad = |reason: String| JupyterError::Python {
        python: python.to_path_buf(),
        reason,
    };
    let found = found.ok_or_else(|| bad("not found on PATH".into()))?;
    let abs = std::path::absolute(&found).map_err(|e| bad(e.to_string()))?;
    let out = Command::new(&abs)
        .args(["-c", "import ipykernel"])
        .output()
        .map_err(|e| bad(format!("cannot run it: {e}")))?;
    if !out.status.success() {
        return Err(bad(format!(
            "cannot import ipykernel: `{} -m pip install ipykernel`",
            abs.display()
        )));
    }
    Ok(abs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_starts_the_kernel_under_sandbox() {
        let spec = KernelSpec {
            runsbx: "/usr/bin/runsbx".into(),
            display_name: "Python (runsbx)".into(),
            python: "/venv/bin/python".into(),
            sandbox_flags: vec!["--rss-limit".into(), "1G".into()],
        };
        let j = spec.kernel_json();
        let argv: Vec<&str> = j["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            argv,
            [
                "/usr/bin/runsbx",
                "sandbox",
                "--jupyter",
                "{connection_file}",
                "--rss-limit",
                "1G",
                "--",
                "/venv/bin/python",
                "-m",
                "ipykernel_launcher"
            ]
        );
        assert_eq!(j["interrupt_mode"], "signal");
        let t = tempfile::tempdir().unwrap();
        spec.write(&t.path().join("k")).unwrap();
        let back: Value =
            serde_json::from_str(&fs::read_to_string(t.path().join("k/kernel.json")).unwrap())
                .unwrap();
        assert_eq!(back, j);
    }

    #[test]
    fn a_python_without_ipykernel_is_refused() {
        let e = resolve_python(Path::new("no-such-python-here"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not found on PATH"), "{e}");
        if Path::new("/usr/bin/true").exists() {
            // `true -c ...` succeeds, so take a program that fails.
            let e = resolve_python(Path::new("/usr/bin/false"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("cannot import ipykernel"), "{e}");
        }
    }
}
