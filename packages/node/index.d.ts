/** How a sandboxed session ended, as `runsbx sandbox --report` writes it. */
export interface Outcome {
  /** `exited`, `signaled`, `timeout`, `rss-limit`, `oom` or `setup-failed`. */
  reason: string;
  status: number;
  exit_code?: number;
  signal?: number;
  peak_rss_bytes: number;
  wall_ms: number;
  message?: string;
  isolation?: string;
}

/** One request's answer. */
export interface Answer {
  ok: boolean;
  stdout: string;
  error: string | null;
  truncated: boolean;
  /** matplotlib figures the code left open, as PNG bytes. */
  figures: Buffer[];
}

export interface SessionOptions {
  /** The interpreter (default `python3`); as root it must be one host nobody can run. */
  python?: string;
  /** runsbx's RSS ceiling for the interpreter (`512M`, `1G`): past it the session ends. */
  rssLimit?: string;
  /** Wall-clock limit of the whole session (`10s`, `5m`). */
  timeout?: string;
  /** A cgroup memory limit (`--memory`). */
  memory?: string;
  /** `auto` (default), `namespaces` or `landlock` (`--isolation`). */
  isolation?: "auto" | "namespaces" | "landlock";
  /** Extra read-only paths. */
  ro?: string[];
  /** Environment variables inside. */
  env?: Record<string, string>;
  /** The runsbx binary (default: `$RUNSBX_BIN`, else the one this package carries). */
  runsbx?: string;
}

/** The sandbox could not be established; no workload process ran. */
export class SandboxUnavailableError extends Error {}

/** The interpreter ended (a limit, a crash) instead of answering. */
export class SessionEndedError extends Error {
  outcome: Outcome;
}

/** An answer was longer than ANSWER_LIMIT bytes: the session was ended (runsbx killed the interpreter). */
export class OutputLimitError extends SessionEndedError {}

/** The longest answer a session reads from the sandbox, in bytes (16 MiB). */
export const ANSWER_LIMIT: number;

/** Milliseconds `close` lets the interpreter take to end after EOF before runsbx kills it (2000). */
export const CLOSE_GRACE_MS: number;

/** A sandboxed Python REPL: state persists between `run` calls. */
export class Session {
  /** The interpreter's own host PID (poll its RSS in /proc/PID/status). */
  readonly pid: number;
  /** How it ended; `null` while it runs. */
  readonly outcome: Outcome | null;
  /** Rejects with SessionEndedError if the interpreter ended or sent a malformed answer, OutputLimitError past ANSWER_LIMIT. */
  run(code: string): Promise<Answer>;
  /** Ends the session (EOF to the interpreter; runsbx kills it if it still runs 2 s later) and resolves to its outcome. */
  close(): Promise<Outcome>;
}

/** Starts a session; rejects with SandboxUnavailableError, before any workload runs, when the sandbox cannot be set up. */
export function openSession(options?: SessionOptions): Promise<Session>;

/** The runsbx binary this package runs. */
export function binary(): string;
