"""Runs one CPython regression-test module with unittest and reports each
test's outcome as one JSON line; run the same way inside `runsbx sandbox` and
outside it by tests/cpython/suite.py.

    python3 -c "$(cat run_module.py)" MODULE [SKIP ...]

SKIP: test ids or fnmatch patterns of ids not to run (suite.py passes the
tests already reported before a hang or a crash, and by-design entries that
hang in the sandbox).

The JSON lines go to the process's original stdout; the tests' own output
(stdout and stderr) goes to stderr, so nothing a test prints can break a
line. Each line is one of

    {"start": ID}                       before a test runs (a hang is blamed on it)
    {"id": ID, "outcome": O, "events": [...], "detail": TEXT}
    {"done": true}                      the module ran to its end

where O is pass, fail, error, skip, xfail or xpass ("imported" for the
events raised while the module was imported), and events are the audit
events (PEP 578) a test raised that the sandbox refuses by design: starting a
process, opening or using a socket, making a symlink, chown to another uid.
They are the evidence suite.py checks a by-design entry's reason against.
An error outside a test (setUpClass, setUpModule, an import) is reported
under unittest's own id for it, e.g. "setUpClass (test.test_x.Cls)".
"""
import fnmatch
import json
import os
import sys
import unittest
from unittest.suite import _ErrorHolder

# Audit events, by the by-design reason they are evidence for.
EVENTS = {
    "fork/exec": {
        "os.fork",
        "os.forkpty",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "subprocess.Popen",
        "pty.spawn",
    },
    "socket": {
        "socket.__new__",
        "socket.bind",
        "socket.connect",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.sendto",
    },
    "symlink": {"os.symlink"},
    "chown": {"os.chown"},
    "xattr": {"os.getxattr", "os.setxattr", "os.listxattr", "os.removexattr"},
    "setid": {"os.chmod", "os.mkdir"},
}
WATCHED = {name: reason for reason, names in EVENTS.items() for name in names}
SETID = 0o6000


def noted(event, args):
    """The name to record for an audit event, or None for one that is no
    evidence of a refusal (chown to the ids the sandbox maps, a mode without
    setuid or setgid bits)."""
    if event == "os.chown":
        mine = (-1, os.getuid(), os.getgid())
        return None if args[1] in mine and args[2] in mine else event
    if event in ("os.chmod", "os.mkdir"):
        return event if isinstance(args[1], int) and args[1] & SETID else None
    if event == "socket.__new__" and args[1] == 1:  # AF_UNIX, socketpair's halves too
        return "socket.__new__(AF_UNIX)"
    return event


def main():
    module, skip = sys.argv[1], set(sys.argv[2:])
    patterns = [p for p in skip if any(c in p for c in "*?[")]
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the tests' prints go to stderr
    sys.stdout = sys.stderr

    from test import support

    # Resources, as regrtest's -u would enable them, the same on both sides:
    # network, urlfetch (the internet), largefile (gigabytes), audio and gui
    # stay off.
    support.use_resources = ["cpu", "decimal", "tzdata", "subprocess", "walltime"]
    seen = []

    def hook(event, args):
        if event not in WATCHED:
            return
        try:
            name = noted(event, args)
        except Exception:  # noqa: BLE001 - a hook that raises would fail the test
            name = event
        if name is not None and name not in seen:
            seen.append(name)

    sys.addaudithook(hook)

    def emit(**line):
        out.write(json.dumps(line) + "\n")

    class Result(unittest.TestResult):
        def startTest(self, test):
            super().startTest(test)
            self._outcome = "pass"
            self._detail = ""
            seen.clear()
            emit(start=test.id())

        def _set(self, outcome, err):
            # The first failure or error decides; a failing subtest fails its test.
            if self._outcome not in ("fail", "error"):
                self._outcome = outcome
                self._detail = f"{err[0].__name__}: {err[1]}"[:300]

        def addSuccess(self, test):
            pass

        def addFailure(self, test, err):
            self._set("fail", err)

        def addError(self, test, err):
            if isinstance(test, _ErrorHolder):
                # setUpModule, setUpClass and their tearDowns: not inside a test.
                etype, value, _ = err
                emit(id=test.id(), outcome="error", events=list(seen),
                     detail=f"{etype.__name__}: {value}"[:300])
                seen.clear()
                return
            self._set("error", err)

        def addSkip(self, test, reason):
            if isinstance(test, _ErrorHolder):
                emit(id=test.id(), outcome="skip", events=[], detail=str(reason)[:300])
                return
            self._outcome = "skip"
            self._detail = str(reason)[:300]

        def addExpectedFailure(self, test, err):
            self._outcome = "xfail"

        def addUnexpectedSuccess(self, test):
            self._outcome = "xpass"

        def addSubTest(self, test, subtest, err):
            if err is not None:
                kind = "fail" if issubclass(err[0], test.failureException) else "error"
                self._set(kind, err)

        def stopTest(self, test):
            super().stopTest(test)
            emit(id=test.id(), outcome=self._outcome, events=list(seen), detail=self._detail)
            seen.clear()

    def without_skipped(suite):
        kept = unittest.TestSuite()
        for t in suite:
            if isinstance(t, unittest.TestSuite):
                kept.addTest(without_skipped(t))
            elif t.id() not in skip and not any(fnmatch.fnmatchcase(t.id(), p) for p in patterns):
                kept.addTest(t)
        return kept

    try:
        suite = unittest.defaultTestLoader.loadTestsFromName(module)
    except Exception as e:  # noqa: BLE001 - reported as the module's error
        emit(id=f"import ({module})", outcome="error", events=list(seen),
             detail=f"{type(e).__name__}: {e}"[:300])
        emit(done=True)
        return
    if seen:
        # Audit events while the module was imported: a decorator probing
        # can_symlink() or binding a socket, the evidence of a skip.
        emit(id=f"import ({module})", outcome="imported", events=list(seen), detail="")
        seen.clear()
    without_skipped(suite).run(Result())
    emit(done=True)


if __name__ == "__main__":  # also under -c
    main()
