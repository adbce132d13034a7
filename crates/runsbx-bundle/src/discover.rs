//! Runtime-path discovery: reads the host to find what a command needs at run
//! time, so that only those paths are bound (read-only) into its sandbox.
//!
//! Everything here is found, not guessed:
//! - the command on `PATH`, canonicalized: the workload is exec'd by its real
//!   path, so a symlink or a wrapper never has to exist inside;
//! - for an ELF file, what `ld.so` opens to start it (see [`crate::elf`]) and
//!   `/etc/ld.so.cache`;
//! - for a `#!` script, its interpreter, discovered the same way (recursively,
//!   `#!/usr/bin/env NAME` resolved on `PATH`); the command line is rewritten
//!   to `INTERP [ARG] SCRIPT ...` so that the sandbox needs one exec only;
//! - for a Python interpreter (a command named `python*`), the interpreter's
//!   own answer in isolated mode (`-I`): `sys.executable` (the real binary,
//!   not a pyenv shim, which is a bash script), prefixes, `sys.path` and
//!   LIBDIR (recorded, not bound); every `sys.path` entry that exists is bound, and the libraries
//!   the extension modules directly in those directories need (e.g.
//!   `_decimal` -> libmpdec);
//! - `/nix/store` when anything found lies in it;
//! - `--ro` paths, which must exist and be readable.
//!
//! Not covered: files a program opens by a name computed at run time (data
//! files, `dlopen` of a library no extension module names, extension modules
//! in package subdirectories of site-packages); `--ro` adds those. Asking a
//! Python runs that interpreter (or its shim) on the host as the invoking user,
//! which is the user's own trusted program, never the workload.

use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::elf::{self, Resolver, LD_SO_CACHE};
use crate::error::BundleError;
use crate::paths::{minimize, normalize};

/// The kernel follows at most 4 levels of `#!` (BINPRM_MAX_RECURSION); so do we.
const MAX_SHEBANG_DEPTH: usize = 4;

const NIX_STORE: &str = "/nix/store";

/// What the sandbox needs to run one command.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Discovery {
    /// The real path the workload is exec'd by (canonical, or a venv's
    /// `bin/python`, whose location tells Python it is in that venv).
    pub argv0: PathBuf,
    /// The full `process.args`: `argv0`, then for a script its interpreter
    /// arguments and the script path, then the user's arguments.
    pub args: Vec<String>,
    /// Paths to bind read-only at the same path: absolute, deduplicated,
    /// minimal (nothing inside another bound directory) and in mount order
    /// (parents first). Spelled as the workload's loader and interpreter will
    /// open them; each bind's source is the same path on the host.
    pub ro_paths: Vec<PathBuf>,
    /// Set when the command runs a Python interpreter.
    pub python: Option<PythonInfo>,
    /// Set when the command is a `#!` script (canonical path).
    pub script: Option<PathBuf>,
}

impl Discovery {
    /// The files the first execve opens: the executable and, for a dynamic
    /// ELF, its interpreter (as the kernel names it, PT_INTERP). A sandbox
    /// grants execute on these alone.
    pub fn exec_paths(&self) -> Vec<PathBuf> {
        let mut paths = vec![self.argv0.clone()];
        if let Some(interp) = crate::elf::read_interp(&self.argv0) {
            paths.push(PathBuf::from(interp));
        }
        paths
    }
}

/// What a Python interpreter reported about itself (run with `-I`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PythonInfo {
    pub executable: PathBuf,
    pub prefix: PathBuf,
    pub base_prefix: PathBuf,
    pub exec_prefix: PathBuf,
    pub path: Vec<PathBuf>,
    pub libdir: Option<PathBuf>,
    pub instsoname: Option<String>,
    pub version: String,
}

const PY_QUERY: &str = "import sys, sysconfig, json; v = sysconfig.get_config_var; \
print(json.dumps({'executable': sys.executable, 'prefix': sys.prefix, \
'base_prefix': sys.base_prefix, 'exec_prefix': sys.exec_prefix, 'path': sys.path, \
'libdir': v('LIBDIR'), 'instsoname': v('INSTSONAME') if v('Py_ENABLE_SHARED') else None, \
'version': '%d.%d' % sys.version_info[:2]}))";

/// Discovers what `cmd` needs, searching `path_env` (a `PATH` value) for it.
pub fn discover(
    cmd: &[String],
    path_env: &str,
    extra_ro: &[PathBuf],
) -> Result<Discovery, BundleError> {
    let cwd = std::env::current_dir().map_err(|e| BundleError::io(".", e))?;
    discover_in(cmd, path_env, extra_ro, &cwd)
}

/// [`discover`] with relative paths taken against `cwd`.
pub fn discover_in(
    cmd: &[String],
    path_env: &str,
    extra_ro: &[PathBuf],
    cwd: &Path,
) -> Result<Discovery, BundleError> {
    let Some(name) = cmd.first() else {
        return Err(BundleError::CommandNotFound {
            name: String::new(),
        });
    };
    let mut d = Discoverer {
        path_env,
        cwd,
        resolver: Resolver::from_host(),
        found: BTreeSet::new(),
        dynamic: false,
        python: None,
        script: None,
    };
    let prefix = d.program(name, 0)?;
    for p in extra_ro {
        let p = normalize(p, cwd);
        check_readable(&p)?;
        d.found.insert(p);
    }
    if d.dynamic && Path::new(LD_SO_CACHE).is_file() {
        d.found.insert(PathBuf::from(LD_SO_CACHE));
    }
    if Path::new(NIX_STORE).is_dir() && d.found.iter().any(|p| p.starts_with(NIX_STORE)) {
        d.found.insert(PathBuf::from(NIX_STORE));
    }
    let argv0 = PathBuf::from(&prefix[0]);
    let mut args = prefix;
    args.extend(cmd[1..].iter().cloned());
    Ok(Discovery {
        argv0,
        args,
        ro_paths: minimize(&d.found),
        python: d.python,
        script: d.script,
    })
}

struct Discoverer<'a> {
    path_env: &'a str,
    cwd: &'a Path,
    resolver: Resolver,
    found: BTreeSet<PathBuf>,
    dynamic: bool,
    python: Option<PythonInfo>,
    script: Option<PathBuf>,
}

impl Discoverer<'_> {
    /// Resolves one program and returns what replaces its name on the command line.
    fn program(&mut self, name: &str, depth: usize) -> Result<Vec<String>, BundleError> {
        let path = find_program(name, self.path_env, self.cwd)?;
        let real = std::fs::canonicalize(&path).map_err(|e| BundleError::io(&path, e))?;
        if looks_like_python(&path) || looks_like_python(&real) {
            return self.python(&path);
        }
        let mut head = Vec::with_capacity(256);
        std::fs::File::open(&real)
            .and_then(|f| f.take(256).read_to_end(&mut head))
            .map_err(|e| BundleError::io(&real, e))?;
        if elf::has_elf_magic(&head) {
            self.elf(&real, &[])?;
            return Ok(vec![path_string(&real)]);
        }
        if head.starts_with(b"#!") {
            return self.shebang(&real, &head, depth);
        }
        Err(BundleError::UnknownFormat { path: real })
    }

    fn elf(&mut self, exe: &Path, also: &[PathBuf]) -> Result<(), BundleError> {
        let mut out = BTreeSet::new();
        self.resolver.closure(exe, also, &mut out)?;
        // More than the executable itself means the loader is involved.
        if out.len() > 1 + also.len() {
            self.dynamic = true;
        }
        self.found.extend(out);
        Ok(())
    }

    fn shebang(
        &mut self,
        script: &Path,
        head: &[u8],
        depth: usize,
    ) -> Result<Vec<String>, BundleError> {
        let bad = |reason: &str| BundleError::Shebang {
            path: script.to_path_buf(),
            reason: reason.to_string(),
        };
        if depth >= MAX_SHEBANG_DEPTH {
            return Err(bad("too many levels of #! interpreters"));
        }
        let (interp, arg) = parse_shebang(head).ok_or_else(|| bad("unreadable #! line"))?;
        let mut prefix = if Path::new(&interp).file_name().is_some_and(|n| n == "env") {
            // `#!/usr/bin/env NAME`: env would exec NAME, a second exec the
            // sandbox does not allow; resolve NAME on PATH now instead.
            let arg = arg.ok_or_else(|| bad("#!/usr/bin/env without a program name"))?;
            let mut words: Vec<&str> = arg.split_whitespace().collect();
            if words.first() == Some(&"-S") {
                words.remove(0);
            } else if let Some(rest) = words.first().and_then(|w| w.strip_prefix("-S")) {
                words[0] = rest;
            }
            if words.is_empty() || words[0].starts_with('-') || words[0].contains('=') {
                return Err(bad(
                    "#!/usr/bin/env with options or assignments is not supported",
                ));
            }
            let mut p = self.program(words[0], depth + 1)?;
            p.extend(words[1..].iter().map(|w| w.to_string()));
            p
        } else {
            if !interp.starts_with('/') {
                return Err(bad("#! interpreter is not an absolute path"));
            }
            let mut p = self.program(&interp, depth + 1)?;
            p.extend(arg);
            p
        };
        self.found.insert(script.to_path_buf());
        self.script.get_or_insert_with(|| script.to_path_buf());
        prefix.push(path_string(script));
        Ok(prefix)
    }

    fn python(&mut self, shim_or_binary: &Path) -> Result<Vec<String>, BundleError> {
        let info = query_python(shim_or_binary)?;
        let exe = normalize(&info.executable, self.cwd);
        let in_venv = info.prefix != info.base_prefix;
        // A venv's bin/python must keep its name: Python finds pyvenv.cfg next
        // to the path it was started by. Otherwise exec the real binary.
        let argv0 = if in_venv {
            exe.clone()
        } else {
            std::fs::canonicalize(&exe).map_err(|e| BundleError::io(&exe, e))?
        };
        if in_venv {
            let cfg = info.prefix.join("pyvenv.cfg");
            if cfg.is_file() {
                self.found.insert(cfg);
            }
        }
        let mut ext_modules = Vec::new();
        for entry in &info.path {
            if !entry.is_absolute() || !entry.exists() {
                continue;
            }
            self.found.insert(normalize(entry, self.cwd));
            if entry.is_dir() {
                ext_modules.extend(extension_modules(entry));
            }
        }
        // LIBDIR is asked for but not bound: on Debian it is the whole system
        // library directory. A shared libpython is found like any other
        // library, through the executable's DT_NEEDED and DT_RUNPATH.
        self.elf(&argv0, &ext_modules)?;
        self.python.get_or_insert(info);
        Ok(vec![path_string(&argv0)])
    }
}

fn path_string(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `python`, `python3`, `python3.11`: the names a Python interpreter goes by.
pub fn looks_like_python(p: &Path) -> bool {
    let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.strip_prefix("python")
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Finds `name` the way `execvp` does: as a path when it has a `/`, else in
/// each absolute `PATH` entry (relative entries are skipped: they would depend
/// on the directory runsbx happens to run in).
pub fn find_program(name: &str, path_env: &str, cwd: &Path) -> Result<PathBuf, BundleError> {
    let not_found = || BundleError::CommandNotFound {
        name: name.to_string(),
    };
    if name.is_empty() {
        return Err(not_found());
    }
    if name.contains('/') {
        let p = normalize(Path::new(name), cwd);
        return match std::fs::metadata(&p) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(p),
            Ok(_) => Err(BundleError::NotExecutable { path: p }),
            Err(_) => Err(not_found()),
        };
    }
    path_env
        .split(':')
        .filter(|d| d.starts_with('/'))
        .map(|d| Path::new(d).join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .map(|p| normalize(&p, cwd))
        .ok_or_else(not_found)
}

/// Interpreter and optional single argument of a `#!` line, split as Linux
/// does: the first word is the interpreter, the rest of the line (trimmed) one
/// argument.
pub fn parse_shebang(head: &[u8]) -> Option<(String, Option<String>)> {
    let line = head.strip_prefix(b"#!")?;
    let end = line.iter().position(|&c| c == b'\n')?;
    let line = std::str::from_utf8(&line[..end])
        .ok()?
        .trim_matches([' ', '\t', '\r']);
    let (interp, rest) = match line.find([' ', '\t']) {
        Some(i) => (&line[..i], line[i..].trim_matches([' ', '\t'])),
        None => (line, ""),
    };
    if interp.is_empty() {
        return None;
    }
    Some((
        interp.to_string(),
        (!rest.is_empty()).then(|| rest.to_string()),
    ))
}

fn query_python(path: &Path) -> Result<PythonInfo, BundleError> {
    let fail = |reason: String| BundleError::PythonQuery {
        path: path.to_path_buf(),
        reason,
    };
    let out = Command::new(path)
        .args(["-I", "-c", PY_QUERY])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("").trim();
        return Err(fail(format!("{}: {last}", out.status)));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or("");
    let info: PythonInfo =
        serde_json::from_str(line).map_err(|e| fail(format!("unexpected answer: {e}")))?;
    if !info.executable.is_absolute() {
        return Err(fail("sys.executable is empty or relative".into()));
    }
    Ok(info)
}

/// ELF files named `*.so` directly in `dir` (e.g. lib-dynload's modules).
fn extension_modules(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "so") && p.is_file())
        .filter(|p| {
            let mut head = [0u8; 4];
            std::fs::File::open(p)
                .and_then(|mut f| f.read_exact(&mut head))
                .is_ok()
                && elf::has_elf_magic(&head)
        })
        .collect();
    v.sort();
    v
}

fn check_readable(p: &Path) -> Result<(), BundleError> {
    let bad = |reason: String| BundleError::RoPath {
        path: p.to_path_buf(),
        reason,
    };
    let m = std::fs::metadata(p).map_err(|e| bad(e.to_string()))?;
    let r = if m.is_dir() {
        std::fs::read_dir(p).map(|_| ())
    } else {
        std::fs::File::open(p).map(|_| ())
    };
    r.map_err(|e| bad(format!("not readable: {e}")))
}

#[cfg(test)]
#[path = "discover_tests.rs"]
mod tests;
