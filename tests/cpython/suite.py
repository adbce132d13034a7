#!/usr/bin/env python3
"""CPython's regression tests inside `runsbx sandbox` and outside it (issue 37).

Runs each module of MODULES with run_module.py, once per `runsbx sandbox`
and once unsandboxed in a fresh directory, records every test's outcome on
both sides, and compares them with the by-design list (by_design.txt):

    tests/cpython/suite.py --runsbx target/.../runsbx [--root DIR] [--out DIR]
                           [--jobs N] [--timeout S] [--report-denials] [MODULE ...]

(--sides host or sandbox runs one side; --reuse REPORT takes the modules not
run this time from an earlier report.json, to try a change on one module.)

Exit status 0 when every test that passes unsandboxed passes in the sandbox
or is on the by-design list with evidence for its reason, and every entry
of the list still matches a test; 1 otherwise, with each problem on one
line. The report (OUT/report.json) holds every outcome and the figures; the
last line of stdout is the issue's measure: of the tests that pass
unsandboxed and need neither fork/exec nor a socket, how many pass inside.
tests/cpython.rs runs this in CI; docs/sandbox.md quotes its figures.
"""
import argparse
import concurrent.futures
import fnmatch
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from run_module import EVENTS

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3.11"  # the interpreter Debian's libpython3.11-testsuite is for

# The modules of issue 37 that need no fork, exec or socket as a whole
# (test_subprocess, test_socket, test_asyncio, test_multiprocessing_* do).
MODULES = """
abc argparse array base64 binascii bisect bz2 calendar collections configparser contextlib
copy csv dataclasses datetime dbm decimal difflib enum fileio fnmatch fractions functools
getpass glob grp gzip hashlib heapq hmac io itertools json locale logging lzma math os
pathlib pickle posix pwd queue random re sched secrets shelve shutil signal stat
statistics string struct tarfile tempfile textwrap threading time typing unicodedata uuid
zipfile zlib zoneinfo concurrent_futures
""".split()

# Reasons a test may be on the by-design list, with the audit events
# (run_module.py) that are evidence of each; None: no audit event shows it,
# the entry was checked by hand with `runsbx sandbox --report-denials`.
REASONS = {**EVENTS, "noexec": None, "readonly": None, "landlock": None, "device": None,
           "refused-call": None}
# The measure leaves out the tests that need these.
EXCLUDED_FROM_MEASURE = {"fork/exec", "socket"}


class Entry:
    """One line of by_design.txt: `PATTERN REASON[ hangs]: why`. `hangs`: the
    test waits forever in the sandbox (a thread that died of the refusal was
    to wake it), so it is not run there; its reason was checked by hand."""

    def __init__(self, pattern, reason, hangs, why):
        self.pattern, self.reason, self.hangs, self.why = pattern, reason, hangs, why

    def matches(self, test):
        return fnmatch.fnmatchcase(test, self.pattern)


def load_by_design(path):
    entries = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            pattern, _, rest = line.partition(" ")
            head, _, why = rest.strip().partition(":")
            reason, _, hangs = head.partition(" ")
            if reason not in REASONS or hangs not in ("", "hangs") or not why.strip():
                sys.exit(f"{path}:{n}: want `PATTERN REASON[ hangs]: why` with REASON one of "
                         f"{', '.join(REASONS)}; got {line!r}")
            entries.append(Entry(pattern, reason, hangs == "hangs", why.strip()))
    return entries


class Run:
    """One side of one module: runs run_module.py, again after a hang or a
    crash with the tests already reported (and the culprit) skipped."""

    def __init__(self, args, module, side, logdir, never):
        self.args, self.module, self.side, self.never = args, module, side, never
        self.log = open(os.path.join(logdir, f"{module}.{side}.log"), "w")
        self.results = {}

    def command(self, skip, workdir):
        script = open(os.path.join(HERE, "run_module.py")).read()
        py = [PYTHON, "-c", script, f"test.test_{self.module}", *sorted(skip)]
        if self.side == "host":
            return py
        cmd = [self.args.runsbx]
        if self.args.root:
            cmd += ["--root", self.args.root]
        # --report-denials: the layer and syscall of each refusal, in the module's log
        # (OUT/MODULE.sandbox.log), for checking a by-design entry's reason by hand.
        flags = ["--report-denials"] if self.args.report_denials else []
        return cmd + ["sandbox", *flags, "--workdir", workdir, "--", *py]

    def env(self, workdir):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        if self.side == "host":
            # What the sandbox sets: the workdir as HOME, TMPDIR and cwd.
            env.update(HOME=workdir, TMPDIR=workdir)
        return env

    def once(self, skip):
        workdir = tempfile.mkdtemp(prefix=f"cpy-{self.module}-{self.side}-", dir=self.args.tmp)
        os.chmod(workdir, 0o755)
        if self.side == "sandbox" and os.geteuid() == 0:
            os.chown(workdir, 65534, 65534)  # the sandbox's user on the host when root runs it
        proc = subprocess.Popen(self.command(skip, workdir), cwd=workdir, env=self.env(workdir),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=self.log, text=True, errors="replace")
        lines = queue.Queue()

        def read():
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        current, since, done, hung = None, time.monotonic(), False, False
        while True:
            try:
                line = lines.get(timeout=5)
            except queue.Empty:
                if current and time.monotonic() - since > self.args.timeout:
                    proc.terminate()  # runsbx kills the workload on SIGTERM
                    hung = True
                continue
            if line is None:
                break
            try:
                rec = json.loads(line)
            except ValueError:
                print(f"{self.module}.{self.side}: not a result line: {line!r}", file=self.log)
                continue
            if "start" in rec:
                current, since = rec["start"], time.monotonic()
            elif "done" in rec:
                done = True
            else:
                self.results[rec["id"]] = rec
                if rec["id"] == current:
                    current = None
        status = proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
        if done:
            return None
        culprit = current or f"exit ({self.module})"
        outcome = "timeout" if hung else "crash"
        self.results[culprit] = {"id": culprit, "outcome": outcome, "events": [],
                                 "detail": f"exit status {status}"}
        return culprit

    def run(self):
        blamed = set()
        for _ in range(8):
            culprit = self.once(set(self.results) | blamed | self.never)
            if culprit is None or culprit in blamed:
                break
            blamed.add(culprit)
        self.log.close()
        return self.results


def evidence(test, reason, host, inside):
    """Whether a lost test shows an audit event of `reason`: where it passed
    unsandboxed (what it needs), or in the sandbox, in the test or in the
    class or module setup, or the import, that kept it from running there."""
    module = test.split(".")[1] if test.startswith("test.") else ""
    recs = [host.get(test), inside.get(test)]
    recs += [r for i, r in inside.items()
             if i.startswith(("setUp", "tearDown", "import")) and f"test.{module}" in i]
    return any(set(r["events"]) & REASONS[reason] for r in recs if r)


def passed(rec):
    return rec is not None and rec["outcome"] in ("pass", "xfail")


def compare(host, inside, entries, modules):
    """The lost tests (pass unsandboxed, not inside), each matched to its
    by-design entry, and every problem as one line."""
    lost = sorted(t for t, r in host.items() if passed(r) and not passed(inside.get(t)))
    matched, problems, by_entry = {}, [], {}
    for test in lost:
        entry = next((e for e in entries if e.matches(test)), None)
        if entry is None:
            rec = inside.get(test)
            why = f"{rec['outcome']}: {rec['detail']}" if rec else "did not run"
            problems.append(f"lost: {test} passes unsandboxed, not in the sandbox ({why})")
            continue
        by_entry.setdefault(entry, []).append(test)
        matched[test] = entry.reason
    # The evidence is asked of an entry, not of each test it matches: a
    # class of process-pool tests fails in its setUp before any of them
    # forks, and multiprocessing's spawn starts a process without an audit
    # event, but the same class with the fork context shows os.fork.
    for entry, tests in by_entry.items():
        if entry.hangs or REASONS[entry.reason] is None:
            continue
        if not any(evidence(t, entry.reason, host, inside) for t in tests):
            problems.append(f"unproven: none of the {len(tests)} lost tests of {entry.pattern} "
                            f"raised a {entry.reason} audit event")
    used = set(by_entry)
    # An entry for a module that did not run this time is not stale.
    for e in entries:
        if e not in used and any(e.pattern.startswith(f"test.test_{m}.") for m in modules):
            problems.append(f"stale: by-design entry {e.pattern} ({e.reason}) matches no lost test")
    return lost, matched, problems


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runsbx", help="the runsbx binary (needed for the sandbox side)")
    p.add_argument("--root", help="runsbx --root (state directory)")
    p.add_argument("--out", default=None, help="report and logs (default: a new temp dir)")
    p.add_argument("--tmp", default=None, help="where workdirs go (default: $TMPDIR)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=120, help="seconds one test may take")
    p.add_argument("--sides", default="host,sandbox", help="host, sandbox or both (the default)")
    p.add_argument("--reuse", action="append", default=[], metavar="REPORT",
                   help="take the sides not run this time from an earlier report.json")
    p.add_argument("--report-denials", action="store_true",
                   help="run each sandbox with --report-denials (lines in OUT/MODULE.sandbox.log)")
    p.add_argument("--by-design", default=os.path.join(HERE, "by_design.txt"))
    p.add_argument("modules", nargs="*", default=MODULES)
    args = p.parse_args()
    if not os.path.exists(os.path.join("/usr/lib/python3.11/test", "test_json")):
        sys.exit("CPython's regression tests are missing: install Debian's libpython3.11-testsuite "
                 "(hack/setup-ci does)")
    sides = [s for s in args.sides.split(",") if s]
    if "sandbox" in sides and not args.runsbx:
        sys.exit("--runsbx is needed to run the sandbox side")
    if args.runsbx and os.sep in args.runsbx:
        args.runsbx = os.path.abspath(args.runsbx)  # each run's cwd is its workdir
    entries = load_by_design(args.by_design)
    out = args.out or tempfile.mkdtemp(prefix="cpython-suite-")
    os.makedirs(out, exist_ok=True)
    os.chmod(out, 0o755)
    if args.tmp:
        os.chmod(args.tmp, 0o755)

    # A shell's `cmd &` starts its job with SIGINT ignored, which every child
    # would inherit on both sides (test_signal's KeyboardInterrupt tests then
    # fail or skip): a handler of our own is reset to the default on exec.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.monotonic()
    hangs = {e.pattern for e in entries if e.hangs}
    runs = {(m, s): Run(args, m, s, out, hangs if s == "sandbox" else set())
            for m in args.modules for s in sides}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = dict(zip(runs, pool.map(lambda r: r.run(), runs.values())))
    # Per side, per module; --reuse fills in the modules not run this time.
    per_module = {"host": {}, "sandbox": {}}
    for path in args.reuse:
        with open(path) as f:
            for side, modules in json.load(f)["runs"].items():
                per_module[side].update(modules)
    for (module, side), res in results.items():
        per_module[side][module] = res
    host, inside = ({i: r for res in per_module[side].values() for i, r in res.items()}
                    for side in ("host", "sandbox"))
    for t in host:
        if t not in inside and any(fnmatch.fnmatchcase(t, p) for p in hangs):
            inside[t] = {"id": t, "outcome": "not run", "events": [],
                         "detail": "hangs in the sandbox (by_design.txt)"}
    report = {"runs": per_module, "seconds": round(time.monotonic() - started)}
    if not (host and inside):
        with open(os.path.join(out, "report.json"), "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
        print(f"report: {out}/report.json (one side only: nothing compared)")
        return 0

    modules = sorted(set(per_module["host"]) & set(per_module["sandbox"]))
    lost, matched, problems = compare(host, inside, entries, modules)
    host_pass = {t for t, r in host.items() if passed(r)}
    inside_pass = {t for t, r in inside.items() if passed(r)}
    excluded = {t for t, reason in matched.items() if reason in EXCLUDED_FROM_MEASURE}
    base = host_pass - excluded
    kept = base & inside_pass
    report["figures"] = {
        "modules": len(modules),
        "host_pass": len(host_pass),
        "sandbox_pass": len(host_pass & inside_pass),
        "lost": len(lost),
        "by_design": {r: sum(1 for v in matched.values() if v == r) for r in REASONS},
        "measured": len(base),
        "measured_pass": len(kept),
        "gained": sorted(inside_pass - host_pass),
    }
    report.update(problems=problems, matched=matched,
                  outcomes={t: [host[t]["outcome"], inside.get(t, {}).get("outcome")] for t in lost})
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    for line in problems:
        print(line)
    fig = report["figures"]
    print(f"report: {out}/report.json")
    print(f"lost by design: {json.dumps(fig['by_design'])}; passing in the sandbox and not "
          f"unsandboxed: {len(fig['gained'])}")
    pct = 100 * len(kept) / len(base) if base else 0.0
    print(f"{len(modules)} modules, {len(host_pass)} tests pass unsandboxed, "
          f"{fig['sandbox_pass']} of them in the sandbox; of the {len(base)} that need neither "
          f"fork/exec nor a socket, {len(kept)} pass in the sandbox ({pct:.2f}%)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
