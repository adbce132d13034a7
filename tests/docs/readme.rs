//! The README's commands as a script, for tests/docs.rs: its two commands
//! and every line of the tour, run in a copy of the tree as root (no sudo).

use std::path::Path;

/// One command line of the README, with what its comment promises.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// 1-based line number in README.md (of the first physical line).
    pub number: usize,
    pub command: String,
    /// `# prints "TEXT"`: the line's stdout must contain TEXT.
    pub prints: Option<String>,
}

/// The `sh` code blocks between `## The two commands` and `## Layout`,
/// comments and blank lines dropped, `\`-continued lines joined.
pub fn readme_lines(readme: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let mut in_scope = false;
    let mut in_code = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in readme.lines().enumerate() {
        if let Some(h) = raw.strip_prefix("## ") {
            in_scope = h.starts_with("The two commands") || h.starts_with("A tour of the CLI");
            continue;
        }
        if !in_scope {
            continue;
        }
        if raw.trim_start().starts_with("```") {
            in_code = !in_code && raw.trim() == "```sh";
            continue;
        }
        if !in_code {
            continue;
        }
        let (number, mut text) = match pending.take() {
            Some((n, t)) => (n, format!("{t} {}", raw.trim())),
            None => (i + 1, raw.trim().to_string()),
        };
        if let Some(head) = text.strip_suffix('\\') {
            pending = Some((number, head.trim_end().to_string()));
            continue;
        }
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let mut prints = None;
        // A comment starts at the first " #" (no command here has one inside quotes).
        if let Some(at) = text.find(" #") {
            let comment = text[at + 2..].to_string();
            text.truncate(at);
            if let Some(rest) = comment.split("prints \"").nth(1) {
                prints = rest.split('"').next().map(str::to_string);
            }
        }
        out.push(Line {
            number,
            command: text.trim().to_string(),
            prints,
        });
    }
    out
}

/// How the test treats a command (or one `&&` part of it).
#[derive(Debug, PartialEq)]
pub enum Part<'a> {
    /// Installs packages: the machine is set up already (CI ran it).
    Installs,
    /// Builds what the test has placed in the copy already (the binary
    /// under test, the probe hack/test built): a fresh release build would
    /// double the suite's time.
    Prebuilt(&'a str),
    /// Runs the whole suite, which is running this test.
    WholeSuite,
    Run(&'a str),
}

pub fn classify(part: &str) -> Part<'_> {
    match part.trim() {
        "hack/setup-ci" => Part::Installs,
        "cargo build --release" => Part::Prebuilt("target/x86_64-unknown-linux-gnu/release/runsbx"),
        "hack/build-probe" => Part::Prebuilt("target/probe/runsbx-probe"),
        ".ci/run" | "hack/test" => Part::WholeSuite,
        p => Part::Run(p),
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A bash script that runs `lines` in order in one shell (so `R=...`
/// carries over), each with its stdout and stderr kept, and stops at the
/// first that exits non-zero or does not print what it promises, naming it.
/// `runsbx` (absolute) removes what the tour left running on exit.
pub fn script(lines: &[Line], runsbx: &Path) -> String {
    let mut s = String::from(
        "set -u\nout=$(mktemp -d /tmp/readme.XXXXXX)\n\
         cleanup() { for id in $(RB list -q 2>/dev/null); do RB delete --force \"$id\" >/dev/null 2>&1; done; }\n\
         trap cleanup EXIT\n\
         fail() { echo \"README.md:$1: $2\" >&2; echo \"--- stdout:\" >&2; cat \"$out/o\" >&2; echo \"--- stderr:\" >&2; cat \"$out/e\" >&2; exit 1; }\n",
    )
    .replace("RB", &quote(&runsbx.display().to_string()));
    for l in lines {
        let mut parts = Vec::new();
        let mut skipped = Vec::new();
        for p in l.command.split(" && ") {
            match classify(p) {
                Part::Run(p) => parts.push(p.to_string()),
                Part::Prebuilt(path) => {
                    skipped.push(p.trim().to_string());
                    // What the build would have printed, and proof it is there.
                    parts.push(format!("test -x {path} && echo \"$PWD/{path}\""));
                }
                Part::Installs | Part::WholeSuite => skipped.push(p.trim().to_string()),
            }
        }
        s.push_str(&format!(
            "echo {} >&2\n",
            quote(&format!(
                "==> README.md:{}: {}{}",
                l.number,
                l.command,
                match skipped.is_empty() {
                    true => String::new(),
                    false => format!("   (not run here: {})", skipped.join(", ")),
                }
            ))
        ));
        if parts.is_empty() {
            continue;
        }
        s.push_str(&format!(
            "{{ {} ; }} >\"$out/o\" 2>\"$out/e\" </dev/null || fail {} \"exit status $?: \"{}\n",
            parts.join(" && "),
            l.number,
            quote(&l.command)
        ));
        if let Some(want) = &l.prints {
            s.push_str(&format!(
                "grep -qF -- {} \"$out/o\" || fail {} {}\n",
                quote(want),
                l.number,
                quote(&format!("{}: does not print \"{want}\"", l.command))
            ));
        }
    }
    s.push_str("echo 'README: every command did what it says' >&2\n");
    s
}
