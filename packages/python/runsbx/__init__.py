"""Run Python code nobody vouched for in runsbx's sandbox, from Python.

The wheel carries the runsbx binary (installed on the environment's PATH, next
to its python); nothing is compiled at install time. Each call runs the code
in a fresh sandbox: no network, no files outside a private working directory,
no subprocesses, no capabilities (see runsbx's docs/sandbox.md).

Run code once:

>>> import runsbx
>>> r = runsbx.run("print(6 * 7)", python="/usr/bin/python3")
>>> r.stdout, r.outcome.reason, r.outcome.exit_code
('42\\n', 'exited', 0)

A failing program and a limit are outcomes, not exceptions:

>>> runsbx.run("import sys; sys.exit(3)", python="/usr/bin/python3").outcome.exit_code
3
>>> runsbx.run("while True: pass", python="/usr/bin/python3", timeout="1s").outcome.reason
'timeout'

A session keeps its state between requests; its pid is the interpreter's own
host PID (poll its RSS, or let ``rss_limit`` do it):

>>> with runsbx.Session(python="/usr/bin/python3") as s:
...     s.run("x = 6 * 7").ok
...     s.run("print(x)").stdout
...     s.run("1 / 0").error.splitlines()[-1]
...     s.pid > 0
True
'42\\n'
'ZeroDivisionError: division by zero'
True
>>> s.outcome.reason
'exited'
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sysconfig
import tempfile
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import IO, Any, Dict, List, Literal, Mapping, Optional, Sequence

__all__ = [
    "ANSWER_LIMIT",
    "Answer",
    "Isolation",
    "CLOSE_GRACE",
    "OUTPUT_LIMIT",
    "Outcome",
    "OutputLimitExceeded",
    "Result",
    "SandboxError",
    "Session",
    "STDERR_LIMIT",
    "SessionEnded",
    "binary",
    "install_kernelspec",
    "run",
]


#: Seconds :meth:`Session.close` lets the interpreter take to end after EOF
#: before runsbx is told to kill it.
CLOSE_GRACE = 2.0
_STATUS_LIMIT = 1 << 20
#: How much of a :class:`Session`'s stderr it keeps (bytes).
STDERR_LIMIT = 64 << 10
#: The longest answer line a :class:`Session` reads from the sandbox (bytes);
#: past it the session is ended and :meth:`Session.run` raises
#: :class:`OutputLimitExceeded`.
ANSWER_LIMIT = 16 << 20
#: How much of each of stdout and stderr :func:`run` keeps (bytes); the rest
#: is read and dropped, and :attr:`Result.truncated` says so.
OUTPUT_LIMIT = 16 << 20


class SandboxError(RuntimeError):
    """runsbx could not run the code at all (a bad flag, a missing
    interpreter, a layer of the sandbox that could not be set up); the
    message is runsbx's own one-line error."""


@dataclass(frozen=True)
class Outcome:
    """How a sandboxed run ended, as ``runsbx sandbox --report`` writes it.

    ``reason`` is one of ``exited``, ``signaled``, ``timeout``,
    ``rss-limit``, ``oom`` and ``setup-failed``."""

    reason: str
    status: int
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    peak_rss_bytes: int = 0
    wall_ms: int = 0
    message: Optional[str] = None
    isolation: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Outcome":
        return cls(
            reason=str(d.get("reason", "")),
            status=int(d.get("status", 0)),
            exit_code=d.get("exit_code"),
            signal=d.get("signal"),
            peak_rss_bytes=int(d.get("peak_rss_bytes", 0)),
            wall_ms=int(d.get("wall_ms", 0)),
            message=d.get("message"),
            isolation=d.get("isolation"),
        )


@dataclass(frozen=True)
class Result:
    """What :func:`run` gives back. ``truncated``: stdout or stderr was
    longer than :data:`OUTPUT_LIMIT` bytes and holds only its first
    :data:`OUTPUT_LIMIT` bytes."""

    stdout: str
    stderr: str
    outcome: Outcome
    truncated: bool = False


@dataclass(frozen=True)
class Answer:
    """One request's answer in a :class:`Session`."""

    ok: bool
    stdout: str
    error: Optional[str]
    truncated: bool
    #: The matplotlib figures the code left open, as PNG bytes.
    figures: List[bytes] = field(default_factory=list)


class SessionEnded(RuntimeError):
    """The session's interpreter ended (a limit, a crash) before it answered,
    or the session was ended because of what it sent (see the subclasses)."""

    def __init__(self, outcome: Outcome, why: Optional[str] = None) -> None:
        super().__init__(f"the session ended: {why or outcome.reason}")
        self.outcome = outcome


class OutputLimitExceeded(SessionEnded):
    """The interpreter sent an answer longer than :data:`ANSWER_LIMIT` bytes;
    the session was ended (runsbx killed the interpreter)."""


class _Capped(threading.Thread):
    """Reads a pipe to its end in the background, keeping its first
    ``limit`` bytes and dropping the rest."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        super().__init__(daemon=True)
        self._fd = stream.fileno()
        self.limit = limit
        self.data = bytearray()
        self.truncated = False
        self.start()

    def run(self) -> None:
        try:
            while True:
                chunk = os.read(self._fd, 65536)
                if not chunk:
                    return
                room = self.limit - len(self.data)
                if len(chunk) > room:
                    self.truncated = True
                    chunk = chunk[: max(room, 0)]
                self.data += chunk
        except OSError:
            return

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def binary() -> str:
    """The runsbx this package runs: ``$RUNSBX_BIN``, else the one the wheel
    installed next to this environment's python, else ``runsbx`` on PATH."""
    env = os.environ.get("RUNSBX_BIN")
    if env:
        return env
    mine = os.path.join(sysconfig.get_path("scripts"), "runsbx")
    if os.access(mine, os.X_OK):
        return mine
    found = shutil.which("runsbx")
    if found is None:
        raise SandboxError("runsbx not found: install the runsbx wheel, or set RUNSBX_BIN")
    return found


#: ``runsbx sandbox --isolation``: ``auto`` (runsbx's default: namespaces
#: where the host allows them, else Landlock), ``namespaces`` or ``landlock``.
Isolation = Literal["auto", "namespaces", "landlock"]


def _flags(
    isolation: Optional[Isolation],
    timeout: Optional[str],
    rss_limit: Optional[str],
    memory: Optional[str],
    ro: Sequence[str],
    env: Optional[Mapping[str, str]],
    workdir: Optional[str],
) -> List[str]:
    flags: List[str] = []
    if isolation is not None:
        flags += ["--isolation", isolation]
    if timeout is not None:
        flags += ["--timeout", timeout]
    if rss_limit is not None:
        flags += ["--rss-limit", rss_limit]
    if memory is not None:
        flags += ["--memory", memory]
    for path in ro:
        flags += ["--ro", os.fspath(path)]
    for key, value in (env or {}).items():
        flags += ["--env", f"{key}={value}"]
    if workdir is not None:
        flags += ["--workdir", os.fspath(workdir)]
    return flags


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Writes ``data`` to a pipe and closes it; a reader that is gone is fine."""
    try:
        stream.write(data)
    except OSError:
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass


def run(
    code: str,
    *,
    python: str = "python3",
    isolation: Optional[Isolation] = None,
    timeout: Optional[str] = None,
    rss_limit: Optional[str] = None,
    memory: Optional[str] = None,
    ro: Sequence[str] = (),
    env: Optional[Mapping[str, str]] = None,
    workdir: Optional[str] = None,
) -> Result:
    """Runs ``code`` as ``python``'s program in a fresh sandbox and waits
    for it. The code goes to ``python -`` on its stdin, not on the command
    line (which other local users can read in /proc, and which is limited
    to 128 KiB); the program's stdin is at its end once it runs.

    ``isolation`` is ``runsbx sandbox --isolation`` (``auto``, runsbx's
    default, ``namespaces`` or ``landlock``; an option the mode cannot give
    is a :class:`SandboxError`). ``timeout`` (``"10s"``), ``rss_limit`` and
    ``memory`` (``"512M"``) are runsbx's limits; ``ro`` adds read-only paths, ``env`` variables;
    ``workdir`` keeps files (default: a private directory, removed after).
    stdout and stderr keep their first :data:`OUTPUT_LIMIT` bytes each
    (``truncated`` says when more was cut). Raises :class:`SandboxError`
    only when runsbx could not run the code."""
    with tempfile.TemporaryDirectory(prefix="runsbx-py-") as tmp:
        report = os.path.join(tmp, "report.json")
        argv = [binary(), "sandbox", "--report", report]
        argv += _flags(isolation, timeout, rss_limit, memory, ro, env, workdir)
        argv += ["--", python, "-"]
        try:
            p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            raise SandboxError(f"runsbx: {e}") from None
        assert p.stdin is not None and p.stdout is not None and p.stderr is not None
        out, err = _Capped(p.stdout, OUTPUT_LIMIT), _Capped(p.stderr, OUTPUT_LIMIT)
        feed = threading.Thread(target=_feed, args=(p.stdin, code.encode("utf-8", "surrogateescape")), daemon=True)
        feed.start()
        p.wait()
        feed.join()
        out.join()
        err.join()
        p.stdout.close()
        p.stderr.close()
        stdout, stderr = out.text(), err.text()
        try:
            with open(report) as f:
                outcome = Outcome.from_json(json.load(f))
        except FileNotFoundError:
            raise SandboxError(stderr.strip() or f"runsbx exited {p.returncode}") from None
    if outcome.reason == "setup-failed":
        raise SandboxError(outcome.message or stderr.strip())
    return Result(stdout=stdout, stderr=stderr, outcome=outcome, truncated=out.truncated or err.truncated)


def _answer(line: bytes) -> Answer:
    """An answer line as the REPL driver writes it; ValueError for anything
    else (the workload controls the line)."""
    import base64
    import binascii

    try:
        a = json.loads(line)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError, deep nesting
        raise ValueError(f"not JSON ({e})") from None
    if not isinstance(a, dict):
        raise ValueError("not a JSON object")
    ok, stdout, error, truncated = a.get("ok"), a.get("stdout"), a.get("error"), a.get("truncated")
    figures = a.get("figures", [])
    if not isinstance(ok, bool) or not isinstance(truncated, bool):
        raise ValueError("'ok' and 'truncated' must be booleans")
    if not isinstance(stdout, str) or not (error is None or isinstance(error, str)):
        raise ValueError("'stdout' must be a string, 'error' a string or null")
    if not isinstance(figures, list) or not all(isinstance(f, str) for f in figures):
        raise ValueError("'figures' must be a list of strings")
    try:
        pngs = [base64.b64decode(f, validate=True) for f in figures]
    except binascii.Error as e:
        raise ValueError(f"a figure is not base64 ({e})") from None
    return Answer(ok=ok, stdout=stdout, error=error, truncated=truncated, figures=pngs)


class Session:
    """A sandboxed Python interpreter that keeps its state between
    :meth:`run` calls (runsbx's REPL driver under ``runsbx sandbox``).

    Use it as a context manager, or call :meth:`close`; the sandbox, its
    interpreter and its private working directory are gone after. The limits
    are the session's: ``timeout`` counts from its start; ``isolation`` is
    :func:`run`'s. The sandbox's
    stderr (runsbx's own messages, and whatever the interpreter writes to
    fd 2) is piped, not this process's: :attr:`stderr` keeps its first
    :data:`STDERR_LIMIT` bytes."""

    def __init__(
        self,
        python: str = "python3",
        *,
        isolation: Optional[Isolation] = None,
        timeout: Optional[str] = None,
        rss_limit: Optional[str] = None,
        memory: Optional[str] = None,
        ro: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        driver = str(resources.files(__name__).joinpath("_repl.py"))
        env = {"MPLBACKEND": "Agg", **(env or {})}
        read, write = os.pipe()
        argv = [binary(), "sandbox", "--status-fd", str(write), "--ro", driver]
        argv += _flags(isolation, timeout, rss_limit, memory, ro, env, None)
        argv += ["--", python, "-I", driver]
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(write,),
            )
        finally:
            os.close(write)
        assert self._proc.stderr is not None
        self._stderr = _Capped(self._proc.stderr, STDERR_LIMIT)
        self._status = read
        self._status_buf = b""
        self._outcome: Optional[Outcome] = None
        self.pid: int = 0
        while True:
            event = self._status_event()
            if event is None:
                self._finish({})
                raise SandboxError(self._error() or f"runsbx exited {self._proc.returncode} before the session started")
            if event.get("event") == "start":
                self.pid = int(event["pid"])
                break
            if event.get("event") == "exit":
                self._finish(event)
                raise SandboxError(event.get("message") or self._error() or "the sandbox did not start")

    def _error(self) -> Optional[str]:
        """runsbx's one-line error on its stderr, if it wrote one."""
        self._stderr.join(timeout=1)
        lines = self.stderr.splitlines()
        return next((line for line in lines if line.startswith("runsbx: error:")), None)

    @property
    def stderr(self) -> str:
        """What the sandbox wrote to its stderr so far (runsbx's messages,
        the interpreter's fd 2): the first :data:`STDERR_LIMIT` bytes."""
        return self._stderr.text()

    def _status_event(self) -> Optional[Dict[str, Any]]:
        """The next event runsbx wrote to the status pipe; ``None`` at its
        end, or when nothing is there once the pipe was made non-blocking."""
        while True:
            line, nl, rest = self._status_buf.partition(b"\n")
            if nl:
                self._status_buf = rest
                if line.strip():
                    event: Dict[str, Any] = json.loads(line)
                    return event
                continue
            if len(self._status_buf) > _STATUS_LIMIT:
                return None
            try:
                chunk = os.read(self._status, 65536)
            except BlockingIOError:
                return None
            if not chunk:
                return None
            self._status_buf += chunk

    def run(self, code: str) -> Answer:
        """Runs ``code`` with the session's globals; raises
        :class:`SessionEnded` if the interpreter ended instead of answering,
        :class:`OutputLimitExceeded` (after ending the session) if its answer
        was longer than :data:`ANSWER_LIMIT` bytes, :class:`SessionEnded`
        (after ending it) if the answer was not the driver's JSON object."""
        if self._outcome is not None:
            raise SessionEnded(self._outcome)
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(json.dumps({"code": code}).encode() + b"\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline(ANSWER_LIMIT + 1)
        except (BrokenPipeError, ValueError):
            line = b""
        if not line:
            raise SessionEnded(self.close())
        if len(line) > ANSWER_LIMIT and not line.endswith(b"\n"):
            outcome = self._kill()
            raise OutputLimitExceeded(
                outcome, f"output limit hit: an answer longer than {ANSWER_LIMIT} bytes (ANSWER_LIMIT)"
            )
        try:
            return _answer(line)
        except ValueError as e:
            raise SessionEnded(self._kill(), f"malformed answer from the sandbox: {e}") from None

    @property
    def outcome(self) -> Optional[Outcome]:
        """How the session ended; ``None`` while it runs."""
        return self._outcome

    def close(self) -> Outcome:
        """Ends the session and returns its outcome: EOF to the interpreter,
        then, if it is still running :data:`CLOSE_GRACE` seconds later (a
        thread the code started keeps it alive), SIGTERM to runsbx, which
        kills it and removes its working directory. Never waits longer."""
        if self._outcome is not None:
            return self._outcome
        if self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        return self._finish(None, CLOSE_GRACE)

    def _kill(self) -> Outcome:
        """Ends the session now: runsbx kills the interpreter."""
        if self._outcome is not None:
            return self._outcome
        return self._finish(None, 0)

    def _finish(self, exit_event: Optional[Mapping[str, Any]], grace: float = CLOSE_GRACE) -> Outcome:
        try:
            self._proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # runsbx itself stuck: the last resort
                self._proc.kill()
                self._proc.wait()
        if exit_event is None:
            # runsbx has exited: what it wrote is in the pipe. Non-blocking, so
            # that nothing else holding the pipe can make this wait.
            exit_event = {}
            os.set_blocking(self._status, False)
            while True:
                event = self._status_event()
                if event is None:
                    break
                if event.get("event") == "exit":
                    exit_event = event
        os.close(self._status)
        self._stderr.join(timeout=1)
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self._outcome = Outcome.from_json(exit_event or {"reason": "exited", "status": self._proc.returncode})
        return self._outcome

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def install_kernelspec(
    directory: str,
    *,
    name: str = "Python (runsbx)",
    python: str = "python3",
    sandbox_flags: Sequence[str] = (),
) -> str:
    """Writes a Jupyter kernelspec directory whose kernel runs in runsbx's
    sandbox (``runsbx kernelspec``); install it with ``jupyter kernelspec
    install DIRECTORY``. ``python`` must import ipykernel. Returns the
    kernel.json path."""
    argv = [binary(), "kernelspec", "--name", name, "--python", python, os.fspath(directory)]
    if sandbox_flags:
        argv += ["--", *sandbox_flags]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if p.returncode != 0:
        raise SandboxError(p.stderr.strip())
    return os.path.join(os.fspath(directory), "kernel.json")
