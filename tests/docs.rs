//! Keeps docs/runsbx.1.md honest: every flag the built `runsbx` shows in its
//! `--help` (and in `<command> --help` for every command) has an entry in the
//! man page, in the section of its command, in the order the CLI declares it;
//! and every entry names a flag that exists (hidden runc-compat flags are
//! marked "(hidden)" in their heading). Those tests need no root: they only
//! ask for help.
//!
//! Keeps README.md honest too: `readme_commands_do_what_the_readme_says`
//! runs its two commands and every tour line (tests/readme/mod.rs), as root.
//!
//! The page's shape this test relies on:
//!   `## GLOBAL OPTIONS`, then one `### ` heading per global flag;
//!   `## COMMANDS`, then `### runsbx <command> ...` per command, then one
//!   `#### ` heading per flag of that command.
//! A heading may name several spellings (`-b`, `--bundle`); the long names
//! are what is compared.

mod readme;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::repo;

fn page_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/runsbx.1.md")
}

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_runsbx"))
        .args(args)
        .env("COLUMNS", "100")
        .output()
        .expect("run runsbx");
    assert!(
        out.status.success(),
        "runsbx {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 help")
}

/// Lines of the block that starts with `title` (e.g. "Options:") and ends at
/// the next blank line.
fn block<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| l.trim_end() != title)
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

/// `--name` of each option line, in order. Option lines are indented by two
/// (`  -b, --bundle`) or six (`      --root`) spaces; wrapped description
/// lines are indented further and never count, even when they begin with a
/// flag name.
fn flags_of(help_text: &str) -> Vec<String> {
    block(help_text, "Options:")
        .into_iter()
        .filter_map(|l| {
            let rest = if let Some(r) = l.strip_prefix("      --") {
                r
            } else {
                let r = l.strip_prefix("  -")?;
                let mut c = r.chars();
                let short = c.next()?;
                if !short.is_ascii_alphanumeric() {
                    return None;
                }
                c.as_str().strip_prefix(", --")?
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!name.is_empty()).then(|| format!("--{name}"))
        })
        .collect()
}

/// The commands listed by `runsbx --help`, in order, without `help`.
fn commands(top: &str) -> Vec<String> {
    block(top, "Commands:")
        .into_iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

/// Every `--name` in a line, in order.
fn long_names(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("--") {
        let after = &rest[i + 2..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        // `--` alone (end of options) is not a flag.
        if name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
            out.push(format!("--{name}"));
        }
        rest = &after[name.len()..];
    }
    out
}

struct Entry {
    flags: Vec<String>,
    hidden: bool,
    heading: String,
}

struct Page {
    global: Vec<Entry>,
    /// (command, entries), in the page's order.
    commands: Vec<(String, Vec<Entry>)>,
}

fn entry(heading: &str) -> Entry {
    Entry {
        flags: long_names(heading),
        hidden: heading.contains("(hidden"),
        heading: heading.to_string(),
    }
}

fn parse_page(text: &str) -> Page {
    #[derive(PartialEq)]
    enum In {
        Other,
        Global,
        Commands,
    }
    let mut at = In::Other;
    let mut page = Page {
        global: Vec::new(),
        commands: Vec::new(),
    };
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(h) = line.strip_prefix("## ") {
            at = match h.trim() {
                "GLOBAL OPTIONS" => In::Global,
                "COMMANDS" => In::Commands,
                _ => In::Other,
            };
            continue;
        }
        match at {
            In::Global => {
                if let Some(h) = line.strip_prefix("### ") {
                    page.global.push(entry(h));
                }
            }
            In::Commands => {
                if let Some(h) = line.strip_prefix("### ") {
                    let name = h
                        .trim_matches('`')
                        .trim()
                        .strip_prefix("runsbx ")
                        .and_then(|r| r.split_whitespace().next())
                        .unwrap_or_else(|| {
                            panic!("command heading {h:?}: want `runsbx <command> ...`")
                        })
                        .trim_matches('`')
                        .to_string();
                    page.commands.push((name, Vec::new()));
                } else if let Some(h) = line.strip_prefix("#### ") {
                    let (name, entries) = page
                        .commands
                        .last_mut()
                        .unwrap_or_else(|| panic!("flag heading {h:?} before any command heading"));
                    let e = entry(h);
                    assert!(!e.flags.is_empty(), "{name}: heading {h:?} names no --flag");
                    entries.push(e);
                }
            }
            In::Other => {}
        }
    }
    page
}

/// Checks one section: each wanted flag has an entry, in the wanted order;
/// each entry names a known flag (or is marked hidden).
fn check_section(what: &str, want: &[String], entries: &[Entry], problems: &mut Vec<String>) {
    let position = |flag: &String| entries.iter().position(|e| e.flags.contains(flag));
    let mut last: Option<(usize, &String)> = None;
    for flag in want {
        match position(flag) {
            None => problems.push(format!("{what}: {flag} has no entry")),
            Some(p) => {
                if let Some((lp, lf)) = last {
                    if p < lp {
                        problems.push(format!(
                            "{what}: {flag} comes before {lf} in the page, after it in cli.rs"
                        ));
                    }
                }
                last = Some((p, flag));
            }
        }
    }
    let known: BTreeSet<&String> = want.iter().collect();
    for e in entries {
        if e.hidden {
            continue;
        }
        for f in &e.flags {
            if !known.contains(f) {
                problems.push(format!(
                    "{what}: entry {:?} names {f}, which --help does not show (removed? or mark it \"(hidden)\")",
                    e.heading
                ));
            }
        }
    }
}

#[test]
fn help_parsing_finds_flags() {
    let top = help(&["--help"]);
    let flags = flags_of(&top);
    for f in ["--root", "--log", "--log-format", "--version", "--help"] {
        assert!(flags.contains(&f.to_string()), "{f} not found in {flags:?}");
    }
    let cmds = commands(&top);
    for c in ["create", "start", "run", "state", "kill", "delete", "exec"] {
        assert!(cmds.contains(&c.to_string()), "{c} not found in {cmds:?}");
    }
    assert_eq!(
        long_names("#### `-b`, `--bundle` *DIR*; `--`, --x-y2"),
        ["--bundle", "--x-y2"]
    );
}

#[test]
fn man_page_mirrors_the_flags() {
    let text = std::fs::read_to_string(page_path())
        .unwrap_or_else(|e| panic!("{}: {e}", page_path().display()));
    let page = parse_page(&text);

    let top = help(&["--help"]);
    let cmds = commands(&top);
    let per_cmd: Vec<(String, Vec<String>)> = cmds
        .iter()
        .map(|c| (c.clone(), flags_of(&help(&[c, "--help"]))))
        .collect();
    // Global flags are those every command's help repeats (with --help).
    let mut global: BTreeSet<String> = per_cmd
        .first()
        .map(|(_, f)| f.iter().cloned().collect())
        .unwrap_or_default();
    for (_, f) in &per_cmd {
        let f: BTreeSet<String> = f.iter().cloned().collect();
        global = global.intersection(&f).cloned().collect();
    }

    let mut problems = Vec::new();
    let top_flags: Vec<String> = flags_of(&top)
        .into_iter()
        .filter(|f| f != "--help")
        .collect();
    check_section("GLOBAL OPTIONS", &top_flags, &page.global, &mut problems);

    let mut last_pos: Option<(usize, &String)> = None;
    for (cmd, flags) in &per_cmd {
        let Some(pos) = page.commands.iter().position(|(n, _)| n == cmd) else {
            problems.push(format!("COMMANDS: no `### runsbx {cmd}` section"));
            continue;
        };
        if let Some((lp, lc)) = last_pos {
            if pos < lp {
                problems.push(format!(
                    "COMMANDS: {cmd} comes before {lc} in the page, after it in --help"
                ));
            }
        }
        last_pos = Some((pos, cmd));
        let own: Vec<String> = flags
            .iter()
            .filter(|f| !global.contains(*f))
            .cloned()
            .collect();
        check_section(cmd, &own, &page.commands[pos].1, &mut problems);
    }
    for (name, _) in &page.commands {
        if !cmds.contains(name) {
            problems.push(format!(
                "COMMANDS: section for {name}, which --help does not list"
            ));
        }
    }

    assert!(
        problems.is_empty(),
        "docs/runsbx.1.md does not match `runsbx --help`:\n  {}",
        problems.join("\n  ")
    );
}

/// The tracked files of the checkout (what a fresh clone has, with this
/// tree's uncommitted changes), copied to `dest`.
fn copy_tree(dest: &Path) {
    let files = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(repo())
        .output()
        .expect("git ls-files");
    assert!(files.status.success(), "git ls-files failed: not a clone?");
    for name in files.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let rel = Path::new(std::str::from_utf8(name).unwrap());
        let (from, to) = (repo().join(rel), dest.join(rel));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let meta = std::fs::symlink_metadata(&from).unwrap();
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from).unwrap(), &to).unwrap();
        } else if meta.is_file() {
            std::fs::copy(&from, &to).unwrap();
        }
    }
}

fn install(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("{} -> {}: {e}", from.display(), to.display()));
    std::fs::set_permissions(to, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// The README's two commands (but for installing and building, and the
/// whole suite, which is what runs this) and every line of its tour, as a
/// script, as root without sudo, in a copy of the tree under a 0700
/// directory (a clone in /root). The script runs in a private mount
/// namespace with fresh tmpfs on /tmp, /srv and /run/runsbx (the tour's own
/// paths and runsbx's default --root), so it neither meets nor leaves
/// anything on the host. Then the sandbox one-liner as an ordinary user,
/// as the README says it works.
#[test]
fn readme_commands_do_what_the_readme_says() {
    crate::common::require_root();
    let text = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme::readme_lines(&text);
    assert!(
        lines.len() > 20,
        "found only {} README lines: {lines:?}",
        lines.len()
    );
    for must in [".ci/run", "hack/setup-ci", "cargo build --release"] {
        assert!(
            lines
                .iter()
                .any(|l| l.command.split(" && ").any(|p| p == must)),
            "README no longer says `{must}`: update tests/readme"
        );
    }
    // What the skipped commands are: .ci/run is setup-ci then hack/test.
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(
        ci.contains("hack/setup-ci\n") && ci.contains("hack/test \"$@\""),
        "{ci}"
    );

    let top = tempfile::Builder::new()
        .prefix("runsbx-readme-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let clone = top.path().join("runsbx");
    copy_tree(&clone);
    let bin = clone.join("target/x86_64-unknown-linux-gnu/release/runsbx");
    install(&crate::common::runsbx_bin(), &bin);
    install(
        &crate::common::probe_bin(),
        &clone.join("target/probe/runsbx-probe"),
    );
    let script = top.path().join("readme.sh");
    std::fs::write(&script, readme::script(&lines, &bin)).unwrap();

    for d in ["/srv", "/run/runsbx"] {
        std::fs::create_dir_all(d).unwrap();
    }
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--", "bash", "-c"])
        .arg(
            "mount -t tmpfs -o mode=1777 tmpfs /tmp && mount -t tmpfs -o mode=0755 tmpfs /srv \
             && mount -t tmpfs -o mode=0700 tmpfs /run/runsbx && exec bash \"$0\"",
        )
        .arg(&script)
        .current_dir(&clone)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("unshare");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the README's commands as a script:\n{err}"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(top.path().to_str().unwrap()),
        "a mount of the copy is left on the host"
    );

    // As an ordinary user: the one-liner, with a copy of the binary it may run.
    let user = std::env::var("RUNSBX_ROOTLESS_USER").unwrap_or_else(|_| "runsbx-ci".into());
    let line = lines
        .iter()
        .find(|l| l.command.contains(" sandbox -- python3 -c "))
        .expect("the sandbox one-liner");
    let open_dir = tempfile::Builder::new()
        .prefix("runsbx-readme-bin-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(
        open_dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let user_bin = open_dir.path().join("runsbx");
    install(&bin, &user_bin);
    let command = line.command.replace(
        "target/x86_64-unknown-linux-gnu/release/runsbx",
        user_bin.to_str().unwrap(),
    );
    let out = Command::new("runuser")
        .args([
            "-u",
            &user,
            "--",
            "env",
            "-i",
            "PATH=/usr/local/bin:/usr/bin:/bin",
            "LANG=C.UTF-8",
        ])
        .args(["bash", "-c", &format!("cd / && {command}")])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runuser");
    assert!(
        out.status.success(),
        "as {user} (missing? run hack/setup-ci): {command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = line
        .prints
        .as_deref()
        .expect("the one-liner says what it prints");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(want),
        "as {user}: {command} printed {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn readme_lines_are_parsed_as_commands() {
    let text = "## The two commands\n```sh\na && b   # prints \"x y\"\n```\ntext\n\
                ## A tour of the CLI\n```sh\n# only a comment\n$R one \\\n   two 3>/f\n```\n\
                ## Layout\n```sh\nnot this\n```\n";
    let lines = readme::readme_lines(text);
    assert_eq!(
        lines,
        vec![
            readme::Line {
                number: 3,
                command: "a && b".into(),
                prints: Some("x y".into())
            },
            readme::Line {
                number: 9,
                command: "$R one two 3>/f".into(),
                prints: None
            },
        ]
    );
    assert_eq!(readme::classify(" hack/setup-ci"), readme::Part::Installs);
    assert_eq!(readme::classify(".ci/run"), readme::Part::WholeSuite);
    assert_eq!(readme::classify("$R list"), readme::Part::Run("$R list"));
}
