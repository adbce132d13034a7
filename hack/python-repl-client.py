#!/usr/bin/env python3
"""Example host client for bundles/python-repl: starts the REPL under
`runsbx sandbox`, sends a few requests, checks the answers, exits non-zero if
any answer is wrong (or the sandbox does not start or exit cleanly).

Usage:
  hack/python-repl-client.py [--runsbx PATH] [--python NAME] [--bare] [-- RUNSBX_SANDBOX_FLAGS...]

  --runsbx PATH   the runsbx binary (default: target/x86_64-unknown-linux-gnu/debug/runsbx, else runsbx on PATH)
  --python NAME   interpreter command to run inside (default: python3)
  --bare          run the driver without runsbx (to test the driver and this client)
  flags after --  passed to `runsbx sandbox` before its own `--`

The driver file must be readable inside the sandbox, where only discovered
runtime paths exist: it is passed with `--ro` by its absolute path, and
named by the same absolute path on the command line.
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DRIVER = os.path.join(REPO, "bundles", "python-repl", "repl.py")
TIMEOUT = 30.0

# (code, check(answer) -> None or a complaint)
def expect_stdout(want):
    def check(a):
        if not a.get("ok") or a.get("stdout") != want:
            return "want ok with stdout %r" % want
    return check


def expect_error(fragment):
    def check(a):
        if a.get("ok") or fragment not in (a.get("error") or ""):
            return "want an error containing %r" % fragment
    return check


def expect_truncated(limit):
    def check(a):
        if not (a.get("ok") and a.get("truncated") and len(a.get("stdout", "")) == limit):
            return "want ok, truncated, %d characters" % limit
    return check


STDLIB = (
    "import collections, decimal, json, math, re\n"
    "print(math.factorial(10), json.dumps({'a': [1, 2]}), re.sub(r'\\d', '#', 'a1b2'),\n"
    "      collections.Counter('abca').most_common(1), decimal.Decimal('1.1') + decimal.Decimal('2.2'))"
)

REQUESTS = [
    ("x = 2", expect_stdout("")),
    ("print(x * 21)", expect_stdout("42\n")),
    (STDLIB, expect_stdout("3628800 {\"a\": [1, 2]} a#b# [('a', 2)] 3.3\n")),
    ("1/0", expect_error("ZeroDivisionError")),
    ("print(x)", expect_stdout("2\n")),  # state survives an error
    ("def f(:", expect_error("SyntaxError")),
    ("print('y' * 100000)", expect_truncated(64 * 1024)),
]

# Only meaningful inside the sandbox (skipped with --bare).
SANDBOX_ONLY = [
    ("open('/etc/shadow').read()", expect_error("Error")),  # not bound, and Landlock
    ("print(x)", expect_stdout("2\n")),
]


def find_runsbx(explicit):
    if explicit:
        return explicit
    local = os.path.join(REPO, "target", "x86_64-unknown-linux-gnu", "debug", "runsbx")
    return local if os.access(local, os.X_OK) else shutil.which("runsbx")


def main(argv):
    runsbx, python, bare, extra = None, "python3", False, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            extra = argv[i + 1 :]
            break
        if a == "--runsbx":
            runsbx, i = argv[i + 1], i + 1
        elif a == "--python":
            python, i = argv[i + 1], i + 1
        elif a == "--bare":
            bare = True
        else:
            print("python-repl-client: unknown argument %s" % a, file=sys.stderr)
            return 2
        i += 1

    inner = [python, "-I", DRIVER]
    if bare:
        cmd = inner
    else:
        runsbx = find_runsbx(runsbx)
        if not runsbx:
            print("python-repl-client: runsbx not found (build it or pass --runsbx)", file=sys.stderr)
            return 2
        cmd = [runsbx, "sandbox", *extra, "--ro", DRIVER, "--", *inner]
    print("$ " + " ".join(cmd), file=sys.stderr)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout] + [lines.put(None)], daemon=True).start()

    requests = REQUESTS if bare else REQUESTS + SANDBOX_ONLY
    failures = 0
    try:
        for code, check in requests:
            proc.stdin.write(json.dumps({"code": code}) + "\n")
            proc.stdin.flush()
            try:
                line = lines.get(timeout=TIMEOUT)
            except queue.Empty:
                line = None
            if line is None:
                print("FAIL %r: no answer (sandbox exited with %s)" % (code, proc.poll()))
                failures += 1
                break
            answer = json.loads(line)
            shown = dict(answer, stdout=answer["stdout"][:80])
            complaint = check(answer)
            print("%s %r -> %s%s" % ("FAIL" if complaint else "ok  ", code[:40], json.dumps(shown)[:160],
                                     "  (%s)" % complaint if complaint else ""))
            failures += bool(complaint)
        proc.stdin.close()
        status = proc.wait(timeout=TIMEOUT)
    except (BrokenPipeError, subprocess.TimeoutExpired) as e:
        print("FAIL: %s" % e)
        proc.kill()
        return 1
    if status != 0:
        print("FAIL: sandbox exited with status %d" % status)
        failures += 1
    print("%d request(s), %d failure(s)" % (len(requests), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
