"use strict";
// A sandboxed Python REPL session for Node.js hosts: runsbx (the binary this package carries) runs
// runsbx's REPL driver under `runsbx sandbox`; the workload's PID comes from --status-fd's start
// event. The package adds nothing to the policy: it is runsbx's.

const { spawn } = require("node:child_process");
const path = require("node:path");

class SandboxUnavailableError extends Error {}

class SessionEndedError extends Error {
  constructor(outcome, why) {
    super(`the session ended: ${why || outcome.reason}`);
    this.outcome = outcome;
  }
}

/** The interpreter sent an answer longer than ANSWER_LIMIT bytes; the session was ended. */
class OutputLimitError extends SessionEndedError {}

/** The longest answer line a session reads from the sandbox, in bytes. */
const ANSWER_LIMIT = 16 << 20;
const STATUS_LIMIT = 1 << 20;
/** What `lines` gives for a line longer than its limit (then nothing more). */
const TOO_LONG = Symbol("line too long");

function binary() {
  return process.env.RUNSBX_BIN || path.join(__dirname, "bin", "runsbx");
}

/**
 * Lines of a stream, one promise each: a string, null at the end, or TOO_LONG once a line grows
 * past `limit` bytes (the stream is then dropped). Never holds more than about `limit` bytes, and
 * nothing the stream sends can make it throw.
 */
function lines(stream, limit) {
  const queue = [];
  const waiting = [];
  let ended = false;
  let parts = [];
  let size = 0;
  const put = (l) => (waiting.length ? waiting.shift()(l) : queue.push(l));
  const end = () => {
    if (ended) return;
    ended = true;
    parts = [];
    while (waiting.length) waiting.shift()(null);
  };
  stream.on("data", (chunk) => {
    if (ended) return;
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      if (size + nl - start > limit) break;
      parts.push(chunk.subarray(start, nl));
      put(Buffer.concat(parts).toString("utf8"));
      parts = [];
      size = 0;
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    if (size + rest.length > limit) {
      put(TOO_LONG);
      stream.destroy();
      end();
      return;
    }
    parts.push(rest);
    size += rest.length;
  });
  stream.on("error", end);
  stream.on("close", end);
  stream.on("end", end);
  return () =>
    new Promise((resolve) => {
      if (queue.length) resolve(queue.shift());
      else if (ended) resolve(null);
      else waiting.push(resolve);
    });
}

/** Milliseconds `close` lets the interpreter take to end after EOF before runsbx is told to kill it. */
const CLOSE_GRACE_MS = 2000;

/** Resolves to true if `promise` settles within `ms`, else to false. */
function within(promise, ms) {
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(resolve, ms, false)));
  return Promise.race([promise.then(() => true), late]).finally(() => clearTimeout(timer));
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An answer line as the REPL driver writes it, or what is wrong with it (the workload controls it). */
function parseAnswer(line) {
  let a;
  try {
    a = JSON.parse(line);
  } catch (e) {
    return `not JSON (${e.message.slice(0, 200)})`;
  }
  if (a === null || typeof a !== "object" || Array.isArray(a)) return "not a JSON object";
  if (typeof a.ok !== "boolean" || typeof a.truncated !== "boolean") return "'ok' and 'truncated' must be booleans";
  if (typeof a.stdout !== "string" || !(a.error === null || typeof a.error === "string")) {
    return "'stdout' must be a string, 'error' a string or null";
  }
  const figures = a.figures === undefined ? [] : a.figures;
  if (!Array.isArray(figures) || !figures.every((f) => typeof f === "string" && BASE64.test(f))) {
    return "'figures' must be a list of base64 strings";
  }
  return {
    ok: a.ok,
    stdout: a.stdout,
    error: a.error,
    truncated: a.truncated,
    figures: figures.map((f) => Buffer.from(f, "base64")),
  };
}

class Session {
  constructor(child, status, answers, pid, stderr) {
    this._child = child;
    this._status = status;
    this._answers = answers;
    this._stderr = stderr;
    this.pid = pid;
    this.outcome = null;
    this._closing = null;
    // runsbx's exit, not "close": the streams may outlive it.
    this._exited = new Promise((resolve) =>
      child.exitCode !== null || child.signalCode !== null ? resolve() : child.on("exit", resolve),
    );
    // What runsbx writes to the status pipe, read as it comes: its exit event is the outcome.
    this._exit = null;
    this._statusDone = (async () => {
      for (let l = await status(); l !== null; l = await status()) {
        try {
          const e = JSON.parse(l);
          if (e.event === "exit") this._exit = e;
        } catch {
          // runsbx writes only JSON lines.
        }
      }
    })();
  }

  async run(code) {
    if (this.outcome) throw new SessionEndedError(this.outcome);
    this._child.stdin.write(JSON.stringify({ code }) + "\n");
    const line = await this._answers();
    if (line === null) throw new SessionEndedError(await this.close());
    if (line === TOO_LONG) {
      const outcome = await this._kill();
      throw new OutputLimitError(outcome, `output limit hit: an answer longer than ${ANSWER_LIMIT} bytes (ANSWER_LIMIT)`);
    }
    const answer = parseAnswer(line);
    if (typeof answer === "string") {
      throw new SessionEndedError(await this._kill(), `malformed answer from the sandbox: ${answer}`);
    }
    return answer;
  }

  /**
   * Ends the session: EOF to the interpreter, then, if it is still running CLOSE_GRACE_MS later (a
   * thread the code started keeps it alive), SIGTERM to runsbx, which kills it and removes its
   * working directory. Never waits longer.
   */
  close() {
    if (!this._closing) this._closing = this._close(CLOSE_GRACE_MS);
    return this._closing;
  }

  /** Ends the session now: runsbx kills the interpreter. */
  _kill() {
    if (!this._closing) this._closing = this._close(0);
    return this._closing;
  }

  async _close(graceMs) {
    this._child.stdin.end();
    if (!(await within(this._exited, graceMs))) {
      this._child.kill("SIGTERM");
      // runsbx itself stuck: the last resort.
      if (!(await within(this._exited, 10000))) this._child.kill("SIGKILL");
      await this._exited;
    }
    // runsbx has exited: what it wrote is in the pipe; nothing else may hold the close up.
    await within(this._statusDone, 1000);
    for (const s of this._child.stdio) if (s) s.destroy();
    this.outcome = this._exit || {
      reason: "exited",
      status: this._child.exitCode ?? 128 + 9,
      peak_rss_bytes: 0,
      wall_ms: 0,
    };
    return this.outcome;
  }
}

async function openSession(options = {}) {
  const driver = path.join(__dirname, "repl.py");
  const args = ["sandbox", "--status-fd", "3", "--ro", driver, "--env", "MPLBACKEND=Agg"];
  if (options.rssLimit) args.push("--rss-limit", options.rssLimit);
  if (options.timeout) args.push("--timeout", options.timeout);
  if (options.memory) args.push("--memory", options.memory);
  if (options.isolation) args.push("--isolation", options.isolation);
  for (const p of options.ro || []) args.push("--ro", p);
  for (const [k, v] of Object.entries(options.env || {})) args.push("--env", `${k}=${v}`);
  args.push("--", options.python || "python3", "-I", driver);
  const child = spawn(options.runsbx || binary(), args, {
    stdio: ["pipe", "pipe", "pipe", "pipe"],
    env: { PATH: process.env.PATH || "/usr/bin:/bin", TMPDIR: process.env.TMPDIR || "/tmp", LANG: "C.UTF-8" },
  });
  // A write to an interpreter that is gone (EPIPE) must not be an unhandled error event.
  child.stdin.on("error", () => {});
  let stderr = "";
  child.stderr.on("data", (d) => {
    if (stderr.length < 65536) stderr += d;
  });
  const spawned = new Promise((resolve, reject) => {
    child.on("spawn", resolve);
    child.on("error", (e) => reject(new SandboxUnavailableError(`runsbx: ${e.message}`)));
  });
  await spawned;
  const status = lines(child.stdio[3], STATUS_LIMIT);
  // Fail closed: until runsbx says the workload started, nothing of the caller's ran; anything
  // else is the sandbox not being there.
  for (let l = await status(); ; l = await status()) {
    if (l === null || l === TOO_LONG) {
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on("close", resolve)));
      const why = stderr.split("\n").find((s) => s.startsWith("runsbx: error:")) || `runsbx exited ${child.exitCode}`;
      throw new SandboxUnavailableError(why);
    }
    const e = JSON.parse(l);
    if (e.event === "start") return new Session(child, status, lines(child.stdout, ANSWER_LIMIT), e.pid, () => stderr);
    if (e.event === "exit") {
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on("close", resolve)));
      throw new SandboxUnavailableError(e.message || stderr.trim());
    }
  }
}

module.exports = {
  openSession,
  binary,
  Session,
  SandboxUnavailableError,
  SessionEndedError,
  OutputLimitError,
  ANSWER_LIMIT,
  CLOSE_GRACE_MS,
};
