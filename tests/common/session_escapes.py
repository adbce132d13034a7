# The escape attempts every interface's test runs from inside a session (tests/serve.rs,
# tests/mcp/client.py, tests/python_package.rs, tests/node_package.rs): one line each,
# `NAME refused` or `NAME ALLOWED`; every one must be refused.
import os, socket
def attempt(name, f):
    try:
        f()
        print(name, "ALLOWED")
    except OSError:
        print(name, "refused")
attempt("read-shadow", lambda: open("/etc/shadow").read())
attempt("write-outside", lambda: open("/runsbx-session-escape", "w"))
attempt("network", lambda: socket.create_connection(("1.1.1.1", 80), timeout=2))
attempt("fork", lambda: os._exit(0) if os.fork() == 0 else None)
attempt("list-root", lambda: os.listdir("/"))
attempt("exec", lambda: os.execv("/bin/sh", ["sh", "-c", "true"]))
