"""The fork server of `runsbx serve --fork-server`.

Runs in a sandbox of its own (profile fork-server: the sandbox's seccomp
allowlist plus fork, Landlock and seccomp(SET_MODE_FILTER), and /proc mounted
hidepid=ptraceable), imports the operator's preload once, then forks one
process per session. Each session, before any client code runs:

1. keeps only its own descriptors: the client's stream as stdin and stdout,
   a pipe as stderr (everything else, the control socket included, closed);
2. stacks a Landlock layer that grants what the server grants, less the
   sessions directory, plus the session's own workdir, with signals and
   abstract unix sockets scoped to the session: no other session's files,
   processes or sockets are reachable, nor the fork server;
3. loads the plain sandbox seccomp filter the server compiled: fork,
   Landlock and seccomp are refused again, as in any `runsbx sandbox`;
4. reseeds the random generators it inherited,

then runs the REPL driver (repl.py) on its stdin and stdout with the
preloaded globals. A step that fails ends the session with status 125
before any client code runs.

Control protocol on fd 0, a unix stream socket (JSON lines each way):
  {"preload": CODE}                         -> {"ok": BOOL, "error": TEXT}
  {"spawn": ID, "workdir": DIR} + 2 fds     -> {"spawned": ID, "pid": PID}
  (the session's stream and its stderr pipe, by SCM_RIGHTS)
  and, unasked, {"exit": PID, "code": N} or {"exit": PID, "signal": N}.
The server is the only peer; the sessions never hold this socket.

Usage: python3 -I forkserver.py REPL_PY LAYERS_JSON
"""

import array
import base64
import ctypes
import gc
import importlib.util
import io
import json
import os
import select
import signal
import socket
import stat
import struct
import sys

SYS_SECCOMP = 317
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_RULE_PATH_BENEATH = 1
SECCOMP_SET_MODE_FILTER = 1
# Rights that mean something on a file (execute, write_file, read_file,
# truncate, ioctl_dev, resolve_unix): the kernel refuses others on a file.
FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15) | (1 << 16)

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def _check(rc, what):
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))
    return rc


def landlock(layers, workdir):
    attr = struct.pack("=QQQ", layers["handled_fs"], layers["handled_net"], layers["scoped"])
    abuf = ctypes.create_string_buffer(attr, len(attr))
    rfd = _check(libc.syscall(SYS_LANDLOCK_CREATE_RULESET, abuf, len(attr), 0), "landlock_create_ruleset")
    try:
        rules = [(p, b) for p, b in layers["rules"]] + [(workdir, layers["workdir"])]
        for path, bits in rules:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a rule left out only takes rights away
            try:
                if not stat.S_ISDIR(os.fstat(pfd).st_mode):
                    bits &= FILE_RIGHTS
                bits &= layers["handled_fs"]
                if bits:
                    rule = struct.pack("=Qi", bits, pfd)
                    rbuf = ctypes.create_string_buffer(rule, len(rule))
                    _check(libc.syscall(SYS_LANDLOCK_ADD_RULE, rfd, LANDLOCK_RULE_PATH_BENEATH, rbuf, 0),
                           "landlock_add_rule %s" % path)
            finally:
                os.close(pfd)
        _check(libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, rfd, 0), "landlock_restrict_self")
    finally:
        os.close(rfd)


def seccomp(filters):
    for text in filters:
        prog = base64.b64decode(text)
        pbuf = ctypes.create_string_buffer(prog, len(prog))
        fprog = struct.pack("=H6xQ", len(prog) // 8, ctypes.addressof(pbuf))
        fbuf = ctypes.create_string_buffer(fprog, len(fprog))
        _check(libc.syscall(SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, 0, fbuf), "seccomp")


def reseed():
    # random reseeds itself after fork (os.register_at_fork); numpy's legacy
    # global generator does not: sessions would draw the same numbers.
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()


def session(repl, env, layers, workdir, stream, err):
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.dup2(stream, 0)
        os.dup2(stream, 1)
        os.dup2(err, 2)
        os.closerange(3, 1 << 20)
        os.chdir(workdir)
        for k in ("HOME", "TMPDIR"):
            os.environ[k] = workdir
        import tempfile

        tempfile.tempdir = None
        landlock(layers, workdir)
        seccomp(layers["bpf"])
        reseed()
        os.write(1, b'{"event": "confined"}\n')
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
    except BaseException as e:  # noqa: BLE001 - nothing of the client runs unconfined
        try:
            os.write(2, ("runsbx: fork server: session set-up: %s\n" % e).encode())
        finally:
            os._exit(125)
    try:
        repl.main(env)
    except BaseException:  # noqa: BLE001
        os._exit(1)
    os._exit(0)


def main():
    repl_path, layers_path = sys.argv[1], sys.argv[2]
    spec = importlib.util.spec_from_file_location("runsbx_repl", repl_path)
    repl = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(repl)
    with open(layers_path) as f:
        layers = json.load(f)
    # Family, type and protocol given: asked of the kernel, they need
    # getsockopt, which the sandbox refuses.
    ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    env = {"__name__": "__repl__", "__builtins__": __builtins__}

    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)

    def send(obj):
        ctl.sendall((json.dumps(obj) + "\n").encode())

    def reap():
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if os.WIFSIGNALED(status):
                send({"exit": pid, "signal": os.WTERMSIG(status)})
            else:
                send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})

    buf = b""
    fds = []
    while True:
        ready, _, _ = select.select([ctl, wake_r], [], [])
        if wake_r in ready:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
            reap()
        if ctl not in ready:
            continue
        msg, anc, _, _ = ctl.recvmsg(65536, socket.CMSG_SPACE(8 * 4))
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(data[: len(data) - (len(data) % a.itemsize)])
                fds.extend(a)
        if not msg:
            return
        buf += msg
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line)
            if "preload" in req:
                ans = repl.run(req["preload"], env)
                # What the preload made is never collected or moved: the
                # collector's passes would otherwise write to (and so copy)
                # the shared pages in every session.
                gc.collect()
                gc.freeze()
                send({"ok": ans["ok"], "error": ans["error"]})
            elif "spawn" in req:
                stream, err = fds[0], fds[1]
                del fds[:2]
                pid = os.fork()
                if pid == 0:
                    session(repl, env, layers, req["workdir"], stream, err)
                os.close(stream)
                os.close(err)
                send({"spawned": req["spawn"], "pid": pid})


if __name__ == "__main__":
    main()
