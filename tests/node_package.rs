//! The Node package (packages/node): hack/build-npm's tarball installed
//! with npm into a temporary project and used from a script: a session with
//! state, its PID, figures, the RSS ceiling, the escapes, and the fail-closed
//! cases (SandboxUnavailableError before any workload runs).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::*;

const SCRIPT: &str = r#"
const assert = require("node:assert");
const fs = require("node:fs");
const { openSession, OutputLimitError, SandboxUnavailableError, SessionEndedError } = require("runsbx");
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
  const escapes = await s.run(fs.readFileSync(process.argv[2], "utf8"));
  process.stdout.write(escapes.stdout);
  await assert.rejects(s.run("b = b'x' * (400 << 20)"), (err) => {
    assert.ok(err instanceof SessionEndedError);
    assert.strictEqual(err.outcome.reason, "rss-limit");
    return true;
  });
  // A thread the code left running keeps the interpreter alive past EOF: close() has runsbx kill
  // it after its grace period instead of waiting for it.
  const started = Date.now();
  const h = await openSession({ python: "/usr/bin/python3" });
  assert.ok((await h.run("import threading, time\nthreading.Thread(target=lambda: time.sleep(1e9)).start()")).ok);
  assert.strictEqual((await h.close()).reason, "signaled");
  assert.ok(Date.now() - started < 30000);
  // An answer without end: the session is ended at ANSWER_LIMIT, the host does not crash.
  const o = await openSession({ python: "/usr/bin/python3" });
  await assert.rejects(o.run("import os\nb = b'x' * (1 << 20)\nwhile True: os.write(3, b)"), (err) => {
    assert.ok(err instanceof OutputLimitError && err instanceof SessionEndedError);
    assert.match(err.message, /output limit/);
    return true;
  });
  await assert.rejects(o.run("1"), SessionEndedError);
  // A malformed answer (the workload writes fd 3) ends the session with a clear error.
  const m = await openSession({ python: "/usr/bin/python3" });
  await assert.rejects(m.run("import os\nos.write(3, b'{\"ok\": 1}\\n')"), (err) => {
    assert.ok(err instanceof SessionEndedError);
    assert.match(err.message, /malformed answer/);
    return true;
  });
  assert.ok(m.outcome);
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
    let tarball = run_ok(
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
    run_ok(
        Command::new("npm")
            .args(["install", "--offline", "--no-audit", "--no-fund"])
            .arg(tarball.trim())
            .current_dir(&project),
        "npm install",
    );
    assert!(project.join("node_modules/runsbx/index.d.ts").is_file());
    fs::write(project.join("host.js"), SCRIPT).unwrap();
    let tmpdir = env.traversable_tmpdir();
    let escapes = project.join("escapes.py");
    fs::write(&escapes, SESSION_ESCAPES).unwrap();
    let out = run_ok(
        Command::new("node")
            .arg("host.js")
            .arg(&escapes)
            .current_dir(&project)
            .env("TMPDIR", &tmpdir),
        "node host.js",
    );
    let (escapes, end) = out
        .split_once("node checks passed")
        .expect("node checks passed");
    assert_session_escapes_refused(escapes);
    assert_eq!(end.trim(), "", "{out}");
    assert_tmpdir_empty(&tmpdir);
}
