"""A client of `runsbx mcp` built on the official MCP Python SDK (PyPI's `mcp`), as an agent's host
runs it: list the tools, run code over several calls with state, get a figure back as an image, see a
denied file read and a timeout reported as results, try the escapes, and close.

usage: client.py RUNSBX [RUNSBX-GLOBAL-FLAGS...]    (prints `ok ...` lines; exits non-zero on a miss)
"""

import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def text(result):
    return "".join(c.text for c in result.content if c.type == "text")


def check(what, cond, detail=""):
    if not cond:
        sys.exit(f"FAIL {what}: {detail}")
    print(f"ok   {what}")


# The attempts every interface's test runs (tests/common/session_escapes.py).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common", "session_escapes.py")) as f:
    ESCAPES = f.read()
ATTEMPTS = sum(1 for line in ESCAPES.splitlines() if line.startswith('attempt("'))


async def main():
    runsbx, extra = sys.argv[1], sys.argv[2:]
    params = StdioServerParameters(
        command=runsbx,
        args=[*extra, "mcp", "--call-timeout", "3s", "--", "/usr/bin/python3"],
        # The SDK passes only a few variables on; TMPDIR is where runsbx makes the workdir.
        env={k: os.environ[k] for k in ("PATH", "TMPDIR", "LANG") if k in os.environ},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = sorted(t.name for t in (await s.list_tools()).tools)
            check("tools listed", tools == ["list_files", "read_file", "restart_python", "run_python"], tools)
            r = await s.call_tool("run_python", {"code": "x = 6 * 7"})
            r = await s.call_tool("run_python", {"code": "print(x)"})
            check("state across calls", text(r) == "42\n" and not r.is_error, r)
            r = await s.call_tool(
                "run_python", {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])"}
            )
            images = [c for c in r.content if c.type == "image"]
            check("a figure as an image", len(images) == 1 and images[0].mime_type == "image/png", r)
            r = await s.call_tool("read_file", {"path": "/etc/shadow"})
            check("a denied read is an error result", r.is_error, r)
            # Larger than the REPL's 64 KiB capture: read in pieces.
            r = await s.call_tool(
                "run_python", {"code": "open('big.txt', 'w').write(''.join(f'{i:07}\\n' for i in range(20000)))"}
            )
            r = await s.call_tool("read_file", {"path": "big.txt"})
            want = "".join(f"{i:07}\n" for i in range(20000))
            check("a 160 KB file read whole", not r.is_error and text(r) == want, len(text(r)))
            r = await s.call_tool("run_python", {"code": "import matplotlib.pyplot as plt\nplt.savefig('p.png')"})
            r = await s.call_tool("read_file", {"path": "p.png"})
            check("a PNG read as an image", [c.type for c in r.content] == ["image"], r)
            r = await s.call_tool(
                "run_python", {"code": "open('fake.png', 'w').write('not a png')"}
            )
            r = await s.call_tool("read_file", {"path": "fake.png"})
            check("a file is what its bytes say", [c.type for c in r.content] == ["text"], r)
            r = await s.call_tool("run_python", {"code": ESCAPES})
            lines = text(r).splitlines()
            check("escapes refused", len(lines) == ATTEMPTS and all(l.endswith(" refused") for l in lines), text(r))
            r = await s.call_tool("run_python", {"code": "while True: pass"})
            check("a timeout is an error result", r.is_error and "timeout" in text(r), r)
            r = await s.call_tool("run_python", {"code": "print('x' in globals())"})
            check("a fresh interpreter after it", text(r) == "False\n", r)
    print("client done")


anyio.run(main)
