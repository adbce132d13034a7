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
    for want in [
        "/lib64/ld-linux-x86-64.so.2",
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/etc/ld.so.cache",
    ] {
        assert!(
            d.ro_paths.contains(&PathBuf::from(want)),
            "{want} missing from {:?}",
            d.ro_paths
        );
    }
    assert!(d.ro_paths.contains(&d.argv0));
    assert!(d.python.is_none() && d.script.is_none());
    // Minimal: nothing else.
    assert_eq!(d.ro_paths.len(), 4, "{:?}", d.ro_paths);
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
    for want in ["/usr/lib/python3.11", "/etc/ld.so.cache"] {
        assert!(
            d.ro_paths.contains(&PathBuf::from(want)),
            "{want} not in {:?}",
            d.ro_paths
        );
    }
    // _decimal needs libmpdec on Debian; if the module links it, it is bound.
    let dynload = Path::new("/usr/lib/python3.11/lib-dynload");
    if let Some(dec) = std::fs::read_dir(dynload)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("_decimal")
        })
    {
        let facts = elf::read_facts(&dec).unwrap();
        for lib in facts.needed.iter().filter(|n| n.starts_with("libmpdec")) {
            assert!(
                d.ro_paths
                    .iter()
                    .any(|p| p.file_name().unwrap().to_string_lossy() == *lib),
                "{lib} not bound: {:?}",
                d.ro_paths
            );
        }
    }
    // Not the whole /usr, nor the system library directory.
    assert!(!d.ro_paths.contains(&PathBuf::from("/usr")));
    assert!(!d
        .ro_paths
        .contains(&PathBuf::from("/usr/lib/x86_64-linux-gnu")));
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
