"""A line-oriented Python REPL for runsbx's python-repl example.

Protocol (one JSON object per line each way):
  request:  {"code": "x = 2\nprint(x * 21)"}
  response: {"ok": true, "stdout": "42\n", "error": null, "truncated": false}

When the code left matplotlib figures open, the answer also has "figures": a
list of PNG images, base64, one per figure (each is then closed).

Code runs with globals that persist between requests. stdout (and stderr)
written while it runs are captured and cut to MAX_OUTPUT characters. An
exception (including SyntaxError) answers ok=false with the traceback text in
"error"; the REPL keeps going. A line that is not a JSON object with a string
"code" answers ok=false too. EOF on stdin ends the REPL with status 0.

The driver is part of the trusted setup but runs inside the sandbox with the
code it executes: it adds no isolation of its own, and the code can tamper
with it (e.g. rebind sys.stdout). runsbx's namespaces, seccomp and Landlock
are the boundary.
"""

import io
import json
import sys
import traceback

MAX_OUTPUT = 64 * 1024
MAX_ERROR = 8 * 1024


class _Capped(io.TextIOBase):
    """A text sink that keeps at most `limit` characters."""

    def __init__(self, limit):
        self.limit = limit
        self.parts = []
        self.size = 0
        self.truncated = False

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        room = self.limit - self.size
        if len(s) > room:
            self.truncated = True
            s = s[: max(room, 0)]
        self.parts.append(s)
        self.size += len(s)
        return len(s)

    def getvalue(self):
        return "".join(self.parts)


def _cut(text, limit):
    return text if len(text) <= limit else text[:limit] + "\n[truncated]"


def run(code, env):
    out = _Capped(MAX_OUTPUT)
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = out
    error = None
    try:
        exec(compile(code, "<request>", "exec"), env)
    except BaseException:  # SystemExit and KeyboardInterrupt too: the REPL must answer.
        etype, value, tb = sys.exc_info()
        # Skip this driver's own frame: the traceback starts in the request.
        frames = tb.tb_next if tb is not None else None
        error = _cut("".join(traceback.format_exception(etype, value, frames)), MAX_ERROR)
    finally:
        sys.stdout, sys.stderr = saved
    ans = {"ok": error is None, "stdout": out.getvalue(), "error": error, "truncated": out.truncated}
    figures = _figures()
    if figures:
        ans["figures"] = figures
    return ans


def _figures():
    """The open matplotlib figures as base64 PNGs, closed after; none when
    the code never imported pyplot."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    import base64

    out = []
    try:
        for n in plt.get_fignums():
            buf = io.BytesIO()
            plt.figure(n).savefig(buf, format="png")
            out.append(base64.b64encode(buf.getvalue()).decode("ascii"))
    except Exception:  # noqa: BLE001 - a figure that cannot render is left out
        pass
    finally:
        plt.close("all")
    return out


def _private_reply_channel():
    """Moves the protocol to a private copy of fd 1 and points fd 1 at
    /dev/null, so that code writing to fd 1 directly (os.write(1, ...), a C
    extension's printf) cannot forge or corrupt answers. Protocol hygiene,
    not a security boundary: falls back to plain stdout if dup is refused."""
    try:
        import os

        fd = os.dup(1)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
        return io.TextIOWrapper(io.FileIO(fd, "w"), encoding="utf-8", line_buffering=True)
    except OSError:
        return sys.stdout


def main(env=None):
    """Serves requests on stdin until EOF; `env`: the globals to run them
    in (the fork server passes its preloaded ones)."""
    if env is None:
        env = {"__name__": "__repl__", "__builtins__": __builtins__}
    reply = _private_reply_channel()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            code = req["code"]
            if not isinstance(code, str):
                raise TypeError("code must be a string")
        except Exception as e:  # noqa: BLE001 - any bad request gets an answer
            ans = {"ok": False, "stdout": "", "error": "bad request: %s" % e, "truncated": False}
        else:
            ans = run(code, env)
        reply.write(json.dumps(ans, ensure_ascii=True) + "\n")
        reply.flush()


if __name__ == "__main__":
    main()
