use super::*;

const HOST_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

fn cmd(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn host_path_env() -> String {
    std::env::var("PATH").unwrap_or_else(|_| HOST_PATH.into())
}

fn write_script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.canonicalize().unwrap()
}

#[test]
fn true_is_exec_by_its_real_path_with_loader_libc_and_cache() {
    let d = discover(&cmd(&["true", "x"]), HOST_PATH, &[]).unwrap();
    assert_eq!(d.argv0, std::fs::canonicalize("/usr/bin/true").unwrap());
    assert_eq!(
        d.args,
        vec![d.argv0.to_string_lossy().into_owned(), "x".into()]
    );
    // A dynamic program gets the system directories that hold its loader,
    // libraries and binary, whole, and the loader's cache.
    for want in ["/lib64", "/lib", "/usr", "/etc/ld.so.cache"] {
        assert!(
            d.ro_paths.contains(&PathBuf::from(want)),
            "{want} missing from {:?}",
            d.ro_paths
        );
        assert!(!d.reasons[&PathBuf::from(want)].is_empty());
    }
    assert!(d.python.is_none() && d.script.is_none());
    // Nothing else but the fixed system files.
    let rest: Vec<_> = d
        .ro_paths
        .iter()
        .filter(|p| !["/lib64", "/lib", "/usr", "/etc/ld.so.cache"].contains(&p.to_str().unwrap()))
        .filter(|p| {
            !SYSTEM_FILES
                .iter()
                .any(|(f, _)| p.as_path() == Path::new(f))
        })
        .collect();
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn static_binary_is_alone() {
    if !Path::new("/usr/bin/busybox").exists() {
        eprintln!("skipped: no busybox-static");
        return;
    }
    let d = discover(&cmd(&["/usr/bin/busybox", "echo", "hi"]), "", &[]).unwrap();
    assert_eq!(d.ro_paths, vec![PathBuf::from("/usr/bin/busybox")]);
    assert_eq!(d.args, cmd(&["/usr/bin/busybox", "echo", "hi"]));
}

#[test]
fn unknown_command_is_one_line_naming_it() {
    let e = discover(&cmd(&["no-such-command-runsbx"]), HOST_PATH, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "command not found: no-such-command-runsbx (searched PATH)"
    );
    let e = discover(&cmd(&["/nonexistent/x"]), HOST_PATH, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "command not found: /nonexistent/x (searched PATH)"
    );
    let t = tempfile::tempdir().unwrap();
    let plain = t.path().join("plain");
    std::fs::write(&plain, b"#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = discover(&cmd(&[plain.to_str().unwrap()]), HOST_PATH, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}: not an executable regular file", plain.display())
    );
    assert!(discover(&[], HOST_PATH, &[]).is_err());
}

#[test]
fn relative_path_entries_are_not_searched() {
    let t = tempfile::tempdir().unwrap();
    write_script(t.path(), "tool", "#!/bin/sh\n");
    let e = discover_in(&cmd(&["tool"]), ".:bin", &[], t.path()).unwrap_err();
    assert!(matches!(e, BundleError::CommandNotFound { .. }), "{e}");
}

#[test]
fn python3_on_path_is_asked_and_exec_directly() {
    let Ok(path) = find_program("python3", &host_path_env(), Path::new("/")) else {
        eprintln!("skipped: no python3 on PATH");
        return;
    };
    let d = discover(&cmd(&["python3", "-c", "pass"]), &host_path_env(), &[]).unwrap();
    let py = d.python.as_ref().unwrap();
    // The pyenv shim (a bash script) is never what runs inside.
    assert_ne!(
        d.argv0,
        path.canonicalize()
            .unwrap()
            .with_file_name("python3-shim-never")
    );
    assert!(
        elf::has_elf_magic(&std::fs::read(&d.argv0).unwrap()[..4]),
        "{} is not ELF",
        d.argv0.display()
    );
    assert_eq!(d.argv0, std::fs::canonicalize(&py.executable).unwrap());
    assert_eq!(&d.args[1..], &cmd(&["-c", "pass"])[..]);
    assert!(
        !d.ro_paths
            .iter()
            .any(|p| p.starts_with("/root/.pyenv/shims")),
        "{:?}",
        d.ro_paths
    );
    // The stdlib directory is bound.
    let stdlib = py
        .path
        .iter()
        .find(|p| p.join("os.py").is_file())
        .expect("stdlib on sys.path");
    assert!(
        d.ro_paths.iter().any(|r| stdlib.starts_with(r)),
        "{} not bound",
        stdlib.display()
    );
}

#[test]
fn debian_python_gets_its_extension_module_libraries() {
    let py = Path::new("/usr/bin/python3");
    if !py.exists() {
        eprintln!("skipped: no /usr/bin/python3");
        return;
    }
    let d = discover(&cmd(&["/usr/bin/python3"]), "", &[]).unwrap();
    assert_eq!(d.argv0, py.canonicalize().unwrap());
    let info = d.python.as_ref().unwrap();
    assert_eq!(info.prefix, Path::new("/usr"));
    for want in ["/usr", "/etc/ld.so.cache"] {
        assert!(
            d.ro_paths.contains(&PathBuf::from(want)),
            "{want} not in {:?}",
            d.ro_paths
        );
    }
    // Everything it loads lies in the system directories: nothing below
    // them is bound on its own.
    for p in &d.ro_paths {
        assert!(
            !p.to_str().unwrap().starts_with("/usr/") && !p.to_str().unwrap().starts_with("/lib/"),
            "{} bound on its own: {:?}",
            p.display(),
            d.ro_paths
        );
    }
    assert!(d.unresolved.is_empty(), "{:?}", d.unresolved);
}

#[test]
fn an_extension_module_deep_in_site_packages_gets_its_libraries_outside_the_system_dirs() {
    // A package whose native module links a library by RUNPATH from a
    // directory outside every system directory and import path, as a
    // conda-style prefix or a vendored build does.
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let (site, vendor) = (root.join("site/pkg/sub"), root.join("vendor/lib"));
    std::fs::create_dir_all(&site).unwrap();
    std::fs::create_dir_all(&vendor).unwrap();
    let out = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-x", "c", "-", "-o"])
        .arg(vendor.join("libvend.so"))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(b"int vend(void){return 1;}\n")?;
            c.wait()
        });
    assert!(out.is_ok_and(|s| s.success()), "cc (gcc) must be installed");
    let module = site.join("_native.cpython-311-x86_64-linux-gnu.so");
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-x", "c", "/dev/null", "-o"])
        .arg(&module)
        .arg(format!("-L{}", vendor.display()))
        .arg(format!(
            "-Wl,-rpath,{},--enable-new-dtags,--no-as-needed",
            vendor.display()
        ))
        .arg("-lvend")
        .status()
        .unwrap();
    assert!(status.success());
    let mut got = Vec::new();
    let found = extension_modules(&root.join("site"));
    assert_eq!(found, vec![module.clone()]);
    let mut out = std::collections::BTreeSet::new();
    elf::Resolver::from_host()
        .closure(Path::new("/usr/bin/true"), &found, &mut out, &mut got)
        .unwrap();
    assert!(out.contains(&vendor.join("libvend.so")), "{out:?}");
    assert!(got.is_empty(), "{got:?}");
    // The same module without its library: recorded, not an error.
    std::fs::remove_file(vendor.join("libvend.so")).unwrap();
    let mut out = std::collections::BTreeSet::new();
    elf::Resolver::from_host()
        .closure(Path::new("/usr/bin/true"), &found, &mut out, &mut got)
        .unwrap();
    assert_eq!(got, vec![("libvend.so".to_string(), module)]);
}

#[test]
fn link_hops_name_every_symlink_on_the_way() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("real/dir")).unwrap();
    std::fs::write(root.join("real/dir/file"), b"").unwrap();
    std::os::unix::fs::symlink("real", root.join("d")).unwrap();
    std::os::unix::fs::symlink(root.join("d/dir/file"), root.join("alt")).unwrap();
    std::os::unix::fs::symlink("../alt", root.join("real/lib")).unwrap();
    let hops = link_hops(&root.join("d/lib"));
    assert_eq!(
        hops,
        vec![
            root.join("d"),
            root.join("real/lib"),
            root.join("alt"),
            root.join("d"),
            root.join("real/dir/file"),
        ]
    );
}

#[test]
fn shebang_script_runs_its_interpreter_with_the_script() {
    let t = tempfile::tempdir().unwrap();
    let s = write_script(t.path(), "hello", "#!/bin/sh -e\necho hi\n");
    let d = discover(&cmd(&[s.to_str().unwrap(), "a"]), HOST_PATH, &[]).unwrap();
    let sh = std::fs::canonicalize("/bin/sh").unwrap();
    assert_eq!(d.argv0, sh);
    assert_eq!(
        d.args,
        vec![
            sh.to_string_lossy().into_owned(),
            "-e".into(),
            s.to_string_lossy().into_owned(),
            "a".into()
        ]
    );
    assert_eq!(d.script.as_deref(), Some(s.as_path()));
    assert!(d.ro_paths.contains(&s));
}

#[test]
fn env_shebang_resolves_on_path_and_skips_env() {
    let t = tempfile::tempdir().unwrap();
    let s = write_script(t.path(), "tool.py", "#!/usr/bin/env python3\nprint(1)\n");
    let d = discover(&cmd(&[s.to_str().unwrap()]), &host_path_env(), &[]).unwrap();
    assert!(d.python.is_some());
    assert_eq!(d.args.len(), 2);
    assert_eq!(d.args[1], s.to_string_lossy());
    assert!(
        !d.ro_paths.iter().any(|p| p.ends_with("env")),
        "{:?}",
        d.ro_paths
    );
}

#[test]
fn shebang_errors_name_the_script() {
    let t = tempfile::tempdir().unwrap();
    let loop1 = t.path().canonicalize().unwrap().join("loop");
    write_script(t.path(), "loop", &format!("#!{}\n", loop1.display()));
    let e = discover(&cmd(&[loop1.to_str().unwrap()]), HOST_PATH, &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("too many levels of #!"), "{e}");
    let rel = write_script(t.path(), "rel", "#!sh\n");
    let e = discover(&cmd(&[rel.to_str().unwrap()]), HOST_PATH, &[])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!("{}: #! interpreter is not an absolute path", rel.display())
    );
    let data = write_script(t.path(), "data", "hello\n");
    let e = discover(&cmd(&[data.to_str().unwrap()]), HOST_PATH, &[])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!("{}: neither an ELF binary nor a #! script", data.display())
    );
}

#[test]
fn shebang_parse_table() {
    for (line, want) in [
        (&b"#!/bin/sh\n"[..], Some(("/bin/sh", None))),
        (
            b"#! /usr/bin/env python3 \n",
            Some(("/usr/bin/env", Some("python3"))),
        ),
        (b"#!/bin/sh -e -x\n", Some(("/bin/sh", Some("-e -x")))),
        (b"#!\n", None),
        (b"#!/bin/sh", None),
        (b"echo\n", None),
    ] {
        let got = parse_shebang(line);
        let want = want.map(|(i, a): (&str, Option<&str>)| (i.to_string(), a.map(str::to_string)));
        assert_eq!(got, want, "{:?}", String::from_utf8_lossy(line));
    }
}

#[test]
fn python_name_table() {
    for (n, want) in [
        ("python", true),
        ("python3", true),
        ("python3.11", true),
        ("/usr/bin/python3.11", true),
        ("python3-config", false),
        ("ipython", false),
        ("pythonista", false),
    ] {
        assert_eq!(looks_like_python(Path::new(n)), want, "{n}");
    }
}

#[test]
fn extra_ro_paths_are_checked_and_added() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().canonicalize().unwrap().join("data.txt");
    std::fs::write(&data, b"x").unwrap();
    let d = discover(&cmd(&["true"]), HOST_PATH, std::slice::from_ref(&data)).unwrap();
    assert!(d.ro_paths.contains(&data));
    let missing = t.path().join("missing");
    let e = discover(&cmd(&["true"]), HOST_PATH, std::slice::from_ref(&missing))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "--ro {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
}
