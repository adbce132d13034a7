#!/usr/bin/env node
// A Node.js host for bundles/python-repl, the way a Node supervisor of an agent loop drives it:
// spawns `runsbx sandbox` for the REPL driver with a scrubbed environment and stdio pipes, reads
// the workload's PID from --status-fd, polls that PID's VmRSS itself and kills it past a ceiling,
// and sends requests that import numpy and pandas. Exits non-zero if any answer is wrong.
//
// usage: node bundles/python-repl/host.js [--runsbx PATH] [--python PY] [--ceiling-mib N]
//   --runsbx PATH    the runsbx binary (default: runsbx on PATH)
//   --python PY      the interpreter to run inside; it needs numpy and pandas (default: python3)
//   --ceiling-mib N  kill the workload when its RSS goes above N MiB (default: 400)
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const path = require("path");
const readline = require("readline");

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const runsbx = opt("--runsbx", "runsbx");
const python = opt("--python", "python3");
const ceiling = Number(opt("--ceiling-mib", "400")) * 1024 * 1024;
const repl = path.join(__dirname, "repl.py");

// Only what the sandbox needs: runsbx scrubs again, but a host should not hand its secrets to
// a process it does not control in the first place.
const env = { PATH: process.env.PATH || "/usr/bin:/bin", LANG: "C.UTF-8" };
const child = spawn(
  runsbx,
  ["sandbox", "--status-fd", "3", "--ro", repl, "--", python, "-I", repl],
  { env, stdio: ["pipe", "pipe", "inherit", "pipe"] },
);

const lines = (stream) => {
  const queue = [];
  const waiting = [];
  readline.createInterface({ input: stream }).on("line", (l) => {
    if (waiting.length) waiting.shift()(l);
    else queue.push(l);
  });
  stream.on("end", () => waiting.splice(0).forEach((w) => w(null)));
  return () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => waiting.push(r)));
};
const nextAnswer = lines(child.stdout);
const nextEvent = lines(child.stdio[3]);
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

const rss = (pid) => {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null; // gone
  }
};

async function ask(code) {
  child.stdin.write(JSON.stringify({ code }) + "\n");
  const line = await nextAnswer();
  return line === null ? null : JSON.parse(line);
}

let failures = 0;
function check(what, ok, detail) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail ? ": " + detail : ""}`);
  if (!ok) failures++;
}

(async () => {
  const start = JSON.parse(await nextEvent());
  check("status fd gives the workload's pid", start.event === "start" && start.pid > 1, JSON.stringify(start));
  const pid = start.pid;
  const exe = fs.readlinkSync(`/proc/${pid}/exe`);
  check("that pid is the interpreter itself, no wrapper", /python/.test(path.basename(exe)), exe);

  let killedForRss = false;
  let peak = 0;
  const poll = setInterval(() => {
    const r = rss(pid);
    if (r === null) return;
    peak = Math.max(peak, r);
    if (r > ceiling && !killedForRss) {
      killedForRss = true;
      process.kill(pid, "SIGKILL");
    }
  }, 20);

  let a = await ask("import numpy, pandas\nprint(pandas.DataFrame({'a': [1, 2, 3]})['a'].sum())");
  check("import numpy and pandas", a && a.ok && a.stdout === "6\n", JSON.stringify(a));
  a = await ask("print(int(numpy.arange(10**6).sum()))");
  check("numpy computes (state kept)", a && a.ok && a.stdout === "499999500000\n", JSON.stringify(a));
  a = await ask("df = pandas.DataFrame({'k': list('abab'), 'v': range(4)})\nprint(df.groupby('k').v.sum().to_dict())");
  check("pandas groupby", a && a.ok && a.stdout === "{'a': 2, 'b': 4}\n", JSON.stringify(a));
  a = await ask("open('/etc/shadow').read()");
  check("host files stay out", a && !a.ok && /FileNotFoundError|PermissionError/.test(a.error), JSON.stringify(a));
  const before = rss(pid);
  check("the host reads the workload's RSS", before > 20 * 1024 * 1024, `${(before / 1048576).toFixed(1)} MiB`);

  // Past the ceiling: the host's own poll kills it; no answer comes.
  a = await ask(`big = numpy.ones(${Math.ceil((ceiling * 2) / 8)})`);
  check("no answer from a workload killed past the ceiling", a === null, JSON.stringify(a));
  const { code } = await exited;
  clearInterval(poll);
  check("killed for its RSS by the host", killedForRss, `peak ${(peak / 1048576).toFixed(0)} MiB`);
  check("runsbx exits 137 (SIGKILL)", code === 137, `exit ${code}`);
  const end = JSON.parse(await nextEvent());
  check("the exit event says signaled", end.event === "exit" && end.reason === "signaled", JSON.stringify(end));
  console.log(`${failures === 0 ? "passed" : "failed"}: ${failures} failure(s)`);
  process.exit(failures ? 1 : 0);
})().catch((e) => {
  console.error(e);
  child.kill("SIGKILL");
  process.exit(1);
});
