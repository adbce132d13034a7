//! The Node package (packages/node): hack/build-npm's tarball installed
//! with npm into a temporary project and used from a script: a session with
//! state, its PID, figures, the RSS ceiling, the escapes, and the fail-closed
//! cases (SandboxUnavailableError before any workload runs).

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::*;

fn ok(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        stderr_of(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const SCRIPT: &str = r#"
const assert = require("node:assert");
const fs = require("node:fs");
const { openSession, SandboxUnavailableError, SessionEndedError } = require("runsbx");
(async () => {
  const s = await openSession({ python: "/usr/bin/python3", rssLimit: "200M" });
  assert.match(fs.readlinkSync(`/proc/${s.pid}/exe`), /python3/);
  await s.run("x = 6 * 7");
  assert.strictEqual((await s.run("print(x)")).stdout, "42\n");
  const e = await s.run("1 / 0");
  assert.ok(!e.ok && e.error.includes("ZeroDivisionError"));
  const f = await s.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])");
  assert.strictEqual(f.figures.length, 1);
  assert.strictEqual(f.figures[0].subarray(1, 4).toString(), "PNG");
  const escapes = await s.run(`
import os, socket
def attempt(name, f):
    try:
        f()
        print(name, "ALLOWED")
    except OSError:
        print(name, "refused")
attempt("read-shadow", lambda: open("/etc/shadow").read())
attempt("write-outside", lambda: open("/runsbx-node-escape", "w"))
attempt("network", lambda: socket.create_connection(("1.1.1.1", 80), timeout=2))
attempt("fork", lambda: os._exit(0) if os.fork() == 0 else None)
attempt("exec", lambda: os.execv("/bin/sh", ["sh", "-c", "true"]))
`);
  const lines = escapes.stdout.trim().split("\n");
  assert.strictEqual(lines.length, 5, escapes.stdout);
  for (const l of lines) assert.ok(l.endsWith(" refused"), escapes.stdout);
  await assert.rejects(s.run("b = b'x' * (400 << 20)"), (err) => {
    assert.ok(err instanceof SessionEndedError);
    assert.strictEqual(err.outcome.reason, "rss-limit");
    return true;
  });
  // Fail closed: an option the isolation cannot give, and no interpreter.
  await assert.rejects(
    openSession({ python: "/usr/bin/python3", isolation: "landlock", memory: "64M" }),
    (err) => err instanceof SandboxUnavailableError && err.message.includes("--memory needs the namespaces mode"),
  );
  await assert.rejects(
    openSession({ python: "/nonexistent" }),
    (err) => err instanceof SandboxUnavailableError && err.message.includes("/nonexistent"),
  );
  const t = await openSession({ python: "/usr/bin/python3" });
  assert.strictEqual((await t.close()).reason, "exited");
  console.log("node checks passed");
})().catch((e) => { console.error(e); process.exit(1); });
"#;

#[test]
fn the_tarball_installs_with_npm_and_the_session_holds() {
    let env = Env::new();
    let npm = Command::new("npm").arg("--version").output();
    assert!(
        npm.is_ok_and(|o| o.status.success()),
        "npm is missing: install Debian's npm (hack/setup-ci does)"
    );
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tarball = ok(
        Command::new(repo.join("hack/build-npm"))
            .arg(runsbx_bin())
            .arg(env.tmp.path().join("npm")),
        "hack/build-npm",
    );
    let project = env.tmp.path().join("project");
    fs::create_dir(&project).unwrap();
    fs::write(
        project.join("package.json"),
        r#"{"name": "host", "version": "1.0.0", "private": true}"#,
    )
    .unwrap();
    ok(
        Command::new("npm")
            .args(["install", "--offline", "--no-audit", "--no-fund"])
            .arg(tarball.trim())
            .current_dir(&project),
        "npm install",
    );
    assert!(project.join("node_modules/runsbx/index.d.ts").is_file());
    fs::write(project.join("host.js"), SCRIPT).unwrap();
    let tmpdir = env.traversable_tmpdir();
    let out = ok(
        Command::new("node")
            .arg("host.js")
            .current_dir(&project)
            .env("TMPDIR", &tmpdir),
        "node host.js",
    );
    assert!(out.contains("node checks passed"), "{out}");
    assert_tmpdir_empty(&tmpdir);
}
