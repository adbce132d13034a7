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

use std::collections::{BTreeMap, BTreeSet};
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

/// The host's system directories. A dynamically linked program gets each one
/// that holds any of its files bound whole, read-only, instead of file by
/// file: what it loads at run time without naming it in DT_NEEDED lies there
/// (glibc's dlopen of libgcc_s for thread cancellation, gconv and NSS
/// modules, BLAS picked through /etc/alternatives, fonts, zoneinfo, locale
/// data, matplotlib's and numpy's data under /usr/share), and one bind costs
/// less at every start than sixty. They hold the distribution's programs and
/// libraries, which are no secret; nothing in them is writable or executable
/// inside (Landlock grants execute on the workload's own binary and loader
/// alone, and every bind is nosuid). On a merged-/usr host `/lib` and
/// `/lib64` are symlinks into `/usr`, and their binds show the same tree.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin",
];

/// Host files a dynamically linked program may read by a fixed name that no
/// ELF header gives, bound when they exist: the local time zone
/// (`time.localtime`, pandas), Debian's matplotlib configuration
/// (python3-matplotlib refuses to import without it), and netbase's tables
/// of service and protocol names (`socket.getservbyname`, `getprotobyname`,
/// urllib's default ports; IANA's lists, the same on every host).
const SYSTEM_FILES: &[(&str, &str)] = &[
    ("/etc/localtime", "the local time zone"),
    ("/etc/services", "service names and ports (netbase)"),
    ("/etc/protocols", "protocol names and numbers (netbase)"),
    (
        "/etc/matplotlibrc",
        "matplotlib's configuration (Debian's python3-matplotlib)",
    ),
];

/// At most this many directory entries are looked at under one import path
/// when scanning for extension modules; a larger tree is scanned that far.
const MAX_SCAN_ENTRIES: usize = 200_000;

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
    /// Why each of `ro_paths` is bound, in words (`gen --explain`).
    #[serde(default)]
    pub reasons: BTreeMap<PathBuf, String>,
    /// Libraries that an extension module found under the interpreter's
    /// import paths needs and the host's loader would not find either:
    /// (library, module). Importing that module fails on the host too.
    #[serde(default)]
    pub unresolved: Vec<(String, PathBuf)>,
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
        found: BTreeMap::new(),
        dynamic: false,
        python: None,
        script: None,
        unresolved: Vec::new(),
    };
    let prefix = d.program(name, 0)?;
    for p in extra_ro {
        let p = normalize(p, cwd);
        check_readable(&p)?;
        d.found.insert(p, "--ro".into());
    }
    if d.dynamic {
        if Path::new(LD_SO_CACHE).is_file() {
            d.add(PathBuf::from(LD_SO_CACHE), "the loader's library cache");
        }
        for (file, why) in SYSTEM_FILES {
            if Path::new(file).is_file() {
                d.add(PathBuf::from(file), why);
            }
        }
        d.follow_links();
        d.collapse_system_dirs();
    }
    if Path::new(NIX_STORE).is_dir() && d.found.keys().any(|p| p.starts_with(NIX_STORE)) {
        d.add(
            PathBuf::from(NIX_STORE),
            "holds the files found in the Nix store",
        );
    }
    let argv0 = PathBuf::from(&prefix[0]);
    let mut args = prefix;
    args.extend(cmd[1..].iter().cloned());
    let ro_paths = minimize(&d.found.keys().cloned().collect());
    let reasons = ro_paths
        .iter()
        .map(|p| (p.clone(), d.reason_for(p)))
        .collect();
    Ok(Discovery {
        argv0,
        args,
        ro_paths,
        python: d.python,
        script: d.script,
        reasons,
        unresolved: d.unresolved,
    })
}

struct Discoverer<'a> {
    path_env: &'a str,
    cwd: &'a Path,
    resolver: Resolver,
    /// Each path found, with why (the first reason given wins).
    found: BTreeMap<PathBuf, String>,
    dynamic: bool,
    python: Option<PythonInfo>,
    script: Option<PathBuf>,
    unresolved: Vec<(String, PathBuf)>,
}

impl Discoverer<'_> {
    fn add(&mut self, p: PathBuf, why: &str) {
        self.found.entry(p).or_insert_with(|| why.to_string());
    }

    /// Adds every symlink met on the way to each file found, where it lies
    /// outside the trees already found: `libblas.so.3` in the system library
    /// directory links to `/etc/alternatives/libblas.so.3-x86_64-linux-gnu`,
    /// which links back into `/usr`; the container must hold that middle link
    /// too, or the loader's open fails with ENOENT.
    fn follow_links(&mut self) {
        let files: Vec<(PathBuf, String)> = self
            .found
            .iter()
            .filter(|(p, _)| !p.is_dir())
            .map(|(p, w)| (p.clone(), w.clone()))
            .collect();
        for (file, why) in files {
            for hop in link_hops(&file) {
                if hop != file {
                    self.add(
                        hop,
                        &format!("a link on the way to {} ({why})", file.display()),
                    );
                }
            }
        }
    }

    /// Replaces what was found inside a system directory by the directory
    /// itself (see [`SYSTEM_DIRS`]).
    fn collapse_system_dirs(&mut self) {
        for dir in SYSTEM_DIRS {
            let dir = Path::new(dir);
            if !dir.is_dir() {
                continue;
            }
            let inside: Vec<&PathBuf> = self.found.keys().filter(|p| p.starts_with(dir)).collect();
            let Some(first) = inside.first() else {
                continue;
            };
            let why = match inside.len() {
                1 => format!("system directory; holds {}", first.display()),
                n => format!(
                    "system directory; holds {} and {} more found files",
                    first.display(),
                    n - 1
                ),
            };
            self.found.insert(dir.to_path_buf(), why);
        }
    }

    /// Why `p`, one of the minimized paths, is bound.
    fn reason_for(&self, p: &Path) -> String {
        if let Some(why) = self.found.get(p) {
            return why.clone();
        }
        // A canonical target that replaced a path found inside another bind.
        self.found
            .iter()
            .find(|(f, _)| std::fs::canonicalize(f).is_ok_and(|c| c == p))
            .map(|(f, why)| format!("target of {} ({why})", f.display()))
            .unwrap_or_else(|| "found".into())
    }

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
        self.resolver
            .closure(exe, also, &mut out, &mut self.unresolved)?;
        // More than the executable itself means the loader is involved.
        if out.len() > 1 + also.len() || elf::read_interp(exe).is_some() {
            self.dynamic = true;
        }
        for p in out {
            let why = if p == exe {
                "the program".to_string()
            } else if also.contains(&p) {
                "an extension module under an import path".to_string()
            } else {
                "a library the loader opens".to_string()
            };
            self.add(p, &why);
        }
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
        self.add(script.to_path_buf(), "the script");
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
                self.add(cfg, "tells Python it runs in a venv");
            }
        }
        let mut ext_modules = Vec::new();
        for entry in &info.path {
            if !entry.is_absolute() || !entry.exists() {
                continue;
            }
            self.add(normalize(entry, self.cwd), "on the interpreter's sys.path");
            if entry.is_dir() {
                ext_modules.extend(extension_modules(entry));
            }
        }
        ext_modules.sort();
        ext_modules.dedup();
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

/// ELF files named `*.so` anywhere below `dir` (lib-dynload's modules,
/// numpy's `_multiarray_umath`, a wheel's bundled libraries), so that what
/// they link is found before they are imported. Symlinked directories are
/// not entered (a package may link to a tree that links back); `__pycache__`
/// holds no modules. At most [`MAX_SCAN_ENTRIES`] entries are looked at.
fn extension_modules(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.filter_map(|e| e.ok()) {
            seen += 1;
            if seen > MAX_SCAN_ENTRIES {
                return out;
            }
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() {
                if e.file_name() != "__pycache__" {
                    stack.push(p);
                }
                continue;
            }
            let name = e.file_name();
            let name = name.to_string_lossy();
            if !(name.ends_with(".so") || name.contains(".so.")) || !ft.is_file() {
                continue;
            }
            let mut head = [0u8; 4];
            if std::fs::File::open(&p)
                .and_then(|mut f| f.read_exact(&mut head))
                .is_ok()
                && elf::has_elf_magic(&head)
            {
                out.push(p);
            }
        }
    }
    out
}

/// The symlinks the kernel follows to open `p`, each at its real location
/// (its parent directory resolved), then the file itself. Relative and
/// absolute targets, links in the middle of a path, at most 40 hops (the
/// kernel's limit); a path that does not resolve ends the walk where it fails.
pub fn link_hops(p: &Path) -> Vec<PathBuf> {
    let mut hops = Vec::new();
    let mut todo: Vec<std::ffi::OsString> = p
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n.to_os_string()),
            _ => None,
        })
        .rev()
        .collect();
    let mut at = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = todo.pop() {
        if name == ".." {
            at.pop();
            continue;
        }
        if name == "." {
            continue;
        }
        let next = at.join(&name);
        match std::fs::read_link(&next) {
            Ok(target) => {
                links += 1;
                if links > 40 {
                    break;
                }
                hops.push(next);
                if target.is_absolute() {
                    at = PathBuf::from("/");
                }
                todo.extend(
                    target
                        .components()
                        .filter_map(|c| match c {
                            std::path::Component::Normal(n) => Some(n.to_os_string()),
                            std::path::Component::ParentDir => Some("..".into()),
                            _ => None,
                        })
                        .rev(),
                );
            }
            Err(_) => at = next,
        }
    }
    hops.push(at);
    hops
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
